/* Streaming ceilings for `agoq kernels` (group "reference"): what a kernel that only moves bytes
 * reaches on this GPU, in the same run as the kernels measured against them. The copy ratio of
 * every case compares with cudaMemcpy device-to-device (half reads, half writes); a quantizer
 * mostly reads and a dequantizer mostly writes, so these say how much of a gap is the traffic's
 * read/write mix rather than the kernel:
 *   stream_read       reads 4n bytes (16-byte loads, grid-stride; one sum per thread kept alive)
 *   stream_write      writes 4n bytes (16-byte stores of a constant)
 *   stream_copy       reads 4n, writes 4n (16-byte vectors: the copy as a kernel writes it):
 *                     a one-shot grid of 256-thread CTAs, one vector a thread (1.00 of
 *                     cudaMemcpy on the H200; the resident grid-stride loop it replaced read
 *                     0.91-0.93: tools/alloc_order.cu, results/h200/logs/s9_alloc/)
 *   memset            writes 4n bytes (cudaMemsetAsync)
 * Grids of read / write: the resident CTAs of 256 threads on every SM, each thread 4 vectors
 * per iteration. */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/bench/bench_cases.h"
#include "kernels/quant/quant_cuda.h"

#define STREAM_THREADS 256
#define STREAM_UNROLL 4

struct stream_state {
    float4 *a, *b;
    size_t nvec; /* float4 elements */
    float *sink;
    unsigned grid;
};

__global__ void __launch_bounds__(STREAM_THREADS) stream_read_kernel(const float4 *__restrict__ a, size_t nvec,
                                                                     float *sink) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += STREAM_UNROLL * stride) {
        float4 v[STREAM_UNROLL];
#pragma unroll
        for (int u = 0; u < STREAM_UNROLL; u++) v[u] = i + u * stride < nvec ? __ldcs(a + i + u * stride) : make_float4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < STREAM_UNROLL; u++) acc += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    if (acc == 1.2345f) *sink = acc; /* practically never: keeps the loads */
}
__global__ void __launch_bounds__(STREAM_THREADS) stream_write_kernel(float4 *__restrict__ b, size_t nvec) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const float4 c = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += stride) __stcs(b + i, c);
}
__global__ void __launch_bounds__(STREAM_THREADS) stream_copy_kernel(const float4 *__restrict__ a, float4 *__restrict__ b,
                                                                     size_t nvec) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nvec) b[i] = a[i];
}

template <class K>
static unsigned resident_grid(K kernel) {
    int per_sm = 0, dev = 0, sms = 0;
    cudaCheck(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, STREAM_THREADS, 0));
    cudaCheck(cudaGetDevice(&dev));
    cudaCheck(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return (unsigned)(per_sm * sms);
}

static int setup(const agoq_bench_args *a, void **st, int two_buffers) {
    stream_state *s = (stream_state *)calloc(1, sizeof *s);
    if (!s) agoq_die("kernels benchmark: out of host memory");
    s->nvec = a->n / 4;
    s->a = (float4 *)agoq_cuda_malloc(s->nvec * sizeof(float4) + 16);
    cudaCheck(cudaMemset(s->a, 0, s->nvec * sizeof(float4)));
    if (two_buffers) s->b = (float4 *)agoq_cuda_malloc(s->nvec * sizeof(float4) + 16);
    s->sink = (float *)agoq_cuda_malloc(sizeof(float));
    *st = s;
    return 0;
}
static int setup_read(const agoq_bench_args *a, void **st) {
    int rc = setup(a, st, 0);
    ((stream_state *)*st)->grid = resident_grid(stream_read_kernel);
    return rc;
}
static int setup_write(const agoq_bench_args *a, void **st) {
    int rc = setup(a, st, 0);
    ((stream_state *)*st)->grid = resident_grid(stream_write_kernel);
    return rc;
}
static int setup_copy(const agoq_bench_args *a, void **st) {
    int rc = setup(a, st, 1);
    stream_state *s = (stream_state *)*st;
    s->grid = (unsigned)((s->nvec + STREAM_THREADS - 1) / STREAM_THREADS); /* one-shot: a vector a thread */
    return rc;
}
static void teardown(void *p) {
    stream_state *s = (stream_state *)p;
    cudaCheck(cudaDeviceSynchronize());
    agoq_cuda_free(s->a);
    agoq_cuda_free(s->b);
    agoq_cuda_free(s->sink);
    free(s);
}

static void launch_read(void *p, const agoq_bench_args *a) {
    stream_state *s = (stream_state *)p;
    stream_read_kernel<<<s->grid, STREAM_THREADS, 0, (cudaStream_t)a->stream>>>(s->a, s->nvec, s->sink);
}
static void launch_write(void *p, const agoq_bench_args *a) {
    stream_state *s = (stream_state *)p;
    stream_write_kernel<<<s->grid, STREAM_THREADS, 0, (cudaStream_t)a->stream>>>(s->a, s->nvec);
}
static void launch_copy(void *p, const agoq_bench_args *a) {
    stream_state *s = (stream_state *)p;
    stream_copy_kernel<<<s->grid, STREAM_THREADS, 0, (cudaStream_t)a->stream>>>(s->a, s->b, s->nvec);
}
static void launch_memset(void *p, const agoq_bench_args *a) {
    stream_state *s = (stream_state *)p;
    cudaCheck(cudaMemsetAsync(s->a, 0, s->nvec * sizeof(float4), (cudaStream_t)a->stream));
}

static double bytes_one_way(const agoq_bench_args *a) { return 4.0 * (double)(a->n / 4 * 4); }
static double bytes_both_ways(const agoq_bench_args *a) { return 8.0 * (double)(a->n / 4 * 4); }

static const agoq_bench_case stream_cases[] = {
    {"stream_read", "reference", 0, bytes_one_way, setup_read, launch_read, NULL, teardown, NULL},
    {"stream_write", "reference", 0, bytes_one_way, setup_write, launch_write, NULL, teardown, NULL},
    {"stream_copy", "reference", 0, bytes_both_ways, setup_copy, launch_copy, NULL, teardown, NULL},
    {"memset", "reference", 0, bytes_one_way, setup_write, launch_memset, NULL, teardown, NULL},
};
AGOQ_BENCH_REGISTER(stream_cases)
