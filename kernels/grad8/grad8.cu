/* CUDA 8-bit gradient path (grad8.h): micro-batch accumulation and the AGoQ reduce core, each
 * ONE kernel, bit-exact with grad8_ref.c. Both are the generic block-quantize kernels of
 * quant_device.cuh over a value source that decodes the stored planes:
 *   accumulate: v = dequant(acc) (+) g                       (fp32; g fp32 or bf16)
 *   reduce:     v = (+)_r dequant(in[r]), r = 0..N-1 in order (fp32, or bf16 after every add)
 * where (+) is grad8.h's agoq_dequant_add (the value and its scale in one FFMA; the fp32 reduce of
 * asymmetric codes sums the zero points apart, agoq_reduce_zeros_apart),
 * then v is requantized into the output planes (in place for accumulate). Bytes moved per
 * element: accumulate reads bits/8 + sizeof(g) and writes bits/8; reduce reads N*bits/8 and
 * writes bits/8 (+4 with sum_out), plus the scales. */
#include <cuda_runtime.h>
#include <string.h>

#include "core/check.h"
#include "core/common.h"
#include "core/knob.h"
#include "kernels/grad8/grad8_cuda.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_device.cuh"
#include "kernels/quant/quant_launch.cuh"
#include "kernels/quant/quant_ldst.cuh"
#include "kernels/quant/quant_tile.cuh"

/* v[j] = x[j] (+) dequant(group grp)[j] (agoq_dequant_add), rounded to bf16 when BF16: the codes
 * decoded unscaled (scale 1, zero point 0: exact), then one FFMA (+ the zero point's add) each.
 * Returns the group's zero point (0 for symmetric codes); APART leaves it out of the add (the
 * reduce's fp32 sum, grad8.h agoq_reduce_zeros_apart: the caller sums it). */
template <int DEC>
__device__ __forceinline__ float grad_dequant_add8(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                   const uint8_t *codes, const uint8_t *scales, const uint8_t *zeros,
                                                   size_t grp, size_t blk, const float x[8], bool bf16, bool apart,
                                                   float v[8]) {
    const uint64_t packed = agoq_dev_load_group(codes, grp, p.bits);
    const float s = agoq_dev_load_scale(scales, blk, p.bf16_scale);
    const float m = DEC == AGOQ_ENC_INT_ASYM ? agoq_dev_load_scale(zeros, blk, p.bf16_scale) : 0.0f;
    float d[8];
    agoq_dev_decode8<DEC>(p, t, packed, 1.0f, 0.0f, d);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const float y = agoq_dequant_add(x[j], d[j], s, m, DEC == AGOQ_ENC_INT_ASYM && !apart);
        v[j] = bf16 ? agoq_round_bf16(y) : y;
    }
    return m;
}

/* dequant(acc) (+) g for one group; acc planes are the kernel's output (in place). */
template <int DEC, typename TG>
struct src_accumulate {
    static constexpr bool kTable = DEC == AGOQ_ENC_TABLE;
    const uint8_t *codes, *scales, *zeros;
    const TG *g;
    int vec;
    __device__ __forceinline__ void load(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t grp, size_t blk,
                                         size_t e0, int nvalid, bool, float v[8]) const {
        float x[8];
        agoq_dev_load8(g, e0, nvalid, vec, x);
        grad_dequant_add8<DEC>(p, t, codes, scales, zeros, grp, blk, x, false, false, v);
    }
};

/* sum over the chunks in order; the views travel in the kernel's parameter space. */
struct chunk_view {
    const uint8_t *codes, *scales, *zeros;
};
template <int DEC>
struct src_reduce {
    static constexpr bool kTable = DEC == AGOQ_ENC_TABLE;
    chunk_view in[AGOQ_CUDA_MAX_CHUNKS];
    int nin, bf16_sum, vec_sum;
    float *sum_out;
    __device__ __forceinline__ void load(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t grp, size_t blk,
                                         size_t e0, int nvalid, bool last, float v[8]) const {
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = 0.0f;
        const bool apart = agoq_reduce_zeros_apart(DEC == AGOQ_ENC_INT_ASYM, bf16_sum ? AGOQ_SUM_BF16 : AGOQ_SUM_FP32);
        float zsum = 0.0f;
        /* unrolled so several chunks' loads are in flight; the sum order stays r = 0..nin-1 */
#pragma unroll 4
        for (int r = 0; r < nin; r++)
            zsum += grad_dequant_add8<DEC>(p, t, in[r].codes, in[r].scales, in[r].zeros, grp, blk, v, bf16_sum, apart, v);
        if (apart)
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] += zsum;
        if (last && sum_out) agoq_dev_store8(sum_out, e0, nvalid, vec_sum, v);
    }
};

/* y[e] = x[e] (+) the N values of 8-bit codes c (scale s, zero point m): the tile decoder unscaled
 * (RAW), then agoq_dequant_add; y may be x. ZP false: the zero point left out (the caller sums it). */
template <int DEC, int N, bool ZP = DEC == AGOQ_ENC_INT_ASYM>
__device__ __forceinline__ void grad_tile_dequant_add(const agoq_cuda_qparams &p, const agoq_smem_table *t, uint64_t c,
                                                      float s, float m, const float (&x)[N], float (&y)[N]) {
    float d[N];
    agoq_tile_decode<DEC, 8, N, true>(p, t, c, 1.0f, 0.0f, d);
#pragma unroll
    for (int e = 0; e < N; e++) y[e] = agoq_dequant_add(x[e], d[e], s, m, ZP);
}

