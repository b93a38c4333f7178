/* Internals of the step engine shared by its files (plan.c, engine.c, layer.c, optim.c):
 * the plan (shapes, stores, FLOPs), the engine state and the saved tensors of a layer.
 * Not for use outside step/. */
#ifndef AGOQ_STEP_INTERNAL_H
#define AGOQ_STEP_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/attn/attn.h"
#include "kernels/blaslt/blaslt.h"
#include "kernels/fused/fused.h"
#include "kernels/grad8/grad8_cuda.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/rope/rope.h"
#include "step/step.h"

/* Shapes of one rank's layer (tokens T = b * s) and what each role stores. */
typedef struct {
    long b, s, T, h, d, a, kv, F, AD, QKVN, L, m, inflight, recompute_layers;
    agoq_store st[AGOQ_ROLE_COUNT];
    int has[AGOQ_ROLE_COUNT];
    double model_by_role[AGOQ_ROLE_COUNT]; /* the memory model's bytes per role (one layer, one micro-batch) */
    long prow[AGOQ_PARAM_COUNT], pcol[AGOQ_PARAM_COUNT];
    size_t pelems[AGOQ_PARAM_COUNT], layer_params;
    double fwd_flops, bwd_flops;
} step_plan;

int step_plan_make(const agoq_step_config *c, step_plan *pl);

/* One saved tensor: bf16 (bf), quantized row-blocked (q, its planes), or nothing. */
typedef struct {
    uint16_t *bf;
    agoq_dqt q;
    int quant;
} step_saved;

/* What one layer keeps between its forward and its backward for one micro-batch. */
typedef struct {
    int recomputed;    /* full recomputation: only ckpt (the bf16 layer input) is kept */
    uint16_t *ckpt;
    step_saved x, y1, qkv, o, x2, y2, hh, a; /* norm1 in, QKV in, q|k|v, attn out, norm2 in, FFN1 in, FC1 out, FFN2 in */
    float *lse;
} step_layer_saved;

/* Per-op timing of one profiled step (CUDA events around every op): STEP_OP ids and names. */
typedef enum {
    STEP_OP_NORM_FWD, STEP_OP_GEMM_FWD, STEP_OP_ROPE, STEP_OP_ATTN_FWD, STEP_OP_QUANTIZE, STEP_OP_SWIGLU_FWD,
    STEP_OP_GEMM_DGRAD, STEP_OP_GEMM_WGRAD, STEP_OP_SWIGLU_BWD, STEP_OP_NORM_BWD, STEP_OP_ATTN_BWD,
    STEP_OP_DEQUANTIZE, STEP_OP_GRAD_ACCUM, STEP_OP_ELEMENTWISE, STEP_OP_OPTIMIZER, STEP_OP_INPUT, STEP_OP_COUNT
} step_op_id;
extern const char *const step_op_names[STEP_OP_COUNT];
#define STEP_PROF_MAX 8192
typedef struct {
    int on, n;
    void *ev[2 * STEP_PROF_MAX];
    int id[STEP_PROF_MAX];
    double ms[STEP_OP_COUNT];
    long calls[STEP_OP_COUNT];
} step_prof;
void step_prof_begin(step_prof *p, int id, void *stream);
void step_prof_end(step_prof *p, void *stream);

typedef struct {
    const agoq_step_config *cfg;
    step_plan pl;
    agoq_arena ar;
    int dry;
    int sms; /* the device's SMs (a plan without a GPU: AGOQ_PLAN_SMS): kernel launch shapes */
    void *stream;
    agoq_fq fq[AGOQ_ROLE_COUNT]; /* device quantization parameters of the quantized roles */
    agoq_lt *lt;
    agoq_attn *attn;
    void *lt_ws, *attn_ws;
    size_t attn_ws_bytes;
    /* per layer l, parameter k: bf16 weights, fp32 master, gradients, moments */
    uint16_t **w;
    float **master, **g32, **m32, **v32;
    agoq_cuda_qtensor *g8, *mq, *vq;
    unsigned char *grad_fresh; /* [L * PARAM_COUNT]: no gradient yet this step */
    float *gtmp;               /* fp32 wgrad temporary (8-bit gradients) */
    step_layer_saved *slots;   /* [inflight * L] */
    /* accounting of the first forward of the first micro-batch */
    int counting, count_layer;
    double saved_by_role[AGOQ_ROLE_COUNT], saved_total;
    double flops_done;         /* FLOPs executed in the last step (recomputation included) */
    agoq_step_dump *dump;      /* probe: host copies of inputs, dys and outputs (or NULL) */
    step_prof *prof;           /* profiled step: per-op times (or NULL) */
    int adam_step;
} step_engine;

