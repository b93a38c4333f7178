/* The AdamW update of one element on the device (adamw.h's formula and operation order), shared
 * by adamw.cu (fp32 moments) and adamw_q.cu (quantized moments) so both run the same fp32
 * operations: with the Makefile's --fmad=false and IEEE division/sqrt they match adamw_ref.c. */
#ifndef AGOQ_ADAMW_DEV_CUH
#define AGOQ_ADAMW_DEV_CUH
#include "kernels/optim/adamw.h"

/* Hyper-parameters as a kernel needs them (bias corrections from agoq_adamw_bias_corr). */
typedef struct {
    float lr, b1, b2, eps, wd, gscale, bc1, bc2;
} agoq_adamw_dev_hp;

static inline agoq_adamw_dev_hp agoq_adamw_dev_hp_make(const agoq_adamw_hp *hp) {
    agoq_adamw_dev_hp h = {hp->lr, hp->beta1, hp->beta2, hp->eps, hp->weight_decay, hp->grad_scale, 0.0f, 0.0f};
    agoq_adamw_bias_corr(hp, &h.bc1, &h.bc2);
    return h;
}

/* p, m, v updated in place from the gradient g. */
__device__ __forceinline__ void agoq_adamw_elem(const agoq_adamw_dev_hp &h, float g, float &p, float &m, float &v) {
    const float gs = g * h.gscale;
    m = h.b1 * m + (1.0f - h.b1) * gs;
    v = h.b2 * v + (1.0f - h.b2) * (gs * gs);
    const float u = (m / h.bc1) / (sqrtf(v / h.bc2) + h.eps) + h.wd * p;
    p = p - h.lr * u;
}
#endif
