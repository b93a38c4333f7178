/* Host reference of the fused AdamW step (adamw.h) and of its quantized-moment pass (adamw_q.h:
 * the existing references composed, nothing new): the fp32 operations in the order written
 * there, no FMA (-ffp-contract=off); the bias corrections by agoq_adamw_bias_corr, which the
 * CUDA entry point calls too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/optim/adamw.h"
#include "kernels/optim/adamw_q.h"
#include "kernels/quant/quant_ref.h"
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

/* ---- quantized moments (adamw_q.h) ---- */

static int q8_kind_ok(const agoq_qconfig *c) {
    const agoq_format_traits *t = &agoq_formats[c->fmt];
    return t->bits == 8 && (t->enc == AGOQ_ENC_INT_SYM || t->enc == AGOQ_ENC_TABLE || t->enc == AGOQ_ENC_FP8_E4M3);
}

int agoq_adamw_q_supported(const agoq_qconfig *gc, const agoq_qconfig *mc) {
    if (!mc || agoq_qconfig_check(mc) || !q8_kind_ok(mc) || mc->block > 256 || mc->rounding != AGOQ_ROUND_NEAREST)
        return 0;
    return !gc || (agoq_qconfig_check(gc) == 0 && q8_kind_ok(gc));
}

void agoq_adamw_q_ref(const agoq_adamw_hp *hp, const agoq_qconfig *gc, const float *g32, const agoq_qtensor *g8,
                      const agoq_qconfig *mc, agoq_qtensor *m, agoq_qtensor *v, float *p, uint16_t *w, size_t n) {
    float *g = gc ? malloc(n * sizeof *g) : NULL, *mf = malloc(n * sizeof *mf), *vf = malloc(n * sizeof *vf);
    if ((gc && !g) || !mf || !vf) {
        fprintf(stderr, "agoq_adamw_q_ref: out of memory (%zu elements)\n", n);
        abort();
    }
    if (gc) agoq_dequantize_ref(gc, g8, g);
    agoq_dequantize_ref(mc, m, mf);
    agoq_dequantize_ref(mc, v, vf);
    agoq_adamw_ref(hp, p, gc ? g : g32, mf, vf, w, n);
    agoq_quantize_ref(mc, mf, n, m);
    agoq_quantize_ref(mc, vf, n, v);
    free(g);
    free(mf);
    free(vf);
}
