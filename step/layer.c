/* One decoder layer of the step engine: forward with each saved tensor stored as the plan
 * says, backward that dequantizes or recomputes what was not kept (step.h has the math).
 *
 * Every device tensor comes from the arena: temporaries are WORKSPACE and released as soon as
 * their last reader has been launched (one stream: later kernels are ordered after it); a
 * tensor the policy keeps bf16 is the very buffer its producer wrote, retagged SAVED; a
 * quantized copy is written by the producer kernel (fused RMSNorm / SwiGLU), by the fused GEMM
 * whose output it is (gemm_site.c: the config's `gemm`; the planes are then allocated before
 * that GEMM), or by the rowq quantizer into SAVED planes of exactly the memory model's size
 * (codes + scales + zeros).
 * Backward reads a stored tensor directly (bf16), through the fused dequantize+recompute
 * kernels (norm inputs, SwiGLU input), or dequantizes it into a temporary. */
#include <string.h>

#include "core/common.h"
#include "step/dev.h"
#include "step/step_internal.h"
#if AGOQ_HAVE_CUDA
#include "kernels/gemm/gemm_wg.h"
#endif


void *step_tmp(step_engine *e, size_t bytes, const char *label) {
    return agoq_arena_alloc(&e->ar, bytes, AGOQ_MEM_WORKSPACE, -1, -1, label);
}

void step_release(step_engine *e, void *p) {
    if (p) agoq_arena_free(&e->ar, p);
}

static void count_saved(step_engine *e, int role, int l, double bytes) {
    if (!e->counting) return;
    e->saved_total += bytes;
    if (role >= 0 && l == e->count_layer) e->saved_by_role[role] += bytes;
}

/* Keeps a produced bf16 buffer as the saved tensor of role (retag) and counts it. */
static int keep_bf16(step_engine *e, step_saved *s, uint16_t *buf, size_t elems, int role, int l) {
    if (agoq_arena_retag(&e->ar, buf, AGOQ_MEM_SAVED, role, l)) return -1;
    s->bf = buf;
    s->quant = 0;
    count_saved(e, role, l, (double)elems * 2.0);
    return 0;
}

/* SAVED planes of a rowq tensor [rows, cols] in the role's format. The flat quantizers may
 * touch up to 8 bytes past a plane (kernels/fused/fused.cu allocates the same slack); the counted
 * bytes are the planes' exact sizes, the model's. */
static int alloc_q(step_engine *e, step_saved *s, int role, int l, size_t rows, size_t cols) {
    const agoq_qconfig *c = &e->pl.st[role].q;
    const size_t n = agoq_rowq_alloc_n(c, rows, cols);
    const size_t cb = agoq_codes_bytes(c, n), sb = agoq_scales_bytes(c, n), zb = agoq_zeros_bytes(c, n);
    memset(s, 0, sizeof *s);
    s->quant = 1;
    s->q.codes = agoq_arena_alloc(&e->ar, cb + 8, AGOQ_MEM_SAVED, role, l, "saved codes");
    s->q.scales = agoq_arena_alloc(&e->ar, sb + 8, AGOQ_MEM_SAVED, role, l, "saved scales");
    if (zb) s->q.zeros = agoq_arena_alloc(&e->ar, zb + 8, AGOQ_MEM_SAVED, role, l, "saved zeros");
    if (!s->q.codes || !s->q.scales || (zb && !s->q.zeros)) return -1;
    count_saved(e, role, l, (double)(cb + sb + zb));
    return 0;
}

static void drop(step_engine *e, step_saved *s) {
    step_release(e, s->bf);
    step_release(e, s->q.codes);
    step_release(e, s->q.scales);
    step_release(e, s->q.zeros);
    memset(s, 0, sizeof *s);
}

static const agoq_fq *fq_of(step_engine *e, int role) {
    return e->pl.st[role].kind == AGOQ_STORE_QUANT ? &e->fq[role] : NULL;
}

