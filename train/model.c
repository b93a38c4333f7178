/* The decoder's forward and backward passes over the saved-activation hook and the backend's
 * ops table; see model.h and ops.h. */
#include "train/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"

const char *const train_param_names[P_COUNT] = {"wte", "ln1", "qkv", "wo", "ln2", "w1", "w2", "lnf"};

/* The memory model's role of each saved slot (models/inventory.h); the final norm's output,
 * the LM head's input, is stored as the QKV input (both are norm outputs). */
static const agoq_role slot_role[S_COUNT] = {
    [S_X1] = AGOQ_ROLE_NORM_IN,    [S_H1] = AGOQ_ROLE_QKV_IN,  [S_QKV] = AGOQ_ROLE_ATTENTION,
    [S_ATT] = AGOQ_ROLE_ATTENTION, [S_Y] = AGOQ_ROLE_OUTPROJ_IN, [S_X2] = AGOQ_ROLE_NORM_IN,
    [S_H2] = AGOQ_ROLE_FFN1_IN,    [S_GU] = AGOQ_ROLE_FC1_OUT, [S_S] = AGOQ_ROLE_FFN2_IN};

/* Row view of each slot for quantized storage: rows of `cols` elements, each its own blocks.
 * q, k and v are separate rows of C; gate and up separate rows of F (kernels/fused/fused.h's rowq). */
static void slot_shape(const train_cfg *c, int slot, size_t *rows, size_t *cols) {
    size_t bt = (size_t)c->batch * (size_t)c->seq_len;
    switch (slot) {
    case S_QKV: *rows = 3 * bt; *cols = (size_t)c->d_model; break;
    case S_ATT: *rows = (size_t)c->batch * (size_t)c->n_head * (size_t)c->seq_len; *cols = (size_t)c->seq_len; break;
    case S_GU: *rows = 2 * bt; *cols = (size_t)c->d_ff; break;
    case S_S: *rows = bt; *cols = (size_t)c->d_ff; break;
    default: *rows = bt; *cols = (size_t)c->d_model; break;
    }
}

static int tensors_alloc(train_dev *d, train_tensors *t, const size_t *size) {
    t->total = 0;
    for (int i = 0; i < P_COUNT; i++) t->total += (t->size[i] = size[i]);
    t->mem = d->ops->alloc(d, t->total * sizeof(float));
    if (!t->mem) return -1;
    float *p = t->mem;
    for (int i = 0; i < P_COUNT; i++) {
        t->t[i] = p;
        p += size[i];
    }
    return 0;
}

/* The activation and scratch buffers, in one list for allocation and release. */
#define MODEL_BUFS(m)                                                                              \
    {&(m)->res, &(m)->qkv, &(m)->att, &(m)->y, &(m)->gu, &(m)->s, &(m)->logits, &(m)->dres,         \
     &(m)->dx2, &(m)->db1, &(m)->db2, &(m)->dqkv, &(m)->dgu}

int train_model_init(train_model *m, const train_cfg *cfg, const train_act_policy *p) {
    memset(m, 0, sizeof *m);
    const train_cfg *c = cfg;
    AGOQ_REQUIRE(c->vocab >= 2 && c->seq_len >= 2 && c->n_layer >= 1 && c->n_head >= 1 && c->d_model >= 2 &&
                     c->d_ff >= 1 && c->batch >= 1,
                 "train: model shape must be positive (vocab %d, seq_len %d, layers %d, heads %d, d_model %d, d_ff %d, batch %d)",
                 c->vocab, c->seq_len, c->n_layer, c->n_head, c->d_model, c->d_ff, c->batch);
    AGOQ_REQUIRE(c->d_model % c->n_head == 0 && (c->d_model / c->n_head) % 2 == 0,
                 "train: d_model %d must split into %d heads of an even size (RoPE pairs)", c->d_model, c->n_head);
    for (int s = 0; s < S_COUNT; s++)
        AGOQ_REQUIRE(p->store[slot_role[s]].kind != AGOQ_STORE_RECOMPUTE || train_role_recomputable(slot_role[s]),
                     "train: policy '%s': role '%s' cannot be recomputed", p->name, agoq_role_name(slot_role[s]));
    m->cfg = *cfg;
    m->policy = *p;
    if (!(m->dev = train_dev_open(c->backend))) return -1;
    train_dev *d = m->dev;
    const size_t L = (size_t)c->n_layer, C = (size_t)c->d_model, F = (size_t)c->d_ff, V = (size_t)c->vocab;
    const size_t BT = (size_t)c->batch * (size_t)c->seq_len;
    size_t sz[P_COUNT];
    train_param_sizes(c, sz);
    int fail = tensors_alloc(d, &m->params, sz) | tensors_alloc(d, &m->grads, sz);
    for (int s = 0; s < S_COUNT; s++) {
        size_t rows, cols;
        slot_shape(c, s, &rows, &cols);
        m->slot_n[s] = rows * cols;
        m->saved[s] = d->ops->alloc(d, (L + 1) * m->slot_n[s] * sizeof(float));
        fail |= !m->saved[s];
        m->act_bytes_per_layer += train_act_store_bytes(&p->store[slot_role[s]], rows, cols);
    }
    float **bufs[] = MODEL_BUFS(m);
    size_t n[] = {(L + 1) * BT * C, BT * 3 * C, m->slot_n[S_ATT], BT * C, BT * 2 * F, BT * F, BT * V, BT * C,
                  BT * C, BT * C, BT * F, BT * 3 * C, BT * 2 * F};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) fail |= !(*bufs[i] = d->ops->alloc(d, n[i] * sizeof(float)));
    fail |= !(m->tokens = d->ops->alloc(d, BT * sizeof(int))) | !(m->targets = d->ops->alloc(d, BT * sizeof(int)));
    if (fail) {
        agoq_error("train: out of %s memory for the model (%zu parameters)", agoq_backend_name(c->backend),
                   m->params.total);
        train_model_free(m);
        return -1;
    }
    return 0;
}

