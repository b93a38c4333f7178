/* CPU tests of the 8-bit gradient reduction reference (kernels/grad8/grad8_ref.c): the trainer's
 * agoq8 all-reduce (train/dp.h) is exactly agoq_grad_reduce_ref's dequantize + fp32 sum +
 * requantize. Its GPU twin is tests/cuda/grad8/test_grad8_cuda.c. */
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
