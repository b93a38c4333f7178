/* Host reference of RoPE on packed QKV (rope.h): the fp32 expressions written there, no FMA
 * (-ffp-contract=off), results rounded to bf16 half to even. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/quant/quant_math.h"
#include "kernels/rope/rope.h"

void agoq_rope_ref(uint16_t *qkv, int tokens, int seq, int heads, int kv_heads, int head_dim, float base,
                   int inverse) {
    if (tokens < 0 || seq < 1 || heads < 0 || kv_heads < 0 || head_dim < 2 || head_dim % 2) {
        fprintf(stderr, "agoq_rope_ref: bad shape (tokens %d, seq %d, heads %d, kv_heads %d, head_dim %d)\n", tokens,
                seq, heads, kv_heads, head_dim);
        abort();
    }
    const int half = head_dim / 2, rot_heads = heads + kv_heads;
    const size_t row = (size_t)(heads + 2 * kv_heads) * (size_t)head_dim;
    for (int t = 0; t < tokens; t++) {
        const float pos = (float)(t % seq);
        for (int i = 0; i < half; i++) {
            const float inv_freq = 1.0f / powf(base, (float)(2 * i) / (float)head_dim);
            const float theta = pos * inv_freq, c = cosf(theta), s = inverse ? -sinf(theta) : sinf(theta);
            for (int h = 0; h < rot_heads; h++) {
                uint16_t *x = qkv + (size_t)t * row + (size_t)h * (size_t)head_dim;
                const float x1 = agoq_bf16_to_f32(x[i]), x2 = agoq_bf16_to_f32(x[i + half]);
                x[i] = agoq_f32_to_bf16(x1 * c - x2 * s);
                x[i + half] = agoq_f32_to_bf16(x2 * c + x1 * s);
            }
        }
    }
}