#define STEP_W(e, l, k) ((size_t)(l) * AGOQ_PARAM_COUNT + (size_t)(k))

/* engine.c: opens an engine on the arena [base, base + capacity) (base NULL: dry, a bookkeeping
 * arena; attn may then be NULL) placed with arena_ends (1 or 2, arena.h): plan, workspaces,
 * weights (seeded), gradients, optimizer state. The config must outlive the engine. 0 or -1. */
int step_engine_open(step_engine *e, const agoq_step_config *c, void *base, size_t capacity, int arena_ends,
                     agoq_attn *attn, size_t attn_ws_bytes, void *stream);
void step_engine_close(step_engine *e);

/* layer.c */
/* keep_out: the caller keeps the output long-lived (the next layer's saved bf16 input or its
 * checkpoint), so it is allocated at the arena's long-lived end as that layer's NORM_IN.
 * next_x: the next layer's saved input when that layer stores it quantized (else NULL); where
 * the FC2 site is fused this layer's FC2 writes that copy, and the next layer, finding its
 * S->x already quantized on entry, quantizes nothing. */
int step_layer_fwd(step_engine *e, int l, step_layer_saved *S, uint16_t *x, int save, int keep_out, step_saved *next_x,
                   uint16_t **out);
int step_layer_bwd(step_engine *e, int l, step_layer_saved *S, uint16_t *dout, uint16_t **dx);
/* arena helpers (layer.c) */
void *step_tmp(step_engine *e, size_t bytes, const char *label);
void step_release(step_engine *e, void *p);
/* gemm_site.c: the `gemm` key per forward GEMM site (step.h). resolve: which sites take the
 * fused GEMM (auto: timed on the GPU; a dry run plans cuBLASLt), into c->gemm_fused and out;
 * 0 or -1. fused: site s of this engine runs the fused GEMM (and its consumer quantizes
 * nothing). */
#define STEP_LT_WORKSPACE_BYTES ((size_t)32 << 20)
int step_gemm_resolve(agoq_step_config *c, const step_plan *p, void *stream, agoq_step_gemm_site out[AGOQ_GEMM_SITE_COUNT]);
int step_gemm_fused(const step_engine *e, agoq_gemm_site s);
/* optim.c: gradients and the optimizer */
int step_grads_alloc(step_engine *e);
int step_grad_wgrad(step_engine *e, int l, agoq_param_kind k, int M, int N, int K, const uint16_t *dY,
                    const uint16_t *X);
/* A norm's weight gradient: the fp32 buffer its RMSNorm backward reduces it into (NULL after a
 * one-line error), then step_grad_norm commits it (accumulated or quantized as the policy says)
 * and gives the buffer back. */
float *step_grad_norm_dw(step_engine *e);
int step_grad_norm(step_engine *e, int l, agoq_param_kind k, float *dw);
int step_optimizer(step_engine *e);
/* 1 when the optimizer takes the fused quantized-moment pass (adamw_q.h) for this config. */
int step_optimizer_fused(const agoq_step_config *c);
int step_grads_to_host(step_engine *e, float **host);

/* GPU calls: compiled only in CUDA builds; a dry run skips them. */
#if AGOQ_HAVE_CUDA
#define STEP_GPU(e, call)                                                                          \
    do {                                                                                           \
        if (!(e)->dry && (call) != 0) return -1;                                                   \
    } while (0)
/* an op of the step: timed when the step is profiled */
#define STEP_OP(e, op, call)                                                                       \
    do {                                                                                           \
        if (!(e)->dry) {                                                                           \
            if ((e)->prof) step_prof_begin((e)->prof, (op), (e)->stream);                          \
            int rc_ = (call);                                                                      \
            if ((e)->prof) step_prof_end((e)->prof, (e)->stream);                                  \
            if (rc_ != 0) return -1;                                                               \
        }                                                                                          \
    } while (0)
#define STEP_GPUV(e, call)                                                                         \
    do {                                                                                           \
        if (!(e)->dry) call;                                                                       \
    } while (0)
#else
/* CPU builds: only dry runs; the call is type-checked but never evaluated or linked */
#define STEP_GPU(e, call)                                                                          \
    do {                                                                                           \
        (void)sizeof((call), 0);                                                                   \
        if (!(e)->dry) return agoq_error("step: built without CUDA"), -1;                           \
    } while (0)
#define STEP_GPUV(e, call)                                                                         \
    do {                                                                                           \
        (void)sizeof((call), 0);                                                                   \
    } while (0)
#define STEP_OP(e, op, call) STEP_GPU(e, call)
#endif
#endif