/* ---- tile sources (quant_tile.cuh) of the two kernels, 8-bit codes, blocks >= 32 ----
 * accumulate: E = 4 (fp32 gradient) or 8 (bf16) elements per vector; reduce: 8.
 * Issue 15 (q5; measured at fb7cc8a, results/h200/logs/q5_ab_s5.log, against the previous
 * kernels, which the eleventh session removed): table codes (dyn8) decode through
 * the replicated value table (VREP, quant_tile.cuh agoq_tile_vrep), and the bf16 accumulation
 * of table codes takes tiles of U = 4 vectors (8 spilled at the 80-register bound, like the
 * bf16 quantizer); the same values in the same order: bit-exact either way. */
template <int DEC, typename TG, int U = AGOQ_TILE_U, int VREP = 0>
struct tile_accumulate {
    static constexpr int kVec = 16 / (int)sizeof(TG), kBits = 8, kU = U, kMinCtas = 0;
    static constexpr bool kTable = DEC == AGOQ_ENC_TABLE;
    static constexpr int kVrep = kTable ? VREP : 0; /* replicas of the value table (0: none) */
    const uint8_t *codes, *scales, *zeros;
    const TG *g;
    size_t nblocks;
    int log2b;
    int nc; /* the new gradient's loads: agoq_ld_once's ld.global.nc (quant_ldst.cuh agoq_ld_nc) */
    __device__ __forceinline__ void load_tile(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t e_tile,
                                              int lane, float (&v)[U][kVec]) const {
        agoq_tile_scales<kVec, DEC == AGOQ_ENC_INT_ASYM, U> sc;
        sc.load(p, scales, zeros, e_tile, log2b, nblocks, lane);
        uint64_t c[U];
        float x[U][kVec];
#pragma unroll
        for (int j = 0; j < U; j++) {
            const size_t e0 = e_tile + (size_t)(j * 32 * kVec + lane * kVec);
            c[j] = agoq_tile_load_codes<8, kVec>(codes, e0);
            if constexpr (kVec == 4) {
                const float4 a = agoq_ld_once((const float4 *)(g + e0), nc);
                x[j][0] = a.x; x[j][1] = a.y; x[j][2] = a.z; x[j][3] = a.w;
            } else {
                agoq_bf16x8_to_f32(agoq_ld_once((const uint4 *)(g + e0), nc), x[j]);
            }
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            float s, m;
            sc.get(j, lane, s, m);
            if constexpr (kVrep != 0 && kVec == 8) agoq_tile_vrep8_add(c[j], s, lane, x[j], v[j]);
            else grad_tile_dequant_add<DEC, kVec>(p, t, c[j], s, m, x[j], v[j]);
        }
    }
};

/* The reduce core's tile: RED_U vectors per lane (512 elements per warp), the codes and scales
 * of RED_RB chunks loaded before any is decoded (RED_RB x 2 KB of loads in flight per warp),
 * at 3 CTAs per SM (issue 15: tiles of 8 vectors loaded chunk by chunk held 2 KB in flight per
 * warp at 2 CTAs per SM, 0.46-0.58 of copy; a prefetch of the next chunk pushed registers past
 * 128). The sum's order stays r = 0..nin-1 for every element. BF16_SUM: the sum rounded to bf16
 * after every add (a kernel each, so the inner loop carries no select). */
#define RED_U 2
#define RED_RB 8
/* Issue 15 (s10, AGOQ_RED_PF): an L2 prefetch of the next batch of chunks (chunks r0 .. r0 + rb - 1,
 * rb <= 8, those < nin) of the warp's tile while the current batch is loaded and decoded, so
 * that batch's loads hit L2 instead of waiting for DRAM after the decode: more bytes in flight
 * per SM without registers (the reduce core is register-bound at 3 CTAs per SM). Lane l: the
 * 128-byte line l & 3 of chunk r0 + (l >> 2)'s codes (RED_U x 256 one-byte codes = 4 lines);
 * lanes 0..rb-1 also the line of that chunk's scales, lanes 8..8+rb-1 of its zero points (a
 * tile's blocks lie in one line: <= 16 blocks of 4 bytes at a 64-byte multiple). A prefetch
 * moves no value: the kernel's results are the same bits. */
template <size_t NC>
__device__ __forceinline__ void red_prefetch_batch(const chunk_view (&in)[NC], int nin, int r0, int rb, size_t e_tile,
                                                   int log2b, int bf16_scale, int lane) {
    const int r = r0 + (lane >> 2);
    if ((lane >> 2) < rb && r < nin) agoq_prefetch_l2(in[r].codes + e_tile + (size_t)(lane & 3) * 128);
    const int rs = r0 + (lane & 7);
    const size_t off = (e_tile >> log2b) * (bf16_scale ? 2u : 4u);
    if ((lane & 7) < rb && rs < nin && lane < 16) {
        const uint8_t *plane = lane < 8 ? in[rs].scales : in[rs].zeros;
        if (plane) agoq_prefetch_l2(plane + off);
    }
}

