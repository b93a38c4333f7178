/* Step-time model; equations in step_model.h, calibration in machine.h. */
#include "sim/step_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "kernels/quant/formats.h"

/* How each method moves data-parallel traffic. */
typedef enum {
    DP_ALLREDUCE, /* all-reduce of the gradients */
    DP_RS_AG,     /* reduce-scatter gradients, all-gather updated bf16 parameters (sharded optimizer) */
    DP_ZERO3,     /* per micro-batch: all-gather bf16 params fwd + bwd, reduce-scatter gradients */
    DP_ZEROPP,    /* per micro-batch: int8 all-gather fwd, intra-node bf16 all-gather bwd, int4 2-hop a2a */
    DP_QUANT_A2A, /* once per step: a2a of quantized grads, local sum, all-gather of quantized sums */
    DP_QUANT_A2A_SHARDED, /* a2a of quantized grads, local sum into the shard, bf16 param all-gather */
} dp_pattern;

typedef struct {
    const char *name, *policy; /* method label; memory-model policy (models/memory.h) */
    int zero;                  /* ZeRO stage of the memory model; >= 1 shards the optimizer */
    dp_pattern dp;
    int fp8_gemm;              /* GEMMs at the machine's fp8 rate */
    int recompute_auto;        /* baselines: smallest R that fits; AGoQ: none */
    int grad_plain_bytes;      /* unquantized gradients on the wire: 4 (fp32 all-reduce) or 2 */
    agoq_format wire_fmt;      /* gradient wire format when it differs from storage (qgZ int4) */
    double opt_bytes_per_param; /* bytes an Adam step reads + writes per local parameter */
} method_traits;

/* Adam bytes per parameter: fp32 master r/w 8, moments r/w 16 (fp32) or 4 (8-bit), gradient read
 * 4 / 2 / 1, bf16 weight write 2. */
static const method_traits g_methods[AGOQ_METHOD_COUNT] = {
    [AGOQ_METHOD_MEGATRON] = {"megatron", "bf16", 0, DP_ALLREDUCE, 0, 1, 4, AGOQ_FMT_COUNT, 30},
    [AGOQ_METHOD_ZERO1] = {"zero1", "bf16", 1, DP_RS_AG, 0, 1, 4, AGOQ_FMT_COUNT, 30},
    [AGOQ_METHOD_ZERO3] = {"zero3", "bf16", 3, DP_ZERO3, 0, 1, 2, AGOQ_FMT_COUNT, 28},
    [AGOQ_METHOD_ZEROPP] = {"zeropp", "bf16", 3, DP_ZEROPP, 0, 1, 2, AGOQ_FMT_INT4, 28},
    [AGOQ_METHOD_COAT] = {"coat", "coat", 1, DP_RS_AG, 1, 1, 2, AGOQ_FMT_COUNT, 16},
    [AGOQ_METHOD_AGOQ] = {"agoq", "agoq", 0, DP_QUANT_A2A, 0, 0, 2, AGOQ_FMT_COUNT, 15},
    [AGOQ_METHOD_AGOQ_ZERO1] = {"agoq_zero1", "agoq", 1, DP_QUANT_A2A_SHARDED, 0, 0, 2, AGOQ_FMT_COUNT, 15},
};

const char *agoq_method_name(agoq_method m) { return g_methods[m].name; }

int agoq_method_by_name(const char *s) {
    for (int i = 0; i < AGOQ_METHOD_COUNT; i++)
        if (s && strcmp(s, g_methods[i].name) == 0) return i;
    return -1;
}

const char *agoq_method_names(void) { return "megatron, zero1, zero3, zeropp, coat, agoq, agoq_zero1"; }

/* Storage bits per element of a block format, scales included (large-tensor limit). */
static double format_bits(agoq_format f, int block) {
    agoq_qconfig c = agoq_qconfig_default(f);
    c.block = block;
    return agoq_bits_per_element(&c, (size_t)block * 4096);
}

