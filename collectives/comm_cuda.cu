/* The GPU communicators' shared part; see comm_cuda.h. The quantizers themselves are k1's
 * (kernels/quant/quant_cuda.h, kernels/grad8/grad8_cuda.h); the elementwise kernels below use
 * wire.h's element access, the cpu backend's, so encode / decode give its bits. */
#include "collectives/comm_cuda.h"

#include <stdlib.h>
#include <string.h>

#include "collectives/watchdog.h"
#include "collectives/wire.h"
#include "core/check.h"
#include "core/common.h"
#include "kernels/grad8/grad8_cuda.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_math.h"

void agoq_cuda_on(agoq_comm *c, int lr) { cudaCheck(cudaSetDevice(agoq_cuda_st(c)->dev[lr])); }
static cudaStream_t stream_of(agoq_comm *c, int lr) { return agoq_cuda_st(c)->stream[lr]; }

unsigned agoq_cuda_grid(size_t n) {
    size_t g = (n + 255) / 256;
    return (unsigned)(g < 1 ? 1 : g > 4096 ? 4096 : g);
}

/* ---- elementwise kernels ---- */
__global__ void k_add(float *acc, const float *x, size_t n, int bf16) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float s = acc[i] + x[i]; /* agoq_sum_step of grad8.h */
        acc[i] = bf16 ? agoq_round_bf16(s) : s;
    }
}

__global__ void k_encode(agoq_dtype dt, const float *x, size_t n, float mul, void *out) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        agoq_dt_store(dt, out, i, x[i] * mul);
}

__global__ void k_decode(agoq_dtype dt, const void *in, size_t n, float mul, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = agoq_dt_load(dt, in, i) * mul;
}

/* |x| of finite elements; non-negative floats order like their bit patterns, so atomicMax on
 * the bits is a float max. */
__global__ void k_absmax(const float *x, size_t n, unsigned int *out) {
    float m = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (agoq_isfinite(x[i])) m = fmaxf(m, fabsf(x[i]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) atomicMax(out, __float_as_uint(m));
}

static agoq_cuda_qtensor packed_view(const agoq_qconfig *q, const void *packed, size_t count) {
    agoq_qtensor h = agoq_packed_view(q, packed, count);
    agoq_cuda_qtensor t = {h.codes, h.scales, h.zeros, h.n};
    return t;
}

/* ---- bounded waits: a failed or hung communicator is aborted, not waited on forever ---- */
typedef struct {
    agoq_comm *c;
    int only; /* -1: every local rank; else the one local rank waited on */
} wait_ctx;

static agoq_rank_state poll_rank(void *ctx, int i, const char **why) {
    wait_ctx *w = (wait_ctx *)ctx;
    agoq_cuda_ranks *s = agoq_cuda_st(w->c);
    const int lr = w->only >= 0 ? w->only : i;
    const char *async = s->async_error ? s->async_error(w->c, lr) : NULL;
    if (async) {
        *why = async;
        return AGOQ_RANK_FAILED;
    }
    cudaSetDevice(s->dev[lr]);
    cudaError_t e = cudaStreamQuery(s->stream[lr]);
    if (e == cudaErrorNotReady) return AGOQ_RANK_PENDING;
    if (e != cudaSuccess) {
        *why = cudaGetErrorString(e);
        return AGOQ_RANK_FAILED;
    }
    return AGOQ_RANK_DONE;
}

static void abort_ranks(void *ctx) {
    agoq_comm *c = ((wait_ctx *)ctx)->c;
    if (agoq_cuda_st(c)->abort_all) agoq_cuda_st(c)->abort_all(c);
}

void agoq_cuda_wait(agoq_comm *c, int lr, const char *what) {
    wait_ctx ctx = {c, lr};
    agoq_comm_waiter w = {poll_rank, abort_ranks, &ctx};
    if (agoq_comm_wait(&w, c->backend, lr >= 0 ? 1 : c->nlocal, c->rank0 + (lr >= 0 ? lr : 0), agoq_comm_timeout_s(), what))
        exit(1);
}

void agoq_cuda_absmax(agoq_comm *c, int lr, const float *x, size_t count, int reset) {
    agoq_cuda_ranks *s = agoq_cuda_st(c);
    agoq_cuda_on(c, lr);
    if (reset) cudaCheck(cudaMemsetAsync(s->amax[lr], 0, sizeof(unsigned int), s->stream[lr]));
    k_absmax<<<agoq_cuda_grid(count), 256, 0, s->stream[lr]>>>(x, count, s->amax[lr]);
    cudaCheckLaunch();
}

float agoq_cuda_amax_value(agoq_comm *c, int lr) {
    unsigned int bits = 0;
    agoq_cuda_download(c, lr, &bits, agoq_cuda_st(c)->amax[lr], sizeof bits);
    float m;
    memcpy(&m, &bits, sizeof m);
    return m;
}

/* ---- memory: everything on the rank's own (non-blocking) stream, so that no legacy-stream
 * operation can race with the kernels and communication issued there ---- */
void agoq_cuda_upload(agoq_comm *c, int lr, void *dst, const void *host, size_t bytes) {
    agoq_cuda_on(c, lr);
    cudaCheck(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_of(c, lr)));
    agoq_cuda_wait(c, lr, "upload");
}
void agoq_cuda_download(agoq_comm *c, int lr, void *host, const void *src, size_t bytes) {
    agoq_cuda_on(c, lr);
    cudaCheck(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_of(c, lr)));
    agoq_cuda_wait(c, lr, "download");
}
void agoq_cuda_copy(agoq_comm *c, int lr, void *dst, const void *src, size_t bytes) {
    agoq_cuda_on(c, lr);
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(c, lr)));
}
void agoq_cuda_zero(agoq_comm *c, int lr, void *dst, size_t bytes) {
    agoq_cuda_on(c, lr);
    cudaCheck(cudaMemsetAsync(dst, 0, bytes, stream_of(c, lr)));
}
void agoq_cuda_sync(agoq_comm *c) { agoq_cuda_wait(c, -1, "sync"); }

