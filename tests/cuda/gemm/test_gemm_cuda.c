/* GPU tests of kernels/gemm/gemm.cu: the tensor-core GEMM (and cuBLAS) against the float64 reference
 * with an fp32-accumulation tolerance; the fused epilogue's quantized copy bit-exact against
 * the reference quantizer applied to the kernel's own bf16 output; the fused-prologue GEMM on
 * a stored A bit-exact against the plain GEMM on that A dequantized to bf16. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/gemm.h"
#include "kernels/quant/quant_math.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/test.h"

/* |c - ref| <= |ref| / 256 (bf16 output rounding, with margin) + K * 2^-23 * sum|a||b| (fp32
 * accumulation in any order); returns the number of violations. */
static size_t check_vs_ref(const char *what, const uint16_t *c, const double *ref, const double *mag, size_t n, int k) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double got = (double)agoq_bf16_to_f32(c[i]), tol = fabs(ref[i]) / 256.0 + (double)k * 0x1p-23 * mag[i];
        if (!(fabs(got - ref[i]) <= tol) && bad++ < 5)
            fprintf(stderr, "    %s[%zu]: got %.8g ref %.8g tol %.3g\n", what, i, got, ref[i], tol);
    }
    return bad;
}

static const int kShapes[][3] = {{128, 128, 32}, {256, 384, 160}, {128, 256, 2048}};

TEST(cuda_gemm_matches_float64_reference_and_cublas) {
    void *h = agoq_cublas_create();
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++) {
        const int m = kShapes[s][0], n = kShapes[s][1], k = kShapes[s][2];
        uint16_t *a = rand_bf16((size_t)m * k, 1 + s), *b = rand_bf16((size_t)n * k, 100 + s);
        double *ref = malloc((size_t)m * n * sizeof(double)), *mag = malloc((size_t)m * n * sizeof(double));
        agoq_gemm_ref(a, b, m, n, k, ref, mag);
        uint16_t *da = up16(a, (size_t)m * k), *db = up16(b, (size_t)n * k), *dc = agoq_fused_dmalloc((size_t)m * n * 2);
        CHECK(agoq_gemm_cuda(NULL, da, db, m, n, k, dc, (agoq_dqt){0}, NULL) == 0);
        agoq_fused_dsync();
        uint16_t *c = down16(dc, (size_t)m * n);
        CHECK_MSG(check_vs_ref("gemm", c, ref, mag, (size_t)m * n, k) == 0, "M=%d N=%d K=%d", m, n, k);
        free(c);
        CHECK(agoq_cublas_gemm(h, da, db, m, n, k, dc, NULL) == 0);
        agoq_fused_dsync();
        c = down16(dc, (size_t)m * n);
        CHECK_MSG(check_vs_ref("cublas", c, ref, mag, (size_t)m * n, k) == 0, "M=%d N=%d K=%d", m, n, k);
        free(c);
        agoq_fused_dfree(da); agoq_fused_dfree(db); agoq_fused_dfree(dc);
        free(a); free(b); free(ref); free(mag);
    }
    agoq_cublas_destroy(h);
}

typedef struct { agoq_format fmt; int block; agoq_scale_type scale; agoq_rounding round; } qcase;

static agoq_qconfig qc_of(qcase k) {
    agoq_qconfig c = agoq_qconfig_default(k.fmt);
    c.block = k.block;
    c.scale = k.scale;
    c.rounding = k.round;
    c.seed = 5;
    return c;
}

TEST(cuda_gemm_epilogue_quant_bit_exact) {
    static const qcase cases[] = {
        {AGOQ_FMT_FP4_E2M1, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST}, {AGOQ_FMT_INT4, 32, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_INT8, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_STOCHASTIC},   {AGOQ_FMT_FP8_E4M3, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_NF4, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},       {AGOQ_FMT_INT4_ASYM, 16, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_INT3, 8, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
    };
    const int m = 256, n = 384, k = 96;
    uint16_t *a = rand_bf16((size_t)m * k, 7), *b = rand_bf16((size_t)n * k, 8);
    uint16_t *da = up16(a, (size_t)m * k), *db = up16(b, (size_t)n * k), *dc = agoq_fused_dmalloc((size_t)m * n * 2);
    uint16_t *dc_plain = agoq_fused_dmalloc((size_t)m * n * 2);
    CHECK(agoq_gemm_cuda(NULL, da, db, m, n, k, dc_plain, (agoq_dqt){0}, NULL) == 0);
    agoq_fused_dsync();
    uint16_t *plain = down16(dc_plain, (size_t)m * n);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agoq_qconfig c = qc_of(cases[i]);
        agoq_fq q;
        agoq_dqt dq;
        agoq_qtensor want, got;
        CHECK(agoq_fq_make(&c, &q) == 0 && agoq_dqt_alloc(&c, m, n, &dq) == 0);
        CHECK(agoq_gemm_cuda(&q, da, db, m, n, k, dc, dq, NULL) == 0);
        agoq_fused_dsync();
        uint16_t *cc = down16(dc, (size_t)m * n);
        /* the fused epilogue does not change C */
        CHECK(agoq_validate_bytes("C fused vs plain", (const uint8_t *)plain, (const uint8_t *)cc, (size_t)m * n * 2) == 0);
        size_t nq = agoq_rowq_alloc_n(&c, m, n);
        CHECK(agoq_qtensor_alloc(&want, &c, nq) == 0 && agoq_qtensor_alloc(&got, &c, nq) == 0);
        agoq_rowq_quantize_ref(&c, cc, m, n, &want);
        agoq_dqt_download(&c, m, n, dq, &got);
        CHECK_MSG(agoq_validate_bytes("codes", want.codes, got.codes, agoq_codes_bytes(&c, nq)) == 0, "%s", agoq_formats[c.fmt].name);
        CHECK_MSG(agoq_validate_bytes("scales", want.scales, got.scales, agoq_scales_bytes(&c, nq)) == 0, "%s", agoq_formats[c.fmt].name);
        if (agoq_has_zeros(&c)) CHECK(agoq_validate_bytes("zeros", want.zeros, got.zeros, agoq_zeros_bytes(&c, nq)) == 0);
        agoq_qtensor_free(&want); agoq_qtensor_free(&got);
        agoq_dqt_free(&dq); agoq_fq_free(&q);
        free(cc);
    }
    agoq_fused_dfree(da); agoq_fused_dfree(db); agoq_fused_dfree(dc); agoq_fused_dfree(dc_plain);
    free(a); free(b); free(plain);
}

