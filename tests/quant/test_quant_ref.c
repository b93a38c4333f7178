/* Reference quantizers: hand-computed cases, error bounds, edge inputs, every format/block. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/common.h"
#include "core/metrics.h"
#include "core/rng.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"
#include "tests/test.h"

static const int kBlocks[] = {32, 64, 128, 256};

/* Quantize x[0..n) with c, return the dequantized copy (caller frees) and the tensor. */
static float *roundtrip(const agoq_qconfig *c, const float *x, size_t n, agoq_qtensor *q) {
    float *y = malloc((n + 1) * sizeof(float));
    if (agoq_qtensor_alloc(q, c, n) != 0) return NULL;
    agoq_quantize_ref(c, x, n, q);
    agoq_dequantize_ref(c, q, y);
    return y;
}

TEST(pack_unpack_roundtrip_every_width) {
    uint8_t blk[256];
    agoq_rng r = {7};
    for (int bits = 2; bits <= 8; bits++) {
        uint32_t codes[256];
        memset(blk, 0, sizeof blk);
        for (int i = 0; i < 256; i++) {
            codes[i] = (uint32_t)(agoq_rng_next(&r) & ((1u << bits) - 1u));
            agoq_put_code(blk, i, bits, codes[i]);
        }
        for (int i = 0; i < 256; i++)
            CHECK_MSG(agoq_get_code(blk, i, bits) == codes[i], "bits %d element %d", bits, i);
        /* exactly 256*bits/8 bytes used: nothing written past the block */
        for (size_t b = (size_t)256 * bits / 8; b < sizeof blk; b++) CHECK(blk[b] == 0);
    }
    /* nibble order: element 2j low nibble of byte j */
    memset(blk, 0, 4);
    agoq_put_code(blk, 0, 4, 0x3);
    agoq_put_code(blk, 1, 4, 0xA);
    CHECK(blk[0] == 0xA3);
}

TEST(fp4_hand_cases_round_half_even) {
    /* absmax 6 -> s = 1: the scaled values are the inputs themselves */
    float x[16] = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, -6, -0.25f, -0.75f, -5, 0.1f, 4.9f, 5.1f, 0};
    float want[16] = {6, 0, 1, 1, 2, 2, 4, 4, -6, 0, -1, -4, 0, 4, 6, 0};
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
    c.block = 16;
    agoq_qtensor q;
    float *y = roundtrip(&c, x, 16, &q);
    CHECK(agoq_qtensor_scale(&c, &q, 0) == 1.0f);
    CHECK(agoq_validate_floats("fp4", want, y, 16) == 0);
    CHECK(agoq_get_code(q.codes, 0, 4) == 7 && agoq_get_code(q.codes, 8, 4) == 15);
    CHECK(agoq_get_code(q.codes, 9, 4) == 0); /* -0.25 -> 0, canonical +0 code */
    free(y);
    agoq_qtensor_free(&q);
}

TEST(int4_hand_cases) {
    float x[8] = {7, 3.5f, -3.5f, 0.5f, 1.5f, 2.5f, -7, -0.5f};
    float want[8] = {7, 4, -4, 0, 2, 2, -7, 0};
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_INT4);
    c.block = 8;
    agoq_qtensor q;
    float *y = roundtrip(&c, x, 8, &q);
    CHECK(agoq_qtensor_scale(&c, &q, 0) == 1.0f);
    CHECK(agoq_validate_floats("int4", want, y, 8) == 0);
    CHECK(agoq_get_code(q.codes, 0, 4) == 15 && agoq_get_code(q.codes, 6, 4) == 1); /* offset binary */
    free(y);
    agoq_qtensor_free(&q);
}

TEST(int3_asym_hand_case) {
    /* min -1, max 6 -> s = 1, m = -1: codes = x + 1 */
    float x[8] = {-1, 0, 1, 2, 3, 4, 5, 6};
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_INT3_ASYM);
    c.block = 8;
    agoq_qtensor q;
    float *y = roundtrip(&c, x, 8, &q);
    CHECK(agoq_qtensor_scale(&c, &q, 0) == 1.0f && agoq_qtensor_zero(&c, &q, 0) == -1.0f);
    CHECK(agoq_validate_floats("int3_asym", x, y, 8) == 0);
    for (int i = 0; i < 8; i++) CHECK(agoq_get_code(q.codes, i, 3) == (uint32_t)i);
    free(y);
    agoq_qtensor_free(&q);
}

