/* The nccl communicator: real NCCL communicators on GPUs, the layout nccl-tests uses.
 *   one process: ncclCommInitAll over the first N visible GPUs (nlocal = N);
 *   mpirun -np N (MPI=1 build): one GPU per process (the node-local rank picks it), the NCCL
 *   unique id broadcast over MPI by launch.c (this file stays free of mpi.h, so nvcc needs no
 *   MPI include path), ncclCommInitRank (nlocal = 1).
 * Memory copies, waits and compute calls are the GPU backends' shared ones (comm_cuda.h: k1's
 * kernels plus small elementwise kernels); every call is issued on the rank's stream,
 * communication inside ncclGroupStart/End.
 * Wire dtypes: ncclFloat, ncclBfloat16, and NCCL's own ncclFloat8e4m3 / ncclFloat8e5m2 (NCCL
 * >= 2.24; the fp8 sum is NCCL's: values are loaded, added and stored in fp8 per hop).
 * Failures: every wait on a rank's stream (sync, download, alloc/release) goes through
 * agoq_comm_wait (watchdog.h, via agoq_cuda_wait): an asynchronous NCCL error
 * (ncclCommGetAsyncError, this file's hook) or a stream still busy after AGOQ_COMM_TIMEOUT_S
 * aborts every communicator (ncclCommAbort) and exits 1 with one line naming the rank, instead
 * of hanging in cudaStreamSynchronize. */
#include <cuda_runtime.h>
#include <limits.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/comm_cuda.h"
#include "collectives/driver.h"
#include "core/check.h"
#include "core/common.h"
#include "core/knob.h"

#define AGOQ_NCCL_HAS_FP8 (NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0))

typedef struct {
    agoq_cuda_ranks r; /* first: dev, stream, amax per local rank (comm_cuda.h) */
    ncclComm_t comm[AGOQ_CUDA_MAX_LOCAL];
} nccl_state;

static nccl_state *st(agoq_comm *c) { return (nccl_state *)c->impl; }
static void on(agoq_comm *c, int lr) { agoq_cuda_on(c, lr); }
static cudaStream_t stream_of(agoq_comm *c, int lr) { return st(c)->r.stream[lr]; }

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

/* ---- the waits' NCCL hooks: asynchronous errors, and ncclCommAbort ---- */
static const char *nccl_async_error(agoq_comm *c, int lr) {
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(st(c)->comm[lr], &async) != ncclSuccess) async = ncclInternalError;
    return async != ncclSuccess && async != ncclInProgress ? ncclGetErrorString(async) : NULL;
}

static void nccl_abort_all(agoq_comm *c) {
    for (int lr = 0; lr < c->nlocal; lr++)
        if (st(c)->comm[lr]) {
            ncclCommAbort(st(c)->comm[lr]); /* also unblocks kernels stuck waiting on a peer */
            st(c)->comm[lr] = NULL;
        }
}

/* ---- memory (copies: comm_cuda.h) ---- */
static void *g_alloc(agoq_comm *c, int lr, size_t bytes) {
    void *p = NULL;
    on(c, lr);
    cudaCheck(cudaMalloc(&p, bytes ? bytes : 1));
    cudaCheck(cudaMemsetAsync(p, 0, bytes ? bytes : 1, stream_of(c, lr)));
    agoq_cuda_wait(c, lr, "alloc");
    return p;
}
static void g_release(agoq_comm *c, int lr, void *p) {
    agoq_cuda_wait(c, lr, "release");
    on(c, lr);
    cudaCheck(cudaFree(p));
}
/* ---- communication ---- */
static int group_index(int r, agoq_comm_group g) { return (r / g.stride) % g.size; }

static void g_alltoall(agoq_comm *c, void *const *send, void *const *recv, size_t bytes, agoq_comm_group g) {
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++) {
        const int r = c->rank0 + lr, base = r - group_index(r, g) * g.stride;
        for (int k = 0; k < g.size; k++) {
            const int peer = base + k * g.stride;
            ncclCheck(ncclSend((const char *)send[lr] + (size_t)k * bytes, bytes, ncclUint8, peer, st(c)->comm[lr],
                               stream_of(c, lr)));
            ncclCheck(ncclRecv((char *)recv[lr] + (size_t)k * bytes, bytes, ncclUint8, peer, st(c)->comm[lr],
                               stream_of(c, lr)));
        }
    }
    ncclCheck(ncclGroupEnd());
}

static void g_allgather(agoq_comm *c, void *const *send, void *const *recv, size_t bytes) {
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclAllGather(send[lr], recv[lr], bytes, ncclUint8, st(c)->comm[lr], stream_of(c, lr)));
    ncclCheck(ncclGroupEnd());
}