/* Stores a bf16 tensor [rows, cols] the producer wrote into buf (a WORKSPACE buffer) as role
 * says: kept (buf becomes SAVED), quantized (buf released), or dropped (recomputed). With
 * save == 0 everything is dropped (the first forward of a fully recomputed layer). */
static int store_output(step_engine *e, step_saved *s, uint16_t *buf, size_t rows, size_t cols, int role, int l,
                        int save) {
    memset(s, 0, sizeof *s);
    const agoq_store_kind k = save ? e->pl.st[role].kind : AGOQ_STORE_RECOMPUTE;
    if (k == AGOQ_STORE_NATIVE) return keep_bf16(e, s, buf, rows * cols, role, l);
    if (k == AGOQ_STORE_QUANT) {
        if (alloc_q(e, s, role, l, rows, cols)) return -1;
        STEP_OP(e, STEP_OP_QUANTIZE, agoq_rowq_quantize_cuda(&e->fq[role], buf, (int)rows, (int)cols, s->q, e->stream));
    }
    step_release(e, buf);
    return 0;
}

/* The bf16 values of a stored tensor for backward: itself, or dequantized into tmp (which the
 * caller owns). Recomputed tensors are the caller's business. */
static int load(step_engine *e, const step_saved *s, int role, size_t rows, size_t cols, uint16_t *tmp,
                const uint16_t **out) {
    if (!s->quant) {
        *out = s->bf;
        return 0;
    }
    STEP_OP(e, STEP_OP_DEQUANTIZE, agoq_rowq_dequantize_cuda(&e->fq[role], s->q, (int)rows, (int)cols, tmp, e->stream));
    *out = tmp;
    return 0;
}

#define TMP(var, elems, what)                                                                      \
    uint16_t *var = step_tmp(e, (size_t)(elems) * 2, what);                                        \
    if (!var) return -1

/* A producer's bf16 output [elems] that is kept as the saved tensor of (role, layer) when keep:
 * allocated SAVED from the start (the arena's long-lived end), else a temporary; keep_bf16 then
 * only counts it. */
static uint16_t *out_buf(step_engine *e, size_t elems, int keep, int role, int layer, const char *what) {
    return agoq_arena_alloc(&e->ar, elems * 2, keep ? AGOQ_MEM_SAVED : AGOQ_MEM_WORKSPACE, keep ? role : -1,
                            keep ? layer : -1, what);
}
#define OUT(var, elems, keep, role, what)                                                          \
    uint16_t *var = out_buf(e, (size_t)(elems), keep, role, l, what);                              \
    if (!var) return -1

static int kept(const step_engine *e, int role, int save) { return save && e->pl.st[role].kind == AGOQ_STORE_NATIVE; }

/* Y[T, N] = X[T, K] W[N, K]^T (+ R) of a forward GEMM site: with fused the project's Hopper GEMM
 * (gemm_site.c), which with q also writes the rowq copy of Y into yq; else cuBLASLt. A fused site
 * takes that GEMM in every forward of a layer, storing or not, so a recomputed layer's second
 * forward reproduces its first bit for bit. */
static int gemm_fwd(step_engine *e, int fused, const agoq_fq *q, agoq_dqt yq, int N, int K, const uint16_t *X,
                    const uint16_t *W, const uint16_t *R, uint16_t *Y) {
    const int T = (int)e->pl.T;
#if AGOQ_HAVE_CUDA
    if (fused) {
        STEP_OP(e, STEP_OP_GEMM_FWD, agoq_wg_fwd(T, N, K, X, W, R, Y, q, yq, e->stream));
        return 0;
    }
#endif
    STEP_OP(e, STEP_OP_GEMM_FWD, agoq_lt_fwd(e->lt, T, N, K, X, W, R, Y, e->stream));
    return 0;
}

