/* The step engine's language model (model.h): embedding, decoder stack, final norm, LM head
 * and cross-entropy around the engine's layers (layer.c), and AdamW for the trainer.
 *
 * Sizing as the engine does it (engine.c): the same calls run once dry (every allocation, no
 * kernel) on a bookkeeping arena: one training micro-batch, one forward-only evaluation and one
 * optimizer step; the real arena is that high-water mark. Persistent tensors (the engine's
 * weights, gradients and moments, plus wte and lnf with theirs, the token ids and the loss
 * rows) are allocated first, in the same order both times, so the two runs place them alike. */
#include "step/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/common.h"
#include "kernels/lm/lm.h"
#include "step/dev.h"
#include "step/step_internal.h"


/* wte and lnf: fp32 master, bf16 working copy, fp32 gradient and moments */
typedef struct {
    size_t n;
    float *master, *grad, *m, *v;
    uint16_t *w;
} lm_param;

struct agoq_lm {
    agoq_lm_config mc;
    agoq_step_config cfg;
    step_engine e;
    int opened;
    agoq_attn *attn;
    void *stream, *base;
    size_t need;
    lm_param wte, lnf;
    int *tok, *tgt;        /* device, T ids */
    float *loss_rows;      /* device, T */
    float *loss_host;      /* host, T */
    step_layer_saved *S;   /* [L] saved tensors of the training forward */
    int adam_t;
};

static size_t tokens_of(const agoq_lm *m) { return (size_t)m->e.pl.T; }

static int upload_ids(agoq_lm *m, const int *tok, const int *tgt) {
    const size_t T = tokens_of(m);
    for (size_t i = 0; i < T; i++)
        if (tok[i] < 0 || tok[i] >= m->mc.vocab || (tgt && (tgt[i] < 0 || tgt[i] >= m->mc.vocab)))
            return agoq_error("lm: token id %d / %d at %zu outside [0, %d)", tok[i], tgt ? tgt[i] : 0, i, m->mc.vocab), -1;
    STEP_GPUV(&m->e, step_dev_sync()); /* the engine's stream is non-blocking: no reader of the ids may be pending */
    STEP_GPUV(&m->e, step_dev_h2d(m->tok, tok, T * sizeof(int)));
    if (tgt) STEP_GPUV(&m->e, step_dev_h2d(m->tgt, tgt, T * sizeof(int)));
    return 0;
}

/* Forward of the uploaded micro-batch. save: keep what backward needs (S, the final norm's
 * input *xL and output *yf, dlogits *dl); else release everything. Loss rows on the device. */
static int lm_fwd(agoq_lm *m, int save, uint16_t **xL, uint16_t **yf_out, uint16_t **dl) {
    step_engine *e = &m->e;
    const step_plan *p = &e->pl;
    const size_t T = (size_t)p->T, h = (size_t)p->h, V = (size_t)m->mc.vocab;
    uint16_t *x = agoq_arena_alloc(&e->ar, T * h * 2, AGOQ_MEM_IO, -1, -1, "embedding out");
    if (!x) return -1;
    STEP_OP(e, STEP_OP_INPUT, agoq_embed_fwd_cuda(m->wte.w, m->tok, (int)T, (int)h, x, e->stream));
    for (int l = 0; l < p->L; l++) {
        step_layer_saved tmp, *S = save ? &m->S[l] : &tmp;
        memset(S, 0, sizeof *S);
        uint16_t *y;
        const int keep = save && l + 1 < p->L && p->st[AGOQ_ROLE_NORM_IN].kind != AGOQ_STORE_QUANT;
        if (step_layer_fwd(e, l, S, x, save, keep, NULL, &y)) return -1; /* gemm_fused unresolved: cuBLASLt */
        if (!save) step_release(e, x); /* a forward that saves nothing leaves its input to us */
        x = y;
    }
    uint16_t *yf = step_tmp(e, T * h * 2, "final norm out"), *logits = step_tmp(e, T * V * 2, "logits");
    uint16_t *dlog = save ? step_tmp(e, T * V * 2, "dlogits") : NULL;
    if (!yf || !logits || (save && !dlog)) return -1;
    const agoq_dqt none = {0};
    STEP_OP(e, STEP_OP_NORM_FWD, agoq_rmsnorm_fwd_cuda(NULL, x, m->lnf.w, (int)T, (int)h, m->cfg.norm_eps, yf, none, NULL, e->stream));
    STEP_OP(e, STEP_OP_GEMM_FWD, agoq_lt_fwd(e->lt, (int)T, (int)V, (int)h, yf, m->wte.w, NULL, logits, e->stream));
    STEP_OP(e, STEP_OP_ELEMENTWISE, agoq_xent_cuda(logits, m->tgt, (int)T, (int)V, 1.0f / (float)T, m->loss_rows, dlog, e->stream));
    step_release(e, logits);
    if (!save) {
        step_release(e, yf);
        step_release(e, x);
        return 0;
    }
    *xL = x;
    *yf_out = yf;
    *dl = dlog;
    return 0;
}

