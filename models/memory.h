/* Per-GPU memory model of LLM training: model states under ZeRO 0-3 with mixed-precision Adam,
 * activations under TP / SP / PP (1F1B, interleaved 1F1B) with per-stage, per-block storage
 * formats, activation recomputation, and communication buffers. Computed, never measured:
 * runners that print it mark their results "simulated".
 *
 * Use (the simulator calls the same functions to choose how many layers baselines recompute):
 *   agoq_model_card m;  agoq_model_load("llama2-13b", &m);        // models/llama2-13b.json
 *   agoq_mem_setup ms;  agoq_mem_setup_default(&ms, &m);           // bf16, TP=PP=DP=1, s=2048
 *   ms.par.tp = 8; ms.par.seq = 12288; ms.par.sp = 1;
 *   agoq_policy_by_name("agoq", &ms.pol);
 *   agoq_mem_breakdown bd; int stage;
 *   agoq_memory_peak(&ms, &stage, &bd);                           // worst stage, bytes
 *   long r; agoq_memory_min_recompute(&ms, 80e9, &r);              // layers per stage to recompute
 *
 * Two accountings (agoq_accounting):
 *   PAPER  the AGoQ paper's Table 1: PAPER layer inventory (FFN 4h, fp32 norm inputs), bytes
 *          = elements * bits / 8 with no scale bytes and no alias sharing.
 *   REAL   the card's real FFN width and KV heads, the LLAMA inventory of the chosen
 *          implementation (agoq_layer_impl), storage of quantized copies from kernels/quant/formats.h
 *          (codes + scales + zero points + tail padding), shared storages counted once.
 * Units: every *_bytes field is bytes per GPU (double: exact for integers below 2^53). */
#ifndef AGOQ_MEMORY_H
#define AGOQ_MEMORY_H
#include <cjson/cJSON.h>

#include "core/jconf.h"
#include "kernels/quant/formats.h"
#include "models/inventory.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGOQ_MAX_STAGES 64

/* ---- model cards (models/<name>.json) ----------------------------------------------------- */
typedef struct {
    char name[64];          /* "llama2-13b" */
    char family[32];        /* "llama", "olmo", "gpt" */
    agoq_layer_kind layer;  /* LLAMA for decoder cards, GPT for the Korthikanti GPT card */
    long hidden, ffn, heads, kv_heads, head_dim, layers, vocab, max_seq;
    int tied_embeddings;    /* input embedding and output head share one matrix */
    int norm_weights;       /* norms carry a weight vector (OLMo-1B's LayerNorm has none) */
} agoq_model_card;

/* name ("llama2-13b": looked up as $AGOQ_MODELS_DIR/<name>.json, default models/) or a path
 * ending in .json. Errors name the file and key. 0 or -1. */
int agoq_model_load(const char *name_or_path, agoq_model_card *out);
int agoq_model_parse(jconf c, const cJSON *obj, agoq_model_card *out);
/* Comma-separated names of the cards in the models directory (static buffer). */
const char *agoq_model_names(void);
double agoq_model_layer_params(const agoq_model_card *m); /* one decoder layer */
double agoq_model_params(const agoq_model_card *m);       /* whole model, embeddings included */

/* ---- parallel layout --------------------------------------------------------------------- */
typedef enum { AGOQ_SCHED_1F1B, AGOQ_SCHED_INTERLEAVED, AGOQ_SCHED_COUNT } agoq_schedule;

typedef struct {
    long tp, pp, dp;          /* tensor, pipeline, data parallel degrees */
    long vpp;                 /* model chunks per stage: 1 for 1F1B, >= 2 for interleaved */
    agoq_schedule schedule;
    int sp;                   /* sequence parallelism (TP > 1): replicated tensors split over s */
    int zero;                 /* ZeRO stage 0..3 over the dp ranks */
    long micro_batch, seq;    /* b, s */
    long num_microbatches;    /* per iteration and pipeline (gradient accumulation steps) */
    long recompute_layers;    /* decoder layers per stage fully recomputed; -1 = all */
    int recompute_attn_core;  /* Megatron selective: recompute softmax / probs / attention masks */
    double bucket_elems;      /* DP gradient bucket (elements; default 40e6 as Megatron's DDP) */
} agoq_parallel;

