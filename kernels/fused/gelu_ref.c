/* GELU (tanh form) forward (bf16 output + quantized copy of its input) and backward with
 * recomputation (dequantize x, recompute y = the FC2 GEMM input, dx = dy * gelu'(x)).
 * The specification of kernels/fused/fused.cu's GELU kernels; math in fused_math.h. */
#include <stdlib.h>

#include "kernels/fused/fused.h"
#include "kernels/fused/fused_math.h"

void agoq_gelu_fwd_ref(const agoq_qconfig *qc, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_qtensor *xq) {
    const size_t n = (size_t)rows * (size_t)cols;
    for (size_t i = 0; i < n; i++) y[i] = agoq_f32_to_bf16(agoq_gelu(agoq_bf16_to_f32(x[i])));
    if (qc) agoq_rowq_quantize_ref(qc, x, (size_t)rows, (size_t)cols, xq);
}

void agoq_gelu_bwd_ref(const agoq_qconfig *qc, const agoq_qtensor *xq, const uint16_t *x, const uint16_t *dy,
                       int rows, int cols, uint16_t *dx, uint16_t *y) {
    const size_t n = (size_t)rows * (size_t)cols;
    float *xf = malloc(n * sizeof(float));
    if (!xf) abort();
    if (qc) agoq_rowq_dequantize_ref(qc, xq, (size_t)rows, (size_t)cols, xf);
    else for (size_t i = 0; i < n; i++) xf[i] = agoq_bf16_to_f32(x[i]);
    for (size_t i = 0; i < n; i++) {
        dx[i] = agoq_f32_to_bf16(agoq_bf16_to_f32(dy[i]) * agoq_gelu_grad(xf[i]));
        y[i] = agoq_f32_to_bf16(agoq_gelu(xf[i]));
    }
    free(xf);
}
