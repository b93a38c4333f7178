/* The CPU training path's operations: every operation of the fp32 reference model (model.c)
 * that touches tensor memory goes through one table of function pointers (the shape of
 * collectives/driver.h's agoq_comm_ops):
 *   cpu   train/ops_cpu.c: host memory, the kernels of layers.c, policy.c's train_act_store,
 *         dp.c's train_reduce_mean, optim.h's AdamW (OpenMP inside layers.c)
 * The GPU path is not a second table: it is the step engine's model (train/engine.h), bf16 with
 * real activation storage; train_dev_open(cuda) refuses with one line. The trainer runs the
 * all-reduce and clipping on this table's host memory for both models (the quantized
 * all-reduces themselves on the collectives backend reduce_init names: cuda-local, on GPU 0,
 * for the engine's model).
 * "Backend memory" is host memory; upload/download are the ways in and out.
 * Shapes as in layers.h: BT = batch * seq rows, C model width, NH heads, F the SwiGLU width,
 * row-major fp32. No output may alias an input unless the entry says so. */
#ifndef AGOQ_TRAIN_OPS_H
#define AGOQ_TRAIN_OPS_H
#include <stddef.h>

#include "core/backend.h"
#include "core/metrics.h"
#include "kernels/quant/formats.h"
#include "train/dp.h"
#include "train/optim.h"
#include "train/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct train_dev train_dev;

typedef struct {
    /* ---- memory ---- */
    void *(*alloc)(train_dev *d, size_t bytes); /* zeroed; NULL when out of memory */
    void (*release)(train_dev *d, void *p);
    void (*upload)(train_dev *d, void *dst, const void *host, size_t bytes);   /* synchronous */
    void (*download)(train_dev *d, void *host, const void *src, size_t bytes); /* synchronous */
    void (*copy)(train_dev *d, void *dst, const void *src, size_t bytes);
    void (*zero)(train_dev *d, void *dst, size_t bytes);

    /* ---- layers ---- */
    /* out (M, N) = op(A) @ op(B), or += when accumulate. op(A) is (M, K): A stored (M, K), or
     * (K, M) when trans_a. op(B) is (K, N): B stored (K, N), or (N, K) when trans_b. */
    void (*matmul)(train_dev *d, float *out, const float *a, int trans_a, const float *b, int trans_b, int m, int k,
                   int n, int accumulate);
    void (*rmsnorm_fwd)(train_dev *d, float *y, const float *x, const float *w, int rows, int c, float eps);
    /* dx overwritten, dw += (rows in order on cpu, in fixed row groups on cuda) */
    void (*rmsnorm_bwd)(train_dev *d, float *dx, float *dw, const float *dy, const float *x, const float *w, int rows,
                        int c, float eps);
    void (*rope)(train_dev *d, float *qkv, int b, int t, int c, int nh, float base, int inverse); /* in place */
    void (*attention_fwd)(train_dev *d, float *y, float *att, const float *qkv, int b, int t, int c, int nh);
    void (*attention_bwd)(train_dev *d, float *dqkv, const float *dy, const float *qkv, const float *att, int b, int t,
                          int c, int nh);
    void (*swiglu_fwd)(train_dev *d, float *s, const float *gu, int rows, int f);
    void (*swiglu_bwd)(train_dev *d, float *dgu, const float *ds, const float *gu, int rows, int f);
    void (*add)(train_dev *d, float *dst, const float *a, const float *b, size_t n); /* dst may be a or b */
    /* out (BT, C) = rows of wte (V, C) by token; tokens in [0, V) (backend memory) */
    void (*embed_fwd)(train_dev *d, float *out, const float *wte, const int *tokens, int bt, int c);
    /* dwte (V, C) += dout rows by token, tokens in ascending order (repeats accumulate) */
    void (*embed_bwd)(train_dev *d, float *dwte, const float *dout, const int *tokens, int bt, int c, int v);
    /* layers.h's tr_cross_entropy: mean loss over rows; dlogits may alias logits */
    double (*cross_entropy)(train_dev *d, float *dlogits, const float *logits, const int *targets, int rows, int v,
                            float dscale);

    /* ---- the saved-activation hook (policy.h's train_act_store; dst may equal src) ---- */
    void (*act_store)(train_dev *d, const agoq_store *st, const float *src, size_t rows, size_t cols, float *dst);

    /* ---- data parallel (dp.h) ---- */
    /* Sets the all-reduce of reduce_mean: mode, agoq8 format, rank count, largest tensor, and the
     * collectives backend of the quantized modes (dp.h's train_reducer_init). 0 or -1. */
    int (*reduce_init)(train_dev *d, train_grad_mode mode, const agoq_qconfig *q, int ranks, size_t max_n,
                       const char *coll_backend);
    /* mean (n) = the mean of g[0 .. ranks-1] as the mode delivers it (g: host array of backend pointers) */
    void (*reduce_mean)(train_dev *d, const float *const *g, size_t n, float *mean);
    /* the exact mean: fp32 sum in rank order, times 1/R (dp.h's fp32 mode) */
    void (*mean_fp32)(train_dev *d, const float *const *g, int ranks, size_t n, float *mean);

    /* ---- optimizer (optim.h) ---- */
    void (*adam)(train_dev *d, const train_adam_hyper *h, float *p, const float *g, float *m, float *v, size_t n);
    double (*sumsq)(train_dev *d, const float *x, size_t n); /* sum of x^2 in double */
    void (*scale)(train_dev *d, float *x, size_t n, float s);
    /* core/metrics.h's agoq_compare of two backend tensors */
    agoq_error_stats (*compare)(train_dev *d, const float *ref, const float *approx, size_t n);
} train_ops;

struct train_dev {
    const train_ops *ops;
    agoq_backend kind;
    void *impl; /* backend state: scratch, cuBLAS handle, the reducer */
};

/* The backend of `kind`; NULL with a one-line message when it cannot be used (cuda in a
 * CUDA=0 build or without a visible GPU). */
train_dev *train_dev_open(agoq_backend kind);
void train_dev_close(train_dev *d);
/* 1 when every entry of the table is set (train_dev_open refuses an incomplete table). */
int train_ops_complete(const train_ops *o);

#ifdef __cplusplus
}
#endif
#endif
