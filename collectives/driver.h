/* The shared collectives driver: one communicator interface that both backends implement, and
 * the signature every algorithm file (algo_*.c) follows.
 *
 * A communicator drives `nlocal` ranks from this process: all of them on the cpu backend (N
 * simulated ranks), all of them on GPU 0 with cuda-local (N simulated ranks, the GPU kernels),
 * every visible GPU with ncclCommInitAll, or one GPU per process under mpirun.
 * Buffers are per local rank ("device" memory: host memory on cpu, cudaMalloc on GPUs), passed as
 * arrays indexed by local rank. Communication calls are collective over all local ranks at once;
 * compute calls act on one local rank. Algorithms are written once against this table, step by
 * step as the GPUs run them, so the cpu backend tests exactly the GPU algorithm.
 *
 * Quantized chunks travel "packed": codes, then scales, then zero points of `count` elements
 * (count a multiple of the block), each plane starting on a 16-byte boundary so that kernels
 * can load scales as aligned words whatever the format (agoq_packed below). */
#ifndef AGOQ_COLL_DRIVER_H
#define AGOQ_COLL_DRIVER_H
#include <stddef.h>

#include "collectives/collectives.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Byte offsets of the planes of one packed chunk, and its size (a multiple of 16). */
typedef struct { size_t scales_off, zeros_off, bytes; } agoq_packed_layout;
static inline size_t agoq_align16(size_t b) { return (b + 15) / 16 * 16; }
static inline agoq_packed_layout agoq_packed(const agoq_qconfig *q, size_t count) {
    agoq_packed_layout l;
    l.scales_off = agoq_align16(agoq_codes_bytes(q, count));
    l.zeros_off = agoq_align16(l.scales_off + agoq_scales_bytes(q, count));
    l.bytes = agoq_align16(l.zeros_off + agoq_zeros_bytes(q, count));
    return l;
}

/* A packed chunk's planes as a view (the device's agoq_cuda_qtensor has the same fields). */
static inline agoq_qtensor agoq_packed_view(const agoq_qconfig *q, const void *packed, size_t count) {
    agoq_qtensor t;
    agoq_packed_layout l = agoq_packed(q, count);
    t.codes = (uint8_t *)packed;
    t.scales = t.codes + l.scales_off;
    t.zeros = agoq_has_zeros(q) ? t.codes + l.zeros_off : NULL;
    t.n = count;
    return t;
}

/* Element types NCCL reduces natively (the baselines and fp8lm). */
typedef enum { AGOQ_DT_F32, AGOQ_DT_BF16, AGOQ_DT_FP8_E4M3, AGOQ_DT_FP8_E5M2 } agoq_dtype;
size_t agoq_dtype_bytes(agoq_dtype dt);

/* A subgroup for all-to-all: the group of global rank r is {base + k*stride, k < size} with
 * base = r - ((r / stride) % size) * stride. {N, 1} is every rank; {rpn, 1} the ranks of r's
 * node; {nnodes, rpn} the ranks with r's local index on every node. */
typedef struct { int size, stride; } agoq_comm_group;

