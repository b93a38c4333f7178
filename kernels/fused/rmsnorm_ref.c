/* RMSNorm forward (bf16 output + quantized copy of the input) and backward with recomputation
 * (dequantize, recompute rstd and the normalized output, then dx and dweight partials).
 * The specification of kernels/fused/fused.cu's RMSNorm kernels; math in fused_math.h. */
#include <limits.h>
#include <stdlib.h>

#include "core/knob.h"
#include "kernels/fused/fused.h"
#include "kernels/fused/fused_math.h"

void agoq_rmsnorm_fwd_ref(const agoq_qconfig *qc, const uint16_t *x, const uint16_t *w, int rows, int cols,
                          float eps, uint16_t *y, agoq_qtensor *xq, float *rstd_out) {
    float *xf = malloc((size_t)cols * sizeof(float));
    if (!xf) abort();
    for (int r = 0; r < rows; r++) {
        const uint16_t *xr = x + (size_t)r * (size_t)cols;
        for (int j = 0; j < cols; j++) xf[j] = agoq_bf16_to_f32(xr[j]);
        float rstd = agoq_rms_rstd(agoq_row_dot_ref(xf, xf, cols), cols, eps);
        if (rstd_out) rstd_out[r] = rstd;
        for (int j = 0; j < cols; j++)
            y[(size_t)r * (size_t)cols + (size_t)j] = agoq_f32_to_bf16(agoq_rms_out(xf[j], rstd, agoq_bf16_to_f32(w[j])));
    }
    free(xf);
    if (qc) agoq_rowq_quantize_ref(qc, x, (size_t)rows, (size_t)cols, xq);
}

void agoq_rmsnorm_bwd_ref(const agoq_qconfig *qc, const agoq_qtensor *xq, const uint16_t *x, const uint16_t *dy,
                          const uint16_t *w, int rows, int cols, float eps, int rows_per_group, uint16_t *dx,
                          uint16_t *y, float *dw_partial) {
    const size_t n = (size_t)rows * (size_t)cols;
    float *xf = malloc(n * sizeof(float)), *g = malloc((size_t)cols * sizeof(float));
    if (!xf || !g) abort();
    if (qc) agoq_rowq_dequantize_ref(qc, xq, (size_t)rows, (size_t)cols, xf);
    else for (size_t i = 0; i < n; i++) xf[i] = agoq_bf16_to_f32(x[i]);
    int groups = (rows + rows_per_group - 1) / rows_per_group;
    for (size_t i = 0; i < (size_t)groups * (size_t)cols; i++) dw_partial[i] = 0.0f;
    for (int r = 0; r < rows; r++) {
        const size_t o = (size_t)r * (size_t)cols;
        const float *xr = xf + o;
        for (int j = 0; j < cols; j++) g[j] = agoq_bf16_to_f32(dy[o + j]) * agoq_bf16_to_f32(w[j]);
        float rstd = agoq_rms_rstd(agoq_row_dot_ref(xr, xr, cols), cols, eps);
        float coef = agoq_rms_coef(agoq_row_dot_ref(g, xr, cols), cols, rstd);
        float *dwp = dw_partial + (size_t)(r / rows_per_group) * (size_t)cols;
        for (int j = 0; j < cols; j++) {
            float wj = agoq_bf16_to_f32(w[j]);
            dx[o + j] = agoq_f32_to_bf16(agoq_rms_dx(xr[j], g[j], rstd, coef));
            y[o + j] = agoq_f32_to_bf16(agoq_rms_out(xr[j], rstd, wj));
            dwp[j] = dwp[j] + agoq_bf16_to_f32(dy[o + j]) * (xr[j] * rstd);
        }
    }
    free(xf);
    free(g);
}

/* ---- the CUDA backward's launch shape, on the host (the step engine's plan needs it without a
 * GPU) ---- */
int agoq_rmsnorm_bwd_keep(int stored) {
    const int k = agoq_knob_int("AGOQ_RMS_KEEP", 2, 0, 2);
    return k == 1 || (k == 2 && stored);
}

int agoq_rmsnorm_bwd_rows_per_group(int sms, int stored, int rows, int cols) {
    const int fixed = agoq_knob_int("AGOQ_RMS_RPG", 0, 0, INT_MAX);
    if (fixed > 0) return fixed;
    const int slots = (sms > 0 ? sms : AGOQ_PLAN_SMS) *
                      AGOQ_RMS_STAGED_CTAS(AGOQ_RMS_STAGED_NG(cols), agoq_rmsnorm_bwd_keep(stored));
    return rows > slots ? (rows + slots - 1) / slots : 1;
}
