/* Every tensor one decoder layer saves for backward, as a symbolic inventory.
 *
 * An entry is a saved tensor: its shape as a product of symbolic dimensions (micro-batch b,
 * sequence s, hidden h, FFN f, heads a, KV heads, head dim d, vocabulary V), its stored dtype
 * size, its block (norm / attention / MLP / head) and its role, the paper-level name of what
 * it is (Table 1 of the AGoQ paper: "QKV GEMM input", "SiLU&Mul", ...). Policies in memory.c
 * decide per role whether a tensor is kept, quantized or recomputed; the inventory itself only
 * says what an unmodified implementation saves.
 *
 * Three layer kinds:
 *   LLAMA  what a PyTorch LLaMA layer really saves (validation/saved_tensors.py records the same
 *          layer with saved_tensors_hooks): RMSNorm fused (input + fp32 rstd, as apex/TE) or
 *          eager (HF: fp32 copy, rstd, normalized bf16), attention flash (q, k, v, out, fp32
 *          logsumexp; the out-projection input is the same storage as the attention output)
 *          or eager (q, k, v, fp32 softmax, bf16 probs, a separate out-projection input), GQA
 *          native (k, v with KV heads) or repeated (HF repeat_kv materializes a heads of k, v).
 *   PAPER  the AGoQ paper's Table 1 accounting: FFN 4h, RMSNorm inputs fp32, attention 5
 *          units; reproduces 28U / 16.5U / 7.75U.
 *   GPT    the GPT layer of Korthikanti et al. ("Reducing Activation Recomputation", 2022):
 *          LayerNorm, GeLU MLP 4h, dropout masks; 34sbh + 5as^2b bytes without recomputation. */
#ifndef AGOQ_INVENTORY_H
#define AGOQ_INVENTORY_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AGOQ_LAYER_LLAMA, AGOQ_LAYER_PAPER, AGOQ_LAYER_GPT, AGOQ_LAYER_KIND_COUNT } agoq_layer_kind;

typedef enum { AGOQ_BLOCK_NORM, AGOQ_BLOCK_ATTENTION, AGOQ_BLOCK_MLP, AGOQ_BLOCK_HEAD, AGOQ_BLOCK_COUNT } agoq_block;

/* What a saved tensor is, at the granularity policies act on (Table 1 rows, plus statistics). */
typedef enum {
    AGOQ_ROLE_NORM_IN,    /* RMSNorm / LayerNorm input (and eager RMSNorm's normalized copy) */
    AGOQ_ROLE_STAT,       /* per-row statistics (norm rstd, attention logsumexp): fp32, kept */
    AGOQ_ROLE_QKV_IN,     /* input of the QKV GEMM (= norm1 output) */
    AGOQ_ROLE_ATTENTION,  /* q, k, v, output, softmax / probs / lse / dropout: attention's own */
    AGOQ_ROLE_OUTPROJ_IN, /* input of the attention output projection */
    AGOQ_ROLE_FFN1_IN,    /* input of the gate/up (FC1) GEMM (= norm2 output) */
    AGOQ_ROLE_FC1_OUT,    /* FC1 output: SwiGLU's gate and up (SiLU&Mul inputs); GeLU input */
    AGOQ_ROLE_ACT_OUT,    /* SiLU output (the other factor of the Mul) */
    AGOQ_ROLE_FFN2_IN,    /* input of the down (FC2) GEMM (GeLU output / SiLU*up) */
    AGOQ_ROLE_MASK,       /* dropout masks (1 byte), never quantized */
    AGOQ_ROLE_LOGITS,     /* output head: fp32 logits kept by the cross-entropy */
    AGOQ_ROLE_COUNT
} agoq_role;

/* Symbolic dimensions; AGOQ_DIM_ONE pads unused slots. */
typedef enum {
    AGOQ_DIM_ONE, AGOQ_DIM_B, AGOQ_DIM_S, AGOQ_DIM_H, AGOQ_DIM_F, AGOQ_DIM_A, AGOQ_DIM_KV, AGOQ_DIM_D,
    AGOQ_DIM_V, AGOQ_DIM_COUNT
} agoq_dim;

/* Implementation choices of the LLAMA kind (ignored by PAPER and GPT). */
typedef struct {
    int flash_attn;  /* 1: flash / SDPA-flash attention; 0: eager softmax(QK^T)V */
    int fused_norm;  /* 1: fused RMSNorm (saves input + rstd); 0: eager HF RMSNorm */
    int gqa_repeat;  /* 1: k, v materialized at a heads (HF repeat_kv); 0: native KV heads */
    int norm_no_rstd; /* 1 (fused norm): backward recomputes rstd from the stored input, none saved
                         (this project's fused RMSNorm kernels, the step engine) */
    int swiglu_fused; /* 1: SwiGLU saves only its input (gate, up); silu(gate) is recomputed in
                         backward (Megatron's fused bias-SwiGLU, the step engine) */
} agoq_layer_impl;

#define AGOQ_SAVED_MAX_DIMS 4
#define AGOQ_INVENTORY_MAX 32

typedef struct {
    const char *name;      /* "attn.q", "mlp.gate", ... stable: JSON labels and the validator use it */
    agoq_block block;
    agoq_role role;
    int dtype_bytes;       /* as stored by the unmodified implementation: 2 bf16, 4 fp32, 1 mask */
    agoq_dim dims[AGOQ_SAVED_MAX_DIMS];
    int alias_of;          /* index of the entry whose storage this one shares, or -1 */
} agoq_saved_tensor;

/* Concrete sizes for one micro-batch (already divided per rank by the caller if needed). */
typedef struct {
    double b, s, h, f, a, kv, d, v;
} agoq_dims;

/* Fills out[0..n) with the layer's saved tensors (n <= AGOQ_INVENTORY_MAX); returns n. */
size_t agoq_inventory(agoq_layer_kind kind, const agoq_layer_impl *impl, agoq_saved_tensor *out);
/* The output head of the last pipeline stage: final norm input and statistic, head GEMM input,
 * fp32 logits kept by the (vocab-parallel) cross-entropy. Returns n. */
size_t agoq_head_inventory(agoq_layer_kind kind, agoq_saved_tensor *out);
/* Elements and bytes (native dtype) of one entry at dims. */
double agoq_saved_elems(const agoq_saved_tensor *t, const agoq_dims *d);
static inline double agoq_saved_bytes(const agoq_saved_tensor *t, const agoq_dims *d) {
    return agoq_saved_elems(t, d) * (double)t->dtype_bytes;
}
/* Rows and columns of an entry as the fused kernels quantize it (one row per token): cols is
 * the product of the dimensions after the first s (b*s*a*d: rows b*s, cols a*d); an entry
 * without s is one row. rows * cols = agoq_saved_elems. */
void agoq_saved_rows_cols(const agoq_saved_tensor *t, const agoq_dims *d, double *rows, double *cols);
/* Whether tensor parallelism splits the entry (it has a head, FFN or vocabulary dimension);
 * otherwise it is replicated across TP ranks unless sequence parallelism splits s. */
int agoq_saved_tp_split(const agoq_saved_tensor *t);
/* "b*s*h" style shape text into buf. */
const char *agoq_saved_shape(const agoq_saved_tensor *t, char *buf, size_t len);

const char *agoq_layer_kind_name(agoq_layer_kind k);
int agoq_layer_kind_by_name(const char *s); /* -1 when unknown */
const char *agoq_block_name(agoq_block b);
const char *agoq_role_name(agoq_role r);
int agoq_role_by_name(const char *s);       /* -1 when unknown */

#ifdef __cplusplus
}
#endif
#endif
