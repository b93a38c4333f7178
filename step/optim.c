/* Gradients and the optimizer of the step engine.
 *
 * Gradient storage (pol.grad):
 *   FP32   Megatron's main gradients: the wgrad GEMM accumulates into them (beta = 1 after the
 *          first micro-batch of a step); norm-weight gradients are added by a small kernel.
 *   QUANT  AGoQ's 8-bit storage: each micro-batch's gradient lands in an fp32 temporary (the
 *          size of the largest parameter), the first is quantized, later ones are added by the
 *          grad8 kernel (dequantize, add in fp32, requantize: kernels/grad8/grad8.h).
 * Optimizer: AdamW (kernels/optim/adamw.h) over fp32 master weights. Quantized moments (with an
 * fp32 or 8-bit gradient) take the fused pass of kernels/optim/adamw_q.h when their format
 * allows (step_optimizer_fused): one kernel per parameter decodes g, m, v, updates and requantizes.
 * Otherwise (or with cfg->adam_unfused) quantized gradients and moments are dequantized chunk by
 * chunk into fp32 temporaries and the moments requantized after the update, so no full-size fp32
 * copy ever exists. */
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/optim/adamw_q.h"
#include "step/dev.h"
#include "step/step_internal.h"

#define CHUNK_ELEMS ((size_t)4 << 20) /* optimizer chunk; a multiple of every power-of-two block */

static int grads_quant(const step_engine *e) { return e->cfg->ms.pol.grad.kind == AGOQ_STORE_QUANT; }
static int moments_quant(const step_engine *e) { return e->cfg->ms.pol.moments.kind == AGOQ_STORE_QUANT; }

/* Planes of a flat quantized tensor of n elements, from the arena. */
static int qt_alloc(step_engine *e, const agoq_qconfig *c, size_t n, agoq_mem_class cls, agoq_cuda_qtensor *q,
                    const char *label) {
    memset(q, 0, sizeof *q);
    q->n = n;
    q->codes = agoq_arena_alloc(&e->ar, agoq_codes_bytes(c, n) + 8, cls, -1, -1, label);
    q->scales = agoq_arena_alloc(&e->ar, agoq_scales_bytes(c, n) + 8, cls, -1, -1, label);
    if (agoq_has_zeros(c)) q->zeros = agoq_arena_alloc(&e->ar, agoq_zeros_bytes(c, n) + 8, cls, -1, -1, label);
    if (!q->codes || !q->scales || (agoq_has_zeros(c) && !q->zeros)) return -1;
    STEP_GPUV(e, step_dev_memset(q->codes, agoq_codes_bytes(c, n), e->stream));
    STEP_GPUV(e, step_dev_memset(q->scales, agoq_scales_bytes(c, n), e->stream));
    if (q->zeros) STEP_GPUV(e, step_dev_memset(q->zeros, agoq_zeros_bytes(c, n), e->stream));
    return 0;
}

/* Elements [off, off + n) of a flat quantized tensor (off a multiple of the block). */
static agoq_cuda_qtensor qt_view(const agoq_qconfig *c, const agoq_cuda_qtensor *q, size_t off, size_t n) {
    const size_t b0 = off / (size_t)c->block;
    agoq_cuda_qtensor v = {q->codes + b0 * agoq_block_code_bytes(c), q->scales + b0 * agoq_scale_elem_bytes(c),
                           q->zeros ? q->zeros + b0 * agoq_scale_elem_bytes(c) : NULL, n};
    return v;
}

