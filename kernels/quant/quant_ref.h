/* Plain-C reference quantizers: the specification every CUDA quantization kernel is tested
 * against bit for bit. Layout and math: formats.h and quant_math.h. */
#ifndef AGOQ_QUANT_REF_H
#define AGOQ_QUANT_REF_H
#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Stored scale (rounded to the scale dtype) and zero point of one block of len elements. */
void agoq_block_params_ref(const agoq_qconfig *c, const float *x, int len, float *scale, float *zero);
/* Quantize one block of len <= c->block elements; base = global index of x[0] (stochastic
 * rounding draws). Writes block codes (zeroed first), the scale and, if asymmetric, the zero. */
void agoq_quantize_block_ref(const agoq_qconfig *c, const float *x, int len, size_t base, uint8_t *codes,
                             uint8_t *scale, uint8_t *zero);
/* Decode one code of a block with known scale/zero. */
float agoq_decode_ref(const agoq_qconfig *c, uint32_t code, float scale, float zero);

void agoq_quantize_ref(const agoq_qconfig *c, const float *x, size_t n, agoq_qtensor *q);
void agoq_quantize_bf16_ref(const agoq_qconfig *c, const uint16_t *x, size_t n, agoq_qtensor *q);
void agoq_dequantize_ref(const agoq_qconfig *c, const agoq_qtensor *q, float *y);
void agoq_dequantize_bf16_ref(const agoq_qconfig *c, const agoq_qtensor *q, uint16_t *y);
/* quantize + dequantize: the value a consumer of the stored tensor sees. */
void agoq_fake_quant_ref(const agoq_qconfig *c, const float *x, size_t n, float *y);

#ifdef __cplusplus
}
#endif
#endif