void train_model_free(train_model *m) {
    train_dev *d = m->dev;
    if (d) {
        d->ops->release(d, m->params.mem);
        d->ops->release(d, m->grads.mem);
        for (int s = 0; s < S_COUNT; s++) d->ops->release(d, m->saved[s]);
        float **bufs[] = MODEL_BUFS(m);
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) d->ops->release(d, *bufs[i]);
        d->ops->release(d, m->tokens);
        d->ops->release(d, m->targets);
        train_dev_close(d);
    }
    memset(m, 0, sizeof *m);
}

size_t train_model_param_count(const train_model *m) { return m->params.total; }

void train_model_download(const train_model *m, const train_tensors *t, float *host) {
    m->dev->ops->download(m->dev, host, t->mem, t->total * sizeof(float));
}

void train_model_upload(train_model *m, train_tensors *t, const float *host) {
    m->dev->ops->upload(m->dev, t->mem, host, t->total * sizeof(float));
}

void train_param_sizes(const train_cfg *c, size_t size[P_COUNT]) {
    const size_t L = (size_t)c->n_layer, C = (size_t)c->d_model, F = (size_t)c->d_ff, V = (size_t)c->vocab;
    const size_t sz[P_COUNT] = {[P_WTE] = V * C, [P_LN1] = L * C, [P_QKV] = L * C * 3 * C, [P_WO] = L * C * C,
                                [P_LN2] = L * C, [P_W1] = L * C * 2 * F, [P_W2] = L * F * C, [P_LNF] = C};
    memcpy(size, sz, sizeof sz);
}

void train_weights_draw(const train_cfg *c, uint64_t seed, float *host) {
    agoq_rng r = {seed};
    const double sd = 0.02, sd_res = 0.02 / sqrt(2.0 * c->n_layer);
    size_t size[P_COUNT];
    train_param_sizes(c, size);
    float *w = host;
    for (int t = 0; t < P_COUNT; w += size[t], t++) {
        int is_norm = t == P_LN1 || t == P_LN2 || t == P_LNF, is_res = t == P_WO || t == P_W2;
        for (size_t i = 0; i < size[t]; i++) w[i] = is_norm ? 1.0f : (float)((is_res ? sd_res : sd) * agoq_rng_normal(&r));
    }
}

void train_model_init_weights(train_model *m, uint64_t seed) {
    float *host = malloc(m->params.total * sizeof(float));
    if (!host) agoq_die("train: out of host memory for %zu initial weights", m->params.total);
    train_weights_draw(&m->cfg, seed, host);
    train_model_upload(m, &m->params, host);
    free(host);
}

/* Layer l's slice of a layer-major tensor. */
static float *lw(const train_model *m, const train_tensors *ts, int t, int l) {
    return ts->t[t] + (size_t)l * (ts->size[t] / (size_t)m->cfg.n_layer);
}
static float *slot(const train_model *m, int s, int l) { return m->saved[s] + (size_t)l * m->slot_n[s]; }

