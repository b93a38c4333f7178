/* Saved-activation policies: how each class of tensor that the forward pass keeps for the
 * backward pass is stored. The model calls train_act_store() on every saved tensor right after
 * computing it; backward reads only the stored copy (or recomputes from one), so a policy's
 * error reaches the gradients exactly as a real memory-saving implementation's would.
 * Quantized storage uses the reference quantizers (kernels/quant/quant_ref.h) row by row, the
 * "rowq" layout of kernels/fused/fused.h: each row of `cols` is its own run of blocks.
 *
 * Policies (name: storage per class):
 *   fp32      everything exact (gradient checks; the "quantization off" control)
 *   bf16      everything rounded to bf16: what bf16 mixed-precision training stores
 *   agoq      norm inputs, out-proj input and FC1 output (SwiGLU input) in FP4 E2M1 block 128;
 *             norm outputs (QKV / FC1 GEMM inputs) and the FC2 input RECOMPUTED from them;
 *             attention q, k, v and probabilities in bf16 (never quantized)
 *   uniform4  every saved tensor in FP4 E2M1 block 128, attention included (the paper's
 *             failed variant)
 *   coat      FP8 E4M3 block 128 for the non-attention tensors, attention in bf16 (COAT) */
#ifndef AGOQ_TRAIN_POLICY_H
#define AGOQ_TRAIN_POLICY_H
#include <stddef.h>

#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ACT_NORM_IN,  /* RMSNorm inputs (residual stream): x before norm1, x2 before norm2, final */
    ACT_NORM_OUT, /* RMSNorm outputs = QKV / FC1 / LM-head GEMM inputs */
    ACT_QKV,      /* attention q, k (after RoPE), v */
    ACT_PROBS,    /* attention probabilities (B, NH, T, T) */
    ACT_ATTN_OUT, /* attention output = out-projection GEMM input */
    ACT_FC1_OUT,  /* FC1 output [gate | up] = SwiGLU input */
    ACT_FC2_IN,   /* silu(gate) * up = FC2 GEMM input */
    ACT_CLASS_COUNT
} train_act_class;

typedef enum { TS_FP32, TS_BF16, TS_QUANT, TS_RECOMPUTE } train_store_kind;

typedef struct {
    train_store_kind kind;
    agoq_qconfig q; /* TS_QUANT only */
} train_store;

typedef struct {
    const char *name;
    train_store store[ACT_CLASS_COUNT];
} train_act_policy;

extern const char *const train_act_class_names[ACT_CLASS_COUNT];
#define TRAIN_ACT_POLICY_NAMES "fp32, bf16, agoq, uniform4, coat"
/* Named policy with `block` elements per quantization block; -1 when the name is unknown. */
int train_act_policy_by_name(const char *name, int block, train_act_policy *out);
/* Only NORM_OUT (from NORM_IN) and FC2_IN (from FC1_OUT) can be recomputed. */
int train_act_class_recomputable(train_act_class c);

/* dst (rows, cols) = the stored copy of src as backward will read it (dequantized).
 * TS_RECOMPUTE leaves dst untouched: the model recomputes it in backward. dst may equal src. */
void train_act_store(const train_store *st, const float *src, size_t rows, size_t cols, float *dst);
/* Bytes the stored copy occupies (codes + scales; 0 for TS_RECOMPUTE): the memory it saves. */
size_t train_act_store_bytes(const train_store *st, size_t rows, size_t cols);
/* "fp4_e2m1/128", "bf16", "recompute", ... for logs and JSON */
const char *train_store_label(const train_store *st, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
