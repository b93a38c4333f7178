/* The per-GPU memory model (API and accountings in memory.h; derivations in docs/memory.md).
 *
 * Model states of a rank: P = parameters of its pipeline stage divided by TP (norm weights and
 * KV projections of fewer KV heads than TP ranks are replicated; the embedding is vocab-parallel
 * on the first stage, the head on the last, a tied embedding is held by both when PP > 1).
 *   weights 2P (/dp at ZeRO-3), grads P * grad width (/dp at ZeRO >= 2),
 *   optimizer P * (master + 2 moments) (/dp at ZeRO >= 1).
 * Activations of stage i: N_i chunk micro-batches in flight (agoq_inflight_microbatches) times
 * L/(pp v) layers, each layer's saved tensors at per-rank sizes (TP splits heads, FFN and vocab;
 * other tensors are replicated unless SP splits s), stored as the policy says. R recomputed
 * layers keep only their bf16 input, plus one layer's full set while it is recomputed. The last
 * stage adds the head (one micro-batch: 1F1B runs its backward right after the loss).
 * Communication buffers: DP bucket staging (quantized send/recv copies for 8-bit gradients),
 * ZeRO-3's two gathered layers (current + prefetch), the SP all-gather buffer of one layer
 * input, PP send + recv of one boundary activation. Transient workspaces (GEMM, activation
 * gradients, allocator fragmentation) are not modelled: measured peaks exceed this. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "models/memory.h"

void agoq_mem_setup_default(agoq_mem_setup *ms, const agoq_model_card *m) {
    memset(ms, 0, sizeof *ms);
    ms->model = m;
    ms->par = (agoq_parallel){.tp = 1, .pp = 1, .dp = 1, .vpp = 1, .schedule = AGOQ_SCHED_1F1B, .sp = 0,
                              .zero = 0, .micro_batch = 1, .seq = 2048, .num_microbatches = 1,
                              .recompute_layers = 0, .recompute_attn_core = 0, .bucket_elems = 40e6};
    agoq_policy_by_name("bf16", &ms->pol);
    ms->acc = AGOQ_ACCOUNT_REAL;
    ms->impl = (agoq_layer_impl){.flash_attn = 1, .fused_norm = 1, .gqa_repeat = 0};
}

int agoq_mem_setup_check(const agoq_mem_setup *ms) {
    const agoq_model_card *m = ms->model;
    const agoq_parallel *p = &ms->par;
    AGOQ_REQUIRE(m, "memory: no model card");
    AGOQ_REQUIRE(p->tp >= 1 && p->pp >= 1 && p->dp >= 1 && p->vpp >= 1, "memory: parallel degrees must be >= 1 (tp %ld, pp %ld, dp %ld, vpp %ld)", p->tp, p->pp, p->dp, p->vpp);
    AGOQ_REQUIRE(p->pp <= AGOQ_MAX_STAGES, "memory: pp %ld exceeds %d stages", p->pp, AGOQ_MAX_STAGES);
    AGOQ_REQUIRE(m->heads % p->tp == 0, "memory: tp %ld does not divide %s's %ld heads", p->tp, m->name, m->heads);
    AGOQ_REQUIRE(m->kv_heads % p->tp == 0 || p->tp % m->kv_heads == 0,
                 "memory: tp %ld and %s's %ld KV heads: one must divide the other", p->tp, m->name, m->kv_heads);
    AGOQ_REQUIRE(m->ffn % p->tp == 0, "memory: tp %ld does not divide %s's FFN %ld", p->tp, m->name, m->ffn);
    AGOQ_REQUIRE(m->layers % (p->pp * p->vpp) == 0, "memory: pp*vpp = %ld does not divide %s's %ld layers",
                 p->pp * p->vpp, m->name, m->layers);
    AGOQ_REQUIRE(p->schedule == AGOQ_SCHED_1F1B ? p->vpp == 1 : p->vpp >= 2,
                 "memory: vpp %ld: 1F1B needs vpp 1, interleaved needs vpp >= 2", p->vpp);
    AGOQ_REQUIRE(p->zero >= 0 && p->zero <= 3, "memory: zero stage %d not in 0..3", p->zero);
    AGOQ_REQUIRE(p->micro_batch >= 1 && p->seq >= 1 && p->num_microbatches >= 1,
                 "memory: micro_batch %ld, seq %ld, num_microbatches %ld must be >= 1", p->micro_batch, p->seq, p->num_microbatches);
    AGOQ_REQUIRE(!p->sp || p->seq % p->tp == 0, "memory: sequence parallelism needs tp %ld to divide seq %ld", p->tp, p->seq);
    AGOQ_REQUIRE(p->recompute_layers >= -1 && p->recompute_layers <= m->layers / p->pp,
                 "memory: recompute_layers %ld not in -1..%ld (layers per stage)", p->recompute_layers, m->layers / p->pp);
    AGOQ_REQUIRE(p->bucket_elems >= 0, "memory: bucket_elems %g < 0", p->bucket_elems);
    return 0;
}

long agoq_inflight_microbatches(const agoq_parallel *p, int stage) {
    long pp = p->pp, i = stage, m = p->num_microbatches;
    if (p->schedule == AGOQ_SCHED_INTERLEAVED) {
        long warmup = 2 * (pp - i - 1) + (p->vpp - 1) * pp; /* Megatron's interleaved warm-up count */
        long total = m * p->vpp;
        return warmup + 1 < total ? warmup + 1 : total;
    }
    return pp - i < m ? pp - i : m;
}

