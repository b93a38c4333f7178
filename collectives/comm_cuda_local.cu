/* The cuda-local communicator: N simulated ranks in one process whose buffers all live on GPU 0,
 * one non-blocking stream shared by every rank, so calls execute in the order they are made and
 * a rank's buffer is ready for any other rank's next call. It is the cpu backend (comm_cpu.c) at
 * GPU speed, bit for bit:
 *   - communication is the cpu backend's movement pattern (driver.h's agoq_local_alltoall,
 *     allgather, shift) with device-to-device copies;
 *   - reduce_scatter / allreduce are the cpu backend's ring model as one kernel: every element
 *     is wire.h's agoq_ring_sum (partial sum from rank j+1 round to rank j, rounded to the wire
 *     dtype after every add), the function comm_cpu.c calls;
 *   - global_absmax is the |x| max over every rank's elements (a max: order does not matter);
 *   - the compute calls are the nccl backend's (comm_cuda.h: k1's kernels, bit-exact with the
 *     C references by the kernel tests).
 * Memory comes from a stream-ordered pool of its own (cudaMallocFromPoolAsync, kept between
 * calls): the trainer runs a collective per parameter tensor per step, and cudaMalloc/cudaFree
 * would synchronise the device every time. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "collectives/comm_cuda.h"
#include "collectives/driver.h"
#include "collectives/wire.h"
#include "core/check.h"
#include "core/common.h"

typedef struct {
    agoq_cuda_ranks r;  /* first (comm_cuda.h): dev 0, the one stream and amax buffer, for all */
    cudaMemPool_t pool; /* every rank's buffers */
} local_state;

static local_state *st(agoq_comm *c) { return (local_state *)c->impl; }
static cudaStream_t stream(agoq_comm *c) { return st(c)->r.stream[0]; }

static void *l_alloc(agoq_comm *c, int lr, size_t bytes) {
    void *p = NULL;
    agoq_cuda_on(c, lr);
    cudaCheck(cudaMallocFromPoolAsync(&p, bytes ? bytes : 1, st(c)->pool, stream(c)));
    cudaCheck(cudaMemsetAsync(p, 0, bytes ? bytes : 1, stream(c)));
    return p;
}
static void l_release(agoq_comm *c, int lr, void *p) {
    agoq_cuda_on(c, lr);
    cudaCheck(cudaFreeAsync(p, stream(c))); /* after everything issued before it */
}

/* Up to AGOQ_CUDA_MAX_LOCAL rank pointers, passed to the ring kernels by value. */
typedef struct {
    const void *p[AGOQ_CUDA_MAX_LOCAL];
} rank_in;
typedef struct {
    void *p[AGOQ_CUDA_MAX_LOCAL];
} rank_out;

/* reduce-scatter: element e of the N * count sum belongs to chunk j = e / count, rank j's recv */
__global__ void k_ring_reduce_scatter(agoq_dtype dt, rank_in send, rank_out recv, int N, size_t count) {
    const size_t n = count * (size_t)N;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n; e += (size_t)gridDim.x * blockDim.x) {
        const int j = (int)(e / count);
        agoq_dt_store(dt, recv.p[j], e - (size_t)j * count, agoq_ring_sum(dt, send.p, N, j, e));
    }
}

/* all-reduce: element i belongs to chunk j = i / chunk (ceil(count / N) elements each, as
 * comm_cpu.c splits it); its owner's sum is what every rank receives */
__global__ void k_ring_allreduce(agoq_dtype dt, rank_in send, rank_out recv, int N, size_t count, size_t chunk) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        const float v = agoq_ring_sum(dt, send.p, N, (int)(i / chunk), i);
        for (int r = 0; r < N; r++) agoq_dt_store(dt, recv.p[r], i, v);
    }
}

static void rank_ptrs(agoq_comm *c, void *const *send, void *const *recv, rank_in *in, rank_out *out) {
    for (int r = 0; r < c->nranks; r++) {
        in->p[r] = send[r];
        out->p[r] = recv[r];
    }
}