/* Micro-batches (in units of one model chunk, L/(pp*vpp) layers) whose activations stage
 * `stage` (0-based) holds at its peak: 1F1B min(p - i, m); interleaved Megatron's warm-up
 * count + 1 = min(2(p - i - 1) + (v - 1)p + 1, m*v). p = 4, v = 2, m = 8 gives 11, 9, 7, 5. */
long agoq_inflight_microbatches(const agoq_parallel *p, int stage);

/* ---- policies ---------------------------------------------------------------------------- */
typedef enum {
    AGOQ_STORE_NATIVE,    /* the inventory's dtype (bf16 / fp32 statistics / 1-byte masks) */
    AGOQ_STORE_FP32,      /* widened to fp32 (Megatron's fp32 norm inputs in the paper) */
    AGOQ_STORE_QUANT,     /* quantized copy: q (format, block, scale dtype) */
    AGOQ_STORE_RECOMPUTE, /* not stored: recomputed in backward from another stored tensor */
} agoq_store_kind;

typedef struct {
    agoq_store_kind kind;
    agoq_qconfig q; /* QUANT only */
} agoq_store;

typedef enum {
    AGOQ_POLICY_BF16,          /* Megatron baseline, Adam fp32 states */
    AGOQ_POLICY_COAT,          /* FP8 activations per COAT's design (paper Table 1), FP8 moments */
    AGOQ_POLICY_INT8,          /* every activation int8 (attention included) */
    AGOQ_POLICY_INT4,          /* every activation 4-bit (the paper's non-converging ablation) */
    AGOQ_POLICY_AGOQ,          /* attention bf16, norm/out-proj/FC1-output 4-bit, rest recomputed;
                                  8-bit gradients and 8-bit moments */
    AGOQ_POLICY_AGOQ_BALANCED, /* AGoQ with per-stage widths from the schedule (DBCA-PP) */
    AGOQ_POLICY_COUNT
} agoq_policy_id;

typedef struct {
    agoq_policy_id id;
    agoq_store act[AGOQ_ROLE_COUNT];  /* per role, every stage unless overridden below */
    agoq_store grad;                  /* NATIVE = bf16 gradients; QUANT = 8-bit block-wise */
    agoq_store moments;               /* Adam m and v: FP32 or QUANT */
    int master_bytes;                 /* fp32 master weights: 4 */
    /* Per-stage, per-role replacement of act[role]: what bitalloc sets. The balanced policy
     * without overrides derives them from the schedule (bits_i = min(8, rint(4 N_0 / N_i)) for
     * the roles AGoQ quantizes, the paper's DBCA-PP rule). */
    unsigned char has_override[AGOQ_MAX_STAGES][AGOQ_ROLE_COUNT];
    agoq_store override[AGOQ_MAX_STAGES][AGOQ_ROLE_COUNT];
} agoq_policy;

int agoq_policy_by_name(const char *name, agoq_policy *out); /* -1 (no message) when unknown */
const char *agoq_policy_name(agoq_policy_id id);
const char *agoq_policy_names(void);                         /* "bf16, coat, ..." */
/* Storage bytes of n elements stored as st, given the native dtype size; scale/zero bytes of
 * a quantized copy go to *scale_bytes (may be NULL). with_scales 0: the paper's n*bits/8. */
double agoq_store_bytes(const agoq_store *st, double n, int native_bytes, int with_scales,
                        double *scale_bytes);
/* The same for a row-blocked tensor of rows x cols (kernels/fused/fused.h "rowq": each row is
 * quantized on its own, its last block padded): blocks = rows * ceil(cols / block). */
double agoq_store_bytes_rows(const agoq_store *st, double rows, double cols, int native_bytes, int with_scales,
                             double *scale_bytes);
/* Parses "native", "fp32", "recompute", "<format>" or "<format>/<block>" (formats.h names);
 * -1 (no message) when invalid. */
int agoq_store_parse(const char *s, agoq_store *out);
/* "native", "fp32", "recompute", "fp4_e2m1/128" into buf. */
const char *agoq_store_label(const agoq_store *st, char *buf, size_t len);

/* ---- the model ---------------------------------------------------------------------------- */
typedef enum { AGOQ_ACCOUNT_PAPER, AGOQ_ACCOUNT_REAL } agoq_accounting;

typedef struct {
    const agoq_model_card *model; /* not owned */
    agoq_parallel par;
    agoq_policy pol;
    agoq_accounting acc;
    agoq_layer_impl impl;         /* REAL accounting of LLAMA layers: flash, fused norm, native GQA */
    int stack_only;               /* the stage's decoder layers only: no embedding, no output head
                                     (the step engine's stack; a middle pipeline stage) */
} agoq_mem_setup;