TEST(tables_are_sane) {
    const agoq_code_table *t = agoq_table(AGOQ_FMT_DYN8);
    /* bitsandbytes' signed map: +1 but no -1 (127 negative means, 127 positive, 0 and 1) */
    CHECK(t->nsorted == 256 && t->sorted[255] == 1.0f && t->sorted[0] > -1.0f && t->sorted[0] < -0.99f);
    CHECK(t->value[t->zero_code] == 0.0f);
    for (int i = 0; i + 1 < t->nsorted; i++) CHECK(t->sorted[i] < t->sorted[i + 1]);
    t = agoq_table(AGOQ_FMT_FP8_E4M3);
    CHECK(t->nsorted == 253 && t->sorted[252] == 448.0f && t->sorted[126] == 0.0f); /* 126 negatives */
    CHECK(t->sorted[127] == 0.001953125f); /* smallest subnormal 2^-9 */
    t = agoq_table(AGOQ_FMT_FP8_E5M2);
    CHECK(t->nsorted == 247 && t->sorted[246] == 57344.0f);
    t = agoq_table(AGOQ_FMT_FP4_E2M1);
    CHECK(t->nsorted == 15 && t->sorted[14] == 6.0f);
    t = agoq_table(AGOQ_FMT_NF4);
    CHECK(t->nsorted == 16 && t->zero_code == 7);
    CHECK(agoq_table(AGOQ_FMT_INT4) == NULL);
}

/* The row's encoder and FP8 fields agree with its code kind and value range: integer formats
 * use their arithmetic encoders, table formats the table or fp4/fp8's arithmetic one, and an
 * FP8 row's mantissa bits give its largest value (E4M3 448, E5M2 57344). */
TEST(format_traits_encoder_and_fp8_fields_agree) {
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        const agoq_format_traits *t = &agoq_formats[f];
        if (t->kind == AGOQ_CODE_INT_SYM) CHECK_MSG(t->enc == AGOQ_ENC_INT_SYM, "%s", t->name);
        else if (t->kind == AGOQ_CODE_INT_ASYM) CHECK_MSG(t->enc == AGOQ_ENC_INT_ASYM, "%s", t->name);
        else CHECK_MSG(t->enc == AGOQ_ENC_TABLE || t->enc == AGOQ_ENC_FP4 || t->enc == AGOQ_ENC_FP8_E4M3 || t->enc == AGOQ_ENC_FP8_E5M2,
                       "%s", t->name);
        const int fp8 = t->enc == AGOQ_ENC_FP8_E4M3 || t->enc == AGOQ_ENC_FP8_E5M2;
        CHECK_MSG(fp8 == (t->fp8_mbits > 0) && fp8 == AGOQ_FMT_IS_FP8(f), "%s", t->name);
        if (fp8) {
            const int e5m2 = t->enc == AGOQ_ENC_FP8_E5M2;
            CHECK_MSG(t->fp8_mbits == (e5m2 ? 2 : 3) && t->bits == 8, "%s", t->name);
            CHECK_MSG(agoq_fp8_decode(agoq_fp8_encode_rne(1e30f, e5m2), e5m2) == t->qmax, "%s", t->name);
        }
        if (t->enc == AGOQ_ENC_FP4) CHECK_MSG(t->bits == 4 && t->qmax == 6.0f, "%s", t->name);
    }
}

TEST(bits_per_element_includes_scales) {
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
    CHECK(agoq_bits_per_element(&c, 1024) == 4.25);
    c = agoq_qconfig_default(AGOQ_FMT_INT4_ASYM);
    c.scale = AGOQ_SCALE_BF16;
    CHECK(agoq_bits_per_element(&c, 1024) == 4.25); /* 16-bit scale + 16-bit zero per 128 */
    c = agoq_qconfig_default(AGOQ_FMT_DYN8);
    CHECK(agoq_bits_per_element(&c, 1 << 20) == 8.125);
    c = agoq_qconfig_default(AGOQ_FMT_INT5);
    CHECK(agoq_codes_bytes(&c, 128) == 80); /* 5-bit really takes 5 bits */
    CHECK(agoq_codes_bytes(&c, 129) == 160); /* tail block padded */
}

/* Brute-force nearest table entry: the binary search must find a closest value. */
static int nearest_ok(const agoq_code_table *t, float y, uint32_t code) {
    if (isnan(y)) return t->value[code] == 0.0f;
    float got = fabsf(y - t->value[code]);
    for (int i = 0; i < t->nsorted; i++)
        if (fabsf(y - t->sorted[i]) < got) return 0;
    return 1;
}

