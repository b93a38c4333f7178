/* What the GPU communicators share (comm_nccl.cu: NCCL over real GPUs; comm_cuda_local.cu:
 * simulated ranks on one GPU): the per-rank state every GPU backend's impl starts with, the
 * bounded waits on the ranks' streams, the memory calls that are copies on a rank's stream, and
 * every compute call of agoq_comm_ops (k1's quantizers, the 8-bit reduce, the elementwise add,
 * encode and decode kernels). CUDA translation units only (comm_cuda.cu implements it).
 *
 * Every call is issued on the rank's own stream; waits go through agoq_comm_wait (watchdog.h):
 * a stream still busy after AGOQ_COMM_TIMEOUT_S, a CUDA error, or the backend's asynchronous
 * error (NCCL's ncclCommGetAsyncError) aborts (the backend's hook) and exits 1 with one line
 * naming the rank. */
#ifndef AGOQ_COLL_COMM_CUDA_H
#define AGOQ_COLL_COMM_CUDA_H
#include <cuda_runtime.h>

#include "collectives/driver.h"

#define AGOQ_CUDA_MAX_LOCAL 64

/* The first member of every GPU backend's impl (c->impl points at it). */
typedef struct {
    int dev[AGOQ_CUDA_MAX_LOCAL];             /* device of local rank lr */
    cudaStream_t stream[AGOQ_CUDA_MAX_LOCAL]; /* its stream (cuda-local: one stream for all) */
    unsigned int *amax[AGOQ_CUDA_MAX_LOCAL];  /* one float's bits, for global_absmax */
    /* The backend's asynchronous failure of local rank lr, or NULL (none; may be a NULL hook). */
    const char *(*async_error)(agoq_comm *c, int lr);
    /* Aborts every local communicator after a failed wait (NULL: nothing to abort). */
    void (*abort_all)(agoq_comm *c);
} agoq_cuda_ranks;

static inline agoq_cuda_ranks *agoq_cuda_st(agoq_comm *c) { return (agoq_cuda_ranks *)c->impl; }
void agoq_cuda_on(agoq_comm *c, int lr); /* cudaSetDevice of local rank lr */
unsigned agoq_cuda_grid(size_t n);      /* blocks of 256 threads for a grid-stride loop over n */
/* Waits for local rank lr's stream (lr -1: every local rank) within the timeout; exits 1 with
 * one line naming the rank when it fails or hangs. */
void agoq_cuda_wait(agoq_comm *c, int lr, const char *what);
/* global_absmax's first step: |x| max of local rank lr's x into amax[lr] (zeroed first when
 * reset), on its stream; and the value of amax[lr] once its stream is done. */
void agoq_cuda_absmax(agoq_comm *c, int lr, const float *x, size_t count, int reset);
float agoq_cuda_amax_value(agoq_comm *c, int lr);

/* agoq_comm_ops entries (driver.h) on rank lr's stream: upload and download wait for the copy. */
void agoq_cuda_upload(agoq_comm *c, int lr, void *dst, const void *host, size_t bytes);
void agoq_cuda_download(agoq_comm *c, int lr, void *host, const void *src, size_t bytes);
void agoq_cuda_copy(agoq_comm *c, int lr, void *dst, const void *src, size_t bytes);
void agoq_cuda_zero(agoq_comm *c, int lr, void *dst, size_t bytes);
void agoq_cuda_sync(agoq_comm *c);
void agoq_cuda_quantize(agoq_comm *c, int lr, const agoq_qconfig *q, const float *x, size_t count, void *packed);
void agoq_cuda_dequantize(agoq_comm *c, int lr, const agoq_qconfig *q, const void *packed, size_t count, float *y);
void agoq_cuda_reduce(agoq_comm *c, int lr, const agoq_qconfig *q, const void *in, size_t stride, int nin,
                      size_t count, agoq_sum_precision p, void *out);
void agoq_cuda_add(agoq_comm *c, int lr, float *acc, const float *x, size_t count, agoq_sum_precision p);
void agoq_cuda_encode(agoq_comm *c, int lr, agoq_dtype dt, const float *x, size_t count, float mul, void *out);
void agoq_cuda_decode(agoq_comm *c, int lr, agoq_dtype dt, const void *in, size_t count, float mul, float *y);
#endif
