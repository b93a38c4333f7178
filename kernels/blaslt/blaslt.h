/* The GEMMs of a decoder layer through cuBLASLt: bf16 inputs, fp32 accumulation, tensor cores.
 * Row-major names (what the layer code thinks in); the wrapper maps them onto cuBLASLt's
 * column-major API. X [M, K] activations (M tokens), W [N, K] a weight (out x in, as
 * nn.Linear stores it), Y [M, N].
 *   fwd    Y  = X W^T (+ R)              bf16 out; R (bf16 [M, N], may alias nothing) optional:
 *                                        the residual add fused in the epilogue (beta = 1)
 *   dgrad  dX = dY W (+ R)               bf16 out; R optional (e.g. the residual's gradient)
 *   wgrad  dW = dY^T X (+ dW)            fp32 out (main gradient, accumulate = 1 adds to it, as
 *                                        Megatron's gradient-accumulation fusion) or bf16 out
 * Plans (matmul descriptor, layouts, heuristic algo) are cached per (op, shape, dtypes), so a
 * step re-uses them. The workspace is the caller's device memory (32 MiB is what cuBLAS uses on
 * Hopper). CUDA builds only (blaslt.c); a failing cuBLASLt call exits through cublasCheck.
 * Reference: agoq_linear_ref (blaslt_ref.c), double accumulation of the bf16 inputs. */
#ifndef AGOQ_BLASLT_H
#define AGOQ_BLASLT_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct agoq_lt agoq_lt;

int agoq_lt_create(void *workspace, size_t workspace_bytes, agoq_lt **out);
void agoq_lt_destroy(agoq_lt *lt);

int agoq_lt_fwd(agoq_lt *lt, int M, int N, int K, const uint16_t *X, const uint16_t *W, const uint16_t *R,
                uint16_t *Y, void *stream);
int agoq_lt_dgrad(agoq_lt *lt, int M, int N, int K, const uint16_t *dY, const uint16_t *W, const uint16_t *R,
                  uint16_t *dX, void *stream);
/* dW_f32 != NULL: fp32 out (accumulate 0/1); else dW_bf16 (accumulate must be 0). */
int agoq_lt_wgrad(agoq_lt *lt, int M, int N, int K, const uint16_t *dY, const uint16_t *X, int accumulate,
                  float *dW_f32, uint16_t *dW_bf16, void *stream);

/* Host reference of the three ops (op 0 fwd, 1 dgrad, 2 wgrad), fp32 out, R/acc as above
 * (R may be NULL; for wgrad acc_in may be NULL). */
void agoq_linear_ref(int op, int M, int N, int K, const uint16_t *A, const uint16_t *B, const float *acc_in,
                     float *out);

#ifdef __cplusplus
}
#endif
#endif
