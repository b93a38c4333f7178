/* The data-parallel all-reduces of dp.h on one GPU: R simulated ranks whose gradients are R
 * device buffers, reduced with the algorithms of the collectives module step for step, so that
 * the mean equals train_reduce_mean's (agoq_sim_allreduce on the CPU) bit for bit:
 *   fp32   acc = g_0 + g_1 + ... in rank order, times 1/R (one kernel)
 *   agoq8  collectives/algo_agoq.c: the n elements split into R shards (block-aligned, zero
 *          padded: agoq_coll_shard_count); rank r quantizes its shard j with
 *          agoq_cuda_quantize_f32 (step seed agoq_step_qconfig(q, r, j)) into the packed layout
 *          the collectives send (agoq_packed); the all-to-all hands shard j of every rank to
 *          rank j, which is only a choice of views here; agoq_cuda_grad_reduce (dequantize,
 *          fp32 sum in rank order, requantize with agoq_step_qconfig(q, j, R)) per shard; the
 *          all-gather is again views; agoq_cuda_dequantize_f32 of every shard; times 1/R
 *   fp8lm  collectives/algo_fp8lm.c over comm_cpu.c's ring: s = R max|g| / 448 (finite values,
 *          the max taken on the device, s on the host with the CPU's expression); every element
 *          encoded fp8 e4m3 (x * (1/s), RNE, saturating); the partial sum of chunk j starts at
 *          rank j+1 and is rounded to fp8 after every hop; decoded times s; times 1/R
 * Everything runs on the device except s and the loop over shards (R + R^2 kernel launches per
 * tensor for agoq8; one tensor at a time, as dp.h asks). */
#include <string.h>

#include "collectives/driver.h"
#include "kernels/grad8/grad8_cuda.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_math.h"
#include "train/cuda_common.cuh"

/* Host array of rank pointers, passed by value to the kernels. */
typedef struct {
    const float *g[TRAIN_MAX_RANKS];
} rank_ptrs;

static rank_ptrs ptrs_of(const float *const *g, int ranks) {
    rank_ptrs p;
    memset(&p, 0, sizeof p);
    for (int r = 0; r < ranks; r++) p.g[r] = g[r];
    return p;
}

/* ---- fp32 ---- */
__global__ void k_mean_fp32(rank_ptrs p, int ranks, size_t n, float inv_r, float *mean) {
    GRID_STRIDE(i, n) {
        float acc = p.g[0][i];
        for (int k = 1; k < ranks; k++) acc += p.g[k][i];
        mean[i] = acc * inv_r;
    }
}

void cu_mean_fp32(train_dev *d, const float *const *g, int ranks, size_t n, float *mean) {
    if (!n) return;
    k_mean_fp32<<<blocks_for(n, kThreads), kThreads>>>(ptrs_of(g, ranks), ranks, n, 1.0f / (float)ranks, mean);
    cudaCheckLaunch();
}

/* ---- agoq8 ---- */
/* A device qtensor view of one packed chunk (collectives/driver.h's layout). */
static agoq_cuda_qtensor packed_view(const agoq_qconfig *q, void *packed, size_t count) {
    agoq_packed_layout l = agoq_packed(q, count);
    agoq_cuda_qtensor t;
    t.codes = (uint8_t *)packed;
    t.scales = t.codes + l.scales_off;
    t.zeros = agoq_has_zeros(q) ? t.codes + l.zeros_off : NULL;
    t.n = count;
    return t;
}

/* pad[r][0 .. total) = g_r then zeros: the zero-padded rank buffers the collectives reduce */
__global__ void k_pad_ranks(float *pad, rank_ptrs p, int ranks, size_t n, size_t total) {
    GRID_STRIDE(i, (size_t)ranks * total) {
        const size_t r = i / total, e = i % total;
        pad[i] = e < n ? p.g[r][e] : 0.0f;
    }
}