TEST(every_format_block_scale_error_bound) {
    enum { N = 4096 + 77 };
    float *x = malloc(N * sizeof(float));
    agoq_fill(AGOQ_DIST_OUTLIERS, x, N, 11);
    for (int f = 0; f < AGOQ_FMT_COUNT; f++)
        for (size_t bi = 0; bi < 4; bi++)
            for (int sc = 0; sc < 2; sc++) {
                agoq_qconfig c = agoq_qconfig_default((agoq_format)f);
                c.block = kBlocks[bi];
                c.scale = (agoq_scale_type)sc;
                agoq_qtensor q;
                float *y = roundtrip(&c, x, N, &q);
                const agoq_format_traits *t = &agoq_formats[f];
                const int bits = t->bits;
                for (size_t i = 0; i < N; i++) {
                    size_t b = i / (size_t)c.block;
                    float s = agoq_qtensor_scale(&c, &q, b), m = agoq_qtensor_zero(&c, &q, b);
                    uint32_t code = agoq_get_code(q.codes + b * agoq_block_code_bytes(&c), (int)(i % (size_t)c.block), bits);
                    if (t->kind == AGOQ_CODE_TABLE) {
                        CHECK_MSG(nearest_ok(agoq_table(c.fmt), x[i] * agoq_inv_scale(s), code),
                                  "%s block %d: element %zu not nearest", t->name, c.block, i);
                        continue;
                    }
                    /* integer: within half a step, except where a bf16-rounded scale clips */
                    double lo = t->kind == AGOQ_CODE_INT_ASYM ? m : -t->qmax * s;
                    double hi = t->kind == AGOQ_CODE_INT_ASYM ? m + t->qmax * s : t->qmax * s;
                    double clip = x[i] > hi ? x[i] - hi : (x[i] < lo ? lo - x[i] : 0.0);
                    double bound = 0.5 * s * (1 + 1e-6) + clip + 1e-7 * fabs(x[i]);
                    CHECK_MSG(fabs((double)y[i] - x[i]) <= bound, "%s block %d scale %d: |%g - %g| > %g", t->name,
                              c.block, sc, y[i], x[i], bound);
                    if (sc == AGOQ_SCALE_FP32 && t->kind == AGOQ_CODE_INT_SYM) CHECK(clip <= 1e-6 * fabs(x[i]));
                }
                free(y);
                agoq_qtensor_free(&q);
            }
    free(x);
}

TEST(int8_symmetric_max_error_is_half_scale) {
    enum { N = 1 << 16 };
    float *x = malloc(N * sizeof(float));
    agoq_fill(AGOQ_DIST_NORMAL, x, N, 3);
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_INT8);
    agoq_qtensor q;
    float *y = roundtrip(&c, x, N, &q);
    for (size_t i = 0; i < N; i++) {
        float s = agoq_qtensor_scale(&c, &q, i / 128);
        CHECK(fabsf(y[i] - x[i]) <= 0.5f * s * (1 + 1e-6f));
    }
    free(x);
    free(y);
    agoq_qtensor_free(&q);
}

TEST(zero_and_constant_blocks) {
    float z[300] = {0}, k[300];
    const float dyn8_min = agoq_table(AGOQ_FMT_DYN8)->sorted[0]; /* -0.99297: -absmax is not exact */
    for (int i = 0; i < 300; i++) k[i] = -2.75f;
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        agoq_qconfig c = agoq_qconfig_default((agoq_format)f);
        agoq_qtensor q;
        float *y = roundtrip(&c, z, 300, &q);
        for (int i = 0; i < 300; i++) CHECK_MSG(y[i] == 0.0f, "%s: zero block gave %g", agoq_formats[f].name, y[i]);
        CHECK(agoq_qtensor_scale(&c, &q, 0) == 0.0f);
        free(y);
        agoq_qtensor_free(&q);
        y = roundtrip(&c, k, 300, &q);
        float want = f == AGOQ_FMT_DYN8 ? -dyn8_min * k[0] : k[0];
        for (int i = 0; i < 300; i++)
            CHECK_MSG(fabsf(y[i] - want) <= 1e-6f * 2.75f, "%s: constant block gave %.9g", agoq_formats[f].name, y[i]);
        if (agoq_formats[f].kind == AGOQ_CODE_INT_ASYM) CHECK(y[0] == k[0]); /* exact via the zero point */
        free(y);
        agoq_qtensor_free(&q);
    }
}