/* red_prefetch_batch's lines for AGOQ_RED_LD in one warp instruction (rb = RB <= 4, block and
 * scale size at compile time): lanes 0..4 rb - 1 the 4 lines of chunk r0 + lane / 4's codes,
 * lanes 16..16 + rb - 1 the line of chunk r0 + (lane & 7)'s scales, 24..24 + rb - 1 its zero points. */
template <int LOG2B, int ESZ, int RB, size_t NC>
__device__ __forceinline__ void red_prefetch_ld(const chunk_view (&in)[NC], int nin, int r0, size_t e_tile, int lane) {
    static_assert(RB <= 4, "16 lanes of code lines");
    const bool codes = lane < 16;
    const int k = codes ? lane >> 2 : lane & 7, r = r0 + k;
    if (k < RB && r < nin) {
        const int plane = codes ? 0 : lane < 24 ? 1 : 2; /* chunk_view: codes, scales, zeros */
        const uint8_t *base = reinterpret_cast<const uint8_t *const *>(&in[r])[plane];
        const size_t off = codes ? e_tile + (size_t)(lane & 3) * 128 : (e_tile >> LOG2B) * ESZ;
        if (base) agoq_prefetch_l2(base + off);
    }
}

/* RB (chunks loaded per batch): 4 for asymmetric codes with agoq_tile_scales, whose scales and
 * zero points of 8 chunks spilled at the 80-register bound (124-byte spill stores per thread:
 * int8_asym 0.44 of copy, 0.68 with 4); dyn8 measured alike at 4 and 8 (0.505,
 * results/h200/logs/q5_ab_s5.log). The eighth session's 8 asymmetric chunks a batch with one
 * register of scale or zero point per chunk at 2 CTAs per SM (AGOQ_G8 bit 2) measured slower
 * (0.70 -> 0.57, logs/s8_callB_ca17d3f/) and was removed in the eleventh. */
/* AGOQ_RED_SMEM (forty-fourth session, compile time; 0, the default: off; 4 or 5: on, at that many
 * CTAs an SM): int8_asym's reduce core (AGOQ_RED_LD=1) staged through shared memory
 * (tile_reduce::load_tile_st, LD = 2). Why: on the H200 that core runs at 0.75 / 0.83 / 0.87 / 0.81
 * of copy (64 MiB .. 4 GiB, s42) against int8's 0.86 / 0.95 / 0.99 / 0.97 with the same decode (a
 * byte permute, a magic add and an FFMA a code) and the zero points summed apart; what differs is
 * the bytes a warp has in flight. int8 loads its 8 chunks' codes at once (4 KB a warp); int8_asym's
 * scales and zero points do not fit the registers beside them (8 chunks spilled), so it loads
 * 3 chunks a batch (1.5 KB) with an L2 prefetch of the next batch, and waits on each batch in turn.
 * Staged, each lane copies its 16 bytes of every chunk's codes and (lanes 0..15 / 16..31) the
 * chunk's scale / zero-point words with cp.async, a commit group a chunk: the whole tile (8 chunks,
 * 4.3 KB at block 128) is in flight at once, no register holds it, and the decode of chunk i
 * starts when its group has landed (cp.async.wait_group 7 - i, then __syncwarp: the other lanes'
 * copies), from shared memory (an 8-byte LDS of codes and a broadcast scale and zero point a
 * vector). 5 KB a warp (40 KB a CTA, static), so 5 CTAs an SM at most. The same values in the same
 * fp32 operations in the same order as load_tile_ld: the same bits (the bench's check compares
 * every reduce with the C reference). The launcher takes it only where every chunk's codes are
 * 16-byte and its scales and zero points 4-byte aligned (otherwise load_tile_b, LD = 1). Not
 * measured yet: the A/B is a variant build (vars/rs5, tools/device_s35.sh s44). */
#ifndef AGOQ_RED_SMEM
#define AGOQ_RED_SMEM 0
#endif
static_assert(AGOQ_RED_SMEM == 0 || AGOQ_RED_SMEM == 4 || AGOQ_RED_SMEM == 5, "AGOQ_RED_SMEM: 0, 4 or 5");
#define RED_ST_CHUNKS 8 /* chunks staged at once */
#define RED_ST_PLANE 64 /* bytes of a chunk's scales (or zero points) a tile at most: 16 blocks of 32, fp32 */
struct red_stage { /* a warp's */
    uint8_t codes[RED_ST_CHUNKS][RED_U * 256];
    uint8_t planes[RED_ST_CHUNKS][2][RED_ST_PLANE]; /* scales, zero points */
};
/* this warp's stage: one array a kernel whatever the scale size (a static array in load_tile_st
 * would be one per instantiation: two in each kernel, 80 KB) */
__device__ __forceinline__ red_stage &red_stage_warp() {
    __shared__ __align__(16) red_stage st[AGOQ_QUANT_THREADS / 32];
    return st[threadIdx.x >> 5];
}
/* cp.async.wait_group RED_ST_CHUNKS - 1 - i for a chunk index i known after unrolling */
template <int I = 0>
__device__ __forceinline__ void red_st_wait(int i) {
    if (i == I) agoq_cp_wait<RED_ST_CHUNKS - 1 - I>();
    else if constexpr (I + 1 < RED_ST_CHUNKS) red_st_wait<I + 1>(i);
}