static int lm_bwd(agoq_lm *m, uint16_t *xL, uint16_t *yf, uint16_t *dlog) {
    step_engine *e = &m->e;
    const step_plan *p = &e->pl;
    const size_t T = (size_t)p->T, h = (size_t)p->h, V = (size_t)m->mc.vocab;
    const int rpg = agoq_rmsnorm_bwd_rows_per_group(e->sms, 0, (int)T, (int)h), groups = (int)((T + rpg - 1) / rpg);
    memset(e->grad_fresh, 1, (size_t)p->L * AGOQ_PARAM_COUNT);
    /* head: dy = dlogits wte, dwte = dlogits^T yf (overwrites: this micro-batch's gradient) */
    uint16_t *dy = step_tmp(e, T * h * 2, "d final norm out");
    if (!dy) return -1;
    STEP_OP(e, STEP_OP_GEMM_DGRAD, agoq_lt_dgrad(e->lt, (int)T, (int)V, (int)h, dlog, m->wte.w, NULL, dy, e->stream));
    STEP_OP(e, STEP_OP_GEMM_WGRAD, agoq_lt_wgrad(e->lt, (int)T, (int)V, (int)h, dlog, yf, 0, m->wte.grad, NULL, e->stream));
    step_release(e, dlog);
    step_release(e, yf);
    /* final RMSNorm from its bf16 input */
    float *part = step_tmp(e, (size_t)groups * h * 4, "lnf dw partial");
    uint16_t *dx = step_tmp(e, T * h * 2, "d stack out"), *yr = step_tmp(e, T * h * 2, "final norm recomputed");
    if (!part || !dx || !yr) return -1;
    const agoq_dqt none = {0};
    STEP_OP(e, STEP_OP_NORM_BWD, agoq_rmsnorm_bwd_dw_cuda(NULL, none, xL, dy, m->lnf.w, (int)T, (int)h, m->cfg.norm_eps,
                                                         rpg, dx, yr, part, m->lnf.grad, e->stream));
    step_release(e, yr);
    step_release(e, part);
    step_release(e, dy);
    step_release(e, xL);
    for (int l = (int)p->L - 1; l >= 0; l--) {
        uint16_t *dxl;
        if (step_layer_bwd(e, l, &m->S[l], dx, &dxl)) return -1;
        step_release(e, dx);
        dx = dxl;
    }
    STEP_OP(e, STEP_OP_GRAD_ACCUM, agoq_embed_bwd_cuda(dx, m->tok, (int)T, (int)h, (int)V, m->wte.grad, e->stream));
    step_release(e, dx);
    return 0;
}

static int train_pass(agoq_lm *m) {
    uint16_t *xL, *yf, *dl;
    return lm_fwd(m, 1, &xL, &yf, &dl) || lm_bwd(m, xL, yf, dl) ? -1 : 0;
}

static double loss_mean(agoq_lm *m) {
    const size_t T = tokens_of(m);
    STEP_GPUV(&m->e, step_dev_sync());
    STEP_GPUV(&m->e, step_dev_d2h(m->loss_host, m->loss_rows, T * sizeof(float)));
    double s = 0.0;
    for (size_t i = 0; i < T; i++) s += m->loss_host[i];
    return s / (double)T;
}

