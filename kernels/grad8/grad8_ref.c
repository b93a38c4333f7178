/* C references of the 8-bit gradient reduction and accumulation; see grad8.h. */
#include "kernels/grad8/grad8.h"

#include <stdlib.h>

#include "kernels/quant/quant_ref.h"

/* y[i] = x[i] (+) dequant(q)[i] (agoq_dequant_add), rounded to bf16 for AGOQ_SUM_BF16; y may be x.
 * With zsum (the reduce's fp32 sum of asymmetric codes, agoq_reduce_zeros_apart): the zero point
 * is left out of the add and summed into zsum[i] instead. */
static void dequant_add(const agoq_qconfig *c, const agoq_qtensor *q, const float *x, float *y,
                        agoq_sum_precision p, float *zsum) {
    const size_t B = (size_t)c->block, nb = agoq_nblocks(c, q->n), cb = agoq_block_code_bytes(c);
    const int bits = agoq_formats[c->fmt].bits, asym = agoq_has_zeros(c) && !zsum;
    for (size_t b = 0; b < nb; b++) {
        const size_t off = b * B, len = q->n - off < B ? q->n - off : B;
        const float s = agoq_qtensor_scale(c, q, b), m = agoq_qtensor_zero(c, q, b);
        const uint8_t *blk = q->codes + b * cb;
        for (size_t i = 0; i < len; i++) {
            const float v = agoq_decode_ref(c, agoq_get_code(blk, (int)i, bits), 1.0f, 0.0f);
            const float t = agoq_dequant_add(x[off + i], v, s, m, asym);
            y[off + i] = p == AGOQ_SUM_BF16 ? agoq_round_bf16(t) : t;
            if (zsum) zsum[off + i] += m;
        }
    }
}

void agoq_grad_reduce_ref(const agoq_qconfig *c, const agoq_qtensor *const *in, int nin, size_t n,
                          agoq_sum_precision p, agoq_qtensor *out, float *sum_out) {
    const int apart = agoq_reduce_zeros_apart(agoq_has_zeros(c), p);
    float *acc = calloc(n ? n : 1, sizeof(float)), *zsum = apart ? calloc(n ? n : 1, sizeof(float)) : NULL;
    if (!acc || (apart && !zsum)) abort();
    for (int r = 0; r < nin; r++) dequant_add(c, in[r], acc, acc, p, zsum);
    if (zsum)
        for (size_t i = 0; i < n; i++) acc[i] += zsum[i];
    agoq_quantize_ref(c, acc, n, out);
    if (sum_out)
        for (size_t i = 0; i < n; i++) sum_out[i] = acc[i];
    free(zsum);
    free(acc);
}

void agoq_grad_accumulate_ref(const agoq_qconfig *c, agoq_qtensor *acc, const float *g_f32,
                              const uint16_t *g_bf16, size_t n) {
    float *tmp = malloc((n ? n : 1) * sizeof(float));
    if (!tmp) abort();
    for (size_t i = 0; i < n; i++) tmp[i] = g_f32 ? g_f32[i] : agoq_bf16_to_f32(g_bf16[i]);
    dequant_add(c, acc, tmp, tmp, AGOQ_SUM_FP32, NULL);
    agoq_quantize_ref(c, tmp, n, acc);
    free(tmp);
}