template <int DEC, bool BF16_SUM, int VREP = 0, int RB = RED_RB, int PF = 0, int LD = 0>
struct tile_reduce { /* PF: 0 no prefetch; 3, 4: red_prefetch_batch at 3 / 4 CTAs per SM (<= 80 / 64 registers) */
    static constexpr int kVec = 8, kBits = 8, kU = RED_U,
                         kMinCtas = LD == 2 ? AGOQ_RED_SMEM : PF == 4 ? 4 : 3;
    static constexpr bool kTable = DEC == AGOQ_ENC_TABLE;
    static constexpr int kVrep = kTable ? VREP : 0;
    static constexpr bool kLoadB = LD != 0; /* load_tile_b (below): AGOQ_RED_LD */
    /* the zero points summed apart, once a vector and chunk (grad8.h agoq_reduce_zeros_apart) */
    static constexpr bool kApart = DEC == AGOQ_ENC_INT_ASYM && !BF16_SUM;
    static constexpr int kStageB = 0;       /* the plain table copies (quant_tile.cuh agoq_src_stage_b) */
    using scales_t = agoq_tile_scales<8, DEC == AGOQ_ENC_INT_ASYM, RED_U>;
    chunk_view in[AGOQ_CUDA_MAX_CHUNKS];
    int nin, log2b;
    size_t nblocks;
    float *sum_out;
    static __device__ __forceinline__ void zero(float (&v)[RED_U][8]) {
#pragma unroll
        for (int j = 0; j < RED_U; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) v[j][e] = 0.0f;
    }
    /* vj = vj (+) the 8 values of codes c (scale s, zero point m), in element order; kApart: the
     * zero point into mj instead */
    static __device__ __forceinline__ void add_vec(const agoq_cuda_qparams &p, const agoq_smem_table *t, uint64_t c,
                                                   float s, float m, int lane, float (&vj)[8], float &mj) {
        if constexpr (kVrep != 0) agoq_tile_vrep8_add(c, s, lane, vj, vj);
        else grad_tile_dequant_add<DEC, 8, DEC == AGOQ_ENC_INT_ASYM && !kApart>(p, t, c, s, m, vj, vj);
        if constexpr (kApart) mj += m;
        if constexpr (BF16_SUM)
#pragma unroll
            for (int e = 0; e < 8; e++) vj[e] = agoq_round_bf16(vj[e]);
    }
    /* the sum's end: kApart adds the zero points' sums, then the fp32 sum is stored if asked */
    __device__ __forceinline__ void finish(size_t e_tile, int lane, const float (&zs)[RED_U], float (&v)[RED_U][8]) const {
        if constexpr (kApart)
#pragma unroll
            for (int j = 0; j < RED_U; j++)
#pragma unroll
                for (int e = 0; e < 8; e++) v[j][e] += zs[j];
        if (sum_out)
#pragma unroll
            for (int j = 0; j < RED_U; j++) {
                float *dst = sum_out + e_tile + (size_t)(j * 256 + lane * 8);
                __stcs((float4 *)dst, make_float4(v[j][0], v[j][1], v[j][2], v[j][3]));
                __stcs((float4 *)(dst + 4), make_float4(v[j][4], v[j][5], v[j][6], v[j][7]));
            }
    }
    __device__ __forceinline__ void load_chunk(const agoq_cuda_qparams &p, int r, size_t e_tile, int lane,
                                               scales_t &sc, uint64_t (&c)[RED_U]) const {
        const uint8_t *codes = in[r].codes, *scales = in[r].scales, *zeros = in[r].zeros;
        sc.load(p, scales, zeros, e_tile, log2b, nblocks, lane);
#pragma unroll
        for (int j = 0; j < RED_U; j++) c[j] = agoq_tile_load_codes<8, 8>(codes, e_tile + (size_t)(j * 256 + lane * 8));
    }
    __device__ __forceinline__ void load_tile(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t e_tile,
                                              int lane, float (&v)[RED_U][8]) const {
        zero(v);
        float zs[RED_U] = {};
        for (int r0 = 0; r0 < nin; r0 += RB) { /* warp-uniform */
            if constexpr (PF != 0) red_prefetch_batch(in, nin, r0 + RB, RB, e_tile, log2b, p.bf16_scale, lane);
            scales_t sc[RB];
            uint64_t c[RB][RED_U];
#pragma unroll
            for (int i = 0; i < RB; i++)
                if (r0 + i < nin) load_chunk(p, r0 + i, e_tile, lane, sc[i], c[i]);
#pragma unroll
            for (int i = 0; i < RB; i++) { /* chunks in order: the sum's order is r = 0..nin-1 */
                if (r0 + i >= nin) break;
#pragma unroll
                for (int j = 0; j < RED_U; j++) {
                    float s, m;
                    sc[i].get(j, lane, s, m);
                    add_vec(p, t, c[i][j], s, m, lane, v[j], zs[j]);
                }
            }
        }
        finish(e_tile, lane, zs, v);
    }
    /* AGOQ_RED_LD (issue 15, s13): the same sum from fewer instructions (the block size, LOG2B, and
     * the scale size, ESZ, at compile time). Each lane loads the scale (and zero point) of its own
     * vectors' blocks instead of one block per lane and two shuffles per vector and chunk; the
     * byte offsets of codes and scales are computed once per tile, so a chunk's loads take one
     * 64-bit add per plane and immediate offsets (vector 1's codes at +256 bytes, its scale at
     * + (256 >> LOG2B) * ESZ); the prefetch takes one warp instruction (red_prefetch_ld). Same
     * values, same fp32 operations in the same order: the same bits. The tile's blocks all lie in
     * the tensor (whole tiles), so no load needs a guard. */
    template <int LOG2B>
    __device__ __forceinline__ void load_tile_b(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t e_tile,
                                                int lane, float (&v)[RED_U][8]) const {
        if constexpr (LD == 2) {
            if (p.bf16_scale) load_tile_st<LOG2B, 2>(p, t, e_tile, lane, v);
            else load_tile_st<LOG2B, 4>(p, t, e_tile, lane, v);
        } else {
            if (p.bf16_scale) load_tile_ld<LOG2B, 2>(p, t, e_tile, lane, v);
            else load_tile_ld<LOG2B, 4>(p, t, e_tile, lane, v);
        }
    }
    /* AGOQ_RED_SMEM: the tile staged through shared memory, RED_ST_CHUNKS chunks at a time (above) */
    template <int LOG2B, int ESZ>
    __device__ __forceinline__ void load_tile_st(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t e_tile,
                                                 int lane, float (&v)[RED_U][8]) const {
        static_assert(DEC == AGOQ_ENC_INT_ASYM, "int8_asym's reduce core only");
        constexpr int kBpv = 256 >> LOG2B;                /* blocks a vector (of 32 lanes) */
        constexpr int kWords = RED_U * kBpv * ESZ / 4;    /* 4-byte words of a chunk's scales a tile */
        static_assert(kWords >= 1 && kWords * 4 <= RED_ST_PLANE, "a chunk's scales: 1..16 words");
        red_stage &st = red_stage_warp();
        zero(v);
        float zs[RED_U] = {};
        const int w = lane & 15, half = lane >> 4;   /* lanes 0..15 copy scale words, 16..31 zero points */
        const int blk = (lane * 8) >> LOG2B;          /* vector 0's block in the tile; vector j's: + j * kBpv */
        /* what every chunk's copies share, computed once (per chunk then: two pointer loads from the
         * parameters, two 64-bit adds, the copies): this lane's offsets into a chunk's codes and its
         * plane, its destinations in chunk 0's stage, and the plane it copies (chunk_view's field
         * 1 + half: scales, zero points) */
        const size_t oc = e_tile + (size_t)(lane * 16), op = (e_tile >> LOG2B) * ESZ + (size_t)(w * 4);
        const uint32_t dc = agoq_smem_addr(&st.codes[0][lane * 16]), dp = agoq_smem_addr(&st.planes[0][half][w * 4]);
        const bool copies_plane = w < kWords;
        auto copy = [&](int r, int i) { /* chunk r into stage slot i */
            const uint8_t *const *cv = reinterpret_cast<const uint8_t *const *>(&in[r]);
            agoq_cp_async_to<16>(dc + (uint32_t)(i * RED_U * 256), cv[0] + oc);
            if (copies_plane) agoq_cp_async_to<4>(dp + (uint32_t)(i * 2 * RED_ST_PLANE), cv[1 + half] + op);
        };
        for (int r0 = 0; r0 < nin; r0 += RED_ST_CHUNKS) { /* warp-uniform */
            __syncwarp(); /* the previous batch's reads are done before its stage is copied over */
            if (r0 + RED_ST_CHUNKS <= nin) { /* a whole batch: no test a chunk, so the offsets stay shared */
#pragma unroll
                for (int i = 0; i < RED_ST_CHUNKS; i++) {
                    copy(r0 + i, i);
                    agoq_cp_commit(); /* a commit group a chunk */
                }
            } else {
#pragma unroll
                for (int i = 0; i < RED_ST_CHUNKS; i++) {
                    if (r0 + i < nin) copy(r0 + i, i);
                    agoq_cp_commit(); /* empty past nin */
                }
            }
#pragma unroll
            for (int i = 0; i < RED_ST_CHUNKS; i++) { /* chunks in order: the sum's order is r = 0..nin-1 */
                if (r0 + i >= nin) break;
                red_st_wait(i);
                __syncwarp(); /* every lane's copies of chunk i have landed */
#pragma unroll
                for (int j = 0; j < RED_U; j++) {
                    const uint2 c = *(const uint2 *)&st.codes[i][j * 256 + lane * 8];
                    const float s = agoq_dev_load_scale(st.planes[i][0], (size_t)(blk + j * kBpv), ESZ == 2);
                    const float m = agoq_dev_load_scale(st.planes[i][1], (size_t)(blk + j * kBpv), ESZ == 2);
                    add_vec(p, t, (uint64_t)c.x | ((uint64_t)c.y << 32), s, m, lane, v[j], zs[j]);
                }
            }
        }
        finish(e_tile, lane, zs, v);
    }
    template <int LOG2B, int ESZ>
    __device__ __forceinline__ void load_tile_ld(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t e_tile,
                                                 int lane, float (&v)[RED_U][8]) const {
        constexpr bool kZeros = DEC == AGOQ_ENC_INT_ASYM;
        static_assert(LOG2B >= 5 && LOG2B <= 8, "blocks of 32..256");
        zero(v);
        float zs[RED_U] = {};
        const size_t ec = e_tile + (size_t)(lane * 8); /* vector 0's codes; vector j's at + j * 256 */
        const size_t es = (ec >> LOG2B) * ESZ;         /* vector 0's scale (and zero point) */
        for (int r0 = 0; r0 < nin; r0 += RB) { /* warp-uniform */
            if constexpr (PF != 0) red_prefetch_ld<LOG2B, ESZ, RB>(in, nin, r0 + RB, e_tile, lane);
            uint2 c[RB][RED_U];
            float s[RB][RED_U], m[RB][RED_U];
#pragma unroll
            for (int i = 0; i < RB; i++)
                if (r0 + i < nin) {
                    const chunk_view &cv = in[r0 + i];
                    const uint8_t *cp = cv.codes + ec, *sp = cv.scales + es, *zp = cv.zeros + es;
#pragma unroll
                    for (int j = 0; j < RED_U; j++) c[i][j] = *(const uint2 *)(cp + j * 256);
#pragma unroll
                    for (int j = 0; j < RED_U; j++) { /* vector j's block: j * (256 >> LOG2B) blocks on */
                        s[i][j] = agoq_dev_load_scale(sp, (size_t)j * (256 >> LOG2B), ESZ == 2);
                        m[i][j] = kZeros ? agoq_dev_load_scale(zp, (size_t)j * (256 >> LOG2B), ESZ == 2) : 0.0f;
                    }
                }
#pragma unroll
            for (int i = 0; i < RB; i++) { /* chunks in order: the sum's order is r = 0..nin-1 */
                if (r0 + i >= nin) break;
#pragma unroll
                for (int j = 0; j < RED_U; j++)
                    add_vec(p, t, (uint64_t)c[i][j].x | ((uint64_t)c[i][j].y << 32), s[i][j], m[i][j], lane, v[j],
                            zs[j]);
            }
        }
        finish(e_tile, lane, zs, v);
    }
};

