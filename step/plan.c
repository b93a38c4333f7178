/* The step engine's configuration and its per-layer storage plan (step.h, step_internal.h).
 *
 * The plan is the memory model's (models/memory.h): agoq_layer_entries gives every saved tensor
 * of a layer with the store the policy picks for it, at this rank's sizes. The engine allocates
 * exactly those entries, so the model's per-role bytes and the engine's are one computation
 * (the test compares them anyway: the engine records what it really allocated).
 * Quantized tensors are stored row-blocked (kernels/fused/fused.h "rowq"): the model's REAL
 * accounting counts blocks per row the same way. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "step/step_internal.h"

static const char *const g_param_names[AGOQ_PARAM_COUNT] = {"norm1", "qkv", "out", "norm2", "fc1", "fc2"};

const char *agoq_param_name(agoq_param_kind k) {
    return (unsigned)k < AGOQ_PARAM_COUNT ? g_param_names[k] : "?";
}

void agoq_step_config_default(agoq_step_config *c, const agoq_model_card *card) {
    memset(c, 0, sizeof *c);
    c->card = *card;
    agoq_mem_setup_default(&c->ms, &c->card);
    c->ms.impl = (agoq_layer_impl){.flash_attn = 1, .fused_norm = 1, .gqa_repeat = 0, .norm_no_rstd = 1,
                                   .swiglu_fused = 1};
    c->ms.stack_only = 1;
    c->ms.pol.grad.kind = AGOQ_STORE_FP32; /* Megatron's fp32 main gradients */
    c->layers = 4;
    c->reps = 5;
    c->warmup = 2;
    c->rope_base = 10000.0f;
    c->norm_eps = 1e-5f;
    c->adam = (agoq_adamw_hp){.lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                              .grad_scale = 1.0f, .step = 0};
    c->seed = 1;
    c->gemm = AGOQ_STEP_GEMM_AUTO;
}

/* The store of each role as the memory model resolves it for this stage (policy, per-stage
 * overrides, DBCA-PP balancing). Roles without an entry keep NATIVE. */
static int role_stores(const agoq_mem_setup *ms, int stage, agoq_store st[AGOQ_ROLE_COUNT], int has[AGOQ_ROLE_COUNT]) {
    agoq_layer_entry e[AGOQ_INVENTORY_MAX];
    int n = agoq_layer_entries(ms, stage, e);
    if (n < 0) return -1;
    memset(has, 0, AGOQ_ROLE_COUNT * sizeof *has);
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++) st[r] = (agoq_store){AGOQ_STORE_NATIVE, agoq_qconfig_default(AGOQ_FMT_INT8)};
    for (int i = 0; i < n; i++) {
        st[e[i].t.role] = e[i].store;
        has[e[i].t.role] = 1;
    }
    return 0;
}

static int store_ok(const agoq_store *s, int native, int quant, int recompute) {
    return (s->kind == AGOQ_STORE_NATIVE && native) || (s->kind == AGOQ_STORE_QUANT && quant) ||
           (s->kind == AGOQ_STORE_RECOMPUTE && recompute);
}

