/* Streaming ceilings and allocation order on the GPU: a standalone probe (not part of the
 * build; the harness's benchmarks are `agoq kernels`). Build and run on the GPU machine:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -o alloc_order tools/alloc_order.cu && ./alloc_order
 * Prints, per size, the GB/s of cudaMemcpy device-to-device and each kernel's ratio to it:
 *  copy shapes: a resident grid-stride loop (what kernels/stream/bench_stream.cu times), a
 *    one-shot grid of small CTAs with U 16-byte vectors a thread, and TMA bulk copies
 *    (cp.async.bulk global -> shared -> global, one thread per CTA driving S stages);
 *  traffic mixes with the bytes of a dequantizer to bf16 (8 code bytes + a block scale read per
 *    16 bytes written) and of a quantizer from bf16 (16 bytes read, 4 code bytes + a scale
 *    written), as one-shot grids, without the decode / encode arithmetic;
 *  allocation order: the dequantizer mix into an output allocated the way bench_quant.cu did
 *    (a 4 GiB temporary freed just before) and into a fresh one, four times each.
 * Measured in the ninth session: results/h200/logs/s9_alloc/. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <functional>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));        \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

template <int U>
__global__ void grid_stride_copy(const uint4 *__restrict__ a, uint4 *__restrict__ b, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (i + u * stride < n) v[u] = __ldcs(a + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++)
            if (i + u * stride < n) __stcs(b + i + u * stride, v[u]);
    }
}
/* The U vectors of this thread in a one-shot grid (CTA b owns U * blockDim vectors from t0). */
template <int U>
__device__ __forceinline__ size_t oneshot_load(const uint4 *__restrict__ a, size_t n, uint4 (&v)[U]) {
    const size_t t0 = (size_t)blockIdx.x * U * blockDim.x;
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = t0 + u * blockDim.x + threadIdx.x;
        if (i < n) v[u] = a[i];
    }
    return t0;
}
template <int U>
__global__ void oneshot_copy(const uint4 *__restrict__ a, uint4 *__restrict__ b, size_t n) {
    uint4 v[U];
    const size_t t0 = oneshot_load<U>(a, n, v);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = t0 + u * blockDim.x + threadIdx.x;
        if (i < n) b[i] = v[u];
    }
}
__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
template <int S, int CH>
__global__ void bulk_copy(const char *__restrict__ a, char *__restrict__ b, size_t nbytes) {
    extern __shared__ __align__(128) char sm[];
    __shared__ __align__(8) uint64_t bar[S];
    if (threadIdx.x != 0) return;
    for (int s = 0; s < S; s++) asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_addr(&bar[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    const size_t nch = nbytes / CH, first = blockIdx.x, step = gridDim.x;
    const size_t cnt = first < nch ? (nch - first + step - 1) / step : 0;
    auto load = [&](size_t j) {
        const int s = (int)(j % S);
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(smem_addr(&bar[s])), "r"(CH) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         smem_addr(sm + s * CH)),
                     "l"(a + (first + j * step) * CH), "r"(CH), "r"(smem_addr(&bar[s]))
                     : "memory");
    };
    for (size_t j = 0; j < cnt && j < S; j++) load(j);
    for (size_t j = 0; j < cnt; j++) {
        const int s = (int)(j % S);
        asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra W; }" ::"r"(
                         smem_addr(&bar[s])),
                     "r"((uint32_t)(j / S) & 1u)
                     : "memory");
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(b + (first + j * step) * CH),
                     "r"(smem_addr(sm + s * CH)), "r"(CH)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        if (j >= 1 && j - 1 + S < cnt) {
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); /* stage of j - 1 read out */
            load(j - 1 + S);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
