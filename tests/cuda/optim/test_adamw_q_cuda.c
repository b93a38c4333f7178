/* GPU tests of kernels/optim/adamw_q.cu: AdamW with block-quantized moments in one pass, against
 * agoq_adamw_q_ref (dequantize_ref -> adamw_ref -> quantize_ref over the whole tensor) for three
 * steps. Bounds: the kernel runs adamw_dev.cuh's fp32 operations, which the plain AdamW test
 * finds bit-identical to adamw_ref.c, so the updated fp32 m and v are the reference's and their
 * requantized codes and scales must be bit-exact (the quantizers are); p is allowed 2 fp32 ulps
 * and w one bf16 ulp, as in test_adamw_cuda.c. n is odd (a partial last block). Configs: dyn8
 * moments with a dyn8 gradient (AGoQ's "O" + 8-bit gradients), dyn8 moments with an fp32
 * gradient, int8/128 moments with an FP8 E4M3/128 gradient; unsupported configs are refused. */
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/optim/adamw_q.h"
#include "kernels/quant/qspec.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"
#include "tests/test.h"

static int planes_equal(const agoq_qconfig *c, const agoq_qtensor *a, const agoq_qtensor *b) {
    return memcmp(a->codes, b->codes, agoq_codes_bytes(c, a->n)) == 0 &&
           memcmp(a->scales, b->scales, agoq_scales_bytes(c, a->n)) == 0;
}

static long long ulps(float a, float b) {
    int32_t ia = (int32_t)agoq_f32_bits(a), ib = (int32_t)agoq_f32_bits(b);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    return llabs((long long)ia - (long long)ib);
}