/* The hook: keep slot s of layer l as the policy stores it. */
static void save(train_model *m, int s, int l, const float *src) {
    size_t rows, cols;
    slot_shape(&m->cfg, s, &rows, &cols);
    m->dev->ops->act_store(m->dev, &m->policy.store[slot_role[s]], src, rows, cols, slot(m, s, l));
}

/* What backward reads for slot s of layer l: the stored copy, or the recomputation from the
 * stored copy of its producer's input (the same function the forward ran, so with exact
 * storage the recomputed tensor equals the forward's bit for bit). */
static const float *saved(train_model *m, int s, int l) {
    if (m->policy.store[slot_role[s]].kind != AGOQ_STORE_RECOMPUTE) return slot(m, s, l);
    const train_ops *o = m->dev->ops;
    const int L = m->cfg.n_layer, C = m->cfg.d_model, BT = m->cfg.batch * m->cfg.seq_len;
    float *out = slot(m, s, l);
    if (s == S_H1) o->rmsnorm_fwd(m->dev, out, slot(m, S_X1, l), l == L ? m->params.t[P_LNF] : lw(m, &m->params, P_LN1, l), BT, C, m->cfg.norm_eps);
    else if (s == S_H2) o->rmsnorm_fwd(m->dev, out, slot(m, S_X2, l), lw(m, &m->params, P_LN2, l), BT, C, m->cfg.norm_eps);
    else o->swiglu_fwd(m->dev, out, slot(m, S_GU, l), BT, m->cfg.d_ff); /* S_S */
    return out;
}

/* Host tokens -> the model's backend copy, checked: an out-of-range id would index past wte. */
static void upload_ids(train_model *m, int *dst, const int *ids, const char *what) {
    const int BT = m->cfg.batch * m->cfg.seq_len;
    for (int i = 0; i < BT; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab)
            agoq_die("train: %s[%d] = %d is outside the vocabulary [0, %d)", what, i, ids[i], m->cfg.vocab);
    m->dev->ops->upload(m->dev, dst, ids, (size_t)BT * sizeof(int));
}

double train_forward(train_model *m, const int *tokens, const int *targets) {
    const train_cfg *c = &m->cfg;
    train_dev *d = m->dev;
    const train_ops *o = d->ops;
    const int L = c->n_layer, C = c->d_model, F = c->d_ff, BT = c->batch * c->seq_len;
    const size_t btc = (size_t)BT * (size_t)C;
    float *h = m->db1, *tmp = m->dres; /* backward scratch is free during the forward */
    upload_ids(m, m->tokens, tokens, "tokens");
    upload_ids(m, m->targets, targets, "targets");
    o->embed_fwd(d, m->res, m->params.t[P_WTE], m->tokens, BT, C);
    for (int l = 0; l < L; l++) {
        float *x = m->res + (size_t)l * btc, *x2 = m->dx2;
        save(m, S_X1, l, x);
        o->rmsnorm_fwd(d, h, x, lw(m, &m->params, P_LN1, l), BT, C, c->norm_eps);
        save(m, S_H1, l, h);
        o->matmul(d, m->qkv, h, 0, lw(m, &m->params, P_QKV, l), 0, BT, C, 3 * C, 0);
        o->rope(d, m->qkv, c->batch, c->seq_len, C, c->n_head, c->rope_base, 0);
        save(m, S_QKV, l, m->qkv);
        o->attention_fwd(d, m->y, m->att, m->qkv, c->batch, c->seq_len, C, c->n_head);
        save(m, S_ATT, l, m->att);
        save(m, S_Y, l, m->y);
        o->matmul(d, tmp, m->y, 0, lw(m, &m->params, P_WO, l), 0, BT, C, C, 0);
        o->add(d, x2, x, tmp, btc);
        save(m, S_X2, l, x2);
        o->rmsnorm_fwd(d, h, x2, lw(m, &m->params, P_LN2, l), BT, C, c->norm_eps);
        save(m, S_H2, l, h);
        o->matmul(d, m->gu, h, 0, lw(m, &m->params, P_W1, l), 0, BT, C, 2 * F, 0);
        save(m, S_GU, l, m->gu);
        o->swiglu_fwd(d, m->s, m->gu, BT, F);
        save(m, S_S, l, m->s);
        o->matmul(d, tmp, m->s, 0, lw(m, &m->params, P_W2, l), 0, BT, F, C, 0);
        o->add(d, x + btc, x2, tmp, btc);
    }
    float *xf = m->res + (size_t)L * btc;
    save(m, S_X1, L, xf);
    o->rmsnorm_fwd(d, h, xf, m->params.t[P_LNF], BT, C, c->norm_eps);
    save(m, S_H1, L, h);
    o->matmul(d, m->logits, h, 0, m->params.t[P_WTE], 1, BT, C, c->vocab, 0); /* LM head: h @ wte^T */
    return o->cross_entropy(d, m->logits, m->logits, m->targets, BT, c->vocab, 1.0f / (float)BT);
}

