/* Rotary position embedding (LLaMA / Hugging Face "rotate half" convention), in place on the q
 * and k parts of a packed QKV buffer [tokens, (heads + 2 kv_heads) d] bf16 (v is untouched).
 * Token t has position t % seq. For pair i < d/2 of a head: theta = pos * base^(-2i/d),
 *   x1' = x1 cos(theta) - x2 sin(theta),  x2' = x2 cos(theta) + x1 sin(theta)
 * with x1 = x[i], x2 = x[i + d/2]. inverse = 1 rotates by -theta: the backward of the rotation
 * (applied to dq, dk of a packed dQKV buffer). cos/sin are computed in fp32 from an fp32 theta
 * (as HF computes inv_freq in fp32); results rounded to bf16 (RNE).
 * In fp32: inv_freq_i = 1 / powf(base, 2i / d), theta = (float)pos * inv_freq_i, c = cosf(theta),
 * s = sinf(theta), x1' = x1 c - x2 s (no FMA in the reference). head_dim must be even.
 * Reference rope_ref.c; CUDA rope.cu (device pointer, cudaStream_t as void *; returns 0, or -1
 * after printing one line for a bad argument; tested within the bound stated in its test). */
#ifndef AGOQ_ROPE_H
#define AGOQ_ROPE_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void agoq_rope_ref(uint16_t *qkv, int tokens, int seq, int heads, int kv_heads, int head_dim, float base,
                   int inverse);
int agoq_rope_cuda(uint16_t *qkv, int tokens, int seq, int heads, int kv_heads, int head_dim, float base,
                   int inverse, void *stream);

#ifdef __cplusplus
}
#endif
#endif