TEST(nan_inf_documented_behaviour) {
    float x[32];
    for (int i = 0; i < 32; i++) x[i] = (float)(i - 16) * 0.25f; /* finite absmax 4, min -4 */
    x[3] = NAN;
    x[5] = INFINITY;
    x[7] = -INFINITY;
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        agoq_qconfig c = agoq_qconfig_default((agoq_format)f);
        c.block = 32;
        agoq_qtensor q;
        float *y = roundtrip(&c, x, 32, &q);
        const agoq_format_traits *t = &agoq_formats[f];
        float s = agoq_qtensor_scale(&c, &q, 0), m = agoq_qtensor_zero(&c, &q, 0);
        if (t->kind == AGOQ_CODE_INT_ASYM) {
            CHECK(s == 7.75f / t->qmax && m == -4.0f); /* finite elements only: max 3.75 */
            CHECK(y[3] == m);                          /* NaN -> code 0 (the block minimum) */
            CHECK(y[7] == m && fabsf(y[5] - (m + t->qmax * s)) <= 1e-6f);
        } else {
            CHECK_MSG(s == 4.0f / t->qmax, "%s: scale %g", t->name, s); /* |-4| is the finite absmax */
            CHECK_MSG(y[3] == 0.0f, "%s: NaN gave %g", t->name, y[3]);
            float neg = f == AGOQ_FMT_DYN8 ? -agoq_table(AGOQ_FMT_DYN8)->sorted[0] : 1.0f;
            CHECK_MSG(y[5] >= 4.0f * (1 - 1e-6f) && fabsf(y[7] + neg * y[5]) <= 1e-6f, "%s: Inf gave %g/%g", t->name, y[5], y[7]);
        }
        for (int i = 0; i < 32; i++) CHECK(isfinite(y[i]));
        free(y);
        agoq_qtensor_free(&q);
    }
}

TEST(denormal_inputs_stay_finite_and_bounded) {
    float x[128];
    for (int i = 0; i < 128; i++) x[i] = (float)(i - 64) * 1e-40f; /* all subnormal */
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        agoq_qconfig c = agoq_qconfig_default((agoq_format)f);
        c.block = 128;
        agoq_qtensor q;
        float *y = roundtrip(&c, x, 128, &q);
        for (int i = 0; i < 128; i++) {
            CHECK(isfinite(y[i]));
            CHECK_MSG(fabsf(y[i] - x[i]) <= 6.4e-39f, "%s: %g vs %g", agoq_formats[f].name, y[i], x[i]);
        }
        free(y);
        agoq_qtensor_free(&q);
    }
}

TEST(odd_sizes_and_tails) {
    static const size_t sizes[] = {1, 2, 3, 5, 7, 31, 33, 127, 129, 255, 257, 511, 1023};
    float x[1024], y[1025];
    agoq_fill(AGOQ_DIST_UNIFORM, x, 1024, 5);
    for (int f = 0; f < AGOQ_FMT_COUNT; f++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            agoq_qconfig c = agoq_qconfig_default((agoq_format)f);
            agoq_qtensor q;
            CHECK(agoq_qtensor_alloc(&q, &c, n) == 0);
            memset(q.codes, 0xff, agoq_codes_bytes(&c, n)); /* poison: quantize must rewrite */
            agoq_quantize_ref(&c, x, n, &q);
            y[n] = 12345.0f;
            agoq_dequantize_ref(&c, &q, y);
            CHECK(y[n] == 12345.0f); /* nothing written past n */
            /* padding codes of the last block are 0 */
            size_t cb = agoq_block_code_bytes(&c), nb = agoq_nblocks(&c, n), used = n - (nb - 1) * (size_t)c.block;
            const uint8_t *last = q.codes + (nb - 1) * cb;
            for (size_t i = used; i < (size_t)c.block; i++) CHECK(agoq_get_code(last, (int)i, agoq_formats[f].bits) == 0);
            agoq_error_stats e = agoq_compare(x, y, n);
            CHECK_MSG(e.nonfinite == 0 && e.max_abs <= 1.0, "%s n=%zu", agoq_formats[f].name, n);
            agoq_qtensor_free(&q);
        }
}

