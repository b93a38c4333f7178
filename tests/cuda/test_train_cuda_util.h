/* Shared pieces of the CUDA training tests (test_train_cuda_ops.c, test_train_cuda.c): the
 * two backends side by side, host <-> backend copies, seeded inputs and the comparisons.
 * Header-only (static) so each test file stays self-contained. */
#ifndef AGOQ_TEST_TRAIN_CUDA_UTIL_H
#define AGOQ_TEST_TRAIN_CUDA_UTIL_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/rng.h"
#include "tests/test.h"
#include "train/ops.h"

/* devs[0] = cpu (the reference), devs[1] = cuda */
typedef struct {
    train_dev *d[2];
} tt_pair;

static inline int tt_open(tt_pair *p) {
    p->d[0] = train_dev_open(AGOQ_BACKEND_CPU);
    p->d[1] = train_dev_open(AGOQ_BACKEND_CUDA);
    return p->d[0] && p->d[1] ? 0 : -1;
}
static inline void tt_close(tt_pair *p) {
    train_dev_close(p->d[0]);
    train_dev_close(p->d[1]);
}

/* N(0, 1) * scale, seeded */
static inline float *tt_normal(size_t n, uint64_t seed, float scale) {
    float *x = (float *)malloc((n ? n : 1) * sizeof(float));
    agoq_fill(AGOQ_DIST_NORMAL, x, n, seed);
    for (size_t i = 0; i < n; i++) x[i] *= scale;
    return x;
}
/* backend copy of a host array (bytes) */
static inline void *tt_up(train_dev *d, const void *h, size_t bytes) {
    void *p = d->ops->alloc(d, bytes);
    d->ops->upload(d, p, h, bytes);
    return p;
}
/* host copy of n floats of backend memory, then the backend buffer released */
static inline float *tt_down_free(train_dev *d, float *p, size_t n) {
    float *h = (float *)malloc((n ? n : 1) * sizeof(float));
    d->ops->download(d, h, p, n * sizeof(float));
    d->ops->release(d, p);
    return h;
}

static inline double tt_rel_l2(const float *ref, const float *got, size_t n) {
    agoq_error_stats e = agoq_compare(ref, got, n);
    return e.nonfinite ? INFINITY : agoq_norm_l2(&e);
}
/* relative L2 of got vs ref within tol (printed), else a failure line naming what */
static inline int tt_close_enough(const char *what, const float *ref, const float *got, size_t n, double tol) {
    double e = tt_rel_l2(ref, got, n);
    printf("    %-40s rel L2 %.3e (tol %.0e)\n", what, e, tol);
    if (!(e <= tol)) {
        fprintf(stderr, "    %s: relative L2 %.3e above %.0e\n", what, e, tol);
        return 0;
    }
    return 1;
}
#endif
