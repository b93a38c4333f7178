/* AdamW with block-quantized moments (the paper's 8-bit optimizer states, "O") in ONE pass
 * (adamw_q.cu): per element
 *   g = dequant(g8) (an 8-bit stored gradient) or g32[i]
 *   m, v = dequant(m8), dequant(v8)
 *   the AdamW update of adamw.h (p, m, v; w = bf16(p) when w != NULL)
 *   m8, v8 = quant(m), quant(v)   (in place, round to nearest)
 * so an element costs 1 + 1 + 1 (+ scales) bytes read and written for g, m, v, instead of the
 * chunked path's dequantize -> fp32 AdamW -> requantize passes through fp32 temporaries.
 * Result: the same bits as agoq_adamw_q_ref (dequantize_ref, adamw_ref, quantize_ref over the
 * whole tensor): codes and scales bit-exact for an identical fp32 update, which the shared
 * element update (adamw_dev.cuh) and the IEEE build flags give.
 * Supported (agoq_adamw_q_supported): moments in an 8-bit symmetric, table (dyn8) or FP8 E4M3
 * format, block <= 256, round to nearest; the gradient fp32 (gc NULL) or 8-bit of the same kinds,
 * any block. Other configs: the caller keeps the unfused path. Device pointers; stream a
 * cudaStream_t as void *. */
#ifndef AGOQ_ADAMW_Q_H
#define AGOQ_ADAMW_Q_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/optim/adamw.h"
#include "kernels/quant/formats.h"
#include "kernels/quant/quant_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when (gc, mc) can take the fused pass (gc NULL: fp32 gradient). Host only, no GPU. */
int agoq_adamw_q_supported(const agoq_qconfig *gc, const agoq_qconfig *mc);

/* Reference (host qtensors of n elements; g8 with gc, or g32 when gc is NULL). */
void agoq_adamw_q_ref(const agoq_adamw_hp *hp, const agoq_qconfig *gc, const float *g32, const agoq_qtensor *g8,
                      const agoq_qconfig *mc, agoq_qtensor *m, agoq_qtensor *v, float *p, uint16_t *w, size_t n);

/* The fused pass. 0, or -1 after one line (unsupported config, NULL planes, n mismatch). */
int agoq_adamw_q_cuda(const agoq_adamw_hp *hp, const agoq_qconfig *gc, const float *g32, const agoq_cuda_qtensor *g8,
                      const agoq_qconfig *mc, agoq_cuda_qtensor *m, agoq_cuda_qtensor *v, float *p, uint16_t *w,
                      size_t n, void *stream);

#ifdef __cplusplus
}
#endif
#endif
