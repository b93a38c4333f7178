/* The step engine: forward, backward and optimizer step of a stack of LLaMA decoder layers on
 * one GPU, with activations stored as the policy says (bf16, FP8, packed k-bit codes + scales,
 * or recomputed), every device tensor from one arena (step/arena.h), timed with CUDA events.
 *
 * The stack is one pipeline stage's layers at one rank's tensor-parallel shapes (the memory
 * model's agoq_mem_setup: model card, layout, policy, accounting REAL, impl flash + fused norm +
 * native GQA); its input is the previous stage's output and its output gradient the next
 * stage's (seeded random, the same for every policy), so no embedding or head runs. TP/PP
 * communication is not run on one GPU: every record says "comm": "omitted".
 *
 * Math per layer (bf16 storage, fp32 accumulation):
 *   y1 = RMSNorm(x) w1;  qkv = y1 Wqkv^T;  RoPE(q, k);  o = SDPA(q, k, v) (cuDNN, causal, GQA)
 *   x2 = x + o Wo^T;  y2 = RMSNorm(x2) w2;  h = y2 W1^T = [gate | up];  a = silu(gate) * up
 *   out = x2 + a W2^T
 * Storage per policy (memory.h roles): norm inputs (x, x2) and the SwiGLU input h are stored
 * through the fused producer kernels (kernels/fused/fused.h) in the role's format or bf16; the norm
 * outputs (y1, y2: QKV_IN, FFN1_IN) and SwiGLU output (FFN2_IN) are stored bf16 / quantized or
 * recomputed in backward by the fused backward kernels; q, k, v, o, lse (ATTENTION) are bf16
 * unless the policy quantizes attention too. Megatron full recomputation keeps only each
 * recomputed layer's input and reruns its forward in backward.
 * Gradients: fp32 main gradients accumulated by the wgrad GEMMs (pol.grad FP32), or 8-bit
 * storage (pol.grad QUANT): each micro-batch's gradient lands in an fp32 temporary and is added
 * by the grad8 kernel (dequantize, add in fp32, requantize). Optimizer: AdamW, fp32 master +
 * moments (pol.moments FP32) or quantized moments (dequantize, update, requantize per tensor). */