void agoq_step_plan_defaults(agoq_step_plan *p, agoq_method m) {
    memset(p, 0, sizeof *p);
    p->method = m;
    p->tp = p->pp = p->dp = p->vpp = 1;
    p->micro_batch = p->global_batch = 1;
    p->seq = 4096;
    p->recompute = -1;
    p->overlap = 1;
    p->algo = AGOQ_AR_AUTO;
    p->acc = AGOQ_ACCOUNT_REAL;
    agoq_policy_by_name(g_methods[m].policy, &p->pol);
}

double agoq_step_grad_wire_bits(const agoq_step_plan *p) {
    const method_traits *t = &g_methods[p->method];
    if (t->wire_fmt != AGOQ_FMT_COUNT) return format_bits(t->wire_fmt, 256);
    if (p->pol.grad.kind == AGOQ_STORE_QUANT) return format_bits(p->pol.grad.q.fmt, p->pol.grad.q.block);
    return 8.0 * t->grad_plain_bytes;
}

void agoq_step_mem_setup(const agoq_model_card *mdl, const agoq_step_plan *p, long recompute, agoq_mem_setup *ms) {
    agoq_mem_setup_default(ms, mdl);
    ms->pol = p->pol;
    ms->acc = p->acc;
    ms->par.tp = p->tp;
    ms->par.pp = p->pp;
    ms->par.dp = p->dp;
    ms->par.vpp = p->vpp;
    ms->par.schedule = p->vpp > 1 ? AGOQ_SCHED_INTERLEAVED : AGOQ_SCHED_1F1B;
    ms->par.sp = p->tp > 1;
    ms->par.zero = g_methods[p->method].zero;
    ms->par.micro_batch = p->micro_batch;
    ms->par.seq = p->seq;
    ms->par.num_microbatches = p->global_batch / (p->micro_batch * p->dp);
    ms->par.recompute_layers = recompute;
}

double agoq_layer_gemm_flops_fwd(const agoq_model_card *m, double tokens) {
    double h = m->hidden, kv = h * (double)m->kv_heads / (double)m->heads;
    return 2.0 * tokens * (h * (h + 2.0 * kv) + h * h + 3.0 * h * (double)m->ffn);
}

double agoq_layer_attn_flops_fwd(const agoq_model_card *m, double batch, double seq) {
    /* QK^T and PV are 2 S^2 H FLOPs each per sequence; causal masking halves them. */
    return 2.0 * batch * seq * seq * (double)m->hidden;
}

agoq_group agoq_tp_group(const agoq_step_plan *p, int gpn) {
    agoq_group g = {p->tp, p->tp <= gpn ? p->tp : gpn, 1};
    return g;
}

agoq_group agoq_dp_group(const agoq_step_plan *p, int gpn) {
    /* Ranks are numbered tp fastest, then dp, then pp: DP peers are tp ranks apart. */
    int per_node = p->tp >= gpn ? 1 : gpn / p->tp;
    if (per_node > p->dp) per_node = p->dp;
    while (p->dp % per_node) per_node--;
    int in_node = p->tp * p->dp * p->pp < gpn ? p->tp * p->dp * p->pp : gpn;
    agoq_group g = {p->dp, per_node, in_node / per_node > 0 ? in_node / per_node : 1};
    return g;
}

