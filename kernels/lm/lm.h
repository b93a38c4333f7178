/* The two ends of a language model around a decoder stack (the step engine's model, step/model.c):
 * the token embedding (gather, and its backward scatter-add) and the softmax cross-entropy of the
 * LM head's logits with its backward, fused in one pass.
 *   embed_fwd  out[t, :] = wte[tok[t], :]                              bf16 [T, h] from bf16 [V, h]
 *   embed_bwd  dwte[v, :] += sum over t with tok[t] == v of dx[t, :]   fp32 [V, h] += bf16 [T, h]
 *              (t ascending, one fp32 add per term: the reference and the kernel agree bit for bit)
 *   xent       per row t of bf16 logits [T, V]: m = max_j x_j, s = sum_j expf(x_j - m),
 *              loss[t] = logf(s) + m - x[t, tgt[t]]  (fp32),
 *              dlogits[t, j] = bf16((expf(x_j - m) / s - [j == tgt[t]]) * dscale)
 *              (dscale = 1 / rows for the mean loss). The kernel sums s in a warp's order, the
 *              reference j ascending, and CUDA's expf/logf are within 2 ulp of libm's: the
 *              results agree within the bounds of tests/cuda/lm/test_lm_cuda.c, not bit for bit.
 * Token ids must lie in [0, V) (checked by the callers on the host). References lm_ref.c; CUDA
 * lm.cu (device pointers, cudaStream_t as void *; 0, or -1 after one line for a bad argument). */
#ifndef AGOQ_LM_H
#define AGOQ_LM_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void agoq_embed_fwd_ref(const uint16_t *wte, const int *tok, int T, int h, uint16_t *out);
void agoq_embed_bwd_ref(const uint16_t *dx, const int *tok, int T, int h, int V, float *dwte);
void agoq_xent_ref(const uint16_t *logits, const int *tgt, int T, int V, float dscale, float *loss, uint16_t *dlogits);

int agoq_embed_fwd_cuda(const uint16_t *wte, const int *tok, int T, int h, uint16_t *out, void *stream);
int agoq_embed_bwd_cuda(const uint16_t *dx, const int *tok, int T, int h, int V, float *dwte, void *stream);
/* dlogits may be NULL (forward only: the loss rows) */
int agoq_xent_cuda(const uint16_t *logits, const int *tgt, int T, int V, float dscale, float *loss, uint16_t *dlogits,
                   void *stream);

#ifdef __cplusplus
}
#endif
#endif