static void run_case_n(const char *gspec, const char *mspec, size_t n) {
    agoq_qconfig gc, mc;
    CHECK(agoq_qspec_from_string(mspec, &mc) == 0);
    if (gspec) CHECK(agoq_qspec_from_string(gspec, &gc) == 0);
    const agoq_qconfig *gcp = gspec ? &gc : NULL;
    CHECK(agoq_adamw_q_supported(gcp, &mc));
    float *p = malloc(n * 4), *g = malloc(n * 4), *tmp = malloc(n * 4);
    uint16_t *w = malloc(n * 2), *wg = malloc(n * 2);
    agoq_qtensor m, v, g8, mg, vg;
    CHECK(agoq_qtensor_alloc(&m, &mc, n) == 0 && agoq_qtensor_alloc(&v, &mc, n) == 0);
    CHECK(agoq_qtensor_alloc(&mg, &mc, n) == 0 && agoq_qtensor_alloc(&vg, &mc, n) == 0);
    memset(&g8, 0, sizeof g8);
    if (gspec) CHECK(agoq_qtensor_alloc(&g8, &gc, n) == 0);
    agoq_fill(AGOQ_DIST_NORMAL, p, n, 1);
    for (size_t i = 0; i < n; i++) p[i] *= 0.02f;
    agoq_cuda_qtensor dm, dv, dg8 = {0};
    CHECK(agoq_cuda_qtensor_alloc(&dm, &mc, n) == 0 && agoq_cuda_qtensor_alloc(&dv, &mc, n) == 0);
    if (gspec) CHECK(agoq_cuda_qtensor_alloc(&dg8, &gc, n) == 0);
    float *dp = agoq_cuda_malloc(n * 4), *dg = agoq_cuda_malloc(n * 4);
    uint16_t *dw = agoq_cuda_malloc(n * 2);
    agoq_cuda_h2d(dp, p, n * 4);
    agoq_adamw_hp hp = {.lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                        .grad_scale = 0.5f, .step = 0};
    long long up = 0, uw = 0;
    int same = 1;
    for (int step = 1; step <= 3; step++) {
        hp.step = step;
        agoq_fill(step == 2 ? AGOQ_DIST_HEAVY : AGOQ_DIST_NORMAL, g, n, 200 + step);
        if (step == 3) g[0] = 0.0f, g[1] = 1e-30f, g[2] = -1e30f; /* zero, tiny, huge */
        if (gspec) {
            agoq_quantize_ref(&gc, g, n, &g8);
            CHECK(agoq_cuda_qtensor_upload(&gc, &g8, &dg8) == 0);
        } else {
            agoq_cuda_h2d(dg, g, n * 4);
        }
        const int with_w = step != 2;
        agoq_adamw_q_ref(&hp, gcp, g, &g8, &mc, &m, &v, p, with_w ? w : NULL, n);
        CHECK(agoq_adamw_q_cuda(&hp, gcp, dg, &dg8, &mc, &dm, &dv, dp, with_w ? dw : NULL, n, NULL) == 0);
        agoq_cuda_sync(NULL);
        CHECK(agoq_cuda_qtensor_download(&mc, &dm, &mg) == 0 && agoq_cuda_qtensor_download(&mc, &dv, &vg) == 0);
        same &= planes_equal(&mc, &m, &mg) && planes_equal(&mc, &v, &vg);
        agoq_cuda_d2h(tmp, dp, n * 4);
        for (size_t i = 0; i < n; i++) up = ulps(p[i], tmp[i]) > up ? ulps(p[i], tmp[i]) : up;
        if (with_w) {
            agoq_cuda_d2h(wg, dw, n * 2);
            for (size_t i = 0; i < n; i++) {
                const long long d = llabs((long long)(int16_t)w[i] - (long long)(int16_t)wg[i]);
                uw = d > uw ? d : uw;
            }
        }
    }
    fprintf(stderr, "    moments %s, gradient %s: m, v planes %s; p %lld fp32 ulps, w %lld bf16 ulps\n", mspec,
            gspec ? gspec : "fp32", same ? "bit-exact" : "DIFFER", up, uw);
    CHECK(same);
    CHECK(up <= 2 && uw <= 1);
    agoq_cuda_qtensor_free(&dm), agoq_cuda_qtensor_free(&dv), agoq_cuda_qtensor_free(&dg8);
    agoq_cuda_free(dp), agoq_cuda_free(dg), agoq_cuda_free(dw);
    agoq_qtensor_free(&m), agoq_qtensor_free(&v), agoq_qtensor_free(&mg), agoq_qtensor_free(&vg), agoq_qtensor_free(&g8);
    free(p), free(g), free(tmp), free(w), free(wg);
}
static void run_case(const char *gspec, const char *mspec) { run_case_n(gspec, mspec, 300007); }

TEST(cuda_adamw_q_dyn8_moments_dyn8_grad_match_reference) { run_case("dyn8/256", "dyn8/256"); }
TEST(cuda_adamw_q_dyn8_moments_fp32_grad_match_reference) { run_case(NULL, "dyn8/256"); }
/* 3M elements: more blocks than the grid's warps (8 CTAs an SM), so warps loop over several */
TEST(cuda_adamw_q_grid_stride_matches_reference) {
    run_case_n("dyn8/256", "dyn8/256", 3000017);
    run_case_n("fp8_e4m3/128", "int8/128", 3000017);
}
TEST(cuda_adamw_q_int8_moments_fp8_grad_match_reference) { run_case("fp8_e4m3/128", "int8/128"); }

TEST(cuda_adamw_q_refuses_unsupported_configs) {
    agoq_qconfig c4, c512;
    CHECK(agoq_qspec_from_string("int4/128", &c4) == 0);
    CHECK(agoq_qspec_from_string("dyn8/512", &c512) == 0);
    CHECK(!agoq_adamw_q_supported(NULL, &c4));   /* 4-bit moments */
    CHECK(!agoq_adamw_q_supported(NULL, &c512)); /* block > 256 */
    agoq_adamw_hp hp = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1};
    agoq_cuda_qtensor q = {0};
    CHECK(agoq_adamw_q_cuda(&hp, NULL, NULL, NULL, &c4, &q, &q, NULL, NULL, 0, NULL) == -1);
}