/* The twelfth session removed AGOQ_G8=4 (the dyn8 reduce and bf16 accumulation encoding through
 * the CTA's LUT in 32-bit entries): its H200 A/B (1dbd92e, two rounds,
 * results/h200/logs/s12_ab_1dbd92e/) measured it slower at every size, dyn8 bf16 accumulation
 * 0.60 / 0.67 / 0.69 -> 0.57 / 0.62 / 0.63 of copy at 256 MiB / 1 GiB / 4 GiB, dyn8 reduce
 * 0.50-0.52 -> 0.49-0.51. The eighth session's bits 1 and 2 had lost before (logs/s8_callB_ca17d3f/).
 * The twenty-second session's carry form of that LUT (one add a code) won: AGOQ_G8_LUT32
 * (quant_cuda.h, quant_launch.cuh; on by default). */

/* AGOQ_RED_PF (issue 15, s10), a mask: the reduce core's L2 prefetch of the next batch of
 * chunks (red_prefetch_batch). 1: int8_asym (batches of 4, as without it); 2: the other
 * decoders in batches of 4 with the prefetch instead of 8 at once; 4 (with 1 or 2): those
 * kernels bounded to 4 CTAs per SM (64 registers) instead of 3. Default 5 (int8_asym prefetching
 * at 4 CTAs per SM), from the twelfth session's A/B (1dbd92e, two rounds,
 * results/h200/logs/s12_ab_1dbd92e/), copy ratio at 64 MiB / 256 MiB / 1 GiB / 4 GiB:
 *   int8_asym  0 -> 7: 0.65 / 0.69 / 0.70 / 0.68 -> 0.65 / 0.70 / 0.73 / 0.72 (3, at 3 CTAs: 0.59-0.67, slower)
 *   int8, fp8_e4m3: bit 2 slower at every size (-0.08 .. -0.15); dyn8 within +-0.01.
 * Under AGOQ_RED_LD=2 int8_asym prefetches at 3 CTAs per SM whatever bit 4 says. Read at every
 * launch (the tests switch it). */
