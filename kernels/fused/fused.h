/* Fused activation kernels of AGoQ and their plain-C references (the specification).
 *
 * Forward, as the paper stores activations: the producer writes its bf16 output AND a
 * block-quantized copy (FP4 E2M1 block 128 by default, any format of formats.h) of its INPUT,
 * in one pass:  RMSNorm (stores the norm input), SwiGLU (stores the FC1 output = gate and up),
 * GELU (stores its input).
 * Backward with recomputation, one kernel each: dequantize the stored copy, recompute the
 * forward output (the GEMM input the paper recomputes) and run the op's backward.
 *
 * Row-blocked quantized copies ("rowq"): a [rows, cols] bf16 tensor is stored as rows
 * independent quantized vectors of cols elements, ceil(cols/B) blocks per row, block (r, k)
 * at index r * ceil(cols/B) + k of the codes/scales/zeros planes (layout of formats.h); the
 * last block of a row is padded with code 0. When cols % B == 0 this is exactly the flat
 * layout of agoq_quantize_ref. Stochastic draw of element (r, c): agoq_u01(seed, r*cols + c).
 * The SwiGLU input h [rows, 2F] (gate = h[:, :F], up = h[:, F:]) is stored as the rowq of its
 * [2*rows, F] view, so gate and up blocks cover the same columns.
 *
 * Tensors: bf16 as uint16_t (round to nearest even, quant_math.h), row-major, fp32 partials.
 * The CUDA entry points (fused.cu, CUDA=1 builds) take device pointers and a cudaStream_t
 * passed as void *; they check their arguments and return 0 or -1. */
#ifndef AGOQ_FUSED_H
#define AGOQ_FUSED_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/quant/formats.h"
#include "kernels/quant/quant_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline size_t agoq_rowq_blocks_per_row(const agoq_qconfig *c, size_t cols) {
    return (cols + (size_t)c->block - 1) / (size_t)c->block;
}
/* Element count whose flat agoq_qtensor has exactly the rowq's block count (for allocation). */
static inline size_t agoq_rowq_alloc_n(const agoq_qconfig *c, size_t rows, size_t cols) {
    return rows * agoq_rowq_blocks_per_row(c, cols) * (size_t)c->block;
}

/* ---- references (kernels/fused/fused_ref.c, rmsnorm_ref.c, swiglu_ref.c, gelu_ref.c) ---- */
void agoq_rowq_quantize_ref(const agoq_qconfig *c, const uint16_t *x, size_t rows, size_t cols, agoq_qtensor *q);
void agoq_rowq_dequantize_ref(const agoq_qconfig *c, const agoq_qtensor *q, size_t rows, size_t cols, float *y);
/* The fixed reduction tree of the row kernels (fused_math.h): T partials -> one sum. */
float agoq_tree_sum_ref(const float *partials, int nthreads);
/* sum over the row of f(col) in the row kernels' order; f = x^2 or g*x given as two vectors */
float agoq_row_dot_ref(const float *a, const float *b, int cols);
/* dw[j] = sum over groups g in order of partial[g * cols + j] */
void agoq_dw_reduce_ref(const float *partial, int groups, int cols, float *dw);

/* RMSNorm forward: y = bf16((x * rstd) * w). qc != NULL: also xq = rowq of x. rstd may be NULL. */
void agoq_rmsnorm_fwd_ref(const agoq_qconfig *qc, const uint16_t *x, const uint16_t *w, int rows, int cols,
                          float eps, uint16_t *y, agoq_qtensor *xq, float *rstd);
/* RMSNorm backward from the stored copy (qc != NULL: x = dequant(xq)) or from bf16 x (qc NULL).
 * Writes dx (bf16), the recomputed output y (bf16) and dw_partial [ceil(rows/rpg), cols]:
 * row group g = rows [g*rpg, (g+1)*rpg) summed in row order (rpg = rows_per_group). */
void agoq_rmsnorm_bwd_ref(const agoq_qconfig *qc, const agoq_qtensor *xq, const uint16_t *x, const uint16_t *dy,
                          const uint16_t *w, int rows, int cols, float eps, int rows_per_group, uint16_t *dx,
                          uint16_t *y, float *dw_partial);
/* SwiGLU forward: out[r, j] = bf16(silu(gate) * up); qc != NULL: hq = rowq of h as [2*rows, F]. */
void agoq_swiglu_fwd_ref(const agoq_qconfig *qc, const uint16_t *h, int rows, int f, uint16_t *out, agoq_qtensor *hq);
/* SwiGLU backward: dh [rows, 2F] (d_gate | d_up) and the recomputed out (the FC2 input). */
void agoq_swiglu_bwd_ref(const agoq_qconfig *qc, const agoq_qtensor *hq, const uint16_t *h, const uint16_t *dout,
                         int rows, int f, uint16_t *dh, uint16_t *out);
void agoq_gelu_fwd_ref(const agoq_qconfig *qc, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_qtensor *xq);
void agoq_gelu_bwd_ref(const agoq_qconfig *qc, const agoq_qtensor *xq, const uint16_t *x, const uint16_t *dy,
                       int rows, int cols, uint16_t *dx, uint16_t *y);

/* ---- CUDA (kernels/fused/fused.cu) ---- */
/* Device-side quantization parameters: the config (the flat-layout quantizers of quant_cuda.h
 * take it) and its kernel parameters (agoq_cuda_qparams_make; table formats point at the
 * per-device tables of quant.cu, which live until exit). */