/* Per-rank sizes of one micro-batch for entry t. */
static agoq_dims rank_dims(const agoq_mem_setup *ms, const agoq_saved_tensor *t) {
    const agoq_model_card *m = ms->model;
    const agoq_parallel *p = &ms->par;
    double tp = (double)p->tp;
    agoq_dims d = {(double)p->micro_batch, (double)p->seq, (double)m->hidden,
                   (ms->acc == AGOQ_ACCOUNT_PAPER ? 4.0 * (double)m->hidden : (double)m->ffn) / tp,
                   (double)m->heads / tp, 0, (double)m->head_dim, (double)m->vocab / tp};
    d.kv = m->kv_heads >= p->tp ? (double)m->kv_heads / tp : 1.0; /* fewer KV heads than ranks: replicated */
    if (ms->acc == AGOQ_ACCOUNT_PAPER) d.kv = d.a;
    if (!agoq_saved_tp_split(t) && p->sp) d.s /= tp;
    return d;
}

/* The paper's DBCA-PP width for stage i: bits = min(8, rint(4 N_0 / N_i)). */
static agoq_store balanced_store(const agoq_mem_setup *ms, int stage, agoq_store base) {
    double n0 = (double)agoq_inflight_microbatches(&ms->par, 0);
    double ni = (double)agoq_inflight_microbatches(&ms->par, stage);
    int bits = (int)rint(agoq_formats[base.q.fmt].bits * n0 / ni);
    if (bits > 8) bits = 8;
    if (bits <= agoq_formats[base.q.fmt].bits) return base;
    static const agoq_format by_bits[9] = {0, 0, 0, 0, 0, AGOQ_FMT_INT5, AGOQ_FMT_INT6, AGOQ_FMT_INT7, AGOQ_FMT_INT8};
    agoq_store s = base;
    s.q.fmt = by_bits[bits];
    return s;
}

static agoq_store role_store(const agoq_mem_setup *ms, int stage, agoq_role role) {
    const agoq_policy *pol = &ms->pol;
    if (stage >= 0 && stage < AGOQ_MAX_STAGES && pol->has_override[stage][role]) return pol->override[stage][role];
    agoq_store base = pol->act[role];
    if (pol->id == AGOQ_POLICY_AGOQ_BALANCED && base.kind == AGOQ_STORE_QUANT) return balanced_store(ms, stage, base);
    return base;
}

/* Megatron's selective recomputation drops the s x s tensors of core attention. */
static int is_core_attention(const agoq_saved_tensor *t) {
    int s = 0;
    for (int i = 0; i < AGOQ_SAVED_MAX_DIMS; i++) s += t->dims[i] == AGOQ_DIM_S;
    return t->block == AGOQ_BLOCK_ATTENTION && s >= 2;
}

static agoq_layer_kind layer_kind(const agoq_mem_setup *ms) {
    return ms->acc == AGOQ_ACCOUNT_PAPER ? AGOQ_LAYER_PAPER : ms->model->layer;
}

