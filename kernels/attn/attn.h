/* Fused flash attention (scaled dot-product attention, SDPA) through cuDNN's graph backend API:
 * causal, grouped-query (kv_heads divides heads), bf16 in/out, fp32 softmax statistics.
 * Forward keeps only O and the row log-sum-exp (lse) for backward, as Transformer Engine and
 * PyTorch's cuDNN/flash backends do.
 *
 * Layout (bf16 as uint16_t, element strides): token t = b_i * s + s_i of a micro-batch of b
 * sequences of s tokens. q of head h, token t, dim j is q[t * q_row + h * d + j]; k, v likewise
 * with kv_row and kv_heads; o and do are [t * o_row + h * d + j]. With a packed QKV GEMM output
 * [tokens, (heads + 2 kv_heads) d] one passes q = qkv, k = qkv + heads*d, v = k + kv_heads*d and
 * q_row = kv_row = (heads + 2 kv_heads) d. dq, dk, dv use the strides of q, k, v (so a packed dqkv
 * buffer works). lse is fp32 [b, heads, s] contiguous.
 * Math: P = softmax(scale * q k^T + causal mask), o = P v, lse = log(sum exp(scale q k^T - mask)).
 *
 * Pointers (q, k, v, o, dout, dq, dk, dv) must be 16-byte aligned and head_dim, q_row, kv_row,
 * o_row multiples of 8; head_dim <= 128; s >= 2.
 * Backward takes the o and lse of the forward call on the same q, k, v.
 *
 * Reference: agoq_attn_ref_fwd / _bwd (attn_ref.c, double math on the bf16 inputs), used by
 * tests/cuda/attn/test_attn_cuda.c to bound cuDNN's results (tolerances derived in the test).
 * CUDA + cuDNN builds (AGOQ_HAVE_CUDNN=1) implement the rest (attn_cudnn.cu, attn_bench.cu);
 * without cuDNN agoq_attn_available says so and agoq_attn_create fails with that one line.
 * Not thread safe: one agoq_attn (cuDNN handle, plans) per thread. */
#ifndef AGOQ_ATTN_H
#define AGOQ_ATTN_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int b, s, heads, kv_heads, head_dim;
    int64_t q_row, kv_row, o_row; /* elements between consecutive tokens */
    float scale;                  /* usually 1/sqrt(head_dim) */
    int causal;                   /* 1: token i attends to tokens <= i of its sequence */
} agoq_attn_desc;

typedef struct agoq_attn agoq_attn; /* built graphs + plans for one desc (opaque) */

/* 0 when cuDNN is usable on the current device (library loaded, version >= 9.0, sm >= 80);
 * else -1 with the reason in why ("built without cuDNN (set CUDNN_HOME)", "cuDNN 8.9 < 9.0", ...). */
int agoq_attn_available(char *why, size_t len);
/* cuDNN's runtime version (e.g. 91400), 0 when unavailable. */
long agoq_attn_cudnn_version(void);
/* Builds the forward and backward graphs for d on the current device and keeps one execution
 * plan for each (cuDNN handle inside; allocates a few bytes of device memory when the backward
 * needs its padding-mask workaround). 0, or -1 after one line on stderr naming what cuDNN refused. */
int agoq_attn_create(const agoq_attn_desc *d, agoq_attn **out);
/* Workspace both calls need (bytes; device memory the caller provides, 256-byte aligned; the
 * backward's share holds an fp32 dQ accumulator [b, heads, s, head_dim] and rowsum(dO * O)).
 * fwd / bwd enqueue on stream (a cudaStream_t; NULL: default stream), allocate nothing and
 * return 0, or -1 after one line on stderr. */
size_t agoq_attn_workspace_bytes(const agoq_attn *a);
int agoq_attn_fwd(agoq_attn *a, const uint16_t *q, const uint16_t *k, const uint16_t *v, uint16_t *o, float *lse,
                  void *workspace, void *stream);
int agoq_attn_bwd(agoq_attn *a, const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *o,
                  const uint16_t *dout, const float *lse, uint16_t *dq, uint16_t *dk, uint16_t *dv, void *workspace,
                  void *stream);
void agoq_attn_destroy(agoq_attn *a);

/* Benchmark at d's shape with contiguous layouts (d's row strides are ignored): 3 warm-up
 * calls, then iters calls of fwd and of bwd timed with CUDA events (attn_bench.cu).
 * flop: causal forward 2*2*b*heads*s*s*head_dim/2 (not halved when !causal), backward 2.5x. */
typedef struct {
    double fwd_min_ms, fwd_med_ms, bwd_min_ms, bwd_med_ms;
    double fwd_flop, bwd_flop; /* per call */
    size_t workspace_bytes;
    double create_ms; /* wall time of agoq_attn_create (both graphs, heuristics, plans) */
} agoq_attn_timing;
int agoq_attn_bench(const agoq_attn_desc *d, int iters, agoq_attn_timing *t);

/* Host references over the same layouts (fp32 outputs; lse may be NULL). */
void agoq_attn_ref_fwd(const agoq_attn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, float *o,
                       float *lse);
void agoq_attn_ref_bwd(const agoq_attn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                       const uint16_t *dout, float *dq, float *dk, float *dv);

#ifdef __cplusplus
}
#endif
#endif