typedef struct { /* agoq_comm: collectives.h */
    /* memory of local rank lr (zeroed on allocation) */
    void *(*alloc)(agoq_comm *c, int lr, size_t bytes);
    void (*release)(agoq_comm *c, int lr, void *p);
    void (*upload)(agoq_comm *c, int lr, void *dst, const void *host, size_t bytes);
    void (*download)(agoq_comm *c, int lr, void *host, const void *src, size_t bytes);
    void (*copy)(agoq_comm *c, int lr, void *dst, const void *src, size_t bytes);
    void (*zero)(agoq_comm *c, int lr, void *dst, size_t bytes);
    void (*sync)(agoq_comm *c); /* wait for every local rank's outstanding work */

    /* communication, collective over all ranks; buffers indexed by local rank */
    /* send slot k (bytes_per_peer each) goes to member k of the group, recv slot k comes from it */
    void (*alltoall)(agoq_comm *c, void *const *send, void *const *recv, size_t bytes_per_peer,
                     agoq_comm_group g);
    /* recv slot k (bytes each) = send of global rank k */
    void (*allgather)(agoq_comm *c, void *const *send, void *const *recv, size_t bytes);
    /* native sum in dtype: recv (count) = shard r of the sum of send (count * N) */
    void (*reduce_scatter)(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt);
    void (*allreduce)(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt);
    /* ring neighbour exchange: rank r sends to r+1 and receives from r-1 (mod N) */
    void (*shift)(agoq_comm *c, void *const *send, void *const *recv, size_t bytes);
    /* max over every rank of |x| (finite elements), the same value returned to all */
    float (*global_absmax)(agoq_comm *c, void *const *x, size_t count);

    /* compute on local rank lr; counts are multiples of q->block for the quantized calls */
    void (*quantize)(agoq_comm *c, int lr, const agoq_qconfig *q, const float *x, size_t count, void *packed);
    void (*dequantize)(agoq_comm *c, int lr, const agoq_qconfig *q, const void *packed, size_t count, float *y);
    /* out = Q(sum_k dequant(in + k*in_stride_bytes)), k < nin (agoq_grad_reduce_ref's order) */
    void (*reduce)(agoq_comm *c, int lr, const agoq_qconfig *q, const void *in, size_t in_stride_bytes,
                   int nin, size_t count, agoq_sum_precision p, void *out);
    /* acc = acc + x elementwise, rounded to bf16 after the add when p is AGOQ_SUM_BF16 */
    void (*add)(agoq_comm *c, int lr, float *acc, const float *x, size_t count, agoq_sum_precision p);
    /* out = encode_dt(x * mul) (fp8: RNE, saturating) / y = decode_dt(in) * mul */
    void (*encode)(agoq_comm *c, int lr, agoq_dtype dt, const float *x, size_t count, float mul, void *out);
    void (*decode)(agoq_comm *c, int lr, agoq_dtype dt, const void *in, size_t count, float mul, float *y);
} agoq_comm_ops;

struct agoq_comm {
    const agoq_comm_ops *ops;
    const char *backend; /* "cpu" | "cuda-local" | "nccl" | "nccl-mpi" */
    int nranks;          /* global rank count N */
    int nlocal;          /* ranks this process drives */
    int rank0;           /* global rank of local rank 0 (local ranks are consecutive) */
    void *impl;          /* backend state */
};

agoq_comm *agoq_comm_cpu_create(int nranks);
void agoq_comm_cpu_destroy(agoq_comm *c);
/* The data movement of communicators whose ranks all live in this process (cpu, cuda-local):
 * the all-to-all, all-gather and ring-shift patterns as c->ops->copy calls, rank by rank
 * (comm_cpu.c). */
void agoq_local_alltoall(agoq_comm *c, void *const *send, void *const *recv, size_t bytes, agoq_comm_group g);
void agoq_local_allgather(agoq_comm *c, void *const *send, void *const *recv, size_t bytes);
void agoq_local_shift(agoq_comm *c, void *const *send, void *const *recv, size_t bytes);
#if AGOQ_HAVE_CUDA
/* cuda-local: nranks simulated ranks whose buffers all live on GPU 0, one non-blocking stream
 * shared by every rank (calls execute in the order they are made), the cpu backend's movement
 * and ring model with device copies and kernels, the nccl backend's compute kernels: the cpu
 * backend's bits, at GPU speed (comm_cuda_local.cu). NULL after one line when no GPU is
 * visible or nranks is outside [1, 64]. */
agoq_comm *agoq_comm_cuda_local_create(int nranks);
void agoq_comm_cuda_local_destroy(agoq_comm *c);
/* NCCL over every visible GPU of this process (ncclCommInitAll), or under an MPI build and
 * mpirun, one GPU per process with the unique id broadcast over MPI. ngpus 0 = all visible;
 * asking for more than are visible is an error (NULL, message printed). */
