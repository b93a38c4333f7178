/* A compact LLaMA-style decoder (llm.c shape): byte tokens, tied input/output embedding,
 * L x [RMSNorm -> QKV -> RoPE -> causal attention -> out-proj -> residual -> RMSNorm ->
 * FC1 (gate|up) -> SwiGLU -> FC2 -> residual], final RMSNorm, LM head. No biases. Master
 * weights, gradients and all forward arithmetic in fp32; what the backward pass READS is the
 * policy's stored copy of each saved activation (policy.h), recomputing the norm outputs and
 * the FC2 input when the policy says so.
 *
 * This is the fp32 reference: every tensor lives in the host memory of m->dev and every
 * operation goes through the cpu ops table (ops.h). On a GPU the same model runs on the step
 * engine in bf16 (train/engine.h maps weights and gradients between the two). Weight layout (in, out) for the forward GEMM out = in @ W; the backward GEMMs
 * read W and the activations transposed through the matmul's transpose flags. */
#ifndef AGOQ_TRAIN_MODEL_H
#define AGOQ_TRAIN_MODEL_H
#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"
#include "train/ops.h"
#include "train/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int vocab;      /* 256: one token per byte */
    int seq_len;    /* T */
    int n_layer;    /* L */
    int n_head;     /* NH; d_model / n_head must be even (RoPE pairs) */
    int d_model;    /* C */
    int d_ff;       /* F: SwiGLU width (FC1 is C -> 2F, FC2 F -> C) */
    int batch;      /* B: sequences per micro-batch */
    float rope_base, norm_eps;
    agoq_backend backend; /* cpu (0): this model; cuda: the trainer runs train/engine.h */
} train_cfg;

/* Parameter tensors (all layers of one kind contiguous, layer-major). */
enum { P_WTE, P_LN1, P_QKV, P_WO, P_LN2, P_W1, P_W2, P_LNF, P_COUNT };
extern const char *const train_param_names[P_COUNT];

typedef struct {
    size_t size[P_COUNT]; /* element counts */
    size_t total;
    float *mem;           /* one allocation of total floats (backend memory) */
    float *t[P_COUNT];    /* views into mem */
} train_tensors;

/* Saved tensors per layer (slot -> class in train_slot_class). The final norm input / output
 * live in layer L's S_X1 / S_H1 slots. */
enum { S_X1, S_H1, S_QKV, S_ATT, S_Y, S_X2, S_H2, S_GU, S_S, S_COUNT };

typedef struct {
    train_cfg cfg;
    train_act_policy policy;
    train_dev *dev;                  /* the backend; everything below is its memory */
    train_tensors params, grads;
    float *saved[S_COUNT];           /* (L + 1) slots each, sized by slot */
    size_t slot_n[S_COUNT];          /* elements of one layer's slot */
    float *res;                      /* (L + 1, BT, C) residual stream */
    float *qkv, *att, *y, *gu, *s;   /* forward scratch of one layer */
    float *logits;                   /* (BT, V); becomes dlogits */
    float *dres, *dx2, *db1, *db2, *dqkv, *dgu; /* backward scratch */
    int *tokens, *targets;           /* (BT) of the last forward */
    size_t act_bytes_per_layer;      /* bytes the policy stores for one decoder layer */
} train_model;

/* Checks the shape (messages name the offending field), opens cfg->backend and allocates;
 * 0 or -1. */
int train_model_init(train_model *m, const train_cfg *cfg, const train_act_policy *p);
void train_model_free(train_model *m);
/* Element counts of the parameter tensors of shape c (P_* order). */
void train_param_sizes(const train_cfg *c, size_t size[P_COUNT]);
/* GPT-2 style init: N(0, 0.02), residual projections N(0, 0.02 / sqrt(2L)), norm weights 1, into
 * host (the P_* tensors one after another). Drawn on the host, so the CPU model and the step
 * engine's (train/engine.h) start from the same bits. */
void train_weights_draw(const train_cfg *c, uint64_t seed, float *host);
void train_model_init_weights(train_model *m, uint64_t seed); /* train_weights_draw + upload */
size_t train_model_param_count(const train_model *m);
/* Host copies of a parameter-layout set (m->params or m->grads): t->total floats. */
void train_model_download(const train_model *m, const train_tensors *t, float *host);
void train_model_upload(train_model *m, train_tensors *t, const float *host);

/* Forward on tokens (B, T) with next-token targets (B, T), host arrays of values in [0, V):
 * mean loss. */
double train_forward(train_model *m, const int *tokens, const int *targets);
/* Backward of the last forward: overwrites grads (d mean loss / d params). */
void train_backward(train_model *m);
/* Forward and backward of one micro-batch; loss returned. */
double train_step_grads(train_model *m, const int *tokens, const int *targets);

#ifdef __cplusplus
}
#endif
#endif