int agoq_step_config_fix(agoq_step_config *c) {
    agoq_mem_setup *ms = &c->ms;
    agoq_parallel *p = &ms->par;
    ms->model = &c->card;
    AGOQ_REQUIRE(c->layers >= 1, "step: layers %ld must be >= 1", c->layers);
    AGOQ_REQUIRE(p->pp >= 1 && p->pp <= AGOQ_MAX_STAGES, "step: pp %ld not in 1..%d", p->pp, AGOQ_MAX_STAGES);
    c->card.layers = c->layers * p->pp;
    ms->acc = AGOQ_ACCOUNT_REAL;
    AGOQ_REQUIRE(c->card.layer == AGOQ_LAYER_LLAMA, "step: model %s is not a LLaMA decoder (layer \"%s\")", c->card.name,
                 agoq_layer_kind_name(c->card.layer));
    AGOQ_REQUIRE(p->vpp == 1 && p->schedule == AGOQ_SCHED_1F1B,
                 "step: vpp %ld: the step engine runs 1F1B stages only (vpp 1)", p->vpp);
    AGOQ_REQUIRE(c->stage >= 0 && c->stage < p->pp, "step: stage %d not in 0..%ld", c->stage, p->pp - 1);
    if (agoq_mem_setup_check(ms)) return -1;
    const long a = c->card.heads / p->tp, kv = c->card.kv_heads >= p->tp ? c->card.kv_heads / p->tp : 1;
    AGOQ_REQUIRE(a % kv == 0, "step: %ld query heads per rank are not a multiple of %ld KV heads", a, kv);
    AGOQ_REQUIRE(c->card.head_dim % 8 == 0 && c->card.head_dim <= 128,
                 "step: head_dim %ld: cuDNN's flash attention takes multiples of 8 up to 128", c->card.head_dim);
    AGOQ_REQUIRE(p->micro_batch * p->seq <= (1L << 30), "step: micro_batch * seq = %ld tokens is too many",
                 p->micro_batch * p->seq);
    AGOQ_REQUIRE(c->reps >= 1 && c->warmup >= 0, "step: reps %d must be >= 1 and warmup %d >= 0", c->reps, c->warmup);
    AGOQ_REQUIRE(isfinite(c->norm_eps) && c->norm_eps > 0, "step: norm_eps %g must be > 0", (double)c->norm_eps);
    AGOQ_REQUIRE(isfinite(c->rope_base) && c->rope_base > 1, "step: rope_base %g must be > 1", (double)c->rope_base);
    AGOQ_REQUIRE(c->budget_bytes >= 0, "step: budget_bytes %g < 0", c->budget_bytes);
    AGOQ_REQUIRE((unsigned)c->gemm < AGOQ_STEP_GEMM_KEY_COUNT, "step: gemm %d is not auto, cublaslt or fused", (int)c->gemm);

    agoq_store st[AGOQ_ROLE_COUNT];
    int has[AGOQ_ROLE_COUNT];
    if (role_stores(ms, c->stage, st, has)) return -1;
    char buf[64];
    static const struct { agoq_role r; int native, quant, recompute; } rules[] = {
        {AGOQ_ROLE_NORM_IN, 1, 1, 0},   {AGOQ_ROLE_STAT, 1, 0, 0},    {AGOQ_ROLE_QKV_IN, 1, 1, 1},
        {AGOQ_ROLE_ATTENTION, 1, 1, 0}, {AGOQ_ROLE_FFN1_IN, 1, 1, 1}, {AGOQ_ROLE_FC1_OUT, 1, 1, 0},
        {AGOQ_ROLE_FFN2_IN, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const agoq_store *s = &st[rules[i].r];
        AGOQ_REQUIRE(!has[rules[i].r] || store_ok(s, rules[i].native, rules[i].quant, rules[i].recompute),
                     "step: policy %s stores role %s as %s, which the step engine cannot produce", agoq_policy_name(ms->pol.id),
                     agoq_role_name(rules[i].r), agoq_store_label(s, buf, sizeof buf));
    }
    const agoq_store *att = &st[AGOQ_ROLE_ATTENTION];
    AGOQ_REQUIRE(att->kind != AGOQ_STORE_QUANT || c->card.head_dim % att->q.block == 0,
                 "step: quantized attention needs head_dim %ld to be a multiple of the block %d", c->card.head_dim,
                 att->q.block);
    AGOQ_REQUIRE(store_ok(&ms->pol.grad, 0, 1, 0) || ms->pol.grad.kind == AGOQ_STORE_FP32,
                 "step: gradients stored as %s: the engine keeps fp32 main gradients or a quantized format",
                 agoq_store_label(&ms->pol.grad, buf, sizeof buf));
    AGOQ_REQUIRE(store_ok(&ms->pol.moments, 0, 1, 0) || ms->pol.moments.kind == AGOQ_STORE_FP32,
                 "step: Adam moments stored as %s: the engine keeps fp32 or a quantized format",
                 agoq_store_label(&ms->pol.moments, buf, sizeof buf));
    AGOQ_REQUIRE(ms->pol.master_bytes == 4, "step: master weights are fp32 (master_bytes %d)", ms->pol.master_bytes);
    return 0;
}

int step_plan_make(const agoq_step_config *c, step_plan *pl) {
    memset(pl, 0, sizeof *pl);
    const agoq_mem_setup *ms = &c->ms;
    const agoq_model_card *m = &c->card;
    const long tp = ms->par.tp;
    pl->b = ms->par.micro_batch;
    pl->s = ms->par.seq;
    pl->T = pl->b * pl->s;
    pl->h = m->hidden;
    pl->d = m->head_dim;
    pl->a = m->heads / tp;
    pl->kv = m->kv_heads >= tp ? m->kv_heads / tp : 1;
    pl->F = m->ffn / tp;
    pl->AD = pl->a * pl->d;
    pl->QKVN = (pl->a + 2 * pl->kv) * pl->d;
    pl->L = c->layers;
    pl->m = ms->par.num_microbatches;
    pl->inflight = agoq_inflight_microbatches(&ms->par, c->stage);
    long R = ms->par.recompute_layers < 0 ? pl->L : ms->par.recompute_layers;
    pl->recompute_layers = R < pl->L ? R : pl->L;
    if (role_stores(ms, c->stage, pl->st, pl->has)) return -1;
    agoq_layer_entry e[AGOQ_INVENTORY_MAX];
    int n = agoq_layer_entries(ms, c->stage, e);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) pl->model_by_role[e[i].t.role] += e[i].stored_bytes;

    /* parameters of one layer: norm1 [h], qkv [QKVN, h], out [h, AD], norm2 [h], fc1 [2F, h], fc2 [h, F] */
    const long rows[AGOQ_PARAM_COUNT] = {1, pl->QKVN, pl->h, 1, 2 * pl->F, pl->h};
    const long cols[AGOQ_PARAM_COUNT] = {pl->h, pl->h, pl->AD, pl->h, pl->h, pl->F};
    for (int k = 0; k < AGOQ_PARAM_COUNT; k++) {
        pl->prow[k] = rows[k];
        pl->pcol[k] = cols[k];
        pl->pelems[k] = (size_t)rows[k] * (size_t)cols[k];
        pl->layer_params += pl->pelems[k];
    }
    /* FLOPs of one layer, one micro-batch, forward: the four GEMMs and causal attention
     * (QK^T and PV over the lower triangle: 2 * 2 * b * a * s^2 * d / 2). */
    const double T = (double)pl->T;
    double gemm = 2.0 * T * ((double)pl->QKVN * pl->h + (double)pl->h * pl->AD + 2.0 * pl->F * pl->h + (double)pl->h * pl->F);
    double attn = 2.0 * (double)pl->b * (double)pl->a * (double)pl->s * (double)pl->s * (double)pl->d;
    pl->fwd_flops = gemm + attn;
    /* backward: GEMMs 2x forward, attention 2.5x (dQ, dK, dV, dP and the recomputed S) */
    pl->bwd_flops = 2.0 * gemm + 2.5 * attn;
    return 0;
}
