/* Tensor-core GEMM of agoq-bench with AGoQ's quantization fused in (the paper's "quantization
 * fused into the GEMM that produces the activation, dequantization into the GEMM that reads
 * it"), and a cuBLAS baseline.
 *
 *   C[M, N] = A[M, K] * B[N, K]^T      bf16 in, fp32 accumulate, bf16 out, all row-major
 *   (B is a weight in nn.Linear layout [out, in]; e.g. FC1: A = x [tokens, hidden],
 *    B = W1 [2*ffn, hidden], C = h [tokens, 2*ffn]).
 *
 * agoq_gemm_cuda with q != NULL also writes the row-blocked quantized copy (fused.h) of its own
 * bf16 output C, so the copy equals agoq_rowq_quantize_ref(C) bit for bit. agoq_gemm_deqa_cuda
 * reads A as a rowq tensor [M, K] (4- or 8-bit codes + scales), dequantizes each tile in shared
 * memory to bf16 (exactly agoq_rowq_dequantize_ref then bf16 rounding) and multiplies it; its
 * result equals agoq_gemm_cuda on that bf16 A bit for bit (same tiles, same mma order).
 *
 * Kernel: mma.sync m16n8k16 (sm_80+ instruction, run on sm_90), CTA tile 128x128x32, 8 warps of
 * 64x32, 4-stage cp.async pipeline, XOR-swizzled shared memory read with ldmatrix. Shapes:
 * M % 128 == 0, N % 128 == 0, K % 32 == 0; fused epilogue: 128 % block == 0; fused prologue:
 * 4- or 8-bit format with K % block == 0. gemm_ref.c is the float64 reference (small shapes). */
#ifndef AGOQ_GEMM_H
#define AGOQ_GEMM_H
#include <stdint.h>

#include "kernels/fused/fused.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGOQ_GEMM_TILE_M 128
#define AGOQ_GEMM_TILE_N 128
#define AGOQ_GEMM_TILE_K 32

/* float64 accumulation of bf16 inputs; abs_out[i] = sum |a||b| (for error bounds), may be NULL. */
void agoq_gemm_ref(const uint16_t *a, const uint16_t *b, int m, int n, int k, double *c, double *abs_out);

/* 0 if the shape (and the fused format, when given) is supported, else -1 naming the reason. */
int agoq_gemm_check(int m, int n, int k, const agoq_qconfig *epilogue_q, const agoq_qconfig *prologue_q);
int agoq_gemm_cuda(const agoq_fq *q, const uint16_t *a, const uint16_t *b, int m, int n, int k, uint16_t *c,
                   agoq_dqt cq, void *stream);
int agoq_gemm_deqa_cuda(const agoq_fq *qa, agoq_dqt aq, const uint16_t *b, int m, int n, int k, uint16_t *c,
                        void *stream);
/* cuBLAS bf16 GEMM of the same layout (cublasGemmEx, fp32 compute); handle from agoq_cublas_create. */
void *agoq_cublas_create(void);
void agoq_cublas_destroy(void *handle);
int agoq_cublas_gemm(void *handle, const uint16_t *a, const uint16_t *b, int m, int n, int k, uint16_t *c, void *stream);

#ifdef __cplusplus
}
#endif
#endif