/* Host array (tensor order) of the device pointers of one kind: 0 master, 1 grad, 2 m, 3 v. */
static float *dev_tensor(agoq_lm *m, size_t i, int kind) {
    const size_t np = (size_t)m->e.pl.L * AGOQ_PARAM_COUNT;
    if (i == 0 || i == np + 1) {
        lm_param *p = i == 0 ? &m->wte : &m->lnf;
        return kind == 0 ? p->master : kind == 1 ? p->grad : kind == 2 ? p->m : p->v;
    }
    const size_t k = i - 1;
    return kind == 0 ? m->e.master[k] : kind == 1 ? m->e.g32[k] : kind == 2 ? m->e.m32[k] : m->e.v32[k];
}
static uint16_t *dev_weight(agoq_lm *m, size_t i) {
    const size_t np = (size_t)m->e.pl.L * AGOQ_PARAM_COUNT;
    return i == 0 ? m->wte.w : i == np + 1 ? m->lnf.w : m->e.w[i - 1];
}

size_t agoq_lm_tensor_count(const agoq_lm *m) { return (size_t)m->e.pl.L * AGOQ_PARAM_COUNT + 2; }
size_t agoq_lm_tensor_elems(const agoq_lm *m, size_t i) {
    const size_t np = (size_t)m->e.pl.L * AGOQ_PARAM_COUNT;
    return i == 0 ? m->wte.n : i == np + 1 ? m->lnf.n : m->e.pl.pelems[(i - 1) % AGOQ_PARAM_COUNT];
}
int agoq_lm_tensor_is_norm(const agoq_lm *m, size_t i) {
    const size_t np = (size_t)m->e.pl.L * AGOQ_PARAM_COUNT;
    if (i == 0) return 0;
    if (i == np + 1) return 1;
    const int k = (int)((i - 1) % AGOQ_PARAM_COUNT);
    return k == AGOQ_PARAM_NORM1 || k == AGOQ_PARAM_NORM2;
}
double agoq_lm_arena_bytes(const agoq_lm *m) { return (double)m->need; }
double agoq_lm_saved_bytes_per_layer(const agoq_lm *m) {
    double s = 0.0;
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++) s += m->e.pl.model_by_role[r];
    return s;
}

int agoq_lm_adamw(agoq_lm *m, float *const *g, float lr, float wd, float beta1, float beta2, float eps) {
    step_engine *e = &m->e;
    agoq_adamw_hp hp = {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .grad_scale = 1.0f, .step = ++m->adam_t};
    STEP_GPUV(e, step_dev_sync()); /* the gradient uploads below run on the legacy stream */
    for (size_t i = 0; i < agoq_lm_tensor_count(m); i++) {
        const size_t n = agoq_lm_tensor_elems(m, i);
        float *gd = dev_tensor(m, i, 1);
        if (g) STEP_GPUV(e, step_dev_h2d(gd, g[i], n * 4));
        hp.weight_decay = agoq_lm_tensor_is_norm(m, i) ? 0.0f : wd;
        STEP_OP(e, STEP_OP_OPTIMIZER, agoq_adamw_cuda(&hp, dev_tensor(m, i, 0), gd, dev_tensor(m, i, 2), dev_tensor(m, i, 3),
                                                      dev_weight(m, i), n, e->stream));
    }
    return 0;
}

int agoq_lm_set_weights(agoq_lm *m, float *const *w) {
    step_engine *e = &m->e;
    for (size_t i = 0; i < agoq_lm_tensor_count(m); i++) {
        const size_t n = agoq_lm_tensor_elems(m, i);
        STEP_GPUV(e, step_dev_sync());
        STEP_GPUV(e, step_dev_h2d(dev_tensor(m, i, 0), w[i], n * 4));
        STEP_GPU(e, step_dev_cast_bf16(dev_weight(m, i), dev_tensor(m, i, 0), n, e->stream));
        STEP_GPUV(e, step_dev_memset(dev_tensor(m, i, 2), n * 4, e->stream));
        STEP_GPUV(e, step_dev_memset(dev_tensor(m, i, 3), n * 4, e->stream));
    }
    m->adam_t = 0;
    STEP_GPUV(e, step_dev_sync());
    return 0;
}

