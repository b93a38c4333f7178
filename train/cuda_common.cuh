/* Internal to the cuda backend of the training path (train/ops_cuda.cu, layers_cuda.cu,
 * dp_cuda.cu): its state, its growable scratch, launch helpers and warp reductions.
 * Everything runs on the legacy default stream (stream 0): kernels, cuBLAS, the quantizers of
 * kernels/quant/quant_cuda.h (stream NULL) and the synchronous copies are ordered by program order. */
#ifndef AGOQ_TRAIN_CUDA_COMMON_CUH
#define AGOQ_TRAIN_CUDA_COMMON_CUH
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/common.h"
#include "train/ops.h"

/* Scratch buffers, one per use, grown (never shrunk) on first need. */
enum {
    SCR_HEADS_QKV,  /* attention: q, k, v as (B, NH, T, HD) */
    SCR_HEADS_DQKV, /* attention backward: dq, dk, dv as (B, NH, T, HD) */
    SCR_HEADS_Y,    /* attention: y or dy as (B, NH, T, HD) */
    SCR_DATT,       /* attention backward: d probabilities (B, NH, T, T) */
    SCR_ROWS,       /* per-row values: RMSNorm rstd, cross-entropy losses (double) */
    SCR_PARTIAL,    /* per-group partial sums: RMSNorm dw, sum of squares */
    SCR_PAD,        /* act_store: rows padded to a whole number of blocks */
    SCR_QT,         /* act_store: the quantized planes */
    SCR_DP_PAD,     /* agoq8: the ranks' gradients zero-padded to whole shards */
    SCR_DP_SEND,    /* agoq8: every rank's quantized chunks (R x R packed) */
    SCR_DP_RED,     /* agoq8: the requantized shard sums (R packed) */
    SCR_DP_OUT,     /* agoq8: the dequantized all-reduce result */
    SCR_SCALARS,    /* a few device scalars (loss, sum of squares, absmax) */
    SCR_COUNT
};

struct cuda_state {
    cublasHandle_t blas;
    void *scr[SCR_COUNT];
    size_t scr_bytes[SCR_COUNT];
    float2 *rope;          /* (T, HD/2) of (cos, sin) from layers.c's tr_rope_cs */
    int rope_t, rope_hd;
    float rope_base;
    train_grad_mode mode;  /* the all-reduce of reduce_mean (reduce_init) */
    agoq_qconfig wire;
    int ranks;
};

static inline cuda_state *cst(train_dev *d) { return (cuda_state *)d->impl; }
/* Scratch `which` of at least `bytes` (contents undefined; valid until the next request of the
 * same buffer). Growing frees the old buffer, which synchronises the device first. */
void *cuda_scratch(train_dev *d, int which, size_t bytes);

constexpr int kThreads = 256;   /* threads per block of the elementwise and row kernels */
constexpr int kWarps = kThreads / 32;
/* Blocks for n work items of `per_block` each (grid-stride loops cover any rest). */
static inline unsigned blocks_for(size_t n, size_t per_block) {
    size_t b = (n + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : b > 65535u * 32u ? 65535u * 32u : b);
}
#define GRID_STRIDE(i, n)                                                                      \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Row-major GEMM, batched: C_b (M, N) = alpha op(A_b) @ op(B_b) + beta C_b for b < batch, every
 * matrix packed (leading dimension = its row length), A_b = A + b * sA etc. fp32 in, out and
 * compute (cuBLAS default math: no TF32). ops_cuda.cu. */
void cuda_gemm(train_dev *d, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, long long sa,
               const float *b, long long sb, float beta, float *c, long long sc, int batch);

/* layers_cuda.cu */
void cu_rmsnorm_fwd(train_dev *d, float *y, const float *x, const float *w, int rows, int c, float eps);
void cu_rmsnorm_bwd(train_dev *d, float *dx, float *dw, const float *dy, const float *x, const float *w, int rows,
                    int c, float eps);
void cu_rope(train_dev *d, float *qkv, int b, int t, int c, int nh, float base, int inverse);
void cu_attention_fwd(train_dev *d, float *y, float *att, const float *qkv, int b, int t, int c, int nh);
void cu_attention_bwd(train_dev *d, float *dqkv, const float *dy, const float *qkv, const float *att, int b, int t,
                      int c, int nh);
void cu_swiglu_fwd(train_dev *d, float *s, const float *gu, int rows, int f);
void cu_swiglu_bwd(train_dev *d, float *dgu, const float *ds, const float *gu, int rows, int f);
void cu_embed_fwd(train_dev *d, float *out, const float *wte, const int *tokens, int bt, int c);
void cu_embed_bwd(train_dev *d, float *dwte, const float *dout, const int *tokens, int bt, int c, int v);
double cu_cross_entropy(train_dev *d, float *dlogits, const float *logits, const int *targets, int rows, int v,
                        float dscale);
/* sum of n doubles in a fixed order (one block), result left in *out (device) */
void cu_sum_doubles(const double *x, int n, double *out);

/* dp_cuda.cu */
int cu_reduce_init(train_dev *d, train_grad_mode mode, const agoq_qconfig *q, int ranks, size_t max_n);
void cu_reduce_mean(train_dev *d, const float *const *g, size_t n, float *mean);
void cu_mean_fp32(train_dev *d, const float *const *g, int ranks, size_t n, float *mean);
#endif