int step_grads_alloc(step_engine *e) {
    const step_plan *p = &e->pl;
    const agoq_policy *pol = &e->cfg->ms.pol;
    const size_t np = (size_t)p->L * AGOQ_PARAM_COUNT;
    for (size_t i = 0; i < np; i++) {
        const size_t n = p->pelems[i % AGOQ_PARAM_COUNT];
        if (grads_quant(e)) {
            if (qt_alloc(e, &pol->grad.q, n, AGOQ_MEM_GRADS, &e->g8[i], "grad8")) return -1;
        } else if (!(e->g32[i] = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_GRADS, -1, -1, "main grad"))) {
            return -1;
        }
        if (!(e->master[i] = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_OPTIMIZER, -1, -1, "master"))) return -1;
        if (moments_quant(e)) {
            if (qt_alloc(e, &pol->moments.q, n, AGOQ_MEM_OPTIMIZER, &e->mq[i], "adam m") ||
                qt_alloc(e, &pol->moments.q, n, AGOQ_MEM_OPTIMIZER, &e->vq[i], "adam v"))
                return -1;
        } else {
            e->m32[i] = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_OPTIMIZER, -1, -1, "adam m");
            e->v32[i] = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_OPTIMIZER, -1, -1, "adam v");
            if (!e->m32[i] || !e->v32[i]) return -1;
            STEP_GPUV(e, step_dev_memset(e->m32[i], n * 4, e->stream));
            STEP_GPUV(e, step_dev_memset(e->v32[i], n * 4, e->stream));
        }
    }
    if (grads_quant(e)) {
        size_t mx = 0;
        for (int k = 0; k < AGOQ_PARAM_COUNT; k++) mx = p->pelems[k] > mx ? p->pelems[k] : mx;
        if (!(e->gtmp = step_tmp(e, mx * 4, "grad fp32 temporary"))) return -1;
    }
    return 0;
}

/* Adds an fp32 gradient (device, n elements of parameter (l, k)) to the gradient storage. */
static int commit(step_engine *e, size_t i, const float *g, size_t n) {
    const agoq_qconfig *c = &e->cfg->ms.pol.grad.q;
    if (grads_quant(e)) {
        if (e->grad_fresh[i]) STEP_OP(e, STEP_OP_GRAD_ACCUM, agoq_cuda_quantize_f32(c, g, n, &e->g8[i], e->stream));
        else STEP_OP(e, STEP_OP_GRAD_ACCUM, agoq_cuda_grad_accumulate(c, &e->g8[i], g, NULL, e->stream));
    } else if (e->grad_fresh[i]) {
        STEP_GPUV(e, step_dev_memset(e->g32[i], n * 4, e->stream));
        STEP_OP(e, STEP_OP_GRAD_ACCUM, step_dev_add_f32(e->g32[i], g, n, e->stream));
    } else {
        STEP_OP(e, STEP_OP_GRAD_ACCUM, step_dev_add_f32(e->g32[i], g, n, e->stream));
    }
    e->grad_fresh[i] = 0;
    return 0;
}

int step_grad_wgrad(step_engine *e, int l, agoq_param_kind k, int M, int N, int K, const uint16_t *dY,
                    const uint16_t *X) {
    const size_t i = STEP_W(e, l, k);
    if (grads_quant(e)) {
        STEP_OP(e, STEP_OP_GEMM_WGRAD, agoq_lt_wgrad(e->lt, M, N, K, dY, X, 0, e->gtmp, NULL, e->stream));
        return commit(e, i, e->gtmp, (size_t)N * (size_t)K);
    }
    STEP_OP(e, STEP_OP_GEMM_WGRAD, agoq_lt_wgrad(e->lt, M, N, K, dY, X, !e->grad_fresh[i], e->g32[i], NULL, e->stream));
    e->grad_fresh[i] = 0;
    return 0;
}

float *step_grad_norm_dw(step_engine *e) {
    return grads_quant(e) ? e->gtmp : step_tmp(e, (size_t)e->pl.h * 4, "norm dw");
}

int step_grad_norm(step_engine *e, int l, agoq_param_kind k, float *dw) {
    const size_t h = (size_t)e->pl.h;
    int rc = commit(e, STEP_W(e, l, k), dw, h);
    if (!grads_quant(e)) step_release(e, dw);
    return rc;
}

int step_optimizer_fused(const agoq_step_config *c) {
    const agoq_policy *pol = &c->ms.pol;
    return !c->adam_unfused && pol->moments.kind == AGOQ_STORE_QUANT &&
           agoq_adamw_q_supported(pol->grad.kind == AGOQ_STORE_QUANT ? &pol->grad.q : NULL, &pol->moments.q);
}