/* bf16 policy, REAL accounting, TP=PP=DP=1, ZeRO 0, b=1, s=2048, m=1, no recomputation. */
void agoq_mem_setup_default(agoq_mem_setup *ms, const agoq_model_card *m);
/* Divisibility and range checks (heads % tp, layers % (pp*vpp), ...); prints and returns -1. */
int agoq_mem_setup_check(const agoq_mem_setup *ms);

typedef struct {
    double weights_bytes;      /* bf16 working weights (ZeRO-3: this rank's shard) */
    double grads_bytes;        /* gradients (ZeRO >= 2: shard) */
    double optimizer_bytes;    /* fp32 master + moments, with their scales (ZeRO >= 1: shard) */
    double activations_bytes;  /* saved activations at the peak, scales included */
    double act_scales_bytes;   /* of which quantization scales / zero points */
    double comm_bytes;         /* gradient bucket, ZeRO-3 gathered layers, SP / PP buffers */
    double total_bytes;        /* weights + grads + optimizer + activations + comm */
    double params;             /* parameters this rank computes with (before ZeRO sharding) */
    double layers;             /* decoder layers on this stage */
    double inflight;           /* chunk micro-batches in flight at the peak */
    double recompute_layers;   /* of this stage's layers, fully recomputed */
    double layer_act_bytes;    /* one layer, one micro-batch, this rank, as stored */
    double head_act_bytes;     /* embedding / logits activations on this stage */
} agoq_mem_breakdown;

/* One saved tensor of a layer as the setup stores it on one rank for one micro-batch. */
typedef struct {
    agoq_saved_tensor t;
    double elems;        /* per rank */
    agoq_store store;    /* after policy, per-stage overrides and balancing */
    double stored_bytes; /* 0 when recomputed, shared with a stored owner, or dropped by selective recomputation */
    double scale_bytes;  /* of which scales / zero points */
} agoq_layer_entry;

/* The layer's inventory with each entry's storage (out has room for AGOQ_INVENTORY_MAX);
 * returns the number of entries, or -1 on a bad setup. agoq_layer_act_bytes sums it. */
int agoq_layer_entries(const agoq_mem_setup *ms, int stage, agoq_layer_entry *out);
/* One layer's saved bytes for one micro-batch on one rank at `stage`; by_role[AGOQ_ROLE_COUNT]
 * and scale_bytes may be NULL. Returns the bytes (scales included), or -1 on a bad setup. */
double agoq_layer_act_bytes(const agoq_mem_setup *ms, int stage, double *by_role, double *scale_bytes);
/* Breakdown of pipeline stage `stage` (0-based). 0 or -1. */
int agoq_memory_stage(const agoq_mem_setup *ms, int stage, agoq_mem_breakdown *out);
/* The stage with the largest total (first on ties) and its breakdown. 0 or -1. */
int agoq_memory_peak(const agoq_mem_setup *ms, int *stage, agoq_mem_breakdown *out);
/* Smallest per-stage count of fully recomputed layers (0..layers per stage) with which every
 * stage fits budget_bytes: 0 and *layers set; 1 when nothing fits (then *layers = -1); -1 on a
 * bad setup. ms->par.recompute_layers is ignored. */
int agoq_memory_min_recompute(const agoq_mem_setup *ms, double budget_bytes, long *layers);
/* Reads the layout keys of an experiment config into ms (already defaulted):
 *   tp, pp, dp, zero, seq, micro_batch (skipped when sweep_keys: the caller sweeps them), vpp,
 *   schedule "1f1b"|"interleaved" (default interleaved when vpp > 1), sp, num_microbatches
 *   (default pp), recompute_layers, recompute_attn_core, bucket_elems,
 *   impl {flash_attn, fused_norm, gqa_repeat, norm_no_rstd, swiglu_fused}.
 * Errors name the file and key. 0 or -1. */
int agoq_layout_parse(jconf c, const cJSON *cfg, agoq_mem_setup *ms, int sweep_keys);
/* The keys agoq_layout_parse reads (NULL-terminated), for jconf_only allow lists. */
extern const char *const agoq_layout_keys[];

/* Breakdown as a JSON object (fields above with _bytes, plus GB values for reading). */
cJSON *agoq_mem_breakdown_json(const agoq_mem_breakdown *bd);

#ifdef __cplusplus
}
#endif
#endif
