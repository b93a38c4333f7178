/* The trainer's saved-activation policies: the memory model's (models/memory.h) under the
 * trainer's run names. One store struct (agoq_store) and one role enum (agoq_role) serve the
 * memory model, the step engine and this trainer; this file only maps names and stores.
 * The model calls train_act_store() on every saved tensor right after computing it; backward
 * reads only the stored copy (or recomputes from one), so a policy's error reaches the
 * gradients exactly as a real memory-saving implementation's would. Quantized storage uses the
 * reference quantizers row by row, the "rowq" layout of kernels/fused/fused.h: each row of
 * `cols` is its own run of blocks. AGOQ_STORE_NATIVE is bf16 (the native dtype of bf16
 * training), AGOQ_STORE_FP32 exact.
 *
 * Run names (memory-model policy they map to; storage per role):
 *   fp32      everything exact (gradient checks, the "quantization off" control; CPU only)
 *   bf16      "bf16": every role bf16
 *   agoq      "agoq": norm inputs, out-projection input and FC1 output (SwiGLU input) FP4 E2M1;
 *             QKV / FFN1 inputs (norm outputs) and the FC2 input recomputed; attention bf16
 *   uniform4  "int4": every role FP4 E2M1, attention included (the paper's failed variant)
 *   coat      "coat" with the QKV and out-projection inputs FP8 E4M3 too: every non-attention
 *             role FP8 E4M3, attention bf16 (this trainer's COAT since its first runs)
 * Quantized roles take the run's block (act_block); gradients and moments are not the
 * activation policy's business here (the trainer's all-reduce mode and fp32 AdamW). */
#ifndef AGOQ_TRAIN_POLICY_H
#define AGOQ_TRAIN_POLICY_H
#include <stddef.h>

#include "models/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;                /* the trainer's run name ("agoq", "uniform4", ...) */
    agoq_policy_id base;             /* the memory-model policy it maps to */
    agoq_store store[AGOQ_ROLE_COUNT];
} train_act_policy;

#define TRAIN_ACT_POLICY_NAMES "fp32, bf16, agoq, uniform4, coat"
/* Named policy with `block` elements per quantization block; -1 when the name is unknown. */
int train_act_policy_by_name(const char *name, int block, train_act_policy *out);
/* Roles the trainer's model can recompute: the norm outputs (QKV_IN, FFN1_IN) and the FC2
 * input (FFN2_IN, with its factor ACT_OUT). */
int train_role_recomputable(agoq_role r);
/* The memory model's policy with this activation storage, fp32 gradients and moments (what
 * the step engine runs for the trainer). */
void train_act_policy_to_mem(const train_act_policy *p, agoq_policy *out);

/* dst (rows, cols) = the stored copy of src as backward will read it (dequantized).
 * RECOMPUTE leaves dst untouched: the model recomputes it in backward. dst may equal src. */
void train_act_store(const agoq_store *st, const float *src, size_t rows, size_t cols, float *dst);
/* Bytes the stored copy occupies (codes + scales; 0 for RECOMPUTE): the memory it saves. */
size_t train_act_store_bytes(const agoq_store *st, size_t rows, size_t cols);

#ifdef __cplusplus
}
#endif
#endif