int step_optimizer(step_engine *e) {
    const step_plan *p = &e->pl;
    const agoq_policy *pol = &e->cfg->ms.pol;
    agoq_adamw_hp hp = e->cfg->adam;
    hp.step = ++e->adam_step;
    const int gq = grads_quant(e), mq = moments_quant(e);
    if (step_optimizer_fused(e->cfg)) {
        for (size_t i = 0; i < (size_t)p->L * AGOQ_PARAM_COUNT; i++)
            STEP_OP(e, STEP_OP_OPTIMIZER,
                    agoq_adamw_q_cuda(&hp, gq ? &pol->grad.q : NULL, e->g32[i], &e->g8[i], &pol->moments.q, &e->mq[i],
                                      &e->vq[i], e->master[i], e->w[i], p->pelems[i % AGOQ_PARAM_COUNT], e->stream));
        return 0;
    }
    float *gt = NULL, *mt = NULL, *vt = NULL;
    if (gq && !(gt = step_tmp(e, CHUNK_ELEMS * 4, "adam grad chunk"))) return -1;
    if (mq && (!(mt = step_tmp(e, CHUNK_ELEMS * 4, "adam m chunk")) || !(vt = step_tmp(e, CHUNK_ELEMS * 4, "adam v chunk"))))
        return -1;
    for (size_t i = 0; i < (size_t)p->L * AGOQ_PARAM_COUNT; i++) {
        const size_t n = p->pelems[i % AGOQ_PARAM_COUNT];
        if (!gq && !mq) {
            STEP_OP(e, STEP_OP_OPTIMIZER, agoq_adamw_cuda(&hp, e->master[i], e->g32[i], e->m32[i], e->v32[i], e->w[i], n, e->stream));
            continue;
        }
        for (size_t off = 0; off < n; off += CHUNK_ELEMS) {
            const size_t cn = n - off < CHUNK_ELEMS ? n - off : CHUNK_ELEMS;
            const float *g = gq ? gt : e->g32[i] + off;
            float *m = mq ? mt : e->m32[i] + off, *v = mq ? vt : e->v32[i] + off;
            agoq_cuda_qtensor gv, mv, vv;
            if (gq) {
                gv = qt_view(&pol->grad.q, &e->g8[i], off, cn);
                STEP_OP(e, STEP_OP_OPTIMIZER, agoq_cuda_dequantize_f32(&pol->grad.q, &gv, gt, e->stream));
            }
            if (mq) {
                mv = qt_view(&pol->moments.q, &e->mq[i], off, cn);
                vv = qt_view(&pol->moments.q, &e->vq[i], off, cn);
                STEP_OP(e, STEP_OP_OPTIMIZER, agoq_cuda_dequantize_f32(&pol->moments.q, &mv, mt, e->stream));
                STEP_OP(e, STEP_OP_OPTIMIZER, agoq_cuda_dequantize_f32(&pol->moments.q, &vv, vt, e->stream));
            }
            STEP_OP(e, STEP_OP_OPTIMIZER, agoq_adamw_cuda(&hp, e->master[i] + off, g, m, v, e->w[i] + off, cn, e->stream));
            if (mq) {
                STEP_OP(e, STEP_OP_OPTIMIZER, agoq_cuda_quantize_f32(&pol->moments.q, mt, cn, &mv, e->stream));
                STEP_OP(e, STEP_OP_OPTIMIZER, agoq_cuda_quantize_f32(&pol->moments.q, vt, cn, &vv, e->stream));
            }
        }
    }
    step_release(e, gt);
    step_release(e, mt);
    step_release(e, vt);
    return 0;
}

int step_grads_to_host(step_engine *e, float **host) {
    const step_plan *p = &e->pl;
    const agoq_qconfig *c = &e->cfg->ms.pol.grad.q;
    for (size_t i = 0; i < (size_t)p->L * AGOQ_PARAM_COUNT; i++) {
        const size_t n = p->pelems[i % AGOQ_PARAM_COUNT];
        if (!host[i] && !(host[i] = malloc(n * sizeof(float)))) return agoq_error("step: out of host memory"), -1;
        if (e->dry) continue;
        if (grads_quant(e)) {
            STEP_OP(e, STEP_OP_OPTIMIZER, agoq_cuda_dequantize_f32(c, &e->g8[i], e->gtmp, e->stream));
            STEP_GPUV(e, step_dev_sync());
            STEP_GPUV(e, step_dev_d2h(host[i], e->gtmp, n * 4));
        } else {
            STEP_GPUV(e, step_dev_sync());
            STEP_GPUV(e, step_dev_d2h(host[i], e->g32[i], n * 4));
        }
    }
    return 0;
}
