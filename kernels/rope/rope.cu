/* CUDA RoPE on packed QKV (rope.h). One thread per (token, pair i): cos/sin of its angle once,
 * applied to pair i of every q and k head of the token (consecutive threads read consecutive
 * bf16 of a head: coalesced). inv_freq comes from the host (the reference's powf, passed as a
 * kernel parameter), so theta is bit-identical to the reference; the device cosf/sinf (<= 2 fp32
 * ulps, full range reduction: no fast-math) differ from the host's by ulps, hence the test's
 * bound (tests/cuda/test_rope.c). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "kernels/quant/quant_math.h"
#include "kernels/rope/rope.h"

namespace {
constexpr int kMaxHalf = 256; /* head_dim <= 512 */

struct InvFreq {
    float v[kMaxHalf];
};

__global__ void rope_kernel(uint16_t *__restrict__ qkv, size_t pairs, int seq, int rot_heads, int half, size_t row,
                            InvFreq f, int inverse) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < pairs; idx += stride) {
        const size_t t = idx / (size_t)half;
        const int i = (int)(idx % (size_t)half);
        const float theta = (float)(int)(t % (size_t)seq) * f.v[i];
        const float c = cosf(theta), s = inverse ? -sinf(theta) : sinf(theta);
        uint16_t *x = qkv + t * row + (size_t)i;
        for (int h = 0; h < rot_heads; h++, x += 2 * half) {
            const float x1 = agoq_bf16_to_f32(x[0]), x2 = agoq_bf16_to_f32(x[half]);
            x[0] = agoq_f32_to_bf16(x1 * c - x2 * s);
            x[half] = agoq_f32_to_bf16(x2 * c + x1 * s);
        }
    }
}
} // namespace

extern "C" int agoq_rope_cuda(uint16_t *qkv, int tokens, int seq, int heads, int kv_heads, int head_dim, float base,
                              int inverse, void *stream) {
    if (!qkv || tokens < 0 || seq < 1 || heads < 0 || kv_heads < 0 || head_dim < 2 || head_dim % 2 ||
        head_dim > 2 * kMaxHalf || !(base > 0.0f)) {
        fprintf(stderr, "agoq_rope_cuda: bad argument (qkv %p, tokens %d, seq %d, heads %d, kv_heads %d, head_dim %d "
                        "(even, <= %d), base %g)\n", (void *)qkv, tokens, seq, heads, kv_heads, head_dim,
                2 * kMaxHalf, (double)base);
        return -1;
    }
    const int half = head_dim / 2;
    const size_t pairs = (size_t)tokens * (size_t)half;
    if (pairs == 0 || heads + kv_heads == 0) return 0;
    InvFreq f;
    for (int i = 0; i < half; i++) f.v[i] = 1.0f / powf(base, (float)(2 * i) / (float)head_dim);
    const int threads = 256;
    size_t blocks = (pairs + threads - 1) / threads;
    if (blocks > 132 * 16) blocks = 132 * 16; /* grid-stride beyond what stays resident */
    rope_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
        qkv, pairs, seq, heads + kv_heads, half, (size_t)(heads + 2 * kv_heads) * (size_t)head_dim, f, inverse);
    cudaCheckLaunch();
    return 0;
}
