/* CPU building blocks of the training path (llm.c style): fp32 tensors, row-major.
 * Every reduction has one fixed order, independent of the OpenMP thread count (threads own
 * whole output rows), so a run is bit-reproducible on any machine with IEEE floats and the
 * Makefile's -ffp-contract=off.
 * Scratch is malloc'd per call where a kernel needs it (row statistics).
 * Shapes: BT = batch * seq rows; C model width; NH heads of HD = C / NH; F the SwiGLU width. */
#ifndef AGOQ_TRAIN_LAYERS_H
#define AGOQ_TRAIN_LAYERS_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out (M, N) = A (M, K) @ B (K, N), or += when accumulate. Element (i, j) sums k in
 * ascending order, whatever the blocking or threading. */
void tr_matmul(float *out, const float *a, const float *b, int m, int k, int n, int accumulate);
/* dst (cols, rows) = src (rows, cols)^T */
void tr_transpose(float *dst, const float *src, int rows, int cols);

/* RMSNorm over rows of C: y = (x * rstd) * w (fused_math.h's scalar pieces). */
void tr_rmsnorm_fwd(float *y, const float *x, const float *w, int rows, int c, float eps);
/* dx = d/dx (overwrites), dw += sum over rows (rows in order). */
void tr_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *w, int rows, int c,
                    float eps);

/* Rotary embedding in place on the q and k thirds of qkv (BT, 3C): pair (2i, 2i+1) of each
 * head rotated by t * base^(-2i/HD). inverse = 1 rotates back (the backward of the forward). */
void tr_rope(float *qkv, int b, int t, int c, int nh, float base, int inverse);
/* cos and sin of pair i at position pos: angle pos * base^(-2i/hd) in double, each rounded to
 * float. The one definition of the angles: tr_rope and the CUDA backend's table use it. */
void tr_rope_cs(int pos, int i, int hd, float base, float *cs, float *sn);

/* Causal softmax attention. qkv (B, T, 3C) = [q | k | v]; att (B, NH, T, T) the probabilities
 * (upper triangle zero); y (B, T, C). */
void tr_attention_fwd(float *y, float *att, const float *qkv, int b, int t, int c, int nh);
/* dqkv (B, T, 3C) overwritten, from dy, the saved qkv and probabilities. */
void tr_attention_bwd(float *dqkv, const float *dy, const float *qkv, const float *att, int b, int t, int c,
                      int nh);

/* SwiGLU: gu (rows, 2F) = [gate | up], s (rows, F) = silu(gate) * up. */
void tr_swiglu_fwd(float *s, const float *gu, int rows, int f);
void tr_swiglu_bwd(float *dgu, const float *ds, const float *gu, int rows, int f);

/* Softmax cross-entropy over V logits per row: returns the mean loss over rows (summed in
 * double, rows in order); dlogits (may alias logits) = (softmax - onehot) * dscale. */
double tr_cross_entropy(float *dlogits, const float *logits, const int *targets, int rows, int v, float dscale);

/* OpenMP threads the kernels use (1 when built without OpenMP). */
int tr_threads(void);

#ifdef __cplusplus
}
#endif
#endif