int agoq_step_check(const agoq_model_card *m, const agoq_machine *mc, const agoq_step_plan *p) {
    AGOQ_REQUIRE(m->layers > 0 && m->hidden > 0 && m->ffn > 0 && m->heads > 0 && m->kv_heads > 0 && m->vocab > 0,
                 "simulate: model '%s' has a non-positive dimension", m->name);
    AGOQ_REQUIRE(p->tp >= 1 && p->pp >= 1 && p->dp >= 1 && p->vpp >= 1, "simulate: tp/pp/dp/vpp must be >= 1");
    AGOQ_REQUIRE(m->layers % (p->pp * p->vpp) == 0, "simulate: layers = %ld not divisible by pp*vpp = %d", m->layers,
                 p->pp * p->vpp);
    AGOQ_REQUIRE(m->heads % p->tp == 0, "simulate: heads = %ld not divisible by tp = %d", m->heads, p->tp);
    AGOQ_REQUIRE(p->tp <= mc->gpus_per_node || p->tp % mc->gpus_per_node == 0,
                 "simulate: tp = %d must fit in a node of %d GPUs or be a multiple of it", p->tp, mc->gpus_per_node);
    AGOQ_REQUIRE(p->micro_batch >= 1 && p->global_batch % (p->micro_batch * p->dp) == 0,
                 "simulate: global_batch = %d not divisible by micro_batch*dp = %d", p->global_batch,
                 p->micro_batch * p->dp);
    AGOQ_REQUIRE(p->seq >= 1, "simulate: seq = %ld must be >= 1", p->seq);
    AGOQ_REQUIRE(p->recompute >= -1 && p->recompute <= m->layers / p->pp,
                 "simulate: recompute = %d must be -1 (auto) or 0..%ld layers per stage", p->recompute, m->layers / p->pp);
    agoq_mem_setup ms;
    agoq_step_mem_setup(m, p, 0, &ms);
    return agoq_mem_setup_check(&ms);
}

typedef struct {
    double fwd, bwd;         /* compute per layer per micro-batch, s */
    double tp_fwd, tp_bwd;   /* TP communication per layer per micro-batch, s */
    double quant_fwd, quant_bwd;
    double qelems;           /* activation elements stored quantized, per layer per micro-batch */
} layer_cost;

static const agoq_store *stage_role_store(const agoq_policy *pol, int stage, int role) {
    return stage < AGOQ_MAX_STAGES && pol->has_override[stage][role] ? &pol->override[stage][role] : &pol->act[role];
}

/* Kernel traffic of the quantized activations of one layer and micro-batch on `stage`: forward
 * reads the bf16 tensor and writes its quantized copy, backward reads the copy and writes bf16
 * and every tensor the policy recomputes from them (norm outputs, SiLU*up) is written again in
 * bf16. Bytes come from the memory model; element counts from the same model with those roles
 * probed at a known width (int8, block 128), so per-stage widths (balanced policy, overrides)
 * are honoured. Returns -1 on a bad setup. */
static int quant_traffic(const agoq_mem_setup *ms, int stage, double *elems, double *fwd_bytes, double *bwd_bytes) {
    double by_role[AGOQ_ROLE_COUNT], probe_role[AGOQ_ROLE_COUNT];
    if (agoq_layer_act_bytes(ms, stage, by_role, NULL) < 0) return -1;
    agoq_mem_setup probe = *ms;
    agoq_store q8 = {AGOQ_STORE_QUANT, agoq_qconfig_default(AGOQ_FMT_INT8)};
    q8.q.block = 128;
    probe.pol.id = AGOQ_POLICY_AGOQ; /* no balanced re-widening of the probe */
    int quantized[AGOQ_ROLE_COUNT], recomputed[AGOQ_ROLE_COUNT];
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++) {
        agoq_store_kind k = stage_role_store(&ms->pol, stage, r)->kind;
        quantized[r] = k == AGOQ_STORE_QUANT;
        recomputed[r] = k == AGOQ_STORE_RECOMPUTE;
        if (quantized[r] || recomputed[r]) {
            probe.pol.act[r] = q8;
            if (stage < AGOQ_MAX_STAGES) probe.pol.has_override[stage][r] = 0;
        }
    }
    if (agoq_layer_act_bytes(&probe, stage, probe_role, NULL) < 0) return -1;
    const double probe_elems = 1048576.0;
    double per_elem = agoq_store_bytes(&q8, probe_elems, 2, ms->acc == AGOQ_ACCOUNT_REAL, NULL) / probe_elems;
    *elems = *fwd_bytes = *bwd_bytes = 0.0;
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++) {
        double n = probe_role[r] / per_elem;
        if (recomputed[r]) *bwd_bytes += 2.0 * n;
        if (!quantized[r]) continue;
        *elems += n;
        *fwd_bytes += 2.0 * n + by_role[r];
        *bwd_bytes += by_role[r] + 2.0 * n;
    }
    return 0;
}

