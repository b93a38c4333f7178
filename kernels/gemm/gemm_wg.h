/* Hopper (sm_90a) bf16 GEMM: TMA + mbarrier pipeline, warp-specialized wgmma (gemm_wg.cu), with
 * an optional residual add and the block-quantized copy of its output fused into the epilogue.
 *
 *   C[M, N] = sum_k A(m, k) B(n, k) (+ R[M, N])     bf16 in, fp32 accumulate, bf16 out
 *   A stored [M][K] (a_mn = 0, K-major) or [K][M] (a_mn = 1, M-major)
 *   B stored [N][K] (b_mn = 0, K-major) or [K][N] (b_mn = 1, N-major); all row-major
 * The residual is added to the fp32 sum before the single rounding to bf16 (as cuBLASLt's
 * beta = 1 epilogue); R may equal C. With q != NULL the kernel also writes the rowq copy
 * (fused.h: block q->c.block along each row of C) of its own bf16 C, equal bit for bit to
 * agoq_rowq_quantize_ref applied to C.
 * The step engine's three layouts, named as kernels/blaslt/blaslt.h names them:
 *   fwd    Y[M, N] = X[M, K] W[N, K]^T (+ R)    A K-major, B K-major
 *   dgrad  dX[M, K] = dY[M, N] W[N, K] (+ R)    A K-major, B N-major
 *   wgrad  dW[N, K] = dY[M, N]^T X[M, K]        A M-major, B N-major (bf16 out only)
 * Shapes: M, N, K positive multiples of 8 (TMA row pitch), operands 16-byte aligned; any tail of
 * the 128 x 256 x 64 tile is handled (TMA zero-fills, the epilogue masks). Fused epilogue:
 * 8 <= block, block divides 256 and N; FP4 E2M1 / 128, round to nearest (fwd layout; N % 256
 * == 0, or 128 with the default epilogue rows) quantizes with the standalone fast FP4 tile
 * encoder, anything else (or
 * AGOQ_WG_FAST_EPI=0) a block per thread on the general encoders; both bit-exact. Benchmark knobs:
 * AGOQ_WG_GROUP_M=N row tiles per rasterization group (default 8); AGOQ_WG_STAGES=3|4 the ring
 * for every GEMM (default: 4 stages, C staged in halves, for a plain epilogue, 3 with a residual or
 * a quantized copy; bit-exact either way; table encoders stay on 3);
 * AGOQ_WG_TILE_N=128 (or auto: where it fills the last wave better) 128 x 128 tiles (default
 * 256; C within one ulp, the fused copy on the general encoders, its block dividing 128). Entry points return 0, or -1
 * after one line naming the unsupported argument. CUDA builds only; the device must be sm_90
 * (Hopper). */
#ifndef AGOQ_GEMM_WG_H
#define AGOQ_GEMM_WG_H
#include <stdint.h>

#include "kernels/fused/fused.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGOQ_WG_TILE_M 128
#define AGOQ_WG_TILE_N 256

typedef struct {
    int m, n, k;        /* C is m x n, the sum runs over k */
    const uint16_t *a;  /* bf16, [m][k] or (a_mn) [k][m] */
    int a_mn;
    const uint16_t *b;  /* bf16, [n][k] or (b_mn) [k][n] */
    int b_mn;
    const uint16_t *r;  /* bf16 [m][n] residual, or NULL */
    uint16_t *c;        /* bf16 [m][n] */
    const agoq_fq *q;   /* quantized copy of C, or NULL */
    agoq_dqt cq;        /* its planes (rowq layout, m rows of n) */
} agoq_wg_args;

int agoq_wg_check(int m, int n, int k, const agoq_qconfig *epilogue_q);
int agoq_wg_gemm(const agoq_wg_args *g, void *stream);
int agoq_wg_fwd(int M, int N, int K, const uint16_t *X, const uint16_t *W, const uint16_t *R, uint16_t *Y,
                const agoq_fq *q, agoq_dqt yq, void *stream);
int agoq_wg_dgrad(int M, int N, int K, const uint16_t *dY, const uint16_t *W, const uint16_t *R, uint16_t *dX,
                  void *stream);
int agoq_wg_wgrad(int M, int N, int K, const uint16_t *dY, const uint16_t *X, uint16_t *dW, void *stream);
/* fwd with X read from its stored rowq copy (4- or 8-bit codes, block a multiple of 64 dividing
 * K): the consumers decode each k-tile's codes with the standalone decoder, rounded to bf16,
 * into the registers of wgmma's A operand (AGOQ_WG_DEQ_SMEM=1: into a shared-memory tile), so
 * Y equals agoq_wg_fwd on X' = bf16(agoq_rowq_dequantize_ref(xq)) bit for bit (where no decoded
 * value is NaN: the register path rounds with cvt.rn.bf16x2, whose NaN payload may differ). */
int agoq_wg_fwd_deqa(int M, int N, int K, const agoq_fq *qx, agoq_dqt xq, const uint16_t *W, const uint16_t *R,
                     uint16_t *Y, void *stream);
/* Host float64 reference of entry (i, j) of C (+ R) for these layouts (gemm_wg_ref.c, any build);
 * *mag = sum |a||b| (+ |r|), for error bounds. */
double agoq_wg_ref_entry(int m, int n, int k, const uint16_t *a, int a_mn, const uint16_t *b, int b_mn,
                         const uint16_t *r, int i, int j, double *mag);
/* The GPU tests' bound on |C - ref| for an entry of reference ref and mag = sum |a||b| (+ |r|)
 * over k products: 2^-8 |ref| (rounding to bf16: 2^-9, twice) + k 2^-23 mag (fp32 accumulation
 * in any order: k 2^-24 mag, twice). */
double agoq_wg_ref_bound(double ref, int k, double mag);

#ifdef __cplusplus
}
#endif
#endif