TEST(cuda_gemm_prologue_dequant_bit_exact) {
    static const qcase cases[] = {
        {AGOQ_FMT_FP4_E2M1, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST}, {AGOQ_FMT_NF4, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_INT4_ASYM, 32, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST}, {AGOQ_FMT_INT8, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_FP8_E4M3, 16, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},  {AGOQ_FMT_DYN8, 256, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
    };
    const int m = 256, n = 256, k = 512;
    uint16_t *a = rand_bf16((size_t)m * k, 17), *b = rand_bf16((size_t)n * k, 18), *adq = malloc((size_t)m * k * 2);
    float *deq = malloc((size_t)m * k * sizeof(float));
    uint16_t *db = up16(b, (size_t)n * k), *dc = agoq_fused_dmalloc((size_t)m * n * 2), *dc2 = agoq_fused_dmalloc((size_t)m * n * 2);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agoq_qconfig c = qc_of(cases[i]);
        agoq_qtensor aq;
        agoq_fq q;
        agoq_dqt dq;
        CHECK(agoq_qtensor_alloc(&aq, &c, agoq_rowq_alloc_n(&c, m, k)) == 0);
        CHECK(agoq_fq_make(&c, &q) == 0 && agoq_dqt_alloc(&c, m, k, &dq) == 0);
        agoq_rowq_quantize_ref(&c, a, m, k, &aq);
        agoq_rowq_dequantize_ref(&c, &aq, m, k, deq);
        for (size_t j = 0; j < (size_t)m * k; j++) adq[j] = agoq_f32_to_bf16(deq[j]);
        agoq_dqt_upload(&c, m, k, &aq, dq);
        uint16_t *da = up16(adq, (size_t)m * k);
        CHECK(agoq_gemm_deqa_cuda(&q, dq, db, m, n, k, dc, NULL) == 0);
        CHECK(agoq_gemm_cuda(NULL, da, db, m, n, k, dc2, (agoq_dqt){0}, NULL) == 0);
        agoq_fused_dsync();
        uint16_t *got = down16(dc, (size_t)m * n), *want = down16(dc2, (size_t)m * n);
        CHECK_MSG(agoq_validate_bytes("deqa C", (const uint8_t *)want, (const uint8_t *)got, (size_t)m * n * 2) == 0, "%s",
                  agoq_formats[c.fmt].name);
        free(got); free(want);
        agoq_fused_dfree(da);
        agoq_dqt_free(&dq); agoq_fq_free(&q); agoq_qtensor_free(&aq);
    }
    agoq_fused_dfree(db); agoq_fused_dfree(dc); agoq_fused_dfree(dc2);
    free(a); free(b); free(adq); free(deq);
}

TEST(cuda_gemm_rejects_unsupported_shapes) {
    agoq_qconfig fp4 = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1), int3 = agoq_qconfig_default(AGOQ_FMT_INT3);
    CHECK(agoq_gemm_check(128, 128, 32, NULL, NULL) == 0);
    CHECK(agoq_gemm_check(100, 128, 32, NULL, NULL) == -1);
    CHECK(agoq_gemm_check(128, 128, 48, NULL, NULL) == -1);
    fp4.block = 256;
    CHECK(agoq_gemm_check(128, 256, 32, &fp4, NULL) == -1); /* block wider than the CTA tile */
    CHECK(agoq_gemm_check(128, 128, 256, NULL, &int3) == -1); /* 3-bit codes in the prologue */
    fp4.block = 128;
    CHECK(agoq_gemm_check(128, 128, 96, NULL, &fp4) == -1);   /* K not a multiple of the block */
    CHECK(agoq_gemm_check(128, 128, 256, &fp4, &fp4) == 0);
}
