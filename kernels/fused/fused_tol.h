/* Bounds for the producer and backward outputs of the fused CUDA kernels against the C
 * references (issue 15: exactness stops at the quantizer). The stored copies (codes, scales,
 * zero points) are compared bit for bit; RMSNorm's outputs (its sums and products by FMA:
 * fused_dev.cuh's fz_sq_acc, fused_rms_bwd.cu) and SiLU / GELU outputs and gradients, computed
 * with FMA and the fast exp/division of kernels/fused/fused_fast.cuh, within the bounds derived in
 * fused_tol.c.
 * Used by the GPU tests (tests/cuda/fused/) and by the benchmark's check (bench_fused.cu). */
#ifndef AGOQ_FUSED_TOL_H
#define AGOQ_FUSED_TOL_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AGOQ_OUT_EXACT,      /* bit for bit (NaN equals NaN) */
    AGOQ_OUT_RMS_Y,      /* RMSNorm y = (x rstd) w, forward or recomputed: one bf16 ulp */
    AGOQ_OUT_GELU_Y,     /* GELU(x), forward or recomputed */
    AGOQ_OUT_GELU_DX,    /* dy * GELU'(x) */
    AGOQ_OUT_SWIGLU_OUT, /* silu(gate) * up, forward or recomputed, [rows, F] */
    AGOQ_OUT_SWIGLU_DH,  /* [d_gate | d_up], [rows, 2F] */
} agoq_fused_out;

/* One bf16 ulp at |v| (2^(e-7) for |v| in [2^e, 2^(e+1)); 2^-133 at and below the smallest
 * bf16 denormal). */
double agoq_bf16_ulp(double v);
/* The input the kernel computed from as fp32, [rows, cols] (SwiGLU: [rows, 2F] as h, i.e. the
 * [2 rows, F] stored view): the reference's dequantized copy when qc != NULL, else bf16 x.
 * malloc'd; the caller frees. */
float *agoq_fused_input_f32(const agoq_qconfig *qc, const agoq_qtensor *xq, const uint16_t *x, size_t rows,
                            size_t cols);
/* Elements of got outside the bound of output `which` (prints the first 5 with index, both
 * values and the bound, and the count, prefixed by `what`). x: agoq_fused_input_f32 of the
 * op; dy: the incoming gradient (backward outputs, [rows, cols] or [rows, F]), else NULL;
 * rows x cols: the op's row shape (SwiGLU: cols = F). */
size_t agoq_fused_cmp(agoq_fused_out which, const char *what, const float *x, const uint16_t *dy, size_t rows,
                      size_t cols, const uint16_t *ref, const uint16_t *got);

/* The bound of an op's output, for the tests and the benchmark's check: op 0 RMSNorm, 1 SwiGLU,
 * 2 GELU; out 0 the forward's y, 1 the backward's dx, 2 the backward's recomputed y. */
agoq_fused_out agoq_fused_out_of(int op, int out);
/* RMSNorm forward rstd of rows x cols against the reference: relative bound
 * agoq_rms_rstd_bound(cols); NaN equals NaN, infinities and zeros exactly. Returns the count
 * outside (prints the first 5, prefixed by `what`). */
double agoq_rms_rstd_bound(size_t cols);
size_t agoq_rms_rstd_cmp(const char *what, const float *ref, const float *got, size_t rows, size_t cols);
/* RMSNorm backward (rows x cols, rpg rows a dweight group, eps) against the reference within the
 * bounds fused_tol.c derives: dx (bf16; skipped when dx_ref is NULL), the dweight partials
 * [groups, cols] (when dwp_ref) and the reduced dweight (when dw_ref and dwp_ref). x: the fp32
 * input the backward read (agoq_fused_input_f32), dy [rows, cols] and w [cols] bf16. Returns the
 * count outside (prints the first 5). */
size_t agoq_rms_bwd_cmp(const float *x, const uint16_t *dy, const uint16_t *w, size_t rows, size_t cols, float eps,
                        int rpg, const uint16_t *dx_ref, const uint16_t *dx_got, const float *dwp_ref,
                        const float *dwp_got, const float *dw_ref, const float *dw_got);

#ifdef __cplusplus
}
#endif
#endif
