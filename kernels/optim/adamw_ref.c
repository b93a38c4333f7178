/* Host reference of the fused AdamW step (adamw.h): the fp32 operations in the order written
 * there, no FMA (-ffp-contract=off); the bias corrections by agoq_adamw_bias_corr, which the
 * CUDA entry point calls too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/optim/adamw.h"
#include "kernels/quant/quant_math.h"

void agoq_adamw_bias_corr(const agoq_adamw_hp *hp, float *bc1, float *bc2) {
    *bc1 = 1.0f - powf(hp->beta1, (float)hp->step);
    *bc2 = 1.0f - powf(hp->beta2, (float)hp->step);
}

void agoq_adamw_ref(const agoq_adamw_hp *hp, float *p, const float *g, float *m, float *v, uint16_t *w, size_t n) {
    if (!hp || hp->step < 1) {
        fprintf(stderr, "agoq_adamw_ref: step %d (1-based)\n", hp ? hp->step : -1);
        abort();
    }
    float bc1, bc2;
    agoq_adamw_bias_corr(hp, &bc1, &bc2);
    const float b1 = hp->beta1, b2 = hp->beta2;
    for (size_t i = 0; i < n; i++) {
        const float gs = g[i] * hp->grad_scale;
        m[i] = b1 * m[i] + (1.0f - b1) * gs;
        v[i] = b2 * v[i] + (1.0f - b2) * (gs * gs);
        const float u = (m[i] / bc1) / (sqrtf(v[i] / bc2) + hp->eps) + hp->weight_decay * p[i];
        p[i] = p[i] - hp->lr * u;
        if (w) w[i] = agoq_f32_to_bf16(p[i]);
    }
}

double agoq_sumsq_ref(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    return s;
}
