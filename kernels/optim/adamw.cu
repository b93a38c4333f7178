/* CUDA AdamW step and sum of squares (adamw.h). AdamW: one thread per element (grid-stride,
 * coalesced fp32 loads), the reference's fp32 operations in its order; the Makefile builds .cu
 * files with --fmad=false --prec-div=true --prec-sqrt=true, the element update is
 * adamw_dev.cuh's (shared with adamw_q.cu), and bc1/bc2 come from the host function the
 * reference uses, so the result is expected bit-identical to adamw_ref.c (the test allows a few
 * ulps, as the header promises). Sum of squares: a fixed grid of at most 1024
 * blocks (a function of n only), double accumulation per thread over a grid-stride loop, a fixed
 * shared-memory tree per block, partials in a static device buffer, then one block reduces
 * them in the same tree: deterministic run to run. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "kernels/optim/adamw.h"
#include "kernels/optim/adamw_dev.cuh"
#include "kernels/quant/quant_math.h"

namespace {
constexpr int kThreads = 256, kMaxBlocks = 1024;
__device__ double g_partials[kMaxBlocks];

__global__ void adamw_kernel(float *__restrict__ p, const float *__restrict__ g, float *__restrict__ m,
                             float *__restrict__ v, uint16_t *__restrict__ w, size_t n, agoq_adamw_dev_hp h) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float pi = p[i], mi = m[i], vi = v[i];
        agoq_adamw_elem(h, g[i], pi, mi, vi);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
        if (w) w[i] = agoq_f32_to_bf16(pi);
    }
}

/* Fixed-order tree over kThreads values in shared memory; returns the sum in thread 0. */
__device__ double block_sum(double x, double *sh) {
    sh[threadIdx.x] = x;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    return sh[0];
}

__global__ void sumsq_partial_kernel(const float *__restrict__ x, size_t n) {
    __shared__ double sh[kThreads];
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    double acc = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        acc += (double)x[i] * (double)x[i];
    const double s = block_sum(acc, sh);
    if (threadIdx.x == 0) g_partials[blockIdx.x] = s;
}

__global__ void sumsq_final_kernel(int nblocks, float *out) {
    __shared__ double sh[kThreads];
    double acc = 0.0;
    for (int i = threadIdx.x; i < nblocks; i += kThreads) acc += g_partials[i];
    const double s = block_sum(acc, sh);
    if (threadIdx.x == 0) *out = (float)s;
}
} // namespace

extern "C" int agoq_adamw_cuda(const agoq_adamw_hp *hp, float *p, const float *g, float *m, float *v, uint16_t *w,
                               size_t n, void *stream) {
    if (!hp || hp->step < 1 || (n && (!p || !g || !m || !v))) {
        fprintf(stderr, "agoq_adamw_cuda: bad argument (hp %p, step %d (1-based), p %p g %p m %p v %p, n %zu)\n",
                (const void *)hp, hp ? hp->step : -1, (void *)p, (const void *)g, (void *)m, (void *)v, n);
        return -1;
    }
    if (n == 0) return 0;
    size_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 132 * 16) blocks = 132 * 16;
    adamw_kernel<<<(unsigned)blocks, kThreads, 0, (cudaStream_t)stream>>>(p, g, m, v, w, n, agoq_adamw_dev_hp_make(hp));
    cudaCheckLaunch();
    return 0;
}

extern "C" int agoq_sumsq_cuda(const float *x, size_t n, float *out, void *stream) {
    if (!out || (n && !x)) {
        fprintf(stderr, "agoq_sumsq_cuda: bad argument (x %p, n %zu, out %p)\n", (const void *)x, n, (void *)out);
        return -1;
    }
    cudaStream_t s = (cudaStream_t)stream;
    size_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    if (blocks < 1) blocks = 1;
    sumsq_partial_kernel<<<(unsigned)blocks, kThreads, 0, s>>>(x, n);
    cudaCheckLaunch();
    sumsq_final_kernel<<<1, kThreads, 0, s>>>((int)blocks, out);
    cudaCheckLaunch();
    return 0;
}