int agoq_lm_loss(agoq_lm *m, const int *tok, const int *tgt, double *loss) {
    if (upload_ids(m, tok, tgt) || lm_fwd(m, 0, NULL, NULL, NULL)) return -1;
    *loss = loss_mean(m);
    return 0;
}

int agoq_lm_grads(agoq_lm *m, const int *tok, const int *tgt, double *loss, float **g) {
    if (upload_ids(m, tok, tgt) || train_pass(m)) return -1;
    *loss = loss_mean(m);
    for (size_t i = 0; i < agoq_lm_tensor_count(m); i++)
        STEP_GPUV(&m->e, step_dev_d2h(g[i], dev_tensor(m, i, 1), agoq_lm_tensor_elems(m, i) * 4));
    return 0;
}

/* The engine's config of this model: a card of its shape, one stage, one micro-batch. */
static int make_config(const agoq_lm_config *c, agoq_step_config *sc) {
    agoq_model_card card;
    memset(&card, 0, sizeof card);
    snprintf(card.name, sizeof card.name, "trainer-%dx%d", c->layers, c->hidden);
    snprintf(card.family, sizeof card.family, "llama");
    card.layer = AGOQ_LAYER_LLAMA;
    card.hidden = c->hidden;
    card.ffn = c->ffn;
    card.heads = card.kv_heads = c->heads;
    card.head_dim = c->heads > 0 ? c->hidden / c->heads : 0;
    card.layers = c->layers;
    card.vocab = c->vocab;
    card.max_seq = c->seq;
    card.tied_embeddings = 1;
    card.norm_weights = 1;
    agoq_step_config_default(sc, &card);
    sc->layers = c->layers;
    sc->ms.pol = c->pol;
    sc->ms.par.seq = c->seq;
    sc->ms.par.micro_batch = c->batch;
    sc->ms.par.num_microbatches = 1;
    sc->rope_base = c->rope_base;
    sc->norm_eps = c->norm_eps;
    sc->quiet = 1;
    if (c->pol.grad.kind == AGOQ_STORE_QUANT || c->pol.moments.kind == AGOQ_STORE_QUANT)
        return agoq_error("lm: gradients and moments are fp32 here (the trainer's all-reduce quantizes)"), -1;
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++)
        if (c->pol.act[r].kind == AGOQ_STORE_FP32)
            return agoq_error("lm: role '%s' stored fp32: the engine stores bf16, quantized or nothing "
                              "(fp32 storage is the CPU trainer's reference)", agoq_role_name((agoq_role)r)), -1;
    return agoq_step_config_fix(sc);
}


#if AGOQ_HAVE_CUDA
static int param_alloc(step_engine *e, lm_param *p, size_t n) {
    memset(p, 0, sizeof *p);
    p->n = n;
    p->w = agoq_arena_alloc(&e->ar, n * 2, AGOQ_MEM_WEIGHTS, -1, -1, "lm weight");
    p->grad = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_GRADS, -1, -1, "lm grad");
    p->master = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_OPTIMIZER, -1, -1, "lm master");
    p->m = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_OPTIMIZER, -1, -1, "lm adam m");
    p->v = agoq_arena_alloc(&e->ar, n * 4, AGOQ_MEM_OPTIMIZER, -1, -1, "lm adam v");
    return p->w && p->grad && p->master && p->m && p->v ? 0 : -1;
}

/* The model's persistent tensors beyond the engine's: same order dry and real. */
static int lm_alloc(agoq_lm *m) {
    step_engine *e = &m->e;
    const size_t T = tokens_of(m), h = (size_t)e->pl.h;
    if (param_alloc(e, &m->wte, (size_t)m->mc.vocab * h) || param_alloc(e, &m->lnf, h)) return -1;
    m->tok = agoq_arena_alloc(&e->ar, T * sizeof(int), AGOQ_MEM_IO, -1, -1, "tokens");
    m->tgt = agoq_arena_alloc(&e->ar, T * sizeof(int), AGOQ_MEM_IO, -1, -1, "targets");
    m->loss_rows = agoq_arena_alloc(&e->ar, T * sizeof(float), AGOQ_MEM_IO, -1, -1, "loss rows");
    return m->tok && m->tgt && m->loss_rows ? 0 : -1;
}

