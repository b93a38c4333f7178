/* The nccl communicator: real NCCL communicators on GPUs, the layout nccl-tests uses.
 *   one process: ncclCommInitAll over the first N visible GPUs (nlocal = N);
 *   mpirun -np N (MPI=1 build): one GPU per process (the node-local rank picks it), the NCCL
 *   unique id broadcast over MPI by launch.c (this file stays free of mpi.h, so nvcc needs no
 *   MPI include path), ncclCommInitRank (nlocal = 1).
 * Compute calls are k1's kernels (kernels/quant/quant_cuda.h) plus the small elementwise kernels
 * below; every call is issued on the rank's stream, communication inside ncclGroupStart/End.
 * Wire dtypes: ncclFloat, ncclBfloat16, and NCCL's own ncclFloat8e4m3 / ncclFloat8e5m2 (NCCL
 * >= 2.24; the fp8 sum is NCCL's: values are loaded, added and stored in fp8 per hop).
 * Failures: every wait on a rank's stream (sync, download, alloc/release) goes through
 * agoq_comm_wait (watchdog.h): an asynchronous NCCL error (ncclCommGetAsyncError) or a stream
 * still busy after AGOQ_COMM_TIMEOUT_S aborts every communicator (ncclCommAbort) and exits 1
 * with one line naming the rank, instead of hanging in cudaStreamSynchronize. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/driver.h"
#include "collectives/watchdog.h"
#include "core/check.h"
#include "core/common.h"
#include "kernels/grad8/grad8_cuda.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_math.h"

#define AGOQ_NCCL_MAX_LOCAL 64
#define AGOQ_NCCL_HAS_FP8 (NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0))

typedef struct {
    int dev[AGOQ_NCCL_MAX_LOCAL];
    ncclComm_t comm[AGOQ_NCCL_MAX_LOCAL];
    cudaStream_t stream[AGOQ_NCCL_MAX_LOCAL];
    unsigned int *amax[AGOQ_NCCL_MAX_LOCAL]; /* one float's bits per rank, for global_absmax */
} nccl_state;

static nccl_state *st(agoq_comm *c) { return (nccl_state *)c->impl; }
static void on(agoq_comm *c, int lr) { cudaCheck(cudaSetDevice(st(c)->dev[lr])); }
static void *stream_of(agoq_comm *c, int lr) { return (void *)st(c)->stream[lr]; }

/* ---- elementwise kernels (the quantizers themselves are k1's) ---- */
__global__ void k_add(float *acc, const float *x, size_t n, int bf16) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float s = acc[i] + x[i]; /* agoq_sum_step of grad8.h */
        acc[i] = bf16 ? agoq_round_bf16(s) : s;
    }
}

__global__ void k_encode(int dt, const float *x, size_t n, float mul, void *out) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = x[i] * mul;
        if (dt == AGOQ_DT_F32) ((float *)out)[i] = v;
        else if (dt == AGOQ_DT_BF16) ((uint16_t *)out)[i] = agoq_f32_to_bf16(v);
        else ((uint8_t *)out)[i] = (uint8_t)agoq_fp8_encode_rne(v, dt == AGOQ_DT_FP8_E5M2);
    }
}

__global__ void k_decode(int dt, const void *in, size_t n, float mul, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = dt == AGOQ_DT_F32    ? ((const float *)in)[i]
                  : dt == AGOQ_DT_BF16 ? agoq_bf16_to_f32(((const uint16_t *)in)[i])
                                       : agoq_fp8_decode(((const uint8_t *)in)[i], dt == AGOQ_DT_FP8_E5M2);
        y[i] = v * mul;
    }
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

static unsigned grid_for(size_t n) {
    size_t g = (n + 255) / 256;
    return (unsigned)(g < 1 ? 1 : g > 4096 ? 4096 : g);
}

static ncclDataType_t nccl_dtype(agoq_dtype dt) {
    switch (dt) {
    case AGOQ_DT_F32: return ncclFloat;
    case AGOQ_DT_BF16: return ncclBfloat16;
#if AGOQ_NCCL_HAS_FP8
    case AGOQ_DT_FP8_E4M3: return ncclFloat8e4m3;
    case AGOQ_DT_FP8_E5M2: return ncclFloat8e5m2;
#endif
    default:
        agoq_die("collectives nccl: NCCL %d has no fp8 reduction (needs NCCL >= 2.24)", NCCL_VERSION_CODE);
    }
}