static int layer_costs(const agoq_model_card *m, const agoq_machine *mc, const agoq_step_plan *p,
                       const agoq_mem_setup *ms, layer_cost *c) {
    const method_traits *t = &g_methods[p->method];
    double tokens = (double)p->micro_batch * (double)p->seq;
    double gemm_rate = 1e12 * agoq_machine_val(mc, t->fp8_gemm ? AGOQ_CAL_GEMM_FP8_TFLOPS : AGOQ_CAL_GEMM_BF16_TFLOPS);
    double attn_rate = 1e12 * agoq_machine_val(mc, AGOQ_CAL_ATTN_TFLOPS);
    double gemm = agoq_layer_gemm_flops_fwd(m, tokens) / p->tp;
    double attn = agoq_layer_attn_flops_fwd(m, p->micro_batch, (double)p->seq) / p->tp;
    /* memory-bound layer ops (norms, RoPE, SwiGLU, residuals), calibrated from measured steps as
     * ns per token x (hidden + ffn) / tp for forward + backward; split 1/3 forward, 2/3 backward */
    double elem = 1e-9 * agoq_machine_val(mc, AGOQ_CAL_ELEM_NS) * tokens * (double)(m->hidden + m->ffn) / p->tp;
    c->fwd = gemm / gemm_rate + attn / attn_rate + elem / 3.0;
    c->bwd = 2.0 * gemm / gemm_rate + 2.5 * attn / attn_rate + 2.0 * elem / 3.0; /* dgrad + wgrad; flash bwd ~2.5x fwd */
    agoq_group tg = agoq_tp_group(p, mc->gpus_per_node);
    double act_bytes = tokens * (double)m->hidden * 2.0;
    c->tp_fwd = c->tp_bwd = 2.0 * agoq_t_allreduce(&mc->fabric, &tg, act_bytes, p->algo);
    double kbw = 1e9 * agoq_machine_val(mc, AGOQ_CAL_KERNEL_GBPS);
    c->quant_fwd = c->quant_bwd = c->qelems = 0.0;
    /* The slowest stage sets the pipeline's pace: take the largest traffic over stages. */
    for (int s = 0; s < p->pp; s++) {
        double n, fb, bb;
        if (quant_traffic(ms, s, &n, &fb, &bb)) return -1;
        if (n > c->qelems) c->qelems = n;
        if (!p->fused_quant) {
            c->quant_fwd = fmax(c->quant_fwd, fb / kbw);
            c->quant_bwd = fmax(c->quant_bwd, bb / kbw);
        }
    }
    return 0;
}

