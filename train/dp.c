/* Data-parallel gradient reduction; see dp.h. */
#include "train/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/collectives.h"
#include "core/common.h"

const char *const train_grad_mode_names[GRAD_MODE_COUNT] = {"fp32", "agoq8", "fp8lm"};

int train_grad_mode_by_name(const char *name) {
    for (int i = 0; i < GRAD_MODE_COUNT; i++)
        if (strcmp(name, train_grad_mode_names[i]) == 0) return i;
    return -1;
}

int train_reducer_check(train_grad_mode mode, const agoq_qconfig *q, int ranks, agoq_qconfig *wire) {
    AGOQ_REQUIRE(ranks >= 1 && ranks <= TRAIN_MAX_RANKS, "train: ranks %d must be in [1, %d]", ranks, TRAIN_MAX_RANKS);
    AGOQ_REQUIRE((int)mode >= 0 && (int)mode < GRAD_MODE_COUNT, "train: gradient mode %d unknown", (int)mode);
    memset(wire, 0, sizeof *wire);
    if (mode == GRAD_FP32) return 0;
    if (mode == GRAD_AGOQ8) {
        AGOQ_REQUIRE(q != NULL, "train: agoq8 needs a wire format");
        if (agoq_qconfig_check(q)) return -1;
        *wire = *q;
    } else {
        *wire = agoq_qconfig_default(AGOQ_FMT_FP8_E4M3); /* FP8-LM's wire format; its scale is per tensor */
    }
    /* reject a wire format the collective does not take now, not in the middle of training */
    agoq_coll_config cc = agoq_coll_config_default(mode == GRAD_AGOQ8 ? AGOQ_ALGO_AGOQ : AGOQ_ALGO_FP8LM, AGOQ_COLL_ALLREDUCE);
    cc.q = *wire;
    return agoq_coll_config_check(&cc, ranks);
}

int train_reducer_init(train_reducer *r, train_grad_mode mode, const agoq_qconfig *q, int ranks, size_t max_n,
                       const char *backend) {
    memset(r, 0, sizeof *r);
    if (train_reducer_check(mode, q, ranks, &r->q)) return -1;
    r->mode = mode;
    r->ranks = ranks;
    r->cap = max_n;
    if (mode == GRAD_FP32) return 0;
    if (!(r->comm = agoq_sim_comm_open(backend, ranks))) return -1;
    r->bufs = malloc(max_n * sizeof(float));
    return r->bufs ? 0 : -1;
}

void train_reducer_free(train_reducer *r) {
    free(r->bufs);
    if (r->comm) agoq_sim_comm_close(r->comm);
    memset(r, 0, sizeof *r);
}

void train_reduce_mean(train_reducer *r, const float *const *g, size_t n, float *mean) {
    const float inv_r = 1.0f / (float)r->ranks;
    switch (r->mode) {
    case GRAD_FP32: train_mean_fp32(g, r->ranks, n, mean); break;
    case GRAD_AGOQ8:
    case GRAD_FP8LM: { /* the collectives module's simulated-rank all-reduce; rank 0's result back */
        float *out[TRAIN_MAX_RANKS] = {r->bufs};
        if (agoq_sim_allreduce_on(r->comm, r->mode == GRAD_AGOQ8 ? "agoq" : "fp8lm", &r->q, 0, g, out, n) != 0)
            abort(); /* the configuration was checked at init: only running out of memory gets here */
#pragma omp parallel for schedule(static) if (n >= (size_t)1 << 16)
        for (size_t i = 0; i < n; i++) mean[i] = r->bufs[i] * inv_r;
        break;
    }
    default: break;
    }
}

/* Elements are independent and each keeps the rank order of its sum, so the threads (OpenMP,
 * as in layers.c) change no bit of the mean. */
void train_mean_fp32(const float *const *g, int ranks, size_t n, float *mean) {
    const float inv_r = 1.0f / (float)ranks;
#pragma omp parallel for schedule(static) if (n >= (size_t)1 << 16)
    for (size_t i = 0; i < n; i++) {
        float acc = g[0][i];
        for (int k = 1; k < ranks; k++) acc += g[k][i];
        mean[i] = acc * inv_r;
    }
}