static agoq_cuda_qtensor packed_view(const agoq_qconfig *q, const void *packed, size_t count) {
    agoq_cuda_qtensor t;
    agoq_packed_layout l = agoq_packed(q, count);
    t.codes = (uint8_t *)packed;
    t.scales = t.codes + l.scales_off;
    t.zeros = agoq_has_zeros(q) ? t.codes + l.zeros_off : NULL;
    t.n = count;
    return t;
}

/* ---- bounded waits: a failed or hung communicator is aborted, not waited on forever ---- */
typedef struct {
    agoq_comm *c;
    int only; /* -1: every local rank; else the one local rank waited on */
} nccl_wait_ctx;

static agoq_rank_state nccl_poll(void *ctx, int i, const char **why) {
    nccl_wait_ctx *w = (nccl_wait_ctx *)ctx;
    const int lr = w->only >= 0 ? w->only : i;
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(st(w->c)->comm[lr], &async) != ncclSuccess) async = ncclInternalError;
    if (async != ncclSuccess && async != ncclInProgress) {
        *why = ncclGetErrorString(async);
        return AGOQ_RANK_FAILED;
    }
    cudaSetDevice(st(w->c)->dev[lr]);
    cudaError_t e = cudaStreamQuery(st(w->c)->stream[lr]);
    if (e == cudaErrorNotReady) return AGOQ_RANK_PENDING;
    if (e != cudaSuccess) {
        *why = cudaGetErrorString(e);
        return AGOQ_RANK_FAILED;
    }
    return AGOQ_RANK_DONE;
}

static void nccl_abort_all(void *ctx) {
    agoq_comm *c = ((nccl_wait_ctx *)ctx)->c;
    for (int lr = 0; lr < c->nlocal; lr++)
        if (st(c)->comm[lr]) {
            ncclCommAbort(st(c)->comm[lr]); /* also unblocks kernels stuck waiting on a peer */
            st(c)->comm[lr] = NULL;
        }
}

/* Waits for local rank lr's stream (lr -1: every local rank) within the timeout; exits 1 with
 * one line naming the rank when it fails or hangs. */
static void wait_ranks(agoq_comm *c, int lr, const char *what) {
    nccl_wait_ctx ctx = {c, lr};
    agoq_comm_waiter w = {nccl_poll, nccl_abort_all, &ctx};
    if (agoq_comm_wait(&w, c->backend, lr >= 0 ? 1 : c->nlocal, c->rank0 + (lr >= 0 ? lr : 0), agoq_comm_timeout_s(), what))
        exit(1);
}

/* ---- memory: everything on the rank's own (non-blocking) stream, so that no legacy-stream
 * operation can race with the kernels and NCCL calls issued there ---- */
static void *g_alloc(agoq_comm *c, int lr, size_t bytes) {
    void *p = NULL;
    on(c, lr);
    cudaCheck(cudaMalloc(&p, bytes ? bytes : 1));
    cudaCheck(cudaMemsetAsync(p, 0, bytes ? bytes : 1, st(c)->stream[lr]));
    wait_ranks(c, lr, "alloc");
    return p;
}
static void g_release(agoq_comm *c, int lr, void *p) {
    wait_ranks(c, lr, "release");
    on(c, lr);
    cudaCheck(cudaFree(p));
}
static void g_upload(agoq_comm *c, int lr, void *dst, const void *host, size_t bytes) {
    on(c, lr);
    cudaCheck(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, st(c)->stream[lr]));
    wait_ranks(c, lr, "upload");
}
static void g_download(agoq_comm *c, int lr, void *host, const void *src, size_t bytes) {
    on(c, lr);
    cudaCheck(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, st(c)->stream[lr]));
    wait_ranks(c, lr, "download");
}
static void g_copy(agoq_comm *c, int lr, void *dst, const void *src, size_t bytes) {
    on(c, lr);
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st(c)->stream[lr]));
}
static void g_zero(agoq_comm *c, int lr, void *dst, size_t bytes) {
    on(c, lr);
    cudaCheck(cudaMemsetAsync(dst, 0, bytes, st(c)->stream[lr]));
}
static void g_sync(agoq_comm *c) { wait_ranks(c, -1, "sync"); }

/* ---- communication ---- */
static int group_index(int r, agoq_comm_group g) { return (r / g.stride) % g.size; }