agoq_comm *agoq_comm_nccl_create(int ngpus);
void agoq_comm_nccl_destroy(agoq_comm *c);
#endif
/* Rank count of the nccl backend by default: the MPI world size under an MPI build, else the
 * visible GPUs (1 without CUDA). And this process's MPI rank (0 without MPI): only rank 0
 * writes results. */
int agoq_coll_default_ranks(void);
int agoq_coll_process_rank(void);
void agoq_coll_mpi_world(int *rank, int *size); /* (0, 1) without MPI */
void agoq_coll_mpi_bcast(void *buf, size_t bytes); /* from world rank 0; no-op without MPI */

/* Phases an algorithm reports time in (the driver syncs at each boundary when timing them). */
typedef enum { AGOQ_PH_QUANT, AGOQ_PH_COMM, AGOQ_PH_REDUCE, AGOQ_PH_DEQUANT, AGOQ_PH_COUNT } agoq_coll_phase;
extern const char *const agoq_coll_phase_names[AGOQ_PH_COUNT];

/* One run of a collective: per local rank, `in` (shard*N floats, zero padded) and `out`
 * (shard*N floats for all-reduce, shard for reduce-scatter). Algorithms allocate their scratch
 * through the comm and free it before returning. */
typedef struct {
    agoq_comm *comm;
    const agoq_coll_config *cfg;
    size_t shard;          /* elements per shard */
    float **in, **out;     /* [nlocal] */
    int time_phases;       /* sync + clock at phase boundaries */
    double phase_s[AGOQ_PH_COUNT];
    int cur_phase;
    double phase_t0;
    /* scratch kept across executes, so that timed runs never allocate (cudaMalloc/cudaFree
     * synchronise the device) */
    struct { size_t bytes; void **bufs; int used; } scratch[8];
    int nscratch;
} agoq_coll_run;

void agoq_phase(agoq_coll_run *run, agoq_coll_phase ph); /* ends the current phase, starts ph */
void agoq_phase_end(agoq_coll_run *run);
/* One buffer of `bytes` per local rank (array of nlocal pointers), zeroed when first made and
 * reused by later executes of the same run: algorithms must write before they read.
 * agoq_scratch_free hands it back to the run; agoq_coll_run_release frees every buffer. */
void **agoq_scratch(agoq_coll_run *run, size_t bytes);
void agoq_scratch_free(agoq_coll_run *run, void **bufs);
void agoq_coll_run_release(agoq_coll_run *run);

/* q with the stochastic-rounding seed of (global rank, step): independent draws per quantization
 * (round-to-nearest is unaffected). */
agoq_qconfig agoq_step_qconfig(const agoq_qconfig *q, int rank, int step);
/* Common tail of the quantized algorithms: red[lr] holds the packed, requantized own shard of
 * local rank lr; reduce-scatter dequantizes it, all-reduce all-gathers every packed shard and
 * dequantizes all of them. */
void agoq_quantized_tail(agoq_coll_run *run, void **red);

/* The algorithms, one file each. */
int agoq_algo_native(agoq_coll_run *run); /* fp32, bf16: algo_native.c */
int agoq_algo_agoq(agoq_coll_run *run);   /* algo_agoq.c */
int agoq_algo_qgz(agoq_coll_run *run);    /* algo_qgz.c */
int agoq_algo_ring_q(agoq_coll_run *run); /* algo_ring_q.c */
int agoq_algo_fp8lm(agoq_coll_run *run);  /* algo_fp8lm.c */

/* Runs cfg's algorithm: dispatch + phase bookkeeping. 0 or -1. */
int agoq_coll_execute(agoq_coll_run *run);
/* Analytic per-rank wire bytes and quantization count of cfg for N ranks and a shard. */
agoq_coll_info agoq_coll_describe(const agoq_coll_config *cfg, int nranks, size_t shard);

#ifdef __cplusplus
}
#endif
#endif