TEST(bf16_input_and_output_paths) {
    enum { N = 1000 };
    float x[N], y[N];
    uint16_t xh[N], yh[N];
    agoq_fill(AGOQ_DIST_NORMAL, x, N, 9);
    for (int i = 0; i < N; i++) {
        xh[i] = agoq_f32_to_bf16(x[i]);
        x[i] = agoq_bf16_to_f32(xh[i]); /* exactly representable in both */
    }
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        agoq_qconfig c = agoq_qconfig_default((agoq_format)f);
        agoq_qtensor a, b;
        CHECK(agoq_qtensor_alloc(&a, &c, N) == 0 && agoq_qtensor_alloc(&b, &c, N) == 0);
        agoq_quantize_ref(&c, x, N, &a);
        agoq_quantize_bf16_ref(&c, xh, N, &b);
        CHECK(agoq_validate_bytes("codes", a.codes, b.codes, agoq_codes_bytes(&c, N)) == 0);
        CHECK(memcmp(a.scales, b.scales, agoq_scales_bytes(&c, N)) == 0);
        agoq_dequantize_ref(&c, &a, y);
        agoq_dequantize_bf16_ref(&c, &a, yh);
        for (int i = 0; i < N; i++) CHECK(yh[i] == agoq_f32_to_bf16(y[i]));
        agoq_qtensor_free(&a);
        agoq_qtensor_free(&b);
    }
}

TEST(stochastic_rounding_seeded_and_unbiased) {
    enum { N = 256, TRIALS = 400 };
    float x[N], y[N];
    double mean[N] = {0};
    agoq_fill(AGOQ_DIST_NORMAL, x, N, 21);
    int fmts[] = {AGOQ_FMT_INT4, AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT3_ASYM, AGOQ_FMT_FP8_E4M3};
    for (size_t k = 0; k < 4; k++) {
        agoq_qconfig c = agoq_qconfig_default((agoq_format)fmts[k]);
        c.rounding = AGOQ_ROUND_STOCHASTIC;
        memset(mean, 0, sizeof mean);
        float first[N];
        c.seed = 1;
        agoq_fake_quant_ref(&c, x, N, first);
        agoq_fake_quant_ref(&c, x, N, y);
        CHECK(memcmp(first, y, sizeof y) == 0); /* same seed, same result */
        int differ = 0;
        for (int t = 0; t < TRIALS; t++) {
            c.seed = 1000 + (uint64_t)t;
            agoq_fake_quant_ref(&c, x, N, y);
            for (int i = 0; i < N; i++) {
                mean[i] += y[i] / TRIALS;
                differ |= y[i] != first[i];
            }
        }
        CHECK(differ);
        /* E[y] = x: the error of the mean is ~ step/sqrt(TRIALS); allow 5 sigma of a uniform step */
        agoq_qconfig cn = c;
        cn.rounding = AGOQ_ROUND_NEAREST;
        agoq_qtensor q;
        float *yn = roundtrip(&cn, x, N, &q);
        for (int i = 0; i < N; i++) {
            float s = agoq_qtensor_scale(&cn, &q, (size_t)i / (size_t)cn.block);
            double step = s; /* gap between the two neighbours of x/s, in x units */
            const agoq_code_table *tab = agoq_table(c.fmt);
            if (tab) {
                float v = x[i] * agoq_inv_scale(s);
                for (int j = 0; j + 1 < tab->nsorted; j++)
                    if (tab->sorted[j] <= v && v <= tab->sorted[j + 1]) step = (tab->sorted[j + 1] - tab->sorted[j]) * s;
            }
            CHECK_MSG(fabs(mean[i] - x[i]) <= 5.0 * step * 0.5 / sqrt((double)TRIALS) + 1e-6,
                      "%s element %d: mean %g vs %g", agoq_formats[c.fmt].name, i, mean[i], x[i]);
        }
        free(yn);
        agoq_qtensor_free(&q);
    }
}

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

TEST(cpu_int4_quantize_is_fast_enough) {
#if defined(__SANITIZE_ADDRESS__)
    SKIP("sanitizer build: not timed");
#endif
    /* Target: 64M floats to int4 in < 1 s on one core at -O2. Timed on 16M, best of 2, in this
     * thread's CPU time so other processes on a shared machine do not make the test flaky. */
    size_t n = (size_t)16 << 20;
    float *x = malloc(n * sizeof(float));
    agoq_fill(AGOQ_DIST_NORMAL, x, n, 1);
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_INT4);
    agoq_qtensor q;
    CHECK(agoq_qtensor_alloc(&q, &c, n) == 0);
    double best = 1e9;
    for (int r = 0; r < 2; r++) {
        double t0 = thread_cpu_s();
        agoq_quantize_ref(&c, x, n, &q);
        double dt = thread_cpu_s() - t0;
        if (dt < best) best = dt;
    }
    printf("    int4 quantize: %.1f M elements/s (64M in %.2f s)\n", n / best / 1e6, 4 * best);
    CHECK(4 * best < 1.0);
    free(x);
    agoq_qtensor_free(&q);
}
