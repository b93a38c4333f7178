/* CPU tests of the 8-bit gradient reduction reference (kernels/grad8/grad8_ref.c): the trainer's
 * agoq8 all-reduce (train/dp.h) is exactly agoq_grad_reduce_ref's dequantize + fp32 sum +
 * requantize. Its GPU twin is tests/cuda/grad8/test_grad8_cuda.c. */
#include <math.h>
#include <stdlib.h>

#include "core/metrics.h"
#include "core/rng.h"
#include "kernels/grad8/grad8.h"
#include "kernels/quant/quant_ref.h"
#include "tests/test.h"
#include "train/dp.h"

/* The agoq8 path (the collectives module's simulated all-reduce) is the AGoQ reduce math
 * exactly: quantize every rank's gradient, kernels/grad8/grad8.h's dequantize + fp32 sum +
 * requantize, dequantize, times 1/R. Sizes that do not fill the last block or shard. */
TEST(train_grad_reduce_agoq8_is_the_grad8_reference) {
    enum { R = 3, B = 256 };
    const size_t sizes[] = {1, 255, 1000, 3 * 256 + 7};
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_INT8);
    q.block = B;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        float *g[R], *mean = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
        agoq_qtensor in[R], out;
        const agoq_qtensor *inp[R];
        for (int k = 0; k < R; k++) {
            g[k] = malloc(n * sizeof(float));
            agoq_fill(AGOQ_DIST_NORMAL, g[k], n, 60 + (uint64_t)k);
            CHECK(agoq_qtensor_alloc(&in[k], &q, n) == 0);
            agoq_quantize_ref(&q, g[k], n, &in[k]);
            inp[k] = &in[k];
        }
        CHECK(agoq_qtensor_alloc(&out, &q, n) == 0);
        agoq_grad_reduce_ref(&q, inp, R, n, AGOQ_SUM_FP32, &out, NULL);
        agoq_dequantize_ref(&q, &out, want);
        for (size_t i = 0; i < n; i++) want[i] *= 1.0f / R;
        train_reducer r;
        CHECK(train_reducer_init(&r, GRAD_AGOQ8, &q, R, n, "cpu") == 0);
        train_reduce_mean(&r, (const float *const *)g, n, mean);
        CHECK_MSG(agoq_validate_floats("agoq8 mean", want, mean, n) == 0, "n = %zu", n);
        train_reducer_free(&r);
        agoq_qtensor_free(&out);
        for (int k = 0; k < R; k++) {
            agoq_qtensor_free(&in[k]);
            free(g[k]);
        }
        free(mean);
        free(want);
    }
}

/* The reduce's step (grad8.h agoq_dequant_add, twenty-fourth session): each chunk's value is
 * added with its scale in one fused multiply-add; the asymmetric format's zero points are summed
 * apart and added at the end (agoq_reduce_zeros_apart, twenty-fifth session). Its fp32 sum is
 * within the fp32 bound of the exact (double) sum of the dequantized values: every rounding is at
 * most 2^-24 of the exact magnitude it rounds (the chain of scaled values, the chain of zero
 * points, the final add), taken as 2^-23 of their sum for the slack of rounded partials. It is
 * NOT the sum of separately rounded values everywhere (the test fails if the reference goes back
 * to dequantize, round, add), and for int8_asym not the zero point added at every step either
 * (it fails if the reference goes back to fmaf(v, s, x + m)). int8, its asymmetric form, FP8
 * E4M3, dyn8. */
TEST(grad_reduce_ref_fuses_the_scale_into_the_add) {
    enum { NIN = 4 };
    const size_t n = 3 * 128 + 77;
    const agoq_format fmts[] = {AGOQ_FMT_INT8, AGOQ_FMT_INT8_ASYM, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8};
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
        agoq_qconfig q = agoq_qconfig_default(fmts[fi]);
        q.block = 128;
        agoq_qtensor in[NIN], out;
        const agoq_qtensor *inp[NIN];
        float *x = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float)), *sum = malloc(n * sizeof(float));
        float *plain = calloc(n, sizeof(float)), *step = calloc(n, sizeof(float));
        double *et = calloc(n, sizeof(double)), *em = calloc(n, sizeof(double)), *mag = calloc(n, sizeof(double));
        for (int k = 0; k < NIN; k++) {
            agoq_fill(AGOQ_DIST_NORMAL, x, n, 90 + (uint64_t)k);
            CHECK(agoq_qtensor_alloc(&in[k], &q, n) == 0);
            agoq_quantize_ref(&q, x, n, &in[k]);
            inp[k] = &in[k];
            for (size_t b = 0; b < agoq_nblocks(&q, n); b++) { /* the dequantized values, exactly */
                const float sf = agoq_qtensor_scale(&q, &in[k], b), mf = agoq_qtensor_zero(&q, &in[k], b);
                const double s = sf, m = mf;
                for (size_t i = b * 128; i < n && i < (b + 1) * 128; i++) {
                    const uint32_t c = agoq_get_code(in[k].codes + b * agoq_block_code_bytes(&q), (int)(i - b * 128), 8);
                    const float v = agoq_decode_ref(&q, c, 1.0f, 0.0f);
                    const double t = (double)v * s;
                    mag[i] += fabs(et[i] + t) + fabs(em[i] + m); /* what each step's roundings round */
                    et[i] += t;
                    em[i] += m;
                    step[i] = fmaf(v, sf, step[i] + mf); /* the zero point added at every step */
                }
            }
            agoq_dequantize_ref(&q, &in[k], d);
            for (size_t i = 0; i < n; i++) plain[i] = agoq_sum_step(plain[i], d[i], AGOQ_SUM_FP32);
        }
        CHECK(agoq_qtensor_alloc(&out, &q, n) == 0);
        agoq_grad_reduce_ref(&q, inp, NIN, n, AGOQ_SUM_FP32, &out, sum);
        const int asym = agoq_has_zeros(&q);
        size_t differ = 0, bad = 0, differ_step = 0;
        for (size_t i = 0; i < n; i++) {
            const double exact = et[i] + em[i], bound = ldexp(mag[i] + fabs(exact), -23);
            bad += fabs((double)sum[i] - exact) > bound;
            differ += sum[i] != plain[i];
            differ_step += sum[i] != step[i];
        }
        CHECK_MSG(bad == 0, "%s: %zu of %zu sums outside the fp32 bound", agoq_formats[fmts[fi]].name, bad, n);
        CHECK_MSG(differ > 0, "%s: every fused sum equals the separately rounded one", agoq_formats[fmts[fi]].name);
        CHECK_MSG(!asym || differ_step > 0, "%s: every sum equals the one with the zero point added at every step",
                  agoq_formats[fmts[fi]].name);
        CHECK_MSG(asym || differ_step == 0, "%s: the sum is not one FMA a step", agoq_formats[fmts[fi]].name);
        for (int k = 0; k < NIN; k++) agoq_qtensor_free(&in[k]);
        agoq_qtensor_free(&out);
        free(x); free(d); free(sum); free(plain); free(step); free(et); free(em); free(mag);
    }
}