/* Data-parallel time per step (once) and per micro-batch, and the gradient kernels (s). */
static void dp_costs(const agoq_machine *mc, const agoq_step_plan *p, double local_params, double *per_step,
                     double *per_mb, double *kernels_per_step) {
    const method_traits *t = &g_methods[p->method];
    const agoq_fabric *f = &mc->fabric;
    agoq_group g = agoq_dp_group(p, mc->gpus_per_node);
    double wire_bits = agoq_step_grad_wire_bits(p);
    double gbytes = local_params * wire_bits / 8.0, pbytes16 = local_params * 2.0;
    double kbw = 1e9 * agoq_machine_val(mc, AGOQ_CAL_KERNEL_GBPS);
    int mbs = p->global_batch / (p->micro_batch * p->dp);
    *per_step = *per_mb = *kernels_per_step = 0.0;
    switch (t->dp) {
    case DP_ALLREDUCE: *per_step = agoq_t_allreduce(f, &g, gbytes, p->algo); break;
    case DP_RS_AG: *per_step = agoq_t_reduce_scatter(f, &g, gbytes) + agoq_t_allgather(f, &g, pbytes16); break;
    case DP_ZERO3: *per_mb = 2.0 * agoq_t_allgather(f, &g, pbytes16) + agoq_t_reduce_scatter(f, &g, gbytes); break;
    case DP_ZEROPP: {
        /* qwZ: int8 weights gathered over DP in forward; hpZ: bf16 gathered inside the node in
         * backward; qgZ: int4 all-to-all inside the node, then across nodes on 1/per_node. */
        agoq_group intra = {g.per_node, g.per_node, 1};
        agoq_group inter = {agoq_group_nodes(&g), 1, g.concurrent * g.per_node};
        double w8 = local_params * format_bits(AGOQ_FMT_INT8, 256) / 8.0;
        if (p->dp > 1)
            *per_mb = agoq_t_allgather(f, &g, w8) + agoq_t_allgather(f, &intra, pbytes16) +
                      agoq_t_alltoall(f, &intra, gbytes) + agoq_t_alltoall(f, &inter, gbytes / g.per_node);
        *kernels_per_step = (double)mbs * (w8 + 2.0 * gbytes + pbytes16) / kbw;
        break;
    }
    case DP_QUANT_A2A:
    case DP_QUANT_A2A_SHARDED:
        /* 8-bit accumulation per micro-batch (read codes + bf16 grad, write codes); after the
         * all-to-all, dp quantized shards are dequantized, summed and requantized. */
        *kernels_per_step = (double)mbs * local_params * (2.0 * wire_bits / 8.0 + 2.0) / kbw;
        if (p->dp > 1) {
            *kernels_per_step += (gbytes + gbytes / p->dp) / kbw;
            *per_step = agoq_t_alltoall(f, &g, gbytes) +
                        agoq_t_allgather(f, &g, t->dp == DP_QUANT_A2A ? gbytes : pbytes16);
        }
        break;
    }
}

