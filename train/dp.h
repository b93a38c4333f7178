/* Data-parallel gradient reduction over R simulated ranks: every rank computed the gradient of
 * its own micro-batch; the optimizer sees their mean as the chosen all-reduce delivers it.
 *   fp32   exact: fp32 sum in rank order, times 1/R
 *   agoq8  AGoQ: each rank's gradient quantized to an 8-bit block format (int8 block 256 by
 *          default) -> all-to-all -> dequantized, summed in fp32, requantized once -> all-gather
 *          -> dequantized: collectives.h's agoq_sim_allreduce("agoq"), whose reduce is
 *          kernels/grad8/grad8.h's agoq_grad_reduce_ref
 *   fp8lm  FP8-LM baseline, agoq_sim_allreduce("fp8lm"): one scale shared by all ranks per
 *          tensor, s = R * max_r |g_r| / 448, so the fp8 sum cannot overflow; ranks send fp8 e4m3
 *          codes of g_r / s and the simulated ring rounds the partial sum to fp8 at every hop
 *          (NCCL reducing an fp8 buffer); mean = sum / R
 * Per tensor: call once for each parameter tensor (scales never span two tensors).
 * Where the quantized all-reduces run: the collectives backend named at init ("cpu": the C
 * references on the host; "cuda-local": the same algorithm on GPU 0, bit-identical, what the
 * trainer uses when its model is the step engine); the ranks' gradients are host arrays either
 * way (uploaded, reduced, rank 0's result downloaded). fp32 is the exact mean on the host. */
#ifndef AGOQ_TRAIN_DP_H
#define AGOQ_TRAIN_DP_H
#include <stddef.h>

#include "collectives/collectives.h"
#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRAIN_MAX_RANKS 64

typedef enum { GRAD_FP32, GRAD_AGOQ8, GRAD_FP8LM, GRAD_MODE_COUNT } train_grad_mode;
extern const char *const train_grad_mode_names[GRAD_MODE_COUNT];
#define TRAIN_GRAD_MODE_NAMES "fp32, agoq8, fp8lm"
int train_grad_mode_by_name(const char *name); /* -1 when unknown */

typedef struct {
    train_grad_mode mode;
    agoq_qconfig q;      /* wire format: agoq8's, or fp8 e4m3 for fp8lm */
    int ranks;
    size_t cap;          /* largest tensor */
    float *bufs;         /* quantized modes: (cap) rank 0's all-reduce result */
    agoq_comm *comm;     /* quantized modes: the simulated ranks' communicator */
} train_reducer;

/* Checks (mode, q, ranks) as the collectives module will run them and returns the wire format
 * in *wire (agoq8: q; fp8lm: fp8 e4m3; fp32: unused). 0 or -1 with a message. Shared by both
 * backends' reducers (the cuda one is ops.h's reduce_init). */
int train_reducer_check(train_grad_mode mode, const agoq_qconfig *q, int ranks, agoq_qconfig *wire);
/* backend: the collectives backend of the quantized modes (AGOQ_SIM_BACKENDS: "cpu" or
 * "cuda-local"); a backend that cannot run here fails with its one line. */
int train_reducer_init(train_reducer *r, train_grad_mode mode, const agoq_qconfig *q, int ranks, size_t max_n,
                       const char *backend);
void train_reducer_free(train_reducer *r);
/* mean (n) = the mean of g[0 .. ranks-1] (n elements each) as `mode` delivers it. */
void train_reduce_mean(train_reducer *r, const float *const *g, size_t n, float *mean);
/* The exact mean: acc = g[0][i] + g[1][i] + ... in rank order (fp32), mean = acc * (1/R). */
void train_mean_fp32(const float *const *g, int ranks, size_t n, float *mean);

#ifdef __cplusplus
}
#endif
#endif