int agoq_layer_entries(const agoq_mem_setup *ms, int stage, agoq_layer_entry *out) {
    if (agoq_mem_setup_check(ms)) return -1;
    agoq_saved_tensor inv[AGOQ_INVENTORY_MAX];
    size_t n = agoq_inventory(layer_kind(ms), &ms->impl, inv);
    int with_scales = ms->acc == AGOQ_ACCOUNT_REAL;
    for (size_t i = 0; i < n; i++) {
        const agoq_saved_tensor *t = &inv[i];
        agoq_layer_entry *e = &out[i];
        agoq_dims d = rank_dims(ms, t);
        e->t = *t;
        e->elems = agoq_saved_elems(t, &d);
        e->store = role_store(ms, stage, t->role);
        e->stored_bytes = e->scale_bytes = 0.0;
        if (ms->par.recompute_attn_core && is_core_attention(t)) continue;
        /* A shared storage costs nothing while its owner is stored: the consumer reads it. */
        if (with_scales && t->alias_of >= 0 && role_store(ms, stage, inv[t->alias_of].role).kind != AGOQ_STORE_RECOMPUTE)
            continue;
        double rows, cols;
        agoq_saved_rows_cols(t, &d, &rows, &cols);
        e->stored_bytes = agoq_store_bytes_rows(&e->store, rows, cols, t->dtype_bytes, with_scales, &e->scale_bytes);
    }
    return (int)n;
}

double agoq_layer_act_bytes(const agoq_mem_setup *ms, int stage, double *by_role, double *scale_bytes) {
    agoq_layer_entry e[AGOQ_INVENTORY_MAX];
    int n = agoq_layer_entries(ms, stage, e);
    if (n < 0) return -1.0;
    double total = 0.0, scales = 0.0;
    if (by_role) memset(by_role, 0, AGOQ_ROLE_COUNT * sizeof *by_role);
    for (int i = 0; i < n; i++) {
        total += e[i].stored_bytes;
        scales += e[i].scale_bytes;
        if (by_role) by_role[e[i].t.role] += e[i].stored_bytes;
    }
    if (scale_bytes) *scale_bytes = scales;
    return total;
}

/* Parameters a rank of `stage` computes with, and those of one layer (for ZeRO-3 gathers). */
static double stage_params(const agoq_mem_setup *ms, int stage, double *layer_out) {
    const agoq_model_card *m = ms->model;
    const agoq_parallel *p = &ms->par;
    double tp = (double)p->tp, h = (double)m->hidden, v = (double)m->vocab;
    double lp = agoq_model_layer_params(m);
    double kvd = (double)(m->kv_heads * m->head_dim);
    double kv_rank = m->kv_heads >= p->tp ? kvd / tp : (double)m->head_dim;
    double norms = m->layer == AGOQ_LAYER_GPT ? 4 * h : (m->norm_weights ? 2 * h : 0);
    double kvw = m->layer == AGOQ_LAYER_GPT ? 0 : 2 * h * kvd; /* GPT has no separate KV heads */
    double layer = (lp - norms - kvw) / tp + norms + (kvw ? 2 * h * kv_rank : 0);
    double per = layer * (double)(m->layers / p->pp);
    if (layer_out) *layer_out = layer;
    if (ms->stack_only) return per;
    if (stage == 0) per += v * h / tp + (m->layer == AGOQ_LAYER_GPT ? (double)m->max_seq * h : 0);
    if (stage == p->pp - 1) {
        per += m->layer == AGOQ_LAYER_GPT ? 2 * h : (m->norm_weights ? h : 0);
        if (!m->tied_embeddings || p->pp > 1) per += v * h / tp;
    }
    return per;
}

static double checkpoint_bytes(const agoq_mem_setup *ms) {
    const agoq_parallel *p = &ms->par;
    double x = (double)p->micro_batch * (double)p->seq * (double)ms->model->hidden * 2.0;
    return p->sp ? x / (double)p->tp : x;
}

static double head_act_bytes(const agoq_mem_setup *ms) {
    agoq_saved_tensor inv[8];
    size_t n = agoq_head_inventory(layer_kind(ms), inv);
    double total = 0.0;
    for (size_t i = 0; i < n; i++) {
        agoq_dims d = rank_dims(ms, &inv[i]);
        total += agoq_saved_bytes(&inv[i], &d);
    }
    return total;
}