/* dW (in, out) += X^T (in, BT) @ dY (BT, out) */
static void weight_grad(train_model *m, float *dw, const float *x, const float *dy, int bt, int in, int out) {
    m->dev->ops->matmul(m->dev, dw, x, 1, dy, 0, in, bt, out, 1);
}
/* dX (BT, in) = dY (BT, out) @ W^T, W (in, out) */
static void input_grad(train_model *m, float *dx, const float *dy, const float *w, int bt, int in, int out) {
    m->dev->ops->matmul(m->dev, dx, dy, 0, w, 1, bt, out, in, 0);
}

void train_backward(train_model *m) {
    const train_cfg *c = &m->cfg;
    train_dev *d = m->dev;
    const train_ops *o = d->ops;
    const int L = c->n_layer, C = c->d_model, F = c->d_ff, V = c->vocab, BT = c->batch * c->seq_len;
    const size_t btc = (size_t)BT * (size_t)C;
    train_tensors *g = &m->grads;
    o->zero(d, g->mem, g->total * sizeof(float));
    /* LM head (tied): logits = hf @ wte^T */
    const float *hf = saved(m, S_H1, L);
    o->matmul(d, m->db1, m->logits, 0, m->params.t[P_WTE], 0, BT, V, C, 0);
    weight_grad(m, g->t[P_WTE], m->logits, hf, BT, V, C);
    o->rmsnorm_bwd(d, m->dres, g->t[P_LNF], m->db1, slot(m, S_X1, L), m->params.t[P_LNF], BT, C, c->norm_eps);
    for (int l = L - 1; l >= 0; l--) {
        /* FFN: res_out = x2 + FC2(swiglu(FC1(norm2(x2)))) */
        weight_grad(m, lw(m, g, P_W2, l), saved(m, S_S, l), m->dres, BT, F, C);
        input_grad(m, m->db2, m->dres, lw(m, &m->params, P_W2, l), BT, F, C);
        o->swiglu_bwd(d, m->dgu, m->db2, slot(m, S_GU, l), BT, F);
        weight_grad(m, lw(m, g, P_W1, l), saved(m, S_H2, l), m->dgu, BT, C, 2 * F);
        input_grad(m, m->db1, m->dgu, lw(m, &m->params, P_W1, l), BT, C, 2 * F);
        o->rmsnorm_bwd(d, m->dx2, lw(m, g, P_LN2, l), m->db1, slot(m, S_X2, l), lw(m, &m->params, P_LN2, l), BT, C, c->norm_eps);
        o->add(d, m->dx2, m->dx2, m->dres, btc);
        /* attention: x2 = x + Wo(attn(rope(QKV(norm1(x))))) */
        weight_grad(m, lw(m, g, P_WO, l), slot(m, S_Y, l), m->dx2, BT, C, C);
        input_grad(m, m->db1, m->dx2, lw(m, &m->params, P_WO, l), BT, C, C);
        o->attention_bwd(d, m->dqkv, m->db1, slot(m, S_QKV, l), slot(m, S_ATT, l), c->batch, c->seq_len, C, c->n_head);
        o->rope(d, m->dqkv, c->batch, c->seq_len, C, c->n_head, c->rope_base, 1);
        weight_grad(m, lw(m, g, P_QKV, l), saved(m, S_H1, l), m->dqkv, BT, C, 3 * C);
        input_grad(m, m->db1, m->dqkv, lw(m, &m->params, P_QKV, l), BT, C, 3 * C);
        o->rmsnorm_bwd(d, m->dres, lw(m, g, P_LN1, l), m->db1, slot(m, S_X1, l), lw(m, &m->params, P_LN1, l), BT, C, c->norm_eps);
        o->add(d, m->dres, m->dres, m->dx2, btc);
    }
    o->embed_bwd(d, g->t[P_WTE], m->dres, m->tokens, BT, C, V);
}

double train_step_grads(train_model *m, const int *tokens, const int *targets) {
    double loss = train_forward(m, tokens, targets);
    train_backward(m);
    return loss;
}