/* ---- compute ---- */
static void must(agoq_comm *c, int rc, const char *what) {
    if (rc) agoq_die("collectives %s: %s failed (see above)", c->backend, what);
}

void agoq_cuda_quantize(agoq_comm *c, int lr, const agoq_qconfig *q, const float *x, size_t count, void *packed) {
    agoq_cuda_qtensor t = packed_view(q, packed, count);
    agoq_cuda_on(c, lr);
    must(c, agoq_cuda_quantize_f32(q, x, count, &t, stream_of(c, lr)), "agoq_cuda_quantize_f32");
}

void agoq_cuda_dequantize(agoq_comm *c, int lr, const agoq_qconfig *q, const void *packed, size_t count, float *y) {
    agoq_cuda_qtensor t = packed_view(q, packed, count);
    agoq_cuda_on(c, lr);
    must(c, agoq_cuda_dequantize_f32(q, &t, y, stream_of(c, lr)), "agoq_cuda_dequantize_f32");
}

void agoq_cuda_reduce(agoq_comm *c, int lr, const agoq_qconfig *q, const void *in, size_t stride, int nin,
                      size_t count, agoq_sum_precision p, void *out) {
    agoq_cuda_qtensor views[AGOQ_CUDA_MAX_CHUNKS];
    if (nin > AGOQ_CUDA_MAX_CHUNKS) agoq_die("collectives %s: %d chunks > AGOQ_CUDA_MAX_CHUNKS", c->backend, nin);
    for (int k = 0; k < nin; k++) views[k] = packed_view(q, (const char *)in + (size_t)k * stride, count);
    agoq_cuda_qtensor o = packed_view(q, out, count);
    agoq_cuda_on(c, lr);
    must(c, agoq_cuda_grad_reduce(q, views, nin, p, &o, NULL, stream_of(c, lr)), "agoq_cuda_grad_reduce");
}

void agoq_cuda_add(agoq_comm *c, int lr, float *acc, const float *x, size_t count, agoq_sum_precision p) {
    agoq_cuda_on(c, lr);
    k_add<<<agoq_cuda_grid(count), 256, 0, stream_of(c, lr)>>>(acc, x, count, p == AGOQ_SUM_BF16);
    cudaCheckLaunch();
}

void agoq_cuda_encode(agoq_comm *c, int lr, agoq_dtype dt, const float *x, size_t count, float mul, void *out) {
    agoq_cuda_on(c, lr);
    k_encode<<<agoq_cuda_grid(count), 256, 0, stream_of(c, lr)>>>(dt, x, count, mul, out);
    cudaCheckLaunch();
}

void agoq_cuda_decode(agoq_comm *c, int lr, agoq_dtype dt, const void *in, size_t count, float mul, float *y) {
    agoq_cuda_on(c, lr);
    k_decode<<<agoq_cuda_grid(count), 256, 0, stream_of(c, lr)>>>(dt, in, count, mul, y);
    cudaCheckLaunch();
}