static void g_alltoall(agoq_comm *c, void *const *send, void *const *recv, size_t bytes, agoq_comm_group g) {
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++) {
        const int r = c->rank0 + lr, base = r - group_index(r, g) * g.stride;
        for (int k = 0; k < g.size; k++) {
            const int peer = base + k * g.stride;
            ncclCheck(ncclSend((const char *)send[lr] + (size_t)k * bytes, bytes, ncclUint8, peer, st(c)->comm[lr],
                               st(c)->stream[lr]));
            ncclCheck(ncclRecv((char *)recv[lr] + (size_t)k * bytes, bytes, ncclUint8, peer, st(c)->comm[lr],
                               st(c)->stream[lr]));
        }
    }
    ncclCheck(ncclGroupEnd());
}

static void g_allgather(agoq_comm *c, void *const *send, void *const *recv, size_t bytes) {
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclAllGather(send[lr], recv[lr], bytes, ncclUint8, st(c)->comm[lr], st(c)->stream[lr]));
    ncclCheck(ncclGroupEnd());
}

static void g_reduce_scatter(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    ncclDataType_t t = nccl_dtype(dt);
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclReduceScatter(send[lr], recv[lr], count, t, ncclSum, st(c)->comm[lr], st(c)->stream[lr]));
    ncclCheck(ncclGroupEnd());
}

static void g_allreduce(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    ncclDataType_t t = nccl_dtype(dt);
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclAllReduce(send[lr], recv[lr], count, t, ncclSum, st(c)->comm[lr], st(c)->stream[lr]));
    ncclCheck(ncclGroupEnd());
}

static void g_shift(agoq_comm *c, void *const *send, void *const *recv, size_t bytes) {
    const int N = c->nranks;
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++) {
        const int r = c->rank0 + lr;
        ncclCheck(ncclSend(send[lr], bytes, ncclUint8, (r + 1) % N, st(c)->comm[lr], st(c)->stream[lr]));
        ncclCheck(ncclRecv(recv[lr], bytes, ncclUint8, (r + N - 1) % N, st(c)->comm[lr], st(c)->stream[lr]));
    }
    ncclCheck(ncclGroupEnd());
}

static float g_global_absmax(agoq_comm *c, void *const *x, size_t count) {
    for (int lr = 0; lr < c->nlocal; lr++) {
        on(c, lr);
        cudaCheck(cudaMemsetAsync(st(c)->amax[lr], 0, sizeof(unsigned int), st(c)->stream[lr]));
        k_absmax<<<grid_for(count), 256, 0, st(c)->stream[lr]>>>((const float *)x[lr], count, st(c)->amax[lr]);
        cudaCheckLaunch();
    }
    ncclCheck(ncclGroupStart()); /* max of non-negative float bits = max of the floats */
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclAllReduce(st(c)->amax[lr], st(c)->amax[lr], 1, ncclUint32, ncclMax, st(c)->comm[lr],
                                st(c)->stream[lr]));
    ncclCheck(ncclGroupEnd());
    unsigned int bits = 0;
    g_download(c, 0, &bits, st(c)->amax[0], sizeof bits);
    float m;
    memcpy(&m, &bits, sizeof m);
    return m;
}

/* ---- compute ---- */
static void must(int rc, const char *what) {
    if (rc) agoq_die("collectives nccl: %s failed (see above)", what);
}

static void g_quantize(agoq_comm *c, int lr, const agoq_qconfig *q, const float *x, size_t count, void *packed) {
    agoq_cuda_qtensor t = packed_view(q, packed, count);
    on(c, lr);
    must(agoq_cuda_quantize_f32(q, x, count, &t, stream_of(c, lr)), "agoq_cuda_quantize_f32");
}

static void g_dequantize(agoq_comm *c, int lr, const agoq_qconfig *q, const void *packed, size_t count, float *y) {
    agoq_cuda_qtensor t = packed_view(q, packed, count);
    on(c, lr);
    must(agoq_cuda_dequantize_f32(q, &t, y, stream_of(c, lr)), "agoq_cuda_dequantize_f32");
}

static void g_reduce(agoq_comm *c, int lr, const agoq_qconfig *q, const void *in, size_t stride, int nin,
                     size_t count, agoq_sum_precision p, void *out) {
    agoq_cuda_qtensor views[AGOQ_CUDA_MAX_CHUNKS];
    if (nin > AGOQ_CUDA_MAX_CHUNKS) agoq_die("collectives nccl: %d chunks > AGOQ_CUDA_MAX_CHUNKS", nin);
    for (int k = 0; k < nin; k++) views[k] = packed_view(q, (const char *)in + (size_t)k * stride, count);
    agoq_cuda_qtensor o = packed_view(q, out, count);
    on(c, lr);
    must(agoq_cuda_grad_reduce(q, views, nin, p, &o, NULL, stream_of(c, lr)), "agoq_cuda_grad_reduce");
}

