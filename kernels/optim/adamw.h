/* AdamW with fp32 master weights (Megatron's mixed-precision optimizer), one fused pass:
 *   g' = g * grad_scale
 *   m = b1 m + (1 - b1) g',  v = b2 v + (1 - b2) g'^2
 *   p = p - lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p)
 *   w = bf16(p)   (the working weights the GEMMs read; RNE)
 * t = hp->step (1-based). g is fp32 (the main gradient, or a dequantized 8-bit one).
 * Order of the fp32 operations (the reference's and the kernel's): bias corrections
 * bc1 = 1 - powf(b1, t), bc2 = 1 - powf(b2, t) on the host; u = (m / bc1) / (sqrtf(v / bc2) + eps)
 * + wd * p; p = p - lr * u.
 * Reference adamw_ref.c; CUDA adamw.cu (within a few fp32 ulps of the reference: stated in its
 * test). CUDA entry points take device pointers and a cudaStream_t as void *. */
#ifndef AGOQ_ADAMW_H
#define AGOQ_ADAMW_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float lr, beta1, beta2, eps, weight_decay, grad_scale;
    int step;
} agoq_adamw_hp;

/* w may be NULL (no working copy). */
void agoq_adamw_ref(const agoq_adamw_hp *hp, float *p, const float *g, float *m, float *v, uint16_t *w, size_t n);
/* bc1, bc2 of the header comment (host fp32; reference and CUDA entry point share it). */
void agoq_adamw_bias_corr(const agoq_adamw_hp *hp, float *bc1, float *bc2);
/* Sum of squares in double, in index order (reference of agoq_sumsq_cuda). */
double agoq_sumsq_ref(const float *x, size_t n);
int agoq_adamw_cuda(const agoq_adamw_hp *hp, float *p, const float *g, float *m, float *v, uint16_t *w, size_t n,
                    void *stream);
/* Sum of squares of n fp32 values into *out (device fp32, overwritten), for gradient norms.
 * Deterministic (fixed grid, fixed reduction order), accumulated in double, rounded once.
 * Uses a static device scratch: calls must not run concurrently on different streams. */
int agoq_sumsq_cuda(const float *x, size_t n, float *out, void *stream);

#ifdef __cplusplus
}
#endif
#endif
