/* Timing of the cuDNN attention (attn_cudnn.cu) at one shape: random bf16 inputs in contiguous
 * layouts ([tokens, heads*d] for q/o/dout, [tokens, kv_heads*d] for k/v), 3 warm-up calls, then
 * iters calls of forward and of backward, each bracketed by CUDA events; reports min and median.
 * Attention is compute bound (O(s^2 d) work on O(s d) bytes), so no L2 scrub.
 * FLOPs: forward 2 matmuls of 2*b*h*s*s*d, halved when causal; backward 2.5x forward
 * (5 matmuls, the convention of FlashAttention and cuDNN's benchmarks). */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/attn/attn.h"

#if AGOQ_HAVE_CUDNN
#include <cuda_runtime.h>

#include "core/check.h"

/* x[i] = bf16 of a hashed uniform value in [-1, 1). */
__global__ static void fill_bf16(uint16_t *x, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        const float f = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
        x[i] = (uint16_t)(__float_as_uint(f) >> 16);
    }
}

static int cmp_f(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Times iters calls of fwd (which = 0) or bwd (1); fills min and median ms. */
static int time_calls(agoq_attn *a, int which, int iters, uint16_t *q, uint16_t *k, uint16_t *v, uint16_t *o,
                      uint16_t *dout, float *lse, uint16_t *dq, uint16_t *dk, uint16_t *dv, void *ws, double *min_ms,
                      double *med_ms) {
    cudaEvent_t *ev = (cudaEvent_t *)malloc((size_t)(iters + 1) * sizeof(cudaEvent_t));
    float *ms = (float *)malloc((size_t)iters * sizeof(float));
    for (int i = 0; i <= iters; i++) cudaCheck(cudaEventCreate(&ev[i]));
    int rc = 0;
    for (int i = 0; i < 3 + iters && rc == 0; i++) {
        if (i >= 3) cudaCheck(cudaEventRecord(ev[i - 3], 0));
        rc = which == 0 ? agoq_attn_fwd(a, q, k, v, o, lse, ws, NULL)
                        : agoq_attn_bwd(a, q, k, v, o, dout, lse, dq, dk, dv, ws, NULL);
    }
    cudaCheck(cudaEventRecord(ev[iters], 0));
    cudaCheck(cudaEventSynchronize(ev[iters]));
    cudaCheck(cudaGetLastError());
    for (int i = 0; i < iters && rc == 0; i++) cudaCheck(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
    if (rc == 0) {
        qsort(ms, (size_t)iters, sizeof(float), cmp_f);
        *min_ms = ms[0];
        *med_ms = ms[iters / 2];
    }
    for (int i = 0; i <= iters; i++) cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    return rc;
}

int agoq_attn_bench(const agoq_attn_desc *d0, int iters, agoq_attn_timing *t) {
    agoq_attn_desc d = *d0;
    d.q_row = d.o_row = (int64_t)d.heads * d.head_dim;
    d.kv_row = (int64_t)d.kv_heads * d.head_dim;
    agoq_attn *a = NULL;
    const double t0 = agoq_now_s();
    if (iters < 1 || agoq_attn_create(&d, &a) != 0) return -1;
    t->create_ms = 1e3 * (agoq_now_s() - t0);
    const size_t tok = (size_t)d.b * d.s, nq = tok * d.q_row, nk = tok * d.kv_row;
    uint16_t *q, *k, *v, *o, *dout, *dq, *dk, *dv;
    float *lse;
    void *ws = NULL;
    cudaCheck(cudaMalloc(&q, nq * 2));
    cudaCheck(cudaMalloc(&k, nk * 2));
    cudaCheck(cudaMalloc(&v, nk * 2));
    cudaCheck(cudaMalloc(&o, nq * 2));
    cudaCheck(cudaMalloc(&dout, nq * 2));
    cudaCheck(cudaMalloc(&dq, nq * 2));
    cudaCheck(cudaMalloc(&dk, nk * 2));
    cudaCheck(cudaMalloc(&dv, nk * 2));
    cudaCheck(cudaMalloc(&lse, (size_t)d.b * d.heads * d.s * sizeof(float)));
    if (agoq_attn_workspace_bytes(a)) cudaCheck(cudaMalloc(&ws, agoq_attn_workspace_bytes(a)));
    fill_bf16<<<1024, 256>>>(q, nq, 1u);
    fill_bf16<<<1024, 256>>>(k, nk, 2u);
    fill_bf16<<<1024, 256>>>(v, nk, 3u);
    fill_bf16<<<1024, 256>>>(dout, nq, 4u);
    cudaCheckLaunch();
    int rc = time_calls(a, 0, iters, q, k, v, o, dout, lse, dq, dk, dv, ws, &t->fwd_min_ms, &t->fwd_med_ms);
    if (rc == 0) rc = time_calls(a, 1, iters, q, k, v, o, dout, lse, dq, dk, dv, ws, &t->bwd_min_ms, &t->bwd_med_ms);
    const double full = 4.0 * d.b * d.heads * (double)d.s * d.s * d.head_dim;
    t->fwd_flop = d.causal ? full / 2 : full;
    t->bwd_flop = 2.5 * t->fwd_flop;
    t->workspace_bytes = agoq_attn_workspace_bytes(a);
    cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o); cudaFree(dout);
    cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(lse);
    if (ws) cudaFree(ws);
    agoq_attn_destroy(a);
    return rc;
}

#else
int agoq_attn_bench(const agoq_attn_desc *d, int iters, agoq_attn_timing *t) {
    (void)d; (void)iters; (void)t;
    fprintf(stderr, "agoq: attn: built without cuDNN (set CUDNN_HOME)\n");
    return -1;
}
#endif