/* dequantizer traffic: 8 code bytes and the block scale (16 vectors a block) per 16 bytes out */
template <int U>
__global__ void deq_mix(const uint2 *__restrict__ codes, const float *__restrict__ sc, uint4 *__restrict__ y, size_t n) {
    const size_t t0 = (size_t)blockIdx.x * U * blockDim.x;
    uint2 c[U];
    float s[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = t0 + u * blockDim.x + threadIdx.x;
        if (i < n) c[u] = codes[i], s[u] = sc[i >> 4];
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = t0 + u * blockDim.x + threadIdx.x;
        const uint32_t k = __float_as_uint(s[u]);
        if (i < n) y[i] = make_uint4(c[u].x ^ k, c[u].y ^ k, c[u].x + k, c[u].y + k);
    }
}
/* quantizer traffic: 16 bytes in, 4 code bytes and a scale (one lane of 16) out */
template <int U>
__global__ void quant_mix(const uint4 *__restrict__ x, uint32_t *__restrict__ codes, float *__restrict__ sc, size_t n) {
    uint4 v[U];
    const size_t t0 = oneshot_load<U>(x, n, v);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = t0 + u * blockDim.x + threadIdx.x;
        const uint32_t w = v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        float m = __uint_as_float(w & 0x3fffffffu);
        for (int o = 1; o < 16; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (i < n) {
            codes[i] = w;
            if ((threadIdx.x & 15u) == 0) sc[i >> 4] = m;
        }
    }
}

static float median_ms(const std::function<void()> &f, int iters = 15) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    f();
    f();
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < iters; i++) {
        CK(cudaEventRecord(e0));
        f();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
static int resident(const void *k, int threads, size_t smem = 0) {
    int per_sm = 0, sms = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, threads, smem));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    return per_sm * sms;
}

static void shapes(size_t nb) {
    char *a, *b;
    float *sc;
    const size_t n = nb / 16;
    CK(cudaMalloc(&a, nb));
    CK(cudaMalloc(&b, nb));
    CK(cudaMalloc(&sc, n / 16 * 4 + 64));
    CK(cudaMemset(a, 1, nb));
    const float tm = median_ms([&] { CK(cudaMemcpyAsync(b, a, nb, cudaMemcpyDeviceToDevice)); });
    const double bw = 2.0 * nb / tm / 1e6;
    printf("size %zu MiB: cudaMemcpy %.3f ms, %.0f GB/s\n", nb >> 20, tm, bw);
    auto rep = [&](const char *name, double bytes, const std::function<void()> &f) {
        CK(cudaMemset(b, 0, nb));
        f();
        CK(cudaDeviceSynchronize());
        const float t = median_ms(f);
        printf("  %-36s %.3f ms %6.0f GB/s  ratio %.3f\n", name, t, bytes / t / 1e6, bytes / t / 1e6 / bw);
    };
    const uint4 *A = (const uint4 *)a;
    uint4 *B = (uint4 *)b;
    const double copy = 2.0 * nb;
    const int g4 = resident((const void *)grid_stride_copy<4>, 256), g1 = resident((const void *)grid_stride_copy<1>, 256);
    rep("grid-stride resident U4 (bench_stream)", copy, [&] { grid_stride_copy<4><<<g4, 256>>>(A, B, n); });
    rep("grid-stride resident U1", copy, [&] { grid_stride_copy<1><<<g1, 256>>>(A, B, n); });
    rep("one-shot U1 256 threads", copy, [&] { oneshot_copy<1><<<(unsigned)((n + 255) / 256), 256>>>(A, B, n); });
    rep("one-shot U2 256 threads", copy, [&] { oneshot_copy<2><<<(unsigned)((n + 511) / 512), 256>>>(A, B, n); });
    rep("one-shot U4 256 threads", copy, [&] { oneshot_copy<4><<<(unsigned)((n + 1023) / 1024), 256>>>(A, B, n); });
    rep("one-shot U1 1024 threads", copy, [&] { oneshot_copy<1><<<(unsigned)((n + 1023) / 1024), 1024>>>(A, B, n); });
    constexpr int S = 4, CH = 16384;
    CK(cudaFuncSetAttribute(bulk_copy<S, CH>, cudaFuncAttributeMaxDynamicSharedMemorySize, S * CH));
    const int sms = resident((const void *)bulk_copy<S, CH>, 32, S * CH) / 1; /* CTAs that fit */
    rep("TMA bulk 4 x 16 KB stages, resident", copy, [&] { bulk_copy<S, CH><<<sms, 32, S * CH>>>(a, b, nb); });
    rep("dequantizer mix U2 128 threads", (double)n * 24 + n / 4.0,
        [&] { deq_mix<2><<<(unsigned)((n + 255) / 256), 128>>>((const uint2 *)a, sc, B, n); });
    rep("dequantizer mix U1 256 threads", (double)n * 24 + n / 4.0,
        [&] { deq_mix<1><<<(unsigned)((n + 255) / 256), 256>>>((const uint2 *)a, sc, B, n); });
    rep("quantizer mix U2 256 threads", (double)n * 20 + n / 4.0,
        [&] { quant_mix<2><<<(unsigned)((n + 511) / 512), 256>>>(A, (uint32_t *)b, sc, n); });
    rep("quantizer mix U1 256 threads", (double)n * 20 + n / 4.0,
        [&] { quant_mix<1><<<(unsigned)((n + 255) / 256), 256>>>(A, (uint32_t *)b, sc, n); });
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(sc));
}

