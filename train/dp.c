/* Data-parallel gradient reduction; see dp.h. */
#include "train/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common.h"
#include "kernels/grad8.h"
#include "kernels/quant_math.h"
#include "kernels/quant_ref.h"

const char *const train_grad_mode_names[GRAD_MODE_COUNT] = {"fp32", "agoq8", "fp8lm"};

int train_grad_mode_by_name(const char *name) {
    for (int i = 0; i < GRAD_MODE_COUNT; i++)
        if (strcmp(name, train_grad_mode_names[i]) == 0) return i;
    return -1;
}

int train_reducer_init(train_reducer *r, train_grad_mode mode, const agoq_qconfig *q, int ranks, size_t max_n) {
    memset(r, 0, sizeof *r);
    AGOQ_REQUIRE(ranks >= 1 && ranks <= TRAIN_MAX_RANKS, "train: ranks %d must be in [1, %d]", ranks, TRAIN_MAX_RANKS);
    r->mode = mode;
    r->ranks = ranks;
    r->cap = max_n;
    if (mode != GRAD_AGOQ8) return 0;
    r->q = *q;
    if (agoq_qconfig_check(q)) return -1;
    r->in = calloc((size_t)ranks, sizeof *r->in);
    if (!r->in || agoq_qtensor_alloc(&r->out, q, max_n)) return -1;
    for (int i = 0; i < ranks; i++)
        if (agoq_qtensor_alloc(&r->in[i], q, max_n)) return -1;
    return 0;
}

void train_reducer_free(train_reducer *r) {
    if (r->in)
        for (int i = 0; i < r->ranks; i++) agoq_qtensor_free(&r->in[i]);
    free(r->in);
    if (r->mode == GRAD_AGOQ8) agoq_qtensor_free(&r->out);
    memset(r, 0, sizeof *r);
}

static float fp8_e4m3_round(float x) { return agoq_fp8_decode(agoq_fp8_encode_rne(x, 0), 0); }

static void reduce_fp8lm(int ranks, const float *const *g, size_t n, float *mean) {
    float amax = 0.0f;
    for (int k = 0; k < ranks; k++)
        for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(g[k][i]));
    if (amax == 0.0f) {
        memset(mean, 0, n * sizeof(float));
        return;
    }
    float s = amax * (float)ranks / 448.0f, inv = 1.0f / s, out_scale = s / (float)ranks;
    for (size_t i = 0; i < n; i++) {
        float acc = fp8_e4m3_round(g[0][i] * inv);
        for (int k = 1; k < ranks; k++) acc = fp8_e4m3_round(acc + fp8_e4m3_round(g[k][i] * inv));
        mean[i] = acc * out_scale;
    }
}

void train_reduce_mean(train_reducer *r, const float *const *g, size_t n, float *mean) {
    const float inv_r = 1.0f / (float)r->ranks;
    switch (r->mode) {
    case GRAD_FP32:
        for (size_t i = 0; i < n; i++) {
            float acc = g[0][i];
            for (int k = 1; k < r->ranks; k++) acc += g[k][i];
            mean[i] = acc * inv_r;
        }
        break;
    case GRAD_AGOQ8: {
        const agoq_qtensor *in[TRAIN_MAX_RANKS];
        for (int k = 0; k < r->ranks; k++) {
            r->in[k].n = n;
            agoq_quantize_ref(&r->q, g[k], n, &r->in[k]);
            in[k] = &r->in[k];
        }
        r->out.n = n;
        agoq_grad_reduce_ref(&r->q, in, r->ranks, n, AGOQ_SUM_FP32, &r->out, NULL);
        agoq_dequantize_ref(&r->q, &r->out, mean);
        for (size_t i = 0; i < n; i++) mean[i] *= inv_r;
        break;
    }
    case GRAD_FP8LM: reduce_fp8lm(r->ranks, g, n, mean); break;
    default: break;
    }
}