/* Opens the engine and the model's tensors on [base, base + cap) (base NULL: dry), placed from
 * ends (1 or 2) ends. */
static int lm_open_on(agoq_lm *m, void *base, size_t cap, int ends, size_t attn_ws) {
    if (step_engine_open(&m->e, &m->cfg, base, cap, ends, m->attn, attn_ws, m->stream)) return -1;
    m->opened = 1;
    return lm_alloc(m);
}
#endif

void *agoq_lm_host_alloc(size_t bytes) {
#if AGOQ_HAVE_CUDA
    return step_dev_host_alloc(bytes);
#else
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) agoq_error("lm: out of host memory for %zu bytes", bytes);
    return p;
#endif
}

void agoq_lm_host_free(void *p) {
#if AGOQ_HAVE_CUDA
    step_dev_host_free(p);
#else
    free(p);
#endif
}

void agoq_lm_close(agoq_lm *m) {
    if (!m) return;
    if (m->opened) step_engine_close(&m->e);
#if AGOQ_HAVE_CUDA
    if (m->base) {
        step_dev_sync();
        step_dev_free(m->base);
    }
    if (m->stream) step_dev_stream_destroy(m->stream);
    agoq_attn_destroy(m->attn);
#endif
    free(m->S);
    free(m->loss_host);
    free(m);
}

int agoq_lm_open(const agoq_lm_config *c, agoq_lm **out) {
    *out = NULL;
    agoq_lm *m = calloc(1, sizeof *m);
    if (!m) return agoq_error("lm: out of host memory"), -1;
    m->mc = *c;
    if (make_config(c, &m->cfg)) return agoq_lm_close(m), -1;
#if !AGOQ_HAVE_CUDA
    agoq_lm_close(m);
    return agoq_error("lm: built without CUDA: the step engine's model needs a GPU"), -1;
#else
    char why[256];
    if (agoq_cuda_devices(why, sizeof why) <= 0) return agoq_lm_close(m), agoq_error("lm: no GPU: %s", why), -1;
    if (agoq_attn_available(why, sizeof why))
        return agoq_lm_close(m), agoq_error("lm: cuDNN flash attention unavailable: %s", why), -1;
    step_plan pl;
    if (step_plan_make(&m->cfg, &pl)) return agoq_lm_close(m), -1;
    m->S = calloc((size_t)pl.L, sizeof *m->S);
    m->loss_host = calloc((size_t)pl.T, sizeof *m->loss_host);
    if (!m->S || !m->loss_host) return agoq_lm_close(m), agoq_error("lm: out of host memory"), -1;
    agoq_attn_desc ad = {(int)pl.b, (int)pl.s, (int)pl.a, (int)pl.kv, (int)pl.d, pl.QKVN, pl.QKVN, pl.AD,
                         1.0f / sqrtf((float)pl.d), 1};
    if (agoq_attn_create(&ad, &m->attn)) return agoq_lm_close(m), -1;
    const size_t ws = agoq_attn_workspace_bytes(m->attn);
    /* dry: the same calls on a bookkeeping arena give the exact need, for both placements
       (arena.h); the real arena takes the one that needs less */
    int rc = 0, ends = 1;
    for (int k = 1; k <= 2 && !rc; k++) {
        rc = lm_open_on(m, NULL, (size_t)1 << 62, k, ws);
        if (!rc) {
            uint16_t *xL, *yf, *dl;
            rc = lm_fwd(m, 0, NULL, NULL, NULL) || lm_fwd(m, 1, &xL, &yf, &dl) || lm_bwd(m, xL, yf, dl) ||
                 agoq_lm_adamw(m, NULL, 0.0f, 0.0f, 0.9f, 0.95f, 1e-8f);
        }
        if (!rc && (k == 1 || m->e.ar.high_water < m->need)) m->need = m->e.ar.high_water, ends = k;
        step_engine_close(&m->e);
        m->opened = 0;
    }
    if (rc) return agoq_lm_close(m), -1;
    m->stream = step_dev_stream_create();
    if (!(m->base = step_dev_malloc(m->need)) || lm_open_on(m, m->base, m->need, ends, ws)) return agoq_lm_close(m), -1;
    m->adam_t = 0;
    *out = m;
    return 0;
#endif
}