#define RED_PF_ASYM 1
#define RED_PF_OTHERS 2
#define RED_PF_4CTAS 4
static int red_pf_mask(void) { return agoq_knob_int("AGOQ_RED_PF", RED_PF_ASYM | RED_PF_4CTAS, 0, 7); }
/* AGOQ_RED_LD (issue 15, s13): int8_asym's reduce core through tile_reduce::load_tile_b (direct
 * scale and zero-point loads, offsets once per tile; the same bits), with AGOQ_RED_PF's prefetch
 * choice. 0: load_tile (4 chunks a batch); 1 (the default since the seventeenth session):
 * load_tile_b, 3 chunks a batch (4 CTAs per SM when prefetching at 4); 2: load_tile_b, 4 chunks a
 * batch at 3 CTAs per SM. Read at every launch (the tests switch it). int8_asym's copy ratio at
 * 64 MiB / 256 MiB / 1 GiB / 4 GiB, two rounds each, the second in reverse order:
 *   H200 (seventeenth session, e664521, results/h200/logs/s17_e664521/reduce/):
 *     0: 0.65 / 0.71 / 0.73 / 0.72, 1: 0.71 / 0.77 / 0.80 / 0.79, 2: 0.63 / 0.70 / 0.73 / 0.71;
 *   H100 (sixteenth, results/h100/logs/s16_ab_1a5ea74/; seventeenth the same within 0.01):
 *     0: 0.74 / 0.82 / 0.86 / 0.85, 1: 0.76 / 0.85 / 0.89 / 0.88, 2: 0.78 / 0.90 / 0.96 / 0.95.
 * The sixteenth session made 2 the default from the H100 alone; on the H200, the project's
 * reference card, 1 is the fastest and 2 no faster than 0, so 1 is the default. */