int agoq_memory_stage(const agoq_mem_setup *ms, int stage, agoq_mem_breakdown *out) {
    if (agoq_mem_setup_check(ms)) return -1;
    const agoq_parallel *p = &ms->par;
    const agoq_policy *pol = &ms->pol;
    AGOQ_REQUIRE(stage >= 0 && stage < p->pp, "memory: stage %d not in 0..%ld", stage, p->pp - 1);
    memset(out, 0, sizeof *out);
    double dp = (double)p->dp, layer_p, sc;
    double P = stage_params(ms, stage, &layer_p);
    out->params = P;
    out->weights_bytes = 2.0 * P / (p->zero >= 3 ? dp : 1.0);
    out->grads_bytes = agoq_store_bytes(&pol->grad, P, 2, 1, NULL) / (p->zero >= 2 ? dp : 1.0);
    out->optimizer_bytes = (pol->master_bytes * P + 2.0 * agoq_store_bytes(&pol->moments, P, 4, 1, NULL)) /
                           (p->zero >= 1 ? dp : 1.0);

    double ls = (double)(ms->model->layers / p->pp), lc = ls / (double)p->vpp;
    double R = p->recompute_layers < 0 ? ls : (double)p->recompute_layers;
    double a_layer = agoq_layer_act_bytes(ms, stage, NULL, &sc);
    double held = (double)agoq_inflight_microbatches(p, stage) * lc; /* layer micro-batches */
    double acts = held * ((ls - R) / ls) * a_layer + held * (R / ls) * checkpoint_bytes(ms);
    double act_scales = held * ((ls - R) / ls) * sc;
    if (R > 0) { /* the layer being recomputed holds its full set once */
        acts += a_layer;
        act_scales += sc;
    }
    out->layers = ls;
    out->inflight = (double)agoq_inflight_microbatches(p, stage);
    out->recompute_layers = R;
    out->layer_act_bytes = a_layer;
    out->head_act_bytes = stage == p->pp - 1 && !ms->stack_only ? head_act_bytes(ms) : 0.0;
    out->activations_bytes = acts + out->head_act_bytes;
    out->act_scales_bytes = act_scales;

    double comm = 0.0;
    if (p->dp > 1) {
        double bucket = p->bucket_elems < P ? p->bucket_elems : P;
        if (pol->grad.kind == AGOQ_STORE_QUANT) /* 8-bit send + receive copies, fp32 partial sum of a shard */
            comm += 2.0 * agoq_store_bytes(&pol->grad, bucket, 2, 1, NULL) + 4.0 * bucket / dp;
        else if (p->zero >= 1)
            comm += 2.0 * bucket; /* reduce-scatter staging bucket, bf16 */
        if (p->zero >= 3) comm += 2.0 * 2.0 * layer_p;
    }
    if (p->tp > 1 && p->sp) comm += checkpoint_bytes(ms) * (double)p->tp; /* all-gathered layer input */
    if (p->pp > 1) comm += 2.0 * checkpoint_bytes(ms);
    out->comm_bytes = comm;
    out->total_bytes = out->weights_bytes + out->grads_bytes + out->optimizer_bytes + out->activations_bytes + comm;
    return 0;
}

int agoq_memory_peak(const agoq_mem_setup *ms, int *stage, agoq_mem_breakdown *out) {
    if (agoq_mem_setup_check(ms)) return -1;
    int best = -1;
    for (int i = 0; i < ms->par.pp; i++) {
        agoq_mem_breakdown bd;
        if (agoq_memory_stage(ms, i, &bd)) return -1;
        if (best < 0 || bd.total_bytes > out->total_bytes) {
            *out = bd;
            best = i;
        }
    }
    if (stage) *stage = best;
    return 0;
}

int agoq_memory_min_recompute(const agoq_mem_setup *ms, double budget_bytes, long *layers) {
    agoq_mem_setup s = *ms;
    s.par.recompute_layers = 0;
    if (agoq_mem_setup_check(&s)) return -1;
    long ls = ms->model->layers / ms->par.pp;
    for (long r = 0; r <= ls; r++) {
        agoq_mem_breakdown bd;
        s.par.recompute_layers = r;
        if (agoq_memory_peak(&s, NULL, &bd)) return -1;
        if (bd.total_bytes <= budget_bytes) {
            *layers = r;
            return 0;
        }
    }
    *layers = -1;
    return 1;
}

cJSON *agoq_mem_breakdown_json(const agoq_mem_breakdown *bd) {
    cJSON *o = cJSON_CreateObject();
    const struct { const char *k; double v; } f[] = {
        {"weights_bytes", bd->weights_bytes},     {"grads_bytes", bd->grads_bytes},
        {"optimizer_bytes", bd->optimizer_bytes}, {"activations_bytes", bd->activations_bytes},
        {"act_scales_bytes", bd->act_scales_bytes}, {"comm_bytes", bd->comm_bytes},
        {"total_bytes", bd->total_bytes},         {"total_GB", bd->total_bytes / 1e9},
        {"activations_GB", bd->activations_bytes / 1e9}, {"params", bd->params},
        {"layers", bd->layers},                   {"inflight_microbatches", bd->inflight},
        {"recompute_layers", bd->recompute_layers}, {"layer_act_bytes", bd->layer_act_bytes},
        {"head_act_bytes", bd->head_act_bytes},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) cJSON_AddNumberToObject(o, f[i].k, f[i].v);
    return o;
}
