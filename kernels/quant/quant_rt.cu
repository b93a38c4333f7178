/* The small runtime wrappers C callers use (quant_cuda.h): device memory, copies, memset,
 * stream sync, the benchmark arena, and the benchmarks' normal fills. Moved out of quant.cu.
 *
 * The benchmark arena (issue 15, ninth session). On the H200 the same streaming kernel ran
 * 0.786 or 0.876 ms (2 GiB written, 1 GiB read) depending only on where its buffers were
 * allocated: after a freed 4 GiB temporary it was slow every time, a fresh cudaMalloc was slow
 * in 2 of 4 cases of one run (same virtual address, other physical pages; fast in 8 of 8 in an
 * earlier run), and fresh buffers at 13 offsets of one pool and after 0-9 spacer allocations were
 * all fast (tools/alloc_order.cu; the pool and spacer probe: results/h200/logs/s9_alloc/). `agoq
 * kernels` allocated each case's buffers after freeing the previous case's and its own
 * temporaries, so one kernel's copy ratio moved by up to 0.10 with the cases run before it.
 * While the arena is open, agoq_cuda_malloc carves pieces out of one allocation made at the
 * start of the run (the copy reference's buffers too) and the harness resets it before every
 * case: every case, and the copy it is compared with, sees the same memory in the same layout.
 * One allocation can still land on slow pages in some run: the arena removes the dependence on
 * the order of the cases, not on the machine. */
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "core/check.h"
#include "core/common.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_launch.cuh"

static struct {
    char *base;
    size_t cap, used, fallbacks;
} g_arena;

int agoq_cuda_arena_open(size_t bytes, size_t reserve) {
    agoq_cuda_arena_close();
    size_t free_b = 0, total_b = 0;
    cudaCheck(cudaMemGetInfo(&free_b, &total_b));
    if (free_b <= reserve) return -1;
    if (bytes > free_b - reserve) bytes = free_b - reserve;
    bytes &= ~(((size_t)2 << 20) - 1); /* whole 2 MiB pages */
    if (bytes == 0) return -1;
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* the run goes on with plain cudaMalloc */
        return -1;
    }
    g_arena.base = (char *)p;
    g_arena.cap = bytes;
    g_arena.used = g_arena.fallbacks = 0;
    return 0;
}
size_t agoq_cuda_arena_bytes(void) { return g_arena.base ? g_arena.cap : 0; }
void agoq_cuda_arena_reset(void) {
    g_arena.used = 0;
    g_arena.fallbacks = 0;
}
size_t agoq_cuda_arena_fallbacks(void) { return g_arena.fallbacks; }
void agoq_cuda_arena_close(void) {
    if (g_arena.base) cudaCheck(cudaFree(g_arena.base));
    g_arena.base = NULL;
    g_arena.cap = g_arena.used = g_arena.fallbacks = 0;
}
static int in_arena(const void *p) {
    return g_arena.base && (const char *)p >= g_arena.base && (const char *)p < g_arena.base + g_arena.cap;
}

void *agoq_cuda_malloc(size_t bytes) {
    void *p = NULL;
    if (!bytes) return NULL;
    if (g_arena.base) {
        /* as cudaMalloc places them: large buffers on 2 MiB pages, the rest 256-byte aligned */
        const size_t align = bytes >= ((size_t)2 << 20) ? (size_t)2 << 20 : 256;
        const size_t off = (g_arena.used + align - 1) & ~(align - 1);
        if (off <= g_arena.cap && bytes <= g_arena.cap - off) {
            g_arena.used = off + bytes;
            return g_arena.base + off;
        }
        g_arena.fallbacks++;
    }
    cudaCheck(cudaMalloc(&p, bytes));
    return p;
}
void agoq_cuda_free(void *p) {
    if (p && !in_arena(p)) cudaCheck(cudaFree(p));
}
void agoq_cuda_h2d(void *dst, const void *src, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void agoq_cuda_d2h(void *dst, const void *src, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void agoq_cuda_memset(void *p, int byte, size_t bytes, void *stream) {
    if (bytes) cudaCheck(cudaMemsetAsync(p, byte, bytes, (cudaStream_t)stream));
}
void agoq_cuda_sync(void *stream) { cudaCheck(cudaStreamSynchronize((cudaStream_t)stream)); }

/* Box-Muller over two counter-hash uniforms per element (benchmark data, not bit-exact). */
__device__ __forceinline__ float fill_normal(uint64_t seed, size_t i) {
    float u1 = agoq_u01(seed, 2 * (uint64_t)i) + 5.9604645e-08f, u2 = agoq_u01(seed, 2 * (uint64_t)i + 1);
    return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}
template <typename T>
__global__ void fill_normal_kernel(T *x, size_t n, uint64_t seed) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = fill_normal(seed, i);
        if constexpr (std::is_same<T, float>::value) x[i] = v;
        else x[i] = agoq_f32_to_bf16(v);
    }
}
void agoq_cuda_fill_normal_f32(float *x, size_t n, uint64_t seed, void *stream) {
    if (!n) return;
    fill_normal_kernel<<<agoq_grid_for(n), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(x, n, seed);
    cudaCheckLaunch();
}
void agoq_cuda_fill_normal_bf16(uint16_t *x, size_t n, uint64_t seed, void *stream) {
    if (!n) return;
    fill_normal_kernel<<<agoq_grid_for(n), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(x, n, seed);
    cudaCheckLaunch();
}