/* send and recv must not alias (no algorithm passes the same buffer: driver.h) */
static void l_reduce_scatter(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    rank_in in = {}; /* entries past N: NULL */
    rank_out out = {};
    rank_ptrs(c, send, recv, &in, &out);
    agoq_cuda_on(c, 0);
    k_ring_reduce_scatter<<<agoq_cuda_grid(count * (size_t)c->nranks), 256, 0, stream(c)>>>(dt, in, out, c->nranks,
                                                                                           count);
    cudaCheckLaunch();
}

static void l_allreduce(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    rank_in in = {}; /* entries past N: NULL */
    rank_out out = {};
    rank_ptrs(c, send, recv, &in, &out);
    agoq_cuda_on(c, 0);
    const size_t chunk = (count + (size_t)c->nranks - 1) / (size_t)c->nranks;
    k_ring_allreduce<<<agoq_cuda_grid(count), 256, 0, stream(c)>>>(dt, in, out, c->nranks, count, chunk ? chunk : 1);
    cudaCheckLaunch();
}

static float l_global_absmax(agoq_comm *c, void *const *x, size_t count) {
    for (int lr = 0; lr < c->nlocal; lr++) agoq_cuda_absmax(c, lr, (const float *)x[lr], count, lr == 0);
    return agoq_cuda_amax_value(c, 0); /* every rank's amax is the one buffer */
}

static const agoq_comm_ops local_ops = {
    l_alloc, l_release, agoq_cuda_upload, agoq_cuda_download, agoq_cuda_copy, agoq_cuda_zero, agoq_cuda_sync,
    agoq_local_alltoall, agoq_local_allgather, l_reduce_scatter, l_allreduce, agoq_local_shift, l_global_absmax,
    agoq_cuda_quantize, agoq_cuda_dequantize, agoq_cuda_reduce, agoq_cuda_add, agoq_cuda_encode, agoq_cuda_decode,
};

agoq_comm *agoq_comm_cuda_local_create(int nranks) {
    int visible = 0;
    if (nranks < 1 || nranks > AGOQ_CUDA_MAX_LOCAL) {
        agoq_error("collectives cuda-local: rank count %d: must be in [1, %d]", nranks, AGOQ_CUDA_MAX_LOCAL);
        return NULL;
    }
    if (cudaGetDeviceCount(&visible) != cudaSuccess || visible < 1) {
        cudaGetLastError(); /* clear the sticky-free error of a machine without a driver or GPU */
        agoq_error("collectives cuda-local: no visible GPU (its %d simulated ranks live on GPU 0)", nranks);
        return NULL;
    }
    local_state *s = (local_state *)calloc(1, sizeof *s);
    agoq_comm *c = (agoq_comm *)malloc(sizeof *c);
    if (!c || !s) abort();
    *c = agoq_comm{&local_ops, "cuda-local", nranks, nranks, 0, s}; /* ops, backend, N, nlocal, rank0, impl */
    cudaCheck(cudaSetDevice(0));
    cudaStream_t one;
    unsigned int *amax;
    cudaCheck(cudaStreamCreateWithFlags(&one, cudaStreamNonBlocking));
    cudaCheck(cudaMalloc(&amax, sizeof(unsigned int)));
    for (int lr = 0; lr < nranks; lr++) {
        s->r.dev[lr] = 0;
        s->r.stream[lr] = one;
        s->r.amax[lr] = amax;
    }
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaCheck(cudaMemPoolCreate(&s->pool, &props));
    uint64_t keep = UINT64_MAX; /* keep freed memory for the next call instead of returning it */
    cudaCheck(cudaMemPoolSetAttribute(s->pool, cudaMemPoolAttrReleaseThreshold, &keep));
    return c;
}

void agoq_comm_cuda_local_destroy(agoq_comm *c) {
    if (!c) return;
    local_state *s = st(c);
    agoq_cuda_sync(c);
    cudaCheck(cudaSetDevice(0));
    cudaCheck(cudaMemPoolDestroy(s->pool));
    cudaCheck(cudaFree(s->r.amax[0]));
    cudaCheck(cudaStreamDestroy(s->r.stream[0]));
    free(s);
    free(c);
}
