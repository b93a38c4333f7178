/* C references of the 8-bit gradient reduction and accumulation; see grad8.h. */
#include "kernels/grad8/grad8.h"

#include <stdlib.h>

#include "kernels/quant/quant_ref.h"

void agoq_grad_reduce_ref(const agoq_qconfig *c, const agoq_qtensor *const *in, int nin, size_t n,
                          agoq_sum_precision p, agoq_qtensor *out, float *sum_out) {
    float *acc = calloc(n ? n : 1, sizeof(float)), *tmp = malloc((n ? n : 1) * sizeof(float));
    if (!acc || !tmp) abort();
    for (int r = 0; r < nin; r++) {
        agoq_dequantize_ref(c, in[r], tmp);
        for (size_t i = 0; i < n; i++) acc[i] = agoq_sum_step(acc[i], tmp[i], p);
    }
    agoq_quantize_ref(c, acc, n, out);
    if (sum_out)
        for (size_t i = 0; i < n; i++) sum_out[i] = acc[i];
    free(acc);
    free(tmp);
}

void agoq_grad_accumulate_ref(const agoq_qconfig *c, agoq_qtensor *acc, const float *g_f32,
                              const uint16_t *g_bf16, size_t n) {
    float *tmp = malloc((n ? n : 1) * sizeof(float));
    if (!tmp) abort();
    agoq_dequantize_ref(c, acc, tmp);
    for (size_t i = 0; i < n; i++) tmp[i] = tmp[i] + (g_f32 ? g_f32[i] : agoq_bf16_to_f32(g_bf16[i]));
    agoq_quantize_ref(c, tmp, n, acc);
    free(tmp);
}
