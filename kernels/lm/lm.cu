/* CUDA embedding gather / scatter-add and fused softmax cross-entropy (lm.h).
 * embed_bwd: one thread per (vocabulary row, column) walks the tokens in order and adds the rows
 * of its token: no atomics, so the sum order is the reference's (bit-exact). O(V T h) token
 * compares, fine at the trainer's vocabulary of 256 (a sort by token would be the next step).
 * xent: one warp per row; lane j-strided max and exp-sum, xor-shuffle reductions. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/lm/lm.h"
#include "kernels/quant/quant_math.h"

__global__ void embed_fwd_kernel(const uint16_t *wte, const int *tok, int T, int h, uint16_t *out) {
    const size_t n = (size_t)T * h;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t t = i / (size_t)h, c = i % (size_t)h;
        out[i] = wte[(size_t)tok[t] * h + c];
    }
}

__global__ void embed_bwd_kernel(const uint16_t *dx, const int *tok, int T, int h, int V, float *dwte) {
    const size_t n = (size_t)V * h;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const int v = (int)(i / (size_t)h), c = (int)(i % (size_t)h);
        float acc = dwte[i];
        for (int t = 0; t < T; t++)
            if (tok[t] == v) acc += agoq_bf16_to_f32(dx[(size_t)t * h + c]);
        dwte[i] = acc;
    }
}

__global__ void xent_kernel(const uint16_t *logits, const int *tgt, int T, int V, float dscale, float *loss,
                            uint16_t *dlogits) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= T) return;
    const uint16_t *x = logits + (size_t)row * V;
    float m = -INFINITY, s = 0.0f;
    for (int j = lane; j < V; j += 32) m = fmaxf(m, agoq_bf16_to_f32(x[j]));
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    for (int j = lane; j < V; j += 32) s += expf(agoq_bf16_to_f32(x[j]) - m);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const int y = tgt[row];
    if (lane == 0) loss[row] = logf(s) + m - agoq_bf16_to_f32(x[y]);
    if (!dlogits) return;
    for (int j = lane; j < V; j += 32) {
        const float p = expf(agoq_bf16_to_f32(x[j]) - m) / s;
        dlogits[(size_t)row * V + j] = agoq_f32_to_bf16((p - (j == y ? 1.0f : 0.0f)) * dscale);
    }
}

static unsigned grid_for(size_t n) {
    const size_t g = (n + 255) / 256;
    return (unsigned)(g < 132 * 16 ? (g ? g : 1) : 132 * 16);
}

static int bad_shape(const char *what, int T, int h) {
    if (T >= 1 && h >= 1) return 0;
    agoq_error("%s: rows %d and width %d must be >= 1", what, T, h);
    return -1;
}

int agoq_embed_fwd_cuda(const uint16_t *wte, const int *tok, int T, int h, uint16_t *out, void *stream) {
    if (bad_shape("embed_fwd", T, h)) return -1;
    embed_fwd_kernel<<<grid_for((size_t)T * h), 256, 0, (cudaStream_t)stream>>>(wte, tok, T, h, out);
    cudaCheckLaunch();
    return 0;
}

int agoq_embed_bwd_cuda(const uint16_t *dx, const int *tok, int T, int h, int V, float *dwte, void *stream) {
    if (bad_shape("embed_bwd", T, h) || bad_shape("embed_bwd", V, h)) return -1;
    embed_bwd_kernel<<<grid_for((size_t)V * h), 256, 0, (cudaStream_t)stream>>>(dx, tok, T, h, V, dwte);
    cudaCheckLaunch();
    return 0;
}

int agoq_xent_cuda(const uint16_t *logits, const int *tgt, int T, int V, float dscale, float *loss, uint16_t *dlogits,
                   void *stream) {
    if (bad_shape("xent", T, V)) return -1;
    const int warps = 8;
    xent_kernel<<<(unsigned)((T + warps - 1) / warps), 32 * warps, 0, (cudaStream_t)stream>>>(logits, tgt, T, V, dscale,
                                                                                             loss, dlogits);
    cudaCheckLaunch();
    return 0;
}
