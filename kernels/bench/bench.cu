/* Timing driver and case registry of `agoq kernels` (bench_cases.h).
 *
 * Every timed launch is preceded by an L2 scrub: a kernel reading a buffer of twice the L2
 * size, so each rep starts cold (inputs come from HBM, as for tensors that are produced long
 * before they are consumed) and no dirty scrub lines are written back during the rep. A rep
 * is bracketed by two CUDA events on the benchmark stream; min / median / max over reps. */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/bench/bench_cases.h"
#include "kernels/quant/quant_cuda.h"

#define MAX_CASES 256
static const agoq_bench_case *g_cases[MAX_CASES];
static int g_ncases;

void agoq_bench_register(const agoq_bench_case *cases, int ncases) {
    for (int i = 0; i < ncases; i++) {
        if (g_ncases == MAX_CASES) agoq_die("benchmark registry: more than %d cases", MAX_CASES);
        g_cases[g_ncases++] = &cases[i];
    }
}

int agoq_bench_case_count(void) { return g_ncases; }
const agoq_bench_case *agoq_bench_case_at(int i) { return i >= 0 && i < g_ncases ? g_cases[i] : NULL; }

static cudaStream_t g_stream;
static cudaEvent_t g_ev0, g_ev1;
static float4 *g_scrub;
static size_t g_scrub_vec; /* float4 elements */
static float *g_sink;

__global__ void l2_scrub_kernel(const float4 *__restrict__ p, size_t n, float *sink) {
    float acc = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 1.0f) *sink = acc; /* never true for the zeroed buffer: keeps the loads alive */
}

int agoq_bench_init(void **stream) {
    int dev = 0, l2 = 0;
    cudaCheck(cudaGetDevice(&dev));
    cudaCheck(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    size_t bytes = 2 * (size_t)l2;
    if (bytes < ((size_t)64 << 20)) bytes = (size_t)64 << 20;
    g_scrub_vec = bytes / sizeof(float4);
    cudaCheck(cudaMalloc((void **)&g_scrub, g_scrub_vec * sizeof(float4)));
    cudaCheck(cudaMemset(g_scrub, 0, g_scrub_vec * sizeof(float4)));
    cudaCheck(cudaMalloc((void **)&g_sink, sizeof(float)));
    cudaCheck(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreate(&g_ev0));
    cudaCheck(cudaEventCreate(&g_ev1));
    *stream = g_stream;
    return 0;
}

void agoq_bench_shutdown(void) {
    if (!g_stream) return;
    cudaCheck(cudaStreamSynchronize(g_stream));
    cudaCheck(cudaEventDestroy(g_ev0));
    cudaCheck(cudaEventDestroy(g_ev1));
    cudaCheck(cudaStreamDestroy(g_stream));
    cudaCheck(cudaFree(g_scrub));
    cudaCheck(cudaFree(g_sink));
    g_stream = NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

template <class F>
static void time_loop(F launch, int warmup, int iters, agoq_bench_timing *t) {
    for (int i = 0; i < warmup; i++) launch();
    cudaCheckLaunch();
    double *ms = (double *)malloc((size_t)(iters > 0 ? iters : 1) * sizeof(double));
    for (int i = 0; i < iters; i++) {
        l2_scrub_kernel<<<1024, 256, 0, g_stream>>>(g_scrub, g_scrub_vec, g_sink);
        cudaCheck(cudaEventRecord(g_ev0, g_stream));
        launch();
        cudaCheck(cudaEventRecord(g_ev1, g_stream));
        cudaCheck(cudaEventSynchronize(g_ev1));
        float f = 0.0f;
        cudaCheck(cudaEventElapsedTime(&f, g_ev0, g_ev1));
        ms[i] = f;
    }
    cudaCheckLaunch();
    qsort(ms, (size_t)iters, sizeof *ms, cmp_double);
    t->iters = iters;
    t->min_ms = iters ? ms[0] : 0.0;
    t->median_ms = iters ? ms[iters / 2] : 0.0;
    t->max_ms = iters ? ms[iters - 1] : 0.0;
    free(ms);
}

void agoq_bench_time_case(const agoq_bench_case *c, void *state, const agoq_bench_args *a, int warmup, int iters,
                          agoq_bench_timing *t) {
    time_loop([&] { c->launch(state, a); }, warmup, iters, t);
}

void agoq_bench_time_copy(size_t bytes, void *stream /* the stream of agoq_bench_init */, int warmup, int iters, agoq_bench_timing *t) {
    void *src = agoq_cuda_malloc(bytes), *dst = agoq_cuda_malloc(bytes); /* the arena's, when open */
    cudaCheck(cudaMemset(src, 1, bytes));
    time_loop([&] { cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g_stream)); },
              warmup, iters, t);
    cudaCheck(cudaStreamSynchronize(g_stream));
    agoq_cuda_free(src);
    agoq_cuda_free(dst);
}
