/* A whole language model on the step engine, for training runs (the trainer's cuda backend,
 * train/engine.c): token embedding (tied with the LM head), the engine's stack of LLaMA decoder
 * layers with each saved tensor stored as the policy says (step.h), final RMSNorm, LM head GEMM
 * (cuBLASLt) and the fused softmax cross-entropy (kernels/lm/lm.h), forward and backward, and
 * AdamW over fp32 master weights. bf16 storage and compute with fp32 accumulation, as the step
 * engine; every device tensor from one arena sized by a dry run of the same calls.
 *
 * Tensors (host arrays of fp32, in this order; shapes row-major, weights (out, in)):
 *   0              wte [V, h]   the embedding rows; the head computes logits = y wte^T
 *   1 + 6 l + k    parameter k of layer l (step.h's agoq_param_kind order and shapes:
 *                  norm1 [h], qkv [(a + 2 kv) d, h] with RoPE in the rotate-half convention,
 *                  out [h, a d], norm2 [h], fc1 [2F, h] gate rows then up rows, fc2 [h, F])
 *   1 + 6 L        lnf [h]      the final norm's weight
 * The loss is the mean over the micro-batch's B x T tokens; gradients are of that mean, fp32
 * (layer gradients are the engine's fp32 main gradients; wte gets the head's wgrad plus the
 * embedding's scatter-add). CUDA builds with cuDNN only; elsewhere agoq_lm_open refuses. */
#ifndef AGOQ_STEP_MODEL_H
#define AGOQ_STEP_MODEL_H
#include <stddef.h>

#include "models/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int vocab, seq, batch;     /* V, T per sequence, B sequences per micro-batch */
    int layers, heads, hidden, ffn; /* L, a (= kv heads), h, F */
    float rope_base, norm_eps;
    agoq_policy pol;           /* activation storage per role; gradients and moments are fp32 */
} agoq_lm_config;

typedef struct agoq_lm agoq_lm;

/* Plans, sizes the arena by a dry run, allocates on the GPU. 0, or -1 after one line. */
int agoq_lm_open(const agoq_lm_config *c, agoq_lm **out);
void agoq_lm_close(agoq_lm *m);
size_t agoq_lm_tensor_count(const agoq_lm *m);
size_t agoq_lm_tensor_elems(const agoq_lm *m, size_t i);
int agoq_lm_tensor_is_norm(const agoq_lm *m, size_t i); /* norm weights: no weight decay */
double agoq_lm_arena_bytes(const agoq_lm *m);
/* Saved-activation bytes of one decoder layer for one micro-batch, as the engine allocates them
 * (= the memory model's prediction, tests/step/test_step_plan.c). */
double agoq_lm_saved_bytes_per_layer(const agoq_lm *m);

/* Host memory for the arrays the calls below read and write (gradients g[i]): page-locked on a
 * GPU, so the copies to and from the device are direct DMA; zeroed; NULL after one line when it
 * fails. Free with agoq_lm_host_free. */
void *agoq_lm_host_alloc(size_t bytes);
void agoq_lm_host_free(void *p);

/* fp32 master weights from host arrays w[i] (the tensor order above); bf16 working copies are
 * cast from them; Adam's moments and step count restart at zero. */
int agoq_lm_set_weights(agoq_lm *m, float *const *w);
/* Mean loss of tokens / targets (host, B x T ids in [0, V)): forward only, nothing saved. */
int agoq_lm_loss(agoq_lm *m, const int *tok, const int *tgt, double *loss);
/* Forward and backward of one micro-batch: mean loss, and its fp32 gradients into g[i] (host). */
int agoq_lm_grads(agoq_lm *m, const int *tok, const int *tgt, double *loss, float **g);
/* One AdamW step (kernels/optim/adamw.h) with the gradients g[i] (host), decoupled weight decay
 * wd on every tensor but the norm weights. */
int agoq_lm_adamw(agoq_lm *m, float *const *g, float lr, float wd, float beta1, float beta2, float eps);

#ifdef __cplusplus
}
#endif
#endif