#ifndef AGOQ_STEP_H
#define AGOQ_STEP_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/optim/adamw.h"
#include "models/memory.h"
#include "step/arena.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Forward GEMM sites whose output the plan may store quantized (step/gemm_site.c):
 *   OUT_PROJ  x2 = x + o Wo^T      its copy: the second RMSNorm's saved input (NORM_IN)
 *   FC2       y  = x2 + a W2^T     its copy: the next layer's saved input (NORM_IN)
 *   FC1       hh = y2 W1^T         its copy: the SwiGLU input (FC1_OUT)
 * The config's `gemm` says who writes each copy: cuBLASLt + the consumer kernel quantizing its
 * input (RMSNorm / SwiGLU forward with a quantized copy, the engine's original path), or the
 * project's Hopper GEMM (kernels/gemm/gemm_wg.h) with the copy fused into its epilogue and the
 * consumer quantizing nothing; "auto" times both at setup on the GPU and keeps the faster. */
typedef enum { AGOQ_STEP_GEMM_AUTO, AGOQ_STEP_GEMM_CUBLASLT, AGOQ_STEP_GEMM_FUSED, AGOQ_STEP_GEMM_KEY_COUNT } agoq_step_gemm;
typedef enum { AGOQ_GEMM_SITE_OUT_PROJ, AGOQ_GEMM_SITE_FC2, AGOQ_GEMM_SITE_FC1, AGOQ_GEMM_SITE_COUNT } agoq_gemm_site;
const char *agoq_step_gemm_name(agoq_step_gemm g);      /* "auto", "cublaslt", "fused" */
int agoq_step_gemm_parse(const char *s, agoq_step_gemm *out); /* 0, or -1 (no message) */
const char *agoq_gemm_site_name(agoq_gemm_site s);      /* "out_proj", "fc2", "fc1" */

/* What one site used (agoq_step_result.gemm_sites). */
typedef struct {
    int applies;        /* the plan stores this site's output quantized (else cuBLASLt, untouched) */
    int fused;          /* 1: the fused GEMM wrote the copy; 0: cuBLASLt + the quantizing consumer */
    char fallback[160]; /* why fused/auto could not take the fused GEMM ("" when it could) */
    int timed;          /* auto on a GPU: both ways timed at setup */
    double ms_cublaslt, ms_fused; /* their medians, ms per GEMM + consumer (timed only) */
} agoq_step_gemm_site;

/* Parameter tensors of one layer, in this order. */
typedef enum {
    AGOQ_PARAM_NORM1, AGOQ_PARAM_QKV, AGOQ_PARAM_OUT, AGOQ_PARAM_NORM2, AGOQ_PARAM_FC1, AGOQ_PARAM_FC2,
    AGOQ_PARAM_COUNT
} agoq_param_kind;
const char *agoq_param_name(agoq_param_kind k); /* "norm1", "qkv", "out", "norm2", "fc1", "fc2" */

typedef struct {
    agoq_model_card card;  /* a copy; card.layers = layers * pp so the memory model's stage has `layers` */
    agoq_mem_setup ms;     /* ms.model = &card after agoq_step_config_fix; policy, layout, seq, b, m */
    long layers;           /* decoder layers in the stack (this stage's, or fewer) */
    int stage;             /* pipeline stage (0-based): 1F1B holds min(pp - stage, micro_batches)
                              micro-batches in flight, and DBCA-PP picks this stage's widths */
    int reps, warmup;      /* timed steps, untimed steps before them */
    double budget_bytes;   /* arena capacity; 0 = the dry run's exact need (plus nothing) */
    int grad_error;        /* also run bf16 store-all on the same weights and data; compare grads */
    float rope_base, norm_eps;
    agoq_adamw_hp adam;
    int adam_unfused;      /* quantized moments through the chunked dequantize -> AdamW -> requantize
                              passes instead of the fused one (adamw_q.h), for comparison */
    uint64_t seed;
    int quiet;             /* no progress on stderr */
    int dry;               /* plan + arena bookkeeping only: no GPU, no kernels (host tests, sizing) */
    agoq_step_gemm gemm;   /* who writes the quantized copies of the GEMM sites' outputs (above) */
    /* resolved by agoq_step_run / agoq_step_probe from gemm (step/gemm_site.c): 1 where a site
     * takes the fused GEMM; callers leave it zero */
    unsigned char gemm_fused[AGOQ_GEMM_SITE_COUNT];
} agoq_step_config;

/* Defaults: 4 layers, reps 5, warmup 2, grad_error 0, gemm auto, rope 10000, eps 1e-5, AdamW(3e-4, 0.9,
 * 0.95, 1e-8, wd 0.1), seed 1; ms from agoq_mem_setup_default with the card. */
void agoq_step_config_default(agoq_step_config *c, const agoq_model_card *card);
/* Points ms.model at the copy, sets card.layers = layers * pp; checks what the engine needs
 * (memory-model checks, tp-divided heads a multiple of the kv heads, head_dim <= 128 and a
 * multiple of 8, seq >= 1, every role's store something the engine can produce: one line
 * naming the key and -1 otherwise). */
int agoq_step_config_fix(agoq_step_config *c);

typedef struct {
    int layer;
    agoq_param_kind kind;
    double snr_db, rel_err, max_abs_err; /* vs bf16 store-all, over the tensor's elements */
    double ref_rel_spread, ref_max_abs_spread; /* store-all vs itself, run twice: the library's
                                                  run-to-run spread (0 when deterministic) */
} agoq_step_grad_err;

typedef struct {
    /* time (reps steps after warmup; a step = micro_batches forward/backward + optimizer) */
    double step_ms_min, step_ms_median, step_ms_max;
    double tokens_per_s;    /* micro_batch * seq * micro_batches / median step */
    double model_tflops;    /* model FLOPs of the step (no recomputation counted) / median step */
    double hw_tflops;       /* FLOPs actually executed (recomputation included) / median step */
    double mfu;             /* model_tflops / peak_tflops */
    double peak_tflops;     /* dense bf16 peak used (from the device name; 989.4 for H100/H200 SXM) */
    double recomputed_layers;
    int optimizer_fused;    /* the quantized-moment AdamW ran as one fused pass (adamw_q.h) */
    int arena_ends;         /* the arena's placement the dry run chose: 1 or 2 ends (arena.h) */
    double fwd_flops, bwd_flops; /* one layer, one micro-batch (model FLOPs) */
    double attn_workspace_bytes;  /* cuDNN's workspace (0 in a dry run: not known without a GPU) */
    /* memory (bytes) */
    double arena_bytes;     /* the arena's capacity */
    double peak_bytes;      /* arena high-water mark */
    double peak_live_bytes; /* largest sum of live allocations (peak_bytes minus fragmentation) */
    double cuda_used_bytes; /* cudaMemGetInfo used after the steps (context + libraries + arena) */
    double cuda_context_bytes; /* cudaMemGetInfo used before the arena was allocated */
    double at_peak[AGOQ_MEM_CLASS_COUNT];  /* live bytes per class at the peak */
    double saved_activation_bytes;         /* saved activations of all layers of one micro-batch
                                              (recomputed layers: their checkpointed input) */
    double saved_by_role[AGOQ_ROLE_COUNT]; /* per layer, one micro-batch, as allocated */
    double model_saved_by_role[AGOQ_ROLE_COUNT]; /* the memory model's prediction of the same */
    agoq_mem_breakdown model;              /* the memory model's breakdown of the same setup */
    /* gradient error vs bf16 store-all (grad_error) */
    agoq_step_grad_err *grad_errs;
    size_t ngrad_errs;
    char gpu_name[128];
    /* per-op breakdown of one extra profiled step (event pairs around every op: the sum is a
       little above step_ms; names in agoq_step_op_name) */
    double op_ms[16], op_calls[16];
    int profiled;
    /* per forward GEMM site: what ran (dry runs: the plan, never timed) */
    agoq_step_gemm_site gemm_sites[AGOQ_GEMM_SITE_COUNT];
} agoq_step_result;
const char *agoq_step_op_name(int op); /* NULL past the last */

/* Host copies of one probe step (forward and backward of every micro-batch from freshly
 * initialized weights, no optimizer), for tests and the PyTorch validation: per layer l and
 * parameter k (index l * AGOQ_PARAM_COUNT + k) the bf16 weights and fp32 gradients (8-bit
 * gradients dequantized); per micro-batch the stage input x, the output gradient dy and the
 * stack's output y (bf16 [T, hidden], T = micro_batch * seq). Shapes: plan rows x cols of
 * each parameter in prow/pcol (norms are 1 x hidden; qkv rows are q, then k, then v heads;
 * fc1 rows are gate then up). */
typedef struct {
    size_t nparams, nmb, tokens, hidden;
    long prow[AGOQ_PARAM_COUNT], pcol[AGOQ_PARAM_COUNT];
    uint16_t **weights;
    float **grads;
    uint16_t **x, **dy, **y;
} agoq_step_dump;
int agoq_step_probe(const agoq_step_config *c, agoq_step_dump *d);
void agoq_step_dump_free(agoq_step_dump *d);
/* Writes the dump as raw little-endian files + index.json under dir (created). 0 or -1. */
int agoq_step_dump_write(const agoq_step_config *c, const agoq_step_dump *d, const char *dir);

/* Runs the step (or the dry plan). 0, or -1 after one line on stderr. */
int agoq_step_run(const agoq_step_config *c, agoq_step_result *r);
void agoq_step_result_free(agoq_step_result *r);

#ifdef __cplusplus
}
#endif
#endif