int step_layer_fwd(step_engine *e, int l, step_layer_saved *S, uint16_t *x, int save, int keep_out, step_saved *next_x,
                   uint16_t **out) {
    const step_plan *p = &e->pl;
    const agoq_step_config *c = e->cfg;
    const size_t T = (size_t)p->T, h = (size_t)p->h, F = (size_t)p->F;
    uint16_t *const *W = &e->w[STEP_W(e, l, 0)];
    const int qn = save && p->st[AGOQ_ROLE_NORM_IN].kind == AGOQ_STORE_QUANT;
    const agoq_fq *fqn = qn ? &e->fq[AGOQ_ROLE_NORM_IN] : NULL;
    /* fused GEMM sites (gemm_site.c): the GEMM writes the copy, its consumer quantizes nothing */
    const int g_out = step_gemm_fused(e, AGOQ_GEMM_SITE_OUT_PROJ), f_out = qn && g_out;
    const int f_fc2 = next_x && step_gemm_fused(e, AGOQ_GEMM_SITE_FC2);
    const int x_done = qn && S->x.quant; /* the previous layer's fused FC2 wrote this layer's copy */
    if (!x_done) memset(&S->x, 0, sizeof S->x);
    memset(&S->x2, 0, sizeof S->x2);
    memset(&S->hh, 0, sizeof S->hh);
    if (save && !qn) {
        if (keep_bf16(e, &S->x, x, T * h, AGOQ_ROLE_NORM_IN, l)) return -1;
    } else if (qn && !x_done && alloc_q(e, &S->x, AGOQ_ROLE_NORM_IN, l, T, h)) {
        return -1;
    }
    /* attention block */
    OUT(y1, T * h, kept(e, AGOQ_ROLE_QKV_IN, save), AGOQ_ROLE_QKV_IN, "y1");
    STEP_OP(e, STEP_OP_NORM_FWD, agoq_rmsnorm_fwd_cuda(x_done ? NULL : fqn, x, W[AGOQ_PARAM_NORM1], (int)T, (int)h, c->norm_eps, y1,
                                                       S->x.q, NULL, e->stream));
    OUT(qkv, T * (size_t)p->QKVN, kept(e, AGOQ_ROLE_ATTENTION, save), AGOQ_ROLE_ATTENTION, "qkv");
    STEP_OP(e, STEP_OP_GEMM_FWD, agoq_lt_fwd(e->lt, (int)T, (int)p->QKVN, (int)h, y1, W[AGOQ_PARAM_QKV], NULL, qkv, e->stream));
    if (store_output(e, &S->y1, y1, T, h, AGOQ_ROLE_QKV_IN, l, save)) return -1;
    STEP_OP(e, STEP_OP_ROPE, agoq_rope_cuda(qkv, (int)T, (int)p->s, (int)p->a, (int)p->kv, (int)p->d, c->rope_base, 0, e->stream));
    OUT(o, T * (size_t)p->AD, kept(e, AGOQ_ROLE_ATTENTION, save), AGOQ_ROLE_ATTENTION, "attn out");
    const size_t lse_bytes = (size_t)p->b * (size_t)p->a * (size_t)p->s * 4;
    S->lse = save ? agoq_arena_alloc(&e->ar, lse_bytes, AGOQ_MEM_SAVED, AGOQ_ROLE_STAT, l, "lse")
                  : step_tmp(e, lse_bytes, "lse");
    if (!S->lse) return -1;
    if (save) count_saved(e, AGOQ_ROLE_STAT, l, (double)lse_bytes);
    const uint16_t *k = qkv + p->AD, *v = qkv + p->AD + p->kv * p->d;
    STEP_OP(e, STEP_OP_ATTN_FWD, agoq_attn_fwd(e->attn, qkv, k, v, o, S->lse, e->attn_ws, e->stream));
    OUT(x2, T * h, save && !qn, AGOQ_ROLE_NORM_IN, "x2");
    if (f_out && alloc_q(e, &S->x2, AGOQ_ROLE_NORM_IN, l, T, h)) return -1;
    if (gemm_fwd(e, g_out, f_out ? fqn : NULL, S->x2.q, (int)h, (int)p->AD, o, W[AGOQ_PARAM_OUT], x, x2)) return -1;
    if (!save) {
        step_release(e, S->lse);
        S->lse = NULL;
    }
    /* attention's own tensors: q|k|v (one packed buffer) and o; bf16 unless quantized */
    if (save && p->st[AGOQ_ROLE_ATTENTION].kind == AGOQ_STORE_NATIVE) {
        if (keep_bf16(e, &S->qkv, qkv, T * (size_t)p->QKVN, AGOQ_ROLE_ATTENTION, l) ||
            keep_bf16(e, &S->o, o, T * (size_t)p->AD, AGOQ_ROLE_ATTENTION, l))
            return -1;
    } else {
        if (store_output(e, &S->qkv, qkv, T, (size_t)p->QKVN, AGOQ_ROLE_ATTENTION, l, save) ||
            store_output(e, &S->o, o, T, (size_t)p->AD, AGOQ_ROLE_ATTENTION, l, save))
            return -1;
    }
    if (qn) step_release(e, x); /* the quantized copy replaces it (l = 0: the received input) */
    /* MLP block */
    if (save && !qn) {
        if (keep_bf16(e, &S->x2, x2, T * h, AGOQ_ROLE_NORM_IN, l)) return -1;
    } else if (qn && !f_out && alloc_q(e, &S->x2, AGOQ_ROLE_NORM_IN, l, T, h)) {
        return -1;
    }
    OUT(y2, T * h, kept(e, AGOQ_ROLE_FFN1_IN, save), AGOQ_ROLE_FFN1_IN, "y2");
    STEP_OP(e, STEP_OP_NORM_FWD, agoq_rmsnorm_fwd_cuda(f_out ? NULL : fqn, x2, W[AGOQ_PARAM_NORM2], (int)T, (int)h, c->norm_eps, y2,
                                                       S->x2.q, NULL, e->stream));
    const int qh = save && p->st[AGOQ_ROLE_FC1_OUT].kind == AGOQ_STORE_QUANT;
    const int g_fc1 = step_gemm_fused(e, AGOQ_GEMM_SITE_FC1), f_fc1 = qh && g_fc1;
    const agoq_fq *fqh = qh ? &e->fq[AGOQ_ROLE_FC1_OUT] : NULL;
    OUT(hh, T * 2 * F, save && !qh, AGOQ_ROLE_FC1_OUT, "fc1 out");
    /* the fused GEMM's copy of T rows of 2F is the rowq of [2T, F] (the block divides F) */
    if (f_fc1 && alloc_q(e, &S->hh, AGOQ_ROLE_FC1_OUT, l, 2 * T, F)) return -1;
    if (gemm_fwd(e, g_fc1, f_fc1 ? fqh : NULL, S->hh.q, (int)(2 * F), (int)h, y2, W[AGOQ_PARAM_FC1], NULL, hh)) return -1;
    if (store_output(e, &S->y2, y2, T, h, AGOQ_ROLE_FFN1_IN, l, save)) return -1;
    OUT(a, T * F, kept(e, AGOQ_ROLE_FFN2_IN, save), AGOQ_ROLE_FFN2_IN, "swiglu out");
    if (qh && !f_fc1 && alloc_q(e, &S->hh, AGOQ_ROLE_FC1_OUT, l, 2 * T, F)) return -1;
    STEP_OP(e, STEP_OP_SWIGLU_FWD, agoq_swiglu_fwd_cuda(f_fc1 ? NULL : fqh, hh, (int)T, (int)F, a, S->hh.q, e->stream));
    if (save && !qh) {
        if (keep_bf16(e, &S->hh, hh, T * 2 * F, AGOQ_ROLE_FC1_OUT, l)) return -1;
    } else {
        step_release(e, hh);
    }
    uint16_t *y = out_buf(e, T * h, keep_out, AGOQ_ROLE_NORM_IN, l + 1, "layer out");
    if (!y) return -1;
    if (f_fc2 && alloc_q(e, next_x, AGOQ_ROLE_NORM_IN, l + 1, T, h)) return -1;
    if (gemm_fwd(e, f_fc2, f_fc2 ? &e->fq[AGOQ_ROLE_NORM_IN] : NULL, f_fc2 ? next_x->q : (agoq_dqt){0}, (int)h, (int)F, a,
                 W[AGOQ_PARAM_FC2], x2, y))
        return -1;
    if (store_output(e, &S->a, a, T, F, AGOQ_ROLE_FFN2_IN, l, save)) return -1;
    if (qn || !save) step_release(e, x2);
    e->flops_done += p->fwd_flops;
    *out = y;
    return 0;
}