__global__ void k_scale_into(float *dst, const float *src, size_t n, float s) {
    GRID_STRIDE(i, n) dst[i] = src[i] * s;
}

static void must(int rc, const char *what) {
    if (rc) agoq_die("train cuda: %s failed in the agoq8 all-reduce (see above)", what);
}

static void agoq8_mean(train_dev *d, const float *const *g, size_t n, float *mean) {
    const cuda_state *s = cst(d);
    const agoq_qconfig *q = &s->wire;
    const int R = s->ranks;
    agoq_coll_config cc = agoq_coll_config_default(AGOQ_ALGO_AGOQ, AGOQ_COLL_ALLREDUCE);
    cc.q = *q;
    const size_t shard = agoq_coll_shard_count(&cc, R, n), total = shard * (size_t)R;
    const size_t qb = agoq_packed(q, shard).bytes;
    float *pad = (float *)cuda_scratch(d, SCR_DP_PAD, (size_t)R * total * sizeof(float));
    uint8_t *send = (uint8_t *)cuda_scratch(d, SCR_DP_SEND, (size_t)R * R * qb + 16);
    uint8_t *red = (uint8_t *)cuda_scratch(d, SCR_DP_RED, (size_t)R * qb + 16);
    float *out = (float *)cuda_scratch(d, SCR_DP_OUT, total * sizeof(float));
    k_pad_ranks<<<blocks_for((size_t)R * total, kThreads), kThreads>>>(pad, ptrs_of(g, R), R, n, total);
    cudaCheckLaunch();
    for (int r = 0; r < R; r++) /* send[r][j]: rank r's shard j, for rank j */
        for (int j = 0; j < R; j++) {
            agoq_qconfig qs = agoq_step_qconfig(q, r, j);
            agoq_cuda_qtensor t = packed_view(q, send + ((size_t)r * R + j) * qb, shard);
            must(agoq_cuda_quantize_f32(&qs, pad + (size_t)r * total + (size_t)j * shard, shard, &t, NULL),
                 "agoq_cuda_quantize_f32");
        }
    for (int j = 0; j < R; j++) { /* rank j reduces what every rank k sent it, k in order */
        agoq_cuda_qtensor in[AGOQ_CUDA_MAX_CHUNKS];
        for (int k = 0; k < R; k++) in[k] = packed_view(q, send + ((size_t)k * R + j) * qb, shard);
        agoq_qconfig qs = agoq_step_qconfig(q, j, R);
        agoq_cuda_qtensor o = packed_view(q, red + (size_t)j * qb, shard);
        must(agoq_cuda_grad_reduce(&qs, in, R, AGOQ_SUM_FP32, &o, NULL, NULL), "agoq_cuda_grad_reduce");
    }
    for (int j = 0; j < R; j++) { /* the all-gathered shards, dequantized */
        agoq_cuda_qtensor t = packed_view(q, red + (size_t)j * qb, shard);
        must(agoq_cuda_dequantize_f32(q, &t, out + (size_t)j * shard, NULL), "agoq_cuda_dequantize_f32");
    }
    k_scale_into<<<blocks_for(n, kThreads), kThreads>>>(mean, out, n, 1.0f / (float)R);
    cudaCheckLaunch();
}

/* ---- fp8lm ---- */
/* max |g| over every rank's finite elements; non-negative floats order like their bits */
__global__ void k_absmax(rank_ptrs p, int ranks, size_t n, unsigned int *out) {
    float m = 0.0f;
    for (int r = 0; r < ranks; r++) GRID_STRIDE(i, n) if (agoq_isfinite(p.g[r][i])) m = fmaxf(m, fabsf(p.g[r][i]));
    m = warp_max(m);
    if ((threadIdx.x & 31) == 0) atomicMax(out, __float_as_uint(m));
}

/* Element i lies in chunk j = i / chunk of the ring all-reduce; its partial sum starts at rank
 * j+1 and visits j+2, ..., j (mod R), stored as fp8 after every add (comm_cpu.c's ring_chunk). */