static void g_reduce_scatter(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    ncclDataType_t t = nccl_dtype(dt);
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclReduceScatter(send[lr], recv[lr], count, t, ncclSum, st(c)->comm[lr], stream_of(c, lr)));
    ncclCheck(ncclGroupEnd());
}

static void g_allreduce(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    ncclDataType_t t = nccl_dtype(dt);
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclAllReduce(send[lr], recv[lr], count, t, ncclSum, st(c)->comm[lr], stream_of(c, lr)));
    ncclCheck(ncclGroupEnd());
}

static void g_shift(agoq_comm *c, void *const *send, void *const *recv, size_t bytes) {
    const int N = c->nranks;
    ncclCheck(ncclGroupStart());
    for (int lr = 0; lr < c->nlocal; lr++) {
        const int r = c->rank0 + lr;
        ncclCheck(ncclSend(send[lr], bytes, ncclUint8, (r + 1) % N, st(c)->comm[lr], stream_of(c, lr)));
        ncclCheck(ncclRecv(recv[lr], bytes, ncclUint8, (r + N - 1) % N, st(c)->comm[lr], stream_of(c, lr)));
    }
    ncclCheck(ncclGroupEnd());
}

static float g_global_absmax(agoq_comm *c, void *const *x, size_t count) {
    for (int lr = 0; lr < c->nlocal; lr++) agoq_cuda_absmax(c, lr, (const float *)x[lr], count, 1);
    ncclCheck(ncclGroupStart()); /* max of non-negative float bits = max of the floats */
    for (int lr = 0; lr < c->nlocal; lr++)
        ncclCheck(ncclAllReduce(st(c)->r.amax[lr], st(c)->r.amax[lr], 1, ncclUint32, ncclMax, st(c)->comm[lr],
                                stream_of(c, lr)));
    ncclCheck(ncclGroupEnd());
    return agoq_cuda_amax_value(c, 0);
}

static const agoq_comm_ops nccl_ops = {
    g_alloc, g_release, agoq_cuda_upload, agoq_cuda_download, agoq_cuda_copy, agoq_cuda_zero, agoq_cuda_sync,
    g_alltoall, g_allgather, g_reduce_scatter, g_allreduce, g_shift, g_global_absmax,
    agoq_cuda_quantize, agoq_cuda_dequantize, agoq_cuda_reduce, agoq_cuda_add, agoq_cuda_encode, agoq_cuda_decode,
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
    if (nlocal > AGOQ_CUDA_MAX_LOCAL) {
        agoq_error("collectives nccl: %d local GPUs > %d", nlocal, AGOQ_CUDA_MAX_LOCAL);
        return NULL;
    }
    agoq_comm *c = (agoq_comm *)calloc(1, sizeof *c);
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    if (!c || !s) abort();
    c->ops = &nccl_ops;
    c->impl = s;
    s->r.async_error = nccl_async_error;
    s->r.abort_all = nccl_abort_all;
    c->nlocal = nlocal;
    if (size > 1) {
        s->r.dev[0] = agoq_knob_int("OMPI_COMM_WORLD_LOCAL_RANK", rank, 0, INT_MAX) % visible;
        ncclUniqueId id;
        if (rank == 0) ncclCheck(ncclGetUniqueId(&id));
        agoq_coll_mpi_bcast(&id, sizeof id);
        cudaCheck(cudaSetDevice(s->r.dev[0]));
        ncclCheck(ncclCommInitRank(&s->comm[0], size, id, rank));
        c->backend = "nccl-mpi";
        c->nranks = size;
        c->rank0 = rank;
    } else {
        for (int lr = 0; lr < nlocal; lr++) s->r.dev[lr] = lr;
        ncclCheck(ncclCommInitAll(s->comm, nlocal, s->r.dev));
        c->backend = "nccl";
        c->nranks = nlocal;
        c->rank0 = 0;
    }
    for (int lr = 0; lr < nlocal; lr++) {
        on(c, lr);
        cudaCheck(cudaStreamCreateWithFlags(&s->r.stream[lr], cudaStreamNonBlocking));
        cudaCheck(cudaMalloc(&s->r.amax[lr], sizeof(unsigned int)));
    }
    return c;
}

void agoq_comm_nccl_destroy(agoq_comm *c) {
    if (!c) return;
    nccl_state *s = st(c);
    agoq_cuda_sync(c);
    for (int lr = 0; lr < c->nlocal; lr++) {
        on(c, lr);
        ncclCheck(ncclCommDestroy(s->comm[lr]));
        cudaCheck(cudaFree(s->r.amax[lr]));
        cudaCheck(cudaStreamDestroy(s->r.stream[lr]));
    }
    free(s);
    free(c);
}