/* RMSNorm backward from the stored input x (bf16 or quantized): dx, the recomputed norm output
 * yr, the weight gradient; releases dy and the stored input. */
static int norm_bwd(step_engine *e, int l, agoq_param_kind k, step_saved *x, uint16_t *dy, uint16_t *dx, uint16_t *yr) {
    const size_t T = (size_t)e->pl.T, h = (size_t)e->pl.h;
    const int rpg = agoq_rmsnorm_bwd_rows_per_group(e->sms, x->quant, (int)T, (int)h), groups = (int)((T + rpg - 1) / rpg);
    float *part = step_tmp(e, (size_t)groups * h * 4, "dw partial"), *dw = part ? step_grad_norm_dw(e) : NULL;
    if (!dw) return -1;
    STEP_OP(e, STEP_OP_NORM_BWD,
            agoq_rmsnorm_bwd_dw_cuda(x->quant ? fq_of(e, AGOQ_ROLE_NORM_IN) : NULL, x->q, x->bf, dy,
                                     e->w[STEP_W(e, l, k)], (int)T, (int)h, e->cfg->norm_eps, rpg, dx, yr, part, dw,
                                     e->stream));
    step_release(e, dy);
    if (step_grad_norm(e, l, k, dw)) return -1;
    step_release(e, part);
    drop(e, x);
    return 0;
}

