/* SwiGLU forward (out = silu(gate) * up, bf16, + quantized copy of the FC1 output h = [gate|up])
 * and backward with recomputation (dequantize h, recompute out = the FC2 GEMM input, d_gate
 * and d_up). The specification of kernels/fused/fused.cu's SwiGLU kernels; math in fused_math.h. */
#include <stdlib.h>

#include "kernels/fused/fused.h"
#include "kernels/fused/fused_math.h"

void agoq_swiglu_fwd_ref(const agoq_qconfig *qc, const uint16_t *h, int rows, int f, uint16_t *out, agoq_qtensor *hq) {
    for (int r = 0; r < rows; r++) {
        const uint16_t *hr = h + (size_t)r * 2 * (size_t)f;
        for (int j = 0; j < f; j++)
            out[(size_t)r * (size_t)f + (size_t)j] =
                agoq_f32_to_bf16(agoq_silu(agoq_bf16_to_f32(hr[j])) * agoq_bf16_to_f32(hr[f + j]));
    }
    if (qc) agoq_rowq_quantize_ref(qc, h, 2 * (size_t)rows, (size_t)f, hq);
}

void agoq_swiglu_bwd_ref(const agoq_qconfig *qc, const agoq_qtensor *hq, const uint16_t *h, const uint16_t *dout,
                         int rows, int f, uint16_t *dh, uint16_t *out) {
    const size_t n = 2 * (size_t)rows * (size_t)f;
    float *hf = malloc(n * sizeof(float));
    if (!hf) abort();
    if (qc) agoq_rowq_dequantize_ref(qc, hq, 2 * (size_t)rows, (size_t)f, hf);
    else for (size_t i = 0; i < n; i++) hf[i] = agoq_bf16_to_f32(h[i]);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < f; j++) {
            size_t o = (size_t)r * (size_t)f + (size_t)j, hi = 2 * (size_t)r * (size_t)f + (size_t)j;
            float dg, du, o_;
            agoq_swiglu_bwd(hf[hi], hf[hi + (size_t)f], agoq_bf16_to_f32(dout[o]), &dg, &du, &o_);
            dh[hi] = agoq_f32_to_bf16(dg);
            dh[hi + (size_t)f] = agoq_f32_to_bf16(du);
            out[o] = agoq_f32_to_bf16(o_);
        }
    free(hf);
}