static void alloc_order(void) {
    const size_t GB = (size_t)1 << 30, n = 2 * GB / 16;
    printf("allocation order: dequantizer mix U2, 1 GiB of codes -> 2 GiB out\n");
    auto run = [&](const char *tag, const char *codes, const float *sc, char *y) {
        const float t = median_ms([&] { deq_mix<2><<<(unsigned)((n + 255) / 256), 128>>>((const uint2 *)codes, sc, (uint4 *)y, n); });
        printf("  %-46s codes %p out %p  %.3f ms %6.0f GB/s\n", tag, (const void *)codes, (void *)y, t, (n * 24.0 + n / 4.0) / t / 1e6);
    };
    for (int rep = 0; rep < 2; rep++) {
        char *c1, *c2;
        CK(cudaMalloc(&c1, 4 * GB)); /* the copy reference of the size, as bench.cu did */
        CK(cudaMalloc(&c2, 4 * GB));
        CK(cudaMemset(c1, 1, 4 * GB));
        CK(cudaMemcpy(c2, c1, 4 * GB, cudaMemcpyDeviceToDevice));
        CK(cudaFree(c1));
        CK(cudaFree(c2));
        for (int cs = 0; cs < 2; cs++) {
            char *x, *q, *y, *y2;
            float *s;
            CK(cudaMalloc(&x, 4 * GB)); /* bench_quant.cu's fp32 input, quantized, then freed */
            CK(cudaMemset(x, 1, 4 * GB));
            CK(cudaMalloc(&q, GB + 4096));
            CK(cudaMalloc(&s, 32 << 20));
            CK(cudaMemset(q, 3, GB));
            CK(cudaMemset(s, 0, 32 << 20));
            CK(cudaFree(x));
            CK(cudaMalloc(&y, 2 * GB)); /* the output where x was */
            CK(cudaMalloc(&y2, 2 * GB)); /* a fresh one */
            char tag[96];
            snprintf(tag, sizeof tag, "round %d case %d: out after the freed temporary", rep, cs);
            run(tag, q, s, y);
            snprintf(tag, sizeof tag, "round %d case %d: fresh out", rep, cs);
            run(tag, q, s, y2);
            CK(cudaFree(y2));
            CK(cudaFree(y));
            CK(cudaFree(q));
            CK(cudaFree(s));
        }
    }
}

int main(void) {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    for (size_t nb : {(size_t)256 << 20, (size_t)1 << 30, (size_t)4 << 30}) shapes(nb);
    alloc_order();
    return 0;
}