int step_layer_bwd(step_engine *e, int l, step_layer_saved *S, uint16_t *dout, uint16_t **dx_out) {
    const step_plan *p = &e->pl;
    const agoq_step_config *c = e->cfg;
    const size_t T = (size_t)p->T, h = (size_t)p->h, F = (size_t)p->F, QKVN = (size_t)p->QKVN, AD = (size_t)p->AD;
    uint16_t *const *W = &e->w[STEP_W(e, l, 0)];
    /* FC2 and SwiGLU: da = dout W2; dh and the recomputed a from the stored FC1 output */
    TMP(da, T * F, "da");
    STEP_OP(e, STEP_OP_GEMM_DGRAD, agoq_lt_dgrad(e->lt, (int)T, (int)h, (int)F, dout, W[AGOQ_PARAM_FC2], NULL, da, e->stream));
    TMP(dh, T * 2 * F, "dh");
    TMP(ar, T * F, "a recomputed");
    STEP_OP(e, STEP_OP_SWIGLU_BWD, agoq_swiglu_bwd_cuda(S->hh.quant ? &e->fq[AGOQ_ROLE_FC1_OUT] : NULL, S->hh.q, S->hh.bf, da, (int)T,
                                     (int)F, dh, ar, e->stream));
    step_release(e, da);
    drop(e, &S->hh);
    const uint16_t *a = ar;
    if (S->a.bf || S->a.quant)
        if (load(e, &S->a, AGOQ_ROLE_FFN2_IN, T, F, ar, &a)) return -1;
    if (step_grad_wgrad(e, l, AGOQ_PARAM_FC2, (int)T, (int)h, (int)F, dout, a)) return -1;
    drop(e, &S->a);
    step_release(e, ar);
    /* FC1 and RMSNorm 2: dy2 = dh W1; dx2 and the recomputed y2 from the stored norm input */
    TMP(dy2, T * h, "dy2");
    STEP_OP(e, STEP_OP_GEMM_DGRAD, agoq_lt_dgrad(e->lt, (int)T, (int)(2 * F), (int)h, dh, W[AGOQ_PARAM_FC1], NULL, dy2, e->stream));
    TMP(dx2, T * h, "dx2");
    TMP(y2r, T * h, "y2 recomputed");
    if (norm_bwd(e, l, AGOQ_PARAM_NORM2, &S->x2, dy2, dx2, y2r)) return -1;
    const uint16_t *y2 = y2r;
    if (S->y2.bf || S->y2.quant)
        if (load(e, &S->y2, AGOQ_ROLE_FFN1_IN, T, h, y2r, &y2)) return -1;
    if (step_grad_wgrad(e, l, AGOQ_PARAM_FC1, (int)T, (int)(2 * F), (int)h, dh, y2)) return -1;
    drop(e, &S->y2);
    step_release(e, dh);
    step_release(e, y2r);
    STEP_OP(e, STEP_OP_ELEMENTWISE, step_dev_add_bf16(dx2, dx2, dout, T * h, e->stream)); /* the residual's gradient */
    /* attention block: do = dx2 Wo, dWo from o, SDPA backward, RoPE backward */
    TMP(dO, T * AD, "d attn out");
    STEP_OP(e, STEP_OP_GEMM_DGRAD, agoq_lt_dgrad(e->lt, (int)T, (int)h, (int)AD, dx2, W[AGOQ_PARAM_OUT], NULL, dO, e->stream));
    uint16_t *qkv_t = NULL, *o_t = NULL;
    if (S->qkv.quant) {
        qkv_t = step_tmp(e, T * QKVN * 2, "qkv dequantized");
        o_t = step_tmp(e, T * AD * 2, "o dequantized");
        if (!qkv_t || !o_t) return -1;
    }
    const uint16_t *qkv, *o;
    if (load(e, &S->qkv, AGOQ_ROLE_ATTENTION, T, QKVN, qkv_t, &qkv) || load(e, &S->o, AGOQ_ROLE_ATTENTION, T, AD, o_t, &o))
        return -1;
    if (step_grad_wgrad(e, l, AGOQ_PARAM_OUT, (int)T, (int)h, (int)AD, dx2, o)) return -1;
    TMP(dqkv, T * QKVN, "dqkv");
    const size_t ko = (size_t)p->AD, vo = ko + (size_t)(p->kv * p->d);
    STEP_OP(e, STEP_OP_ATTN_BWD, agoq_attn_bwd(e->attn, qkv, qkv + ko, qkv + vo, o, dO, S->lse, dqkv, dqkv + ko, dqkv + vo, e->attn_ws,
                              e->stream));
    step_release(e, dO);
    drop(e, &S->qkv);
    drop(e, &S->o);
    step_release(e, qkv_t);
    step_release(e, o_t);
    step_release(e, S->lse);
    S->lse = NULL;
    STEP_OP(e, STEP_OP_ROPE, agoq_rope_cuda(dqkv, (int)T, (int)p->s, (int)p->a, (int)p->kv, (int)p->d, c->rope_base, 1, e->stream));
    /* QKV and RMSNorm 1 */
    TMP(dy1, T * h, "dy1");
    STEP_OP(e, STEP_OP_GEMM_DGRAD, agoq_lt_dgrad(e->lt, (int)T, (int)QKVN, (int)h, dqkv, W[AGOQ_PARAM_QKV], NULL, dy1, e->stream));
    TMP(dx, T * h, "dx");
    TMP(y1r, T * h, "y1 recomputed");
    if (norm_bwd(e, l, AGOQ_PARAM_NORM1, &S->x, dy1, dx, y1r)) return -1;
    const uint16_t *y1 = y1r;
    if (S->y1.bf || S->y1.quant)
        if (load(e, &S->y1, AGOQ_ROLE_QKV_IN, T, h, y1r, &y1)) return -1;
    if (step_grad_wgrad(e, l, AGOQ_PARAM_QKV, (int)T, (int)QKVN, (int)h, dqkv, y1)) return -1;
    drop(e, &S->y1);
    step_release(e, dqkv);
    step_release(e, y1r);
    STEP_OP(e, STEP_OP_ELEMENTWISE, step_dev_add_bf16(dx, dx, dx2, T * h, e->stream));
    step_release(e, dx2);
    e->flops_done += p->bwd_flops;
    *dx_out = dx;
    return 0;
}
