/* Step-time model of one training iteration of a LLaMA-style decoder under Megatron-style
 * TP x PP x DP with one of the training methods compared in the paper. Everything here is a
 * prediction from calibration inputs (machine.h) and model shapes; nothing is measured.
 *
 * Per micro-batch of b sequences of length S (tokens T = b S), per layer, per TP rank:
 *   GEMM FLOPs fwd  2 T (H (H + 2 H kv/heads) + H H + 3 H F) / tp     bwd 2x fwd
 *   attention fwd   2 b S^2 H / tp (causal flash)                       bwd 2.5x fwd
 *   TP comm         2 all-reduces of T H 2 bytes in fwd, 2 in bwd (ring/tree over the TP group)
 *   recompute       R layers per stage redo their forward (and its TP comm) in backward
 *   quant kernels   bytes moved / kernel_GBps for every stored quantized activation
 *   elementwise     elementwise_ns x T (H + F) / tp (norms, RoPE, SwiGLU, residuals; 1/3 fwd,
 *                   2/3 bwd; 0 when the machine file has no measured or assumed value)
 * Stage time per micro-batch = layers/stage x the above + PP send/recv (+ logits on the last
 * stage). Pipeline (1F1B, v interleaved chunks): (m + (pp-1)/v) x stage time, m = G / (b dp).
 * Data-parallel gradient traffic per method (see the method table in step_model.c), exposed
 * unless `overlap` hides it under the backward of the last micro-batch; optimizer step as a
 * memory-bound pass over the local parameter shard.
 * Memory per GPU comes from the memory model (models/memory.h) with the plan's policy; with
 * recompute = auto the baselines take the smallest R whose memory fits the GPU, AGoQ takes 0.
 * Quantize/dequantize kernel bytes come from the same policy: every activation the policy
 * stores quantized is written once in forward and read once in backward. */
#ifndef AGOQ_SIM_STEP_MODEL_H
#define AGOQ_SIM_STEP_MODEL_H
#include "models/memory.h"
#include "sim/collective_model.h"
#include "sim/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AGOQ_METHOD_MEGATRON, /* bf16, fp32 gradient all-reduce, unsharded Adam */
    AGOQ_METHOD_ZERO1,    /* + optimizer states sharded over DP (reduce-scatter + all-gather) */
    AGOQ_METHOD_ZERO3,    /* + parameters sharded: per-micro-batch all-gathers and reduce-scatter */
    AGOQ_METHOD_ZEROPP,   /* ZeRO-3 + qwZ (int8 weights), hpZ (intra-node copy), qgZ (int4 grads) */
    AGOQ_METHOD_COAT,     /* fp8 GEMMs, fp8 activations and optimizer states, bf16 gradients */
    AGOQ_METHOD_AGOQ,     /* 4-bit layer-aware activations, 8-bit gradients and optimizer */
    AGOQ_METHOD_AGOQ_ZERO1, /* AGoQ with its optimizer sharded over DP: the quantized all-to-all
                               leaves each rank its summed shard, bf16 parameters are gathered */
    AGOQ_METHOD_COUNT
} agoq_method;

const char *agoq_method_name(agoq_method m);
int agoq_method_by_name(const char *s); /* -1 when unknown */
const char *agoq_method_names(void);    /* "megatron, zero1, ..." for messages */

typedef struct {
    agoq_method method;
    int tp, pp, dp, vpp;      /* vpp: interleaved chunks per stage (1 = plain 1F1B) */
    int micro_batch, global_batch;
    long seq;
    int recompute;            /* layers per stage recomputed; -1 = auto (memory model) */
    int overlap;              /* 1: DP traffic overlaps the last micro-batch's backward */
    int fused_quant;          /* 1: quantize/dequantize fused into GEMMs (no kernel time) */
    agoq_allreduce_algo algo; /* for the all-reduces */
    agoq_policy pol;          /* activation / gradient / optimizer storage (memory model) */
    agoq_accounting acc;      /* memory accounting: REAL (default) or the paper's Table 1 */
} agoq_step_plan;

typedef struct {
    double step_s, tokens_per_s, tokens_per_s_per_gpu;
    double mem_bytes, capacity_bytes;
    int recompute, fits;        /* fits: memory <= capacity with the chosen R */
    double act_bytes;           /* of mem_bytes: saved activations */
    double grad_wire_bits, qact_elems; /* per gradient element; quantized act elements per layer-micro-batch */
    int microbatches;
    /* Breakdown of step_s (seconds per step, on the critical path). */
    double compute_s, recompute_s, tp_comm_s, pp_comm_s, bubble_s, quant_s, dp_comm_s, optimizer_s;
    double dp_comm_total_s;     /* before overlap */
    double flops_per_gpu;       /* model FLOPs per step per GPU (no recompute) */
    double tflops_per_gpu;      /* flops_per_gpu / step_s / 1e12 */
} agoq_step_result;

/* Fills p with the method's defaults: its memory policy, overlap 1, auto recompute, vpp 1. */
void agoq_step_plan_defaults(agoq_step_plan *p, agoq_method m);
/* Wire bits per gradient element of the plan's DP traffic, scales included. */
double agoq_step_grad_wire_bits(const agoq_step_plan *p);
/* The memory-model setup of plan with R recomputed layers per stage. */
void agoq_step_mem_setup(const agoq_model_card *mdl, const agoq_step_plan *p, long recompute, agoq_mem_setup *ms);
/* 0 if the layout is consistent with model and machine, else -1 naming the field. */
int agoq_step_check(const agoq_model_card *mdl, const agoq_machine *mc, const agoq_step_plan *p);
/* Predicts one step. 0 or -1. */
int agoq_step_simulate(const agoq_model_card *mdl, const agoq_machine *mc, const agoq_step_plan *p,
                       agoq_step_result *out);

/* Building blocks, exposed for tests. */
double agoq_layer_gemm_flops_fwd(const agoq_model_card *mdl, double tokens);
double agoq_layer_attn_flops_fwd(const agoq_model_card *mdl, double batch, double seq);
/* DP group layout for rank order tp (fastest), dp, pp over nodes of gpus_per_node. */
agoq_group agoq_dp_group(const agoq_step_plan *p, int gpus_per_node);
agoq_group agoq_tp_group(const agoq_step_plan *p, int gpus_per_node);

#ifdef __cplusplus
}
#endif
#endif