int agoq_step_simulate(const agoq_model_card *m, const agoq_machine *mc, const agoq_step_plan *p,
                       agoq_step_result *r) {
    if (agoq_step_check(m, mc, p)) return -1;
    const method_traits *t = &g_methods[p->method];
    memset(r, 0, sizeof *r);
    long lps = m->layers / p->pp; /* layers per stage */
    int mbs = p->global_batch / (p->micro_batch * p->dp);
    double tokens = (double)p->micro_batch * (double)p->seq;
    r->capacity_bytes = agoq_machine_val(mc, AGOQ_CAL_GPU_MEM_GIB) * 1073741824.0;

    /* Recompute: the plan's R, else the smallest R that fits (baselines) or none (AGoQ). */
    agoq_mem_setup ms;
    agoq_step_mem_setup(m, p, 0, &ms);
    long R = p->recompute >= 0 ? p->recompute : 0;
    if (p->recompute < 0 && t->recompute_auto) {
        int rc = agoq_memory_min_recompute(&ms, r->capacity_bytes, &R);
        if (rc < 0) return -1;
        if (rc == 1) R = lps;
    }
    ms.par.recompute_layers = R;
    agoq_mem_breakdown bd;
    int peak_stage;
    if (agoq_memory_peak(&ms, &peak_stage, &bd)) return -1;
    r->recompute = (int)R;
    r->mem_bytes = bd.total_bytes;
    r->act_bytes = bd.activations_bytes;
    r->fits = r->mem_bytes <= r->capacity_bytes;
    r->grad_wire_bits = agoq_step_grad_wire_bits(p);

    layer_cost c;
    if (layer_costs(m, mc, p, &ms, &c)) return -1;
    r->qact_elems = c.qelems;
    double gemm_rate = 1e12 * agoq_machine_val(mc, t->fp8_gemm ? AGOQ_CAL_GEMM_FP8_TFLOPS : AGOQ_CAL_GEMM_BF16_TFLOPS);
    double logits = 3.0 * 2.0 * tokens * (double)m->hidden * (double)m->vocab / p->tp / gemm_rate;
    double comp_mb = lps * (c.fwd + c.bwd) + logits;
    double recomp_mb = R * (c.fwd + c.tp_fwd);
    double tp_mb = lps * (c.tp_fwd + c.tp_bwd);
    double quant_mb = lps * (c.quant_fwd + c.quant_bwd);
    /* Activations to the next stage in fwd, their gradient back in bwd; sequence-parallel shards. */
    double pp_mb = 0.0;
    if (p->pp > 1) {
        int cross = p->tp * p->dp >= mc->gpus_per_node;
        int conc = p->tp * p->dp < mc->gpus_per_node ? p->tp * p->dp : mc->gpus_per_node;
        pp_mb = 2.0 * agoq_t_sendrecv(&mc->fabric, tokens * m->hidden * 2.0 / p->tp, cross, conc);
    }
    double local_params = bd.params;
    double dp_step, dp_mb, dp_kernels;
    dp_costs(mc, p, local_params, &dp_step, &dp_mb, &dp_kernels);

    double stage_mb = comp_mb + recomp_mb + tp_mb + quant_mb + pp_mb;
    double dp_mb_exposed = p->overlap ? fmax(0.0, dp_mb - (comp_mb + recomp_mb)) : dp_mb;
    stage_mb += dp_mb_exposed;
    double slots = (double)mbs + (double)(p->pp - 1) / (double)p->vpp;
    double pipe = slots * stage_mb;
    /* Gradients of the whole stage are ready only after the last micro-batch's backward; with
     * overlap the reduction runs under that backward (bucketed), the rest is exposed. */
    double dp_exposed = p->overlap ? fmax(0.0, dp_step - lps * c.bwd) : dp_step;
    double opt_params = t->zero >= 1 ? local_params / p->dp : local_params;
    double kbw = 1e9 * agoq_machine_val(mc, AGOQ_CAL_KERNEL_GBPS);
    r->optimizer_s = opt_params * t->opt_bytes_per_param / kbw;

    r->microbatches = mbs;
    r->compute_s = (double)mbs * comp_mb;
    r->recompute_s = (double)mbs * recomp_mb;
    r->tp_comm_s = (double)mbs * tp_mb;
    r->pp_comm_s = (double)mbs * pp_mb;
    r->quant_s = (double)mbs * quant_mb + dp_kernels;
    r->bubble_s = pipe - (double)mbs * stage_mb;
    r->dp_comm_total_s = dp_step + (double)mbs * dp_mb;
    r->dp_comm_s = dp_exposed + (double)mbs * dp_mb_exposed;
    r->step_s = pipe + dp_exposed + dp_kernels + r->optimizer_s;
    double gpus = (double)p->tp * p->pp * p->dp;
    r->tokens_per_s = (double)p->global_batch * (double)p->seq / r->step_s;
    r->tokens_per_s_per_gpu = r->tokens_per_s / gpus;
    /* Model FLOPs (no recomputation) of the whole step, shared evenly by all GPUs. */
    double seq_flops = (double)m->layers * (3.0 * agoq_layer_gemm_flops_fwd(m, (double)p->seq) +
                                            3.5 * agoq_layer_attn_flops_fwd(m, 1.0, (double)p->seq)) +
                       6.0 * (double)p->seq * m->hidden * (double)m->vocab;
    r->flops_per_gpu = (double)p->global_batch * seq_flops / gpus;
    r->tflops_per_gpu = r->flops_per_gpu / r->step_s / 1e12;
    return 0;
}
