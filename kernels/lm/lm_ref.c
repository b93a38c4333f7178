/* References of the embedding and the softmax cross-entropy (lm.h). */
#include "kernels/lm/lm.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/quant/quant_math.h"

void agoq_embed_fwd_ref(const uint16_t *wte, const int *tok, int T, int h, uint16_t *out) {
    for (int t = 0; t < T; t++) memcpy(out + (size_t)t * h, wte + (size_t)tok[t] * h, (size_t)h * sizeof *out);
}

void agoq_embed_bwd_ref(const uint16_t *dx, const int *tok, int T, int h, int V, float *dwte) {
    (void)V;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < h; c++) dwte[(size_t)tok[t] * h + c] += agoq_bf16_to_f32(dx[(size_t)t * h + c]);
}

void agoq_xent_ref(const uint16_t *logits, const int *tgt, int T, int V, float dscale, float *loss, uint16_t *dlogits) {
    for (int t = 0; t < T; t++) {
        const uint16_t *x = logits + (size_t)t * V;
        float m = -INFINITY, s = 0.0f;
        for (int j = 0; j < V; j++) m = fmaxf(m, agoq_bf16_to_f32(x[j]));
        for (int j = 0; j < V; j++) s += expf(agoq_bf16_to_f32(x[j]) - m);
        loss[t] = logf(s) + m - agoq_bf16_to_f32(x[tgt[t]]);
        if (!dlogits) continue;
        for (int j = 0; j < V; j++) {
            float p = expf(agoq_bf16_to_f32(x[j]) - m) / s;
            dlogits[(size_t)t * V + j] = agoq_f32_to_bf16((p - (j == tgt[t] ? 1.0f : 0.0f)) * dscale);
        }
    }
}