__global__ void k_fp8lm_mean(rank_ptrs p, int ranks, size_t n, size_t chunk, float mul, float s, float inv_r,
                             int e5m2, float *mean) {
    GRID_STRIDE(i, n) {
        const int j = (int)(i / chunk);
        float acc = agoq_fp8_decode(agoq_fp8_encode_rne(p.g[(j + 1) % ranks][i] * mul, e5m2), e5m2);
        for (int k = 2; k <= ranks; k++) {
            float x = agoq_fp8_decode(agoq_fp8_encode_rne(p.g[(j + k) % ranks][i] * mul, e5m2), e5m2);
            acc = agoq_fp8_decode(agoq_fp8_encode_rne(acc + x, e5m2), e5m2);
        }
        acc = agoq_fp8_decode(agoq_fp8_encode_rne(acc, e5m2), e5m2); /* the ring's final store */
        mean[i] = acc * s * inv_r;
    }
}

static void fp8lm_mean(train_dev *d, const float *const *g, size_t n, float *mean) {
    const cuda_state *st = cst(d);
    const int R = st->ranks, e5m2 = agoq_formats[st->wire.fmt].fp8_mbits == 2;
    agoq_coll_config cc = agoq_coll_config_default(AGOQ_ALGO_FP8LM, AGOQ_COLL_ALLREDUCE);
    cc.q = st->wire;
    /* the driver's layout: shards of ceil(n/R), the ring's chunks of ceil(total/R) */
    const size_t shard = agoq_coll_shard_count(&cc, R, n), total = shard * (size_t)R, chunk = (total + R - 1) / R;
    unsigned int *amax = (unsigned int *)cuda_scratch(d, SCR_SCALARS, 64), bits = 0;
    cudaCheck(cudaMemsetAsync(amax, 0, sizeof *amax, 0));
    k_absmax<<<blocks_for(n, kThreads), kThreads>>>(ptrs_of(g, R), R, n, amax);
    cudaCheckLaunch();
    cudaCheck(cudaMemcpy(&bits, amax, sizeof bits, cudaMemcpyDeviceToHost));
    float m;
    memcpy(&m, &bits, sizeof m);
    const float s = m > 0.0f ? (float)R * m / agoq_formats[st->wire.fmt].qmax : 1.0f; /* algo_fp8lm.c */
    k_fp8lm_mean<<<blocks_for(n, kThreads), kThreads>>>(ptrs_of(g, R), R, n, chunk, 1.0f / s, s, 1.0f / (float)R, e5m2,
                                                        mean);
    cudaCheckLaunch();
}

/* ---- the entries ---- */
int cu_reduce_init(train_dev *d, train_grad_mode mode, const agoq_qconfig *q, int ranks, size_t max_n) {
    cuda_state *s = cst(d);
    if (train_reducer_check(mode, q, ranks, &s->wire)) return -1;
    AGOQ_REQUIRE(mode != GRAD_AGOQ8 || ranks <= AGOQ_CUDA_MAX_CHUNKS, "train cuda: agoq8 takes at most %d ranks, not %d",
                 AGOQ_CUDA_MAX_CHUNKS, ranks);
    s->mode = mode;
    s->ranks = ranks;
    return 0; /* scratch grows on the first reduction */
}

void cu_reduce_mean(train_dev *d, const float *const *g, size_t n, float *mean) {
    if (!n) return;
    switch (cst(d)->mode) {
    case GRAD_FP32: cu_mean_fp32(d, g, cst(d)->ranks, n, mean); break;
    case GRAD_AGOQ8: agoq8_mean(d, g, n, mean); break;
    case GRAD_FP8LM: fp8lm_mean(d, g, n, mean); break;
    default: agoq_die("train cuda: gradient mode %d unknown", (int)cst(d)->mode);
    }
}
