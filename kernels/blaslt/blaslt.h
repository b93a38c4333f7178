/* The GEMMs of a decoder layer through cuBLASLt: bf16 inputs, fp32 accumulation, tensor cores.
 * Row-major names (what the layer code thinks in); the wrapper maps them onto cuBLASLt's
 * column-major API. X [M, K] activations (M tokens), W [N, K] a weight (out x in, as
 * nn.Linear stores it), Y [M, N].
 *   fwd    Y  = X W^T (+ R)              bf16 out; R (bf16 [M, N], may alias nothing) optional:
 *                                        the residual add fused in the epilogue (beta = 1)
 *   dgrad  dX = dY W (+ R)               bf16 out; R optional (e.g. the residual's gradient)
 *   wgrad  dW = dY^T X (+ dW)            fp32 out (main gradient, accumulate = 1 adds to it, as
 *                                        Megatron's gradient-accumulation fusion) or bf16 out
 * Plans (matmul descriptor, layouts, heuristic algo) are cached per (op, M, N, K, out dtype,
 * R / accumulate, pointer alignment), so a step re-uses them and a repeated call does no
 * heuristic work (agoq_lt_plan_count). The workspace is the caller's device memory (32 MiB is
 * what cuBLAS uses on Hopper); the heuristic is limited to it. One handle is not thread-safe.
 * R must not overlap the output (checked: -1). In place (R == Y) is refused because cuBLASLt's
 * aligned (TMA) kernels gave results a few bf16 ulps off with C == D in bf16 on the H200
 * (results/h200/logs/step_kernels.log, first run); wgrad's fp32 accumulate (C == D) is fine.
 * Any M, N, K >= 1 (odd sizes run on cuBLASLt's unaligned kernels); 16-byte aligned pointers and
 * dimensions that are multiples of 8 get the fast (TMA) kernels.
 * Entry points return 0, or -1 after printing one line for a bad argument or when the heuristic
 * offers no algorithm; a failing cuBLASLt call exits through cublasCheck. CUDA builds only
 * (blaslt.cu). Reference: agoq_linear_ref (blaslt_ref.c), double accumulation of the bf16 inputs. */
#ifndef AGOQ_BLASLT_H
#define AGOQ_BLASLT_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct agoq_lt agoq_lt;
enum { AGOQ_LT_FWD = 0, AGOQ_LT_DGRAD = 1, AGOQ_LT_WGRAD = 2 };

int agoq_lt_create(void *workspace, size_t workspace_bytes, agoq_lt **out);
void agoq_lt_destroy(agoq_lt *lt);

int agoq_lt_fwd(agoq_lt *lt, int M, int N, int K, const uint16_t *X, const uint16_t *W, const uint16_t *R,
                uint16_t *Y, void *stream);
int agoq_lt_dgrad(agoq_lt *lt, int M, int N, int K, const uint16_t *dY, const uint16_t *W, const uint16_t *R,
                  uint16_t *dX, void *stream);
/* dW_f32 != NULL: fp32 out (accumulate 0/1); else dW_bf16 (accumulate must be 0). */
int agoq_lt_wgrad(agoq_lt *lt, int M, int N, int K, const uint16_t *dY, const uint16_t *X, int accumulate,
                  float *dW_f32, uint16_t *dW_bf16, void *stream);

/* Plans in the cache (a test checks that repeated calls add none). */
int agoq_lt_plan_count(const agoq_lt *lt);
/* Timing (CUDA events on the given stream): warmup calls, then reps timed calls one by one;
 * *median_ms = their median. fwd and dgrad write bf16 without R, wgrad accumulates into fp32
 * (accumulate = 1, the training path). A, B, out as the op's (dY/X, W/X, ...) operands. */
int agoq_lt_time(agoq_lt *lt, int op, int M, int N, int K, const uint16_t *A, const uint16_t *B, void *out,
                 int warmup, int reps, float *median_ms, void *stream);

/* Host reference of the three ops (op 0 fwd, 1 dgrad, 2 wgrad), fp32 out:
 *   fwd    A = X [M, K],  B = W [N, K]:  out [M, N] = A B^T (+ acc_in)   acc_in = R as fp32
 *   dgrad  A = dY [M, N], B = W [N, K]:  out [M, K] = A B   (+ acc_in)   acc_in = R as fp32
 *   wgrad  A = dY [M, N], B = X [M, K]:  out [N, K] = A^T B (+ acc_in)   acc_in = dW before
 * acc_in may be NULL (nothing added) or equal out. The sum (and the add) in double, one rounding
 * to fp32. */
void agoq_linear_ref(int op, int M, int N, int K, const uint16_t *A, const uint16_t *B, const float *acc_in,
                     float *out);

#ifdef __cplusplus
}
#endif
#endif