#define RED_LD_RB3 1
#define RED_LD_RB4 2
static int red_ld_mask(void) { return agoq_knob_int("AGOQ_RED_LD", RED_LD_RB3, 0, 2); }

/* The tile sources need 8-bit codes and a power-of-two block >= 32 (agoq_tile_scales); the
 * launcher checks the rest (rounding, block <= 256, alignment of the output codes). */
static bool tile_grad_ok(const agoq_cuda_qparams &p) {
    return p.bits == 8 && p.block >= 32 && (p.block & (p.block - 1)) == 0;
}
static bool aligned16(const void *x) { return ((uintptr_t)x & 15u) == 0; }

int agoq_cuda_grad_accumulate(const agoq_qconfig *c, agoq_cuda_qtensor *acc, const float *g_f32,
                              const uint16_t *g_bf16, void *stream) {
    static const char fn[] = "agoq_cuda_grad_accumulate";
    agoq_cuda_qparams p;
    if (agoq_cuda_qparams_make(c, &p) || agoq_cuda_check_qtensor(fn, c, acc)) return -1;
    AGOQ_REQUIRE(acc->n == 0 || g_f32 || g_bf16, "%s: both gradient pointers are NULL", fn);
    if (acc->n == 0) return 0;
    const agoq_cuda_qtensor out = *acc;
    agoq_dispatch_pair(p.enc, p.dec, [&](auto enc, auto dec) {
        constexpr int E = decltype(enc)::value, D = decltype(dec)::value;
        const size_t nblocks = (acc->n + (size_t)p.block - 1) / (size_t)p.block;
        const int log2b = __builtin_ctz((unsigned)p.block);
        if (g_f32) {
            src_accumulate<D, float> src = {acc->codes, acc->scales, acc->zeros, g_f32, ((uintptr_t)g_f32 & 15u) == 0};
            tile_accumulate<D, float> tile = {acc->codes, acc->scales, acc->zeros, g_f32, nblocks, log2b,
                                               agoq_ld_nc(acc->n * sizeof(float))};
            if constexpr (E == D) agoq_launch_quant<E>(p, src, out, stream, tile_grad_ok(p) && aligned16(g_f32) ? &tile : nullptr);
            else agoq_launch_quant<E>(p, src, out, stream); /* stochastic-only pairs: no tile path */
        } else {
            src_accumulate<D, uint16_t> src = {acc->codes, acc->scales, acc->zeros, g_bf16,
                                               ((uintptr_t)g_bf16 & 15u) == 0};
            const bool ok = tile_grad_ok(p) && aligned16(g_bf16);
            const int nc = agoq_ld_nc(acc->n * sizeof(uint16_t));
            tile_accumulate<D, uint16_t> tile = {acc->codes, acc->scales, acc->zeros, g_bf16, nblocks, log2b, nc};
            if constexpr (E == D && D == AGOQ_ENC_TABLE) {
                if (p.tab_ident) {
                    tile_accumulate<D, uint16_t, 4, AGOQ_VREP> tile4 = {acc->codes, acc->scales, acc->zeros,
                                                                         g_bf16, nblocks, log2b, nc};
                    agoq_launch_quant<E>(p, src, out, stream, ok ? &tile4 : nullptr);
                    return;
                }
            }
            if constexpr (E == D) agoq_launch_quant<E>(p, src, out, stream, ok ? &tile : nullptr);
            else agoq_launch_quant<E>(p, src, out, stream);
        }
    });
    return 0;
}

