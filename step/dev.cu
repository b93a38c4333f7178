/* Device helpers of the step engine (dev.h): memory-bound glue kernels, grid-stride loops,
 * and thin runtime wrappers. The math is elementwise and exact up to the stated rounding
 * (bf16 round to nearest even of the fp32 sum). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <string.h>

#include "core/check.h"
#include "step/dev.h"

static unsigned grid_for(size_t n) {
    size_t g = (n + 255) / 256;
    return (unsigned)(g < 132 * 16 ? (g ? g : 1) : 132 * 16);
}

__device__ __forceinline__ float bf2f(uint16_t v) { return __uint_as_float((uint32_t)v << 16); }
__device__ __forceinline__ uint16_t f2bf(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__global__ void add_bf16_kernel(uint16_t *y, const uint16_t *a, const uint16_t *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = f2bf(bf2f(a[i]) + bf2f(b[i]));
}
/* 8 bf16 per thread when everything is 16-byte aligned */
__global__ void add_bf16x8_kernel(uint4 *y, const uint4 *a, const uint4 *b, size_t n8) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n8; i += (size_t)gridDim.x * blockDim.x) {
        uint4 va = a[i], vb = b[i], r;
        const uint32_t *pa = &va.x, *pb = &vb.x;
        uint32_t *pr = &r.x;
        for (int j = 0; j < 4; j++) {
            float lo = bf2f((uint16_t)(pa[j] & 0xffff)) + bf2f((uint16_t)(pb[j] & 0xffff));
            float hi = bf2f((uint16_t)(pa[j] >> 16)) + bf2f((uint16_t)(pb[j] >> 16));
            pr[j] = (uint32_t)f2bf(lo) | ((uint32_t)f2bf(hi) << 16);
        }
        y[i] = r;
    }
}
__global__ void add_f32_kernel(float *y, const float *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}
__global__ void cast_bf16_kernel(uint16_t *y, const float *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = f2bf(x[i]);
}
__global__ void fill_f32_kernel(float *x, size_t n, float v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = v;
}
/* splitmix64 of (seed, i) -> two uniforms -> Box-Muller */
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
__device__ __forceinline__ float randn_at(uint64_t seed, size_t i) {
    uint64_t r = mix64(seed * 0x632be59bd9b4e019ULL + (uint64_t)i);
    float u1 = ((float)(r >> 40) + 0.5f) * (1.0f / 16777216.0f);
    float u2 = (float)((r >> 16) & 0xffffff) * (1.0f / 16777216.0f);
    return sqrtf(-2.0f * __logf(u1)) * __cosf(6.2831853f * u2);
}
__global__ void randn_f32_kernel(float *x, size_t n, uint64_t seed, float std) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = std * randn_at(seed, i);
}
__global__ void randn_bf16_kernel(uint16_t *x, size_t n, uint64_t seed, float std) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = f2bf(std * randn_at(seed, i));
}

static bool al16(const void *p) { return ((uintptr_t)p & 15) == 0; }

extern "C" int step_dev_add_bf16(uint16_t *y, const uint16_t *a, const uint16_t *b, size_t n, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    if (n % 8 == 0 && al16(y) && al16(a) && al16(b))
        add_bf16x8_kernel<<<grid_for(n / 8), 256, 0, s>>>((uint4 *)y, (const uint4 *)a, (const uint4 *)b, n / 8);
    else
        add_bf16_kernel<<<grid_for(n), 256, 0, s>>>(y, a, b, n);
    cudaCheckLaunch();
    return 0;
}
extern "C" int step_dev_add_f32(float *y, const float *x, size_t n, void *stream) {
    add_f32_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(y, x, n);
    cudaCheckLaunch();
    return 0;
}
extern "C" int step_dev_cast_bf16(uint16_t *y, const float *x, size_t n, void *stream) {
    cast_bf16_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(y, x, n);
    cudaCheckLaunch();
    return 0;
}
extern "C" int step_dev_fill_f32(float *x, size_t n, float value, void *stream) {
    fill_f32_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(x, n, value);
    cudaCheckLaunch();
    return 0;
}
extern "C" int step_dev_randn_f32(float *x, size_t n, uint64_t seed, float std, void *stream) {
    randn_f32_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(x, n, seed, std);
    cudaCheckLaunch();
    return 0;
}
extern "C" int step_dev_randn_bf16(uint16_t *x, size_t n, uint64_t seed, float std, void *stream) {
    randn_bf16_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(x, n, seed, std);
    cudaCheckLaunch();
    return 0;
}

extern "C" void *step_dev_malloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        agoq_error("step: cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}
extern "C" void step_dev_free(void *p) {
    if (p) cudaCheck(cudaFree(p));
}
extern "C" void *step_dev_host_alloc(size_t bytes) {
    void *p = NULL;
    const cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        agoq_error("step: cannot pin %zu bytes of host memory: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}
extern "C" void step_dev_host_free(void *p) {
    if (p) cudaCheck(cudaFreeHost(p));
}
extern "C" void step_dev_memset(void *p, size_t bytes, void *stream) {
    cudaCheck(cudaMemsetAsync(p, 0, bytes, (cudaStream_t)stream));
}
extern "C" void step_dev_d2h(void *dst, const void *src, size_t bytes) {
    cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
/* A pageable host -> device cudaMemcpy may return once the bytes are staged, before the DMA to
 * dst has landed, and only the legacy stream is ordered after it: the engine's kernels run on
 * a non-blocking stream and would read dst half written (the trainer's one-step gradients
 * against the CPU differed by 5-60% at random, weights and token ids read stale). So wait for
 * the device before returning. */
extern "C" void step_dev_h2d(void *dst, const void *src, size_t bytes) {
    cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    cudaCheck(cudaDeviceSynchronize());
}
extern "C" void step_dev_sync(void) { cudaCheck(cudaDeviceSynchronize()); }
extern "C" void step_dev_meminfo(size_t *free_bytes, size_t *total_bytes) {
    cudaCheck(cudaMemGetInfo(free_bytes, total_bytes));
}
extern "C" void *step_dev_stream_create(void) {
    cudaStream_t s;
    cudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return (void *)s;
}
extern "C" void step_dev_stream_destroy(void *s) {
    if (s) cudaCheck(cudaStreamDestroy((cudaStream_t)s));
}
extern "C" void *step_dev_event_create(void) {
    cudaEvent_t e;
    cudaCheck(cudaEventCreate(&e));
    return (void *)e;
}
extern "C" void step_dev_event_record(void *ev, void *stream) {
    cudaCheck(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream));
}
extern "C" float step_dev_event_ms(void *start, void *stop) {
    float ms = 0.0f;
    cudaCheck(cudaEventSynchronize((cudaEvent_t)stop));
    cudaCheck(cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)stop));
    return ms;
}
extern "C" void step_dev_event_destroy(void *ev) {
    if (ev) cudaCheck(cudaEventDestroy((cudaEvent_t)ev));
}