static void g_add(agoq_comm *c, int lr, float *acc, const float *x, size_t count, agoq_sum_precision p) {
    on(c, lr);
    k_add<<<grid_for(count), 256, 0, st(c)->stream[lr]>>>(acc, x, count, p == AGOQ_SUM_BF16);
    cudaCheckLaunch();
}

static void g_encode(agoq_comm *c, int lr, agoq_dtype dt, const float *x, size_t count, float mul, void *out) {
    on(c, lr);
    k_encode<<<grid_for(count), 256, 0, st(c)->stream[lr]>>>((int)dt, x, count, mul, out);
    cudaCheckLaunch();
}

static void g_decode(agoq_comm *c, int lr, agoq_dtype dt, const void *in, size_t count, float mul, float *y) {
    on(c, lr);
    k_decode<<<grid_for(count), 256, 0, st(c)->stream[lr]>>>((int)dt, in, count, mul, y);
    cudaCheckLaunch();
}

static const agoq_comm_ops nccl_ops = {
    g_alloc, g_release, g_upload, g_download, g_copy, g_zero, g_sync,
    g_alltoall, g_allgather, g_reduce_scatter, g_allreduce, g_shift, g_global_absmax,
    g_quantize, g_dequantize, g_reduce, g_add, g_encode, g_decode,
};

agoq_comm *agoq_comm_nccl_create(int ngpus) {
    int rank, size, visible = 0;
    agoq_coll_mpi_world(&rank, &size);
    if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
    if (size > 1 && ngpus != 0 && ngpus != size) {
        agoq_error("collectives nccl: %d ranks asked for, but mpirun started %d processes (one GPU each)", ngpus, size);
        return NULL;
    }
    const int nlocal = size > 1 ? 1 : (ngpus ? ngpus : visible);
    if (visible < 1 || (size == 1 && nlocal > visible)) {
        agoq_error("collectives nccl: %d ranks asked for, but only %d GPUs are visible", nlocal, visible);
        return NULL;
    }
    if (nlocal > AGOQ_NCCL_MAX_LOCAL) {
        agoq_error("collectives nccl: %d local GPUs > %d", nlocal, AGOQ_NCCL_MAX_LOCAL);
        return NULL;
    }
    agoq_comm *c = (agoq_comm *)calloc(1, sizeof *c);
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    if (!c || !s) abort();
    c->ops = &nccl_ops;
    c->impl = s;
    c->nlocal = nlocal;
    if (size > 1) {
        const char *lrank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        s->dev[0] = (lrank ? atoi(lrank) : rank) % visible;
        ncclUniqueId id;
        if (rank == 0) ncclCheck(ncclGetUniqueId(&id));
        agoq_coll_mpi_bcast(&id, sizeof id);
        cudaCheck(cudaSetDevice(s->dev[0]));
        ncclCheck(ncclCommInitRank(&s->comm[0], size, id, rank));
        c->backend = "nccl-mpi";
        c->nranks = size;
        c->rank0 = rank;
    } else {
        for (int lr = 0; lr < nlocal; lr++) s->dev[lr] = lr;
        ncclCheck(ncclCommInitAll(s->comm, nlocal, s->dev));
        c->backend = "nccl";
        c->nranks = nlocal;
        c->rank0 = 0;
    }
    for (int lr = 0; lr < nlocal; lr++) {
        on(c, lr);
        cudaCheck(cudaStreamCreateWithFlags(&s->stream[lr], cudaStreamNonBlocking));
        cudaCheck(cudaMalloc(&s->amax[lr], sizeof(unsigned int)));
    }
    return c;
}

void agoq_comm_nccl_destroy(agoq_comm *c) {
    if (!c) return;
    nccl_state *s = st(c);
    g_sync(c);
    for (int lr = 0; lr < c->nlocal; lr++) {
        on(c, lr);
        ncclCheck(ncclCommDestroy(s->comm[lr]));
        cudaCheck(cudaFree(s->amax[lr]));
        cudaCheck(cudaStreamDestroy(s->stream[lr]));
    }
    free(s);
    free(c);
}