int agoq_cuda_grad_reduce(const agoq_qconfig *c, const agoq_cuda_qtensor *in, int nin, agoq_sum_precision prec,
                          agoq_cuda_qtensor *out, float *sum_out, void *stream) {
    static const char fn[] = "agoq_cuda_grad_reduce";
    agoq_cuda_qparams p;
    if (agoq_cuda_qparams_make(c, &p) || agoq_cuda_check_qtensor(fn, c, out)) return -1;
    AGOQ_REQUIRE(nin >= 1 && nin <= AGOQ_CUDA_MAX_CHUNKS, "%s: nin = %d, expected 1..%d", fn, nin, AGOQ_CUDA_MAX_CHUNKS);
    AGOQ_REQUIRE(in != NULL, "%s: input views are NULL", fn);
    AGOQ_REQUIRE(prec == AGOQ_SUM_FP32 || prec == AGOQ_SUM_BF16, "%s: sum precision %d unknown", fn, (int)prec);
    for (int r = 0; r < nin; r++) {
        AGOQ_REQUIRE(in[r].n == out->n, "%s: input %d has %zu elements, output %zu", fn, r, in[r].n, out->n);
        if (agoq_cuda_check_qtensor(fn, c, &in[r])) return -1;
    }
    if (out->n == 0) return 0;
    const int pf = red_pf_mask(), ld = red_ld_mask();
    agoq_dispatch_pair(p.enc, p.dec, [&](auto enc, auto dec) {
        constexpr int E = decltype(enc)::value, D = decltype(dec)::value;
        src_reduce<D> src;
        memset(&src, 0, sizeof src);
        for (int r = 0; r < nin; r++) src.in[r] = {in[r].codes, in[r].scales, in[r].zeros};
        src.nin = nin;
        src.bf16_sum = prec == AGOQ_SUM_BF16;
        src.sum_out = sum_out;
        src.vec_sum = ((uintptr_t)sum_out & 15u) == 0;
        bool aligned = sum_out == NULL || aligned16(sum_out);
        bool staged_ok = true; /* AGOQ_RED_SMEM's cp.async: 16-byte codes, 4-byte scale and zero-point words */
        for (int r = 0; r < nin; r++) {
            aligned &= ((uintptr_t)in[r].codes & 7u) == 0; /* 8 codes per load */
            staged_ok &= aligned16(in[r].codes) && ((uintptr_t)in[r].scales & 3u) == 0 && ((uintptr_t)in[r].zeros & 3u) == 0;
        }
        auto with_tile_ld = [&](auto bf16, auto vrep, auto rb, auto pfv, auto ldv) {
            tile_reduce<D, decltype(bf16)::value != 0, decltype(vrep)::value, decltype(rb)::value, decltype(pfv)::value,
                        decltype(ldv)::value> tile;
            memset(&tile, 0, sizeof tile);
            memcpy(tile.in, src.in, sizeof tile.in);
            tile.nin = nin;
            tile.log2b = __builtin_ctz((unsigned)p.block);
            tile.nblocks = (out->n + (size_t)p.block - 1) / (size_t)p.block;
            tile.sum_out = sum_out;
            agoq_launch_quant<E>(p, src, *out, stream, aligned && tile_grad_ok(p) ? &tile : nullptr);
        };
        auto with_tile = [&](auto bf16, auto vrep, auto rb, auto pfv) { with_tile_ld(bf16, vrep, rb, pfv, agoq_enc_t<0>()); };
        if constexpr (E == D) {
            const agoq_enc_t<0> no;
            auto with_pf = [&](auto bf16, auto vrep) { /* the prefetching tile at 3 or 4 CTAs per SM */
                if (pf & RED_PF_4CTAS) return with_tile(bf16, vrep, agoq_enc_t<4>(), agoq_enc_t<4>());
                with_tile(bf16, vrep, agoq_enc_t<4>(), agoq_enc_t<3>());
            };
            auto go = [&](auto bf16) { /* table (replicated values) and asymmetric decoders: q5 */
                if constexpr (D == AGOQ_ENC_TABLE) {
                    if (p.tab_ident) {
                        if (pf & RED_PF_OTHERS) return with_pf(bf16, agoq_enc_t<AGOQ_VREP>());
                        return with_tile(bf16, agoq_enc_t<AGOQ_VREP>(), agoq_enc_t<RED_RB>(), no);
                    }
                } else if constexpr (D == AGOQ_ENC_INT_ASYM) {
                    if constexpr (AGOQ_RED_SMEM != 0) /* load_tile_st */
                        if (ld == RED_LD_RB3 && staged_ok) return with_tile_ld(bf16, no, agoq_enc_t<RED_ST_CHUNKS>(), no, agoq_enc_t<2>());
                    if (ld == RED_LD_RB3) { /* load_tile_b, 3 chunks a batch (<= 64 registers: 4 CTAs per SM) */
                        if (!(pf & RED_PF_ASYM)) return with_tile_ld(bf16, no, agoq_enc_t<3>(), no, agoq_enc_t<1>());
                        if (pf & RED_PF_4CTAS) return with_tile_ld(bf16, no, agoq_enc_t<3>(), agoq_enc_t<4>(), agoq_enc_t<1>());
                        return with_tile_ld(bf16, no, agoq_enc_t<3>(), agoq_enc_t<3>(), agoq_enc_t<1>());
                    }
                    if (ld == RED_LD_RB4) { /* load_tile_b, 4 chunks a batch at 3 CTAs per SM (<= 80 registers) */
                        if (!(pf & RED_PF_ASYM)) return with_tile_ld(bf16, no, agoq_enc_t<4>(), no, agoq_enc_t<1>());
                        return with_tile_ld(bf16, no, agoq_enc_t<4>(), agoq_enc_t<3>(), agoq_enc_t<1>());
                    }
                    if (pf & RED_PF_ASYM) return with_pf(bf16, no);
                    return with_tile(bf16, no, agoq_enc_t<4>(), no);
                } else {
                    if (pf & RED_PF_OTHERS) return with_pf(bf16, no);
                }
                if constexpr (D != AGOQ_ENC_INT_ASYM) with_tile(bf16, no, agoq_enc_t<RED_RB>(), no);
            };
            if (src.bf16_sum) go(agoq_enc_t<1>());
            else go(agoq_enc_t<0>());
        } else {
            agoq_launch_quant<E>(p, src, *out, stream); /* stochastic-only pairs: no tile path */
        }
    });
    return 0;
}
