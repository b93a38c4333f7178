/* Quantized gradient collectives: public interface (issue #4).
 *
 * One algorithm implementation runs on two backends (driver.h): `cpu` simulates N ranks in one
 * process with a buffer per rank and the C reference kernels (so every algorithm is tested in
 * CI with 1..64 ranks), `nccl` drives real NCCL communicators on GPUs. This header is the part
 * other modules call: the algorithm table and a simulated-rank reduce for training code.
 *
 * Algorithms (sum over ranks; `n` fp32 elements per rank):
 *   fp32, bf16  NCCL ring reduce-scatter / all-reduce in that dtype (the baselines; on cpu the
 *               ring is simulated: the partial sum is rounded to the dtype at every hop)
 *   agoq        quantize each destination chunk per block -> all-to-all -> dequantize + local
 *               sum (fp32, or bf16 as the paper's released code) -> requantize -> [all-gather of
 *               the 8-bit result -> dequantize]; every element is quantized twice whatever N
 *   qgz         ZeRO++ qgZ style: int4 blocks, all-to-all inside a node, dequant-sum-requant,
 *               all-to-all across nodes, dequant-sum (3 quantizations for all-reduce)
 *   ring_q      naive quantized ring reduce-scatter: dequant, add, requantize at every hop
 *               (N-1 quantizations: the error growth AGoQ avoids)
 *   fp8lm       FP8-LM: one global scale s = N * global_absmax / fp8_max shared by all ranks so
 *               NCCL sums fp8 directly (ncclFloat8e4m3/e5m2, rounded to fp8 at every hop)
 *
 * Shard layout: the n elements are split into N shards of `shard` elements (ceil(n/N), rounded
 * up to a multiple of the block for the quantized algorithms); the padded tail is zero and never
 * returned. Rank r owns elements [r*shard, min((r+1)*shard, n)). */
#ifndef AGOQ_COLLECTIVES_H
#define AGOQ_COLLECTIVES_H
#include <stddef.h>

#include "kernels/quant/formats.h"
#include "kernels/grad8/grad8.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AGOQ_ALGO_FP32,
    AGOQ_ALGO_BF16,
    AGOQ_ALGO_AGOQ,
    AGOQ_ALGO_QGZ,
    AGOQ_ALGO_RING_Q,
    AGOQ_ALGO_FP8LM,
    AGOQ_ALGO_COUNT
} agoq_coll_algo;

typedef enum { AGOQ_COLL_ALLREDUCE, AGOQ_COLL_REDUCE_SCATTER } agoq_coll_op;

typedef struct {
    agoq_coll_algo algo;
    agoq_coll_op op;
    agoq_qconfig q;          /* wire format: agoq/ring_q (int8, fp8_e4m3, fp8_e5m2, dyn8, ...), qgz
                              * (int4); fp8lm uses only q.fmt (fp8_e4m3 or fp8_e5m2) */
    agoq_sum_precision sum;  /* local sum of agoq/qgz/ring_q: fp32 (paper) or bf16 (released code) */
    int ranks_per_node;      /* qgz hierarchy; must divide the rank count; 0: all ranks one node */
} agoq_coll_config;

typedef struct {
    const char *name;        /* CLI / JSON label */
    const char *desc;        /* one line for --help and `agoq list` */
    int quantized;           /* uses cfg.q */
    agoq_format default_fmt; /* wire format when none is given (quantized algorithms) */
} agoq_coll_algo_info;

extern const agoq_coll_algo_info agoq_coll_algos[AGOQ_ALGO_COUNT];
int agoq_coll_algo_by_name(const char *name); /* -1 when unknown */
const char *agoq_coll_algo_names(void);       /* "fp32, bf16, agoq, ..." for error messages */
const char *agoq_coll_op_name(agoq_coll_op op); /* "allreduce" | "reduce_scatter" */
int agoq_coll_op_by_name(const char *name);   /* -1 when unknown */

/* The algorithm's defaults: its wire format with that format's block, fp32 scales, RNE, fp32 sum. */
agoq_coll_config agoq_coll_config_default(agoq_coll_algo algo, agoq_coll_op op);
/* 0, or prints what is wrong (format not allowed for the algorithm, ranks_per_node, ...) and -1. */
int agoq_coll_config_check(const agoq_coll_config *cfg, int nranks);
/* Elements per rank's shard (see the layout above). */
size_t agoq_coll_shard_count(const agoq_coll_config *cfg, int nranks, size_t n);

typedef struct {
    size_t shard_count;       /* elements per shard, padding included */
    double wire_bytes;        /* bytes each rank sends (largest over ranks), scales included */
    int quantizations;        /* times an element was quantized on its way (0 for fp32) */
} agoq_coll_info;

/* Runs the collective over nranks simulated ranks, in place: rank_bufs[r] holds rank r's n
 * input elements; on return, all-reduce leaves the (approximate) sum in every buffer,
 * reduce-scatter leaves it in each rank's own shard range (the rest of the buffer is then
 * unspecified). info may be NULL. Deterministic; 0 or -1 (error printed). On the cpu backend. */
int agoq_sim_collective(const agoq_coll_config *cfg, float *const *rank_bufs, int nranks, size_t n,
                        agoq_coll_info *info);

/* For data-parallel training: all-reduce (sum) of rank_bufs[0..nranks-1] in place with algorithm
 * `algo` ("fp32", "bf16", "agoq", "qgz", "ring_q", "fp8lm"); q NULL = the algorithm's default
 * wire format; bf16_sum selects the bf16 local sum. 0 or -1. On the cpu backend. */
int agoq_sim_allreduce(const char *algo, const agoq_qconfig *q, int bf16_sum, float *const *rank_bufs,
                       int nranks, size_t n);

/* The same on a chosen backend, kept open across calls (driver.h's communicator):
 *   "cpu"         host buffers, the C reference kernels
 *   "cuda-local"  every rank's buffers on GPU 0, the CUDA kernels, one stream (CUDA builds with
 *                 a visible GPU): the cpu backend's bits, at GPU speed
 * agoq_sim_comm_open returns NULL after one line when the backend is unknown or cannot run here. */
#define AGOQ_SIM_BACKENDS "cpu, cuda-local"
typedef struct agoq_comm agoq_comm;
agoq_comm *agoq_sim_comm_open(const char *backend, int nranks);
void agoq_sim_comm_close(agoq_comm *c);
/* agoq_sim_collective on c's ranks with inputs and outputs apart (host memory, uploaded, run,
 * downloaded): in[r] is rank r's n elements; out[r] receives what rank_bufs[r] would (out may
 * be in; out[r] NULL: rank r's result is not brought back). */
int agoq_sim_collective_on(agoq_comm *c, const agoq_coll_config *cfg, const float *const *in, float *const *out,
                           size_t n, agoq_coll_info *info);
int agoq_sim_allreduce_on(agoq_comm *c, const char *algo, const agoq_qconfig *q, int bf16_sum,
                          const float *const *in, float *const *out, size_t n);

/* Micro-batch gradient accumulation in 8 bits, as the paper does before the collective:
 * acc = Q(0); for m: acc = Q(dequant(acc) + micro[m]); out = dequant(acc). 0 or -1. */
int agoq_accumulate_quantized(const agoq_qconfig *q, const float *const *micro, int nmicro, size_t n,
                              float *out);

#ifdef __cplusplus
}
#endif
#endif