typedef struct {
    agoq_qconfig c;
    agoq_cuda_qparams p;
} agoq_fq;
/* Device planes of a quantized tensor (layout as agoq_qtensor). */
typedef struct {
    uint8_t *codes, *scales, *zeros;
} agoq_dqt;

int agoq_fq_make(const agoq_qconfig *c, agoq_fq *out);
void agoq_fq_free(agoq_fq *q);
/* Device allocation of a rowq tensor's planes (zeroed) and its release. */
int agoq_dqt_alloc(const agoq_qconfig *c, size_t rows, size_t cols, agoq_dqt *out);
void agoq_dqt_free(agoq_dqt *q);

/* q == NULL: the plain bf16 kernel (no quantized copy; backward reads bf16 x). */
int agoq_rowq_quantize_cuda(const agoq_fq *q, const uint16_t *x, int rows, int cols, agoq_dqt xq, void *stream);
int agoq_rowq_dequantize_cuda(const agoq_fq *q, agoq_dqt xq, int rows, int cols, uint16_t *y, void *stream);
int agoq_rmsnorm_fwd_cuda(const agoq_fq *q, const uint16_t *x, const uint16_t *w, int rows, int cols, float eps,
                          uint16_t *y, agoq_dqt xq, float *rstd, void *stream);
int agoq_rmsnorm_bwd_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, const uint16_t *w,
                          int rows, int cols, float eps, int rows_per_group, uint16_t *dx, uint16_t *y,
                          float *dw_partial, void *stream);
/* The staged RMSNorm backward (fused_rms_bwd.cu): its resident CTAs an SM (launch bounds) at NG
 * = 2 (rows of <= 4096 columns) or 4 groups of 8 columns a thread, keeping a row's inputs or not. */
#define AGOQ_RMS_STAGED_NG(cols) ((cols) <= 2 * AGOQ_ROW_THREADS * 8 ? 2 : 4) /* its NG (fused_math.h) */
#define AGOQ_RMS_STAGED_CTAS(NG, KEEP) ((NG) == 2 ? ((KEEP) ? 3 : 4) : 2)
/* AGOQ_RMS_KEEP=0|1|2 (read at every call, default 2): whether that kernel keeps a row's decoded
 * inputs for its second pass: 0 never, 1 always, 2 with a stored (quantized) copy (`stored`),
 * not from bf16. */
int agoq_rmsnorm_bwd_keep(int stored);
/* A rows_per_group for agoq_rmsnorm_bwd_cuda on a device of `sms` SMs: as few rows a group as
 * keep the groups (= CTAs, each a chain of rows) within one wave of the kernel's resident CTAs,
 * sms x its CTAs an SM (the step engine and the benchmark take it).
 * A plan without a GPU passes AGOQ_PLAN_SMS. AGOQ_RMS_RPG=N > 0 sets N instead (A/B; the step
 * engine took 64, the benchmark ~rows / 512 before the twentieth session). */
#define AGOQ_PLAN_SMS 132 /* H100 / H200 SXM */
int agoq_rmsnorm_bwd_rows_per_group(int sms, int stored, int rows, int cols);
int agoq_dw_reduce_cuda(const float *partial, int groups, int cols, float *dw, void *stream);
/* The RMSNorm backward and its weight gradient: agoq_rmsnorm_bwd_cuda (dw_partial written as
 * there), then dw = agoq_dw_reduce_cuda's sum of the partials (the same bits). Where the staged
 * kernel takes the shape, by default (AGOQ_DW_FUSE=1; 0: after it) one cooperative launch: its
 * CTAs, once every partial row is stored, sum 16-column slices of them (no second kernel). */
int agoq_rmsnorm_bwd_dw_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, const uint16_t *w,
                             int rows, int cols, float eps, int rows_per_group, uint16_t *dx, uint16_t *y,
                             float *dw_partial, float *dw, void *stream);
int agoq_swiglu_fwd_cuda(const agoq_fq *q, const uint16_t *h, int rows, int f, uint16_t *out, agoq_dqt hq, void *stream);
int agoq_swiglu_bwd_cuda(const agoq_fq *q, agoq_dqt hq, const uint16_t *h, const uint16_t *dout, int rows, int f,
                         uint16_t *dh, uint16_t *out, void *stream);
int agoq_gelu_fwd_cuda(const agoq_fq *q, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_dqt xq, void *stream);
int agoq_gelu_bwd_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, int rows, int cols,
                       uint16_t *dx, uint16_t *y, void *stream);

/* Host-side device memory helpers for tests and benchmarks (exit with context on failure). */
void *agoq_fused_dmalloc(size_t bytes);
void agoq_fused_dfree(void *p);
void agoq_fused_h2d(void *dst, const void *src, size_t bytes);
void agoq_fused_d2h(void *dst, const void *src, size_t bytes);
void agoq_fused_dsync(void);
/* Copies between a device rowq tensor and a host agoq_qtensor of the same config and shape. */
void agoq_dqt_upload(const agoq_qconfig *c, size_t rows, size_t cols, const agoq_qtensor *h, agoq_dqt d);
void agoq_dqt_download(const agoq_qconfig *c, size_t rows, size_t cols, agoq_dqt d, agoq_qtensor *h);

#ifdef __cplusplus
}
#endif
#endif
