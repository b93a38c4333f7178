/* Hopper bf16 GEMM of agoq-bench: TMA loads into a 3-stage shared-memory ring guarded by
 * mbarriers, one producer thread issuing the copies, two consumer warpgroups issuing
 * wgmma.mma_async m64n256k16 (bf16 in, fp32 accumulate), and three epilogue warps that store C
 * (+ an optional bf16 residual) and (optionally) the block-quantized copy of that bf16 C while
 * the consumers already run the next tile's mainloop.
 * Layouts, shapes and the exactness contract: gemm_wg.h. The host side (TMA maps, grid, the
 * choice of variant, the entry points): gemm_wg_launch.cuh, included last; its environment
 * knobs: gemm_wg_knobs.h. Tested by
 * tests/cuda/gemm/test_gemm_wg_cuda.c; benchmarked in kernels/gemm/bench_gemm_wg.cu.
 *
 * Needs sm_90a (wgmma): the Makefile builds this file with
 * -gencode=arch=compute_90a,code=sm_90a. Built for any other target the kernel body is a trap.
 *
 * Persistent CTAs (one per SM) walk the 128 x 256 output tiles (grouped rasterization, 8 row
 * tiles a group); tile 128 x 256 x 64 (BM x BN x BK), 384 threads:
 *   warpgroup 0   thread 0 is the producer: it waits for a free stage (empty barrier), arms the
 *                 stage's full barrier with the stage's byte count and issues the TMA copies of
 *                 the A and B k-tiles; the copies complete the transaction on that barrier.
 *                 Warps 1-3 are the epilogue warps (below).
 *   warpgroups 1-2 consumers: wait for a full stage, issue 4 wgmma (k = 16 each) over their
 *                 64 rows x 256 columns, commit, keep one k-tile of wgmma in flight, and free the
 *                 stage of the previous k-tile (one arrival per warp: 8 per phase).
 * Shared-memory tiles use the 128-byte swizzle on both sides: the TMA box's inner extent is 64
 * bf16 = 128 bytes, so a K-major tile is [rows][128 B] with 16-byte chunk c of row r stored at
 * chunk c ^ (r % 8), and an MN-major tile is boxes of [64 k rows][64 mn elements] laid out the
 * same way. Every stage starts on a 1024-byte boundary (the swizzle repeats every 8 rows), so a
 * wgmma descriptor addresses k-step kk of a K-major tile by adding 32 * kk bytes to the start
 * (the hardware applies the XOR on the address bits) and of an MN-major tile by adding
 * 16 rows * 128 B * kk. Descriptor strides: K-major SBO = 1024 (8 rows of 128 B to the next
 * 8-row group), LBO unused; MN-major SBO = 1024 (next 8 k rows), LBO = 8192 (next 64-element
 * MN box).
 * The ring's barrier phases run on across a CTA's tiles, so the producer loads the next tile's
 * first k-tiles while the consumers hand this one over.
 * Epilogue, one staging tile (bf16 128 x 256, its own region) handed over by named barriers:
 * the epilogue warps copy the residual tile into it (cp.async) and arrive on BAR_EMPTY; the
 * consumers, after their last wgmma, wait there, add each fp32 accumulator to the residual at
 * its position, round once to bf16 in place and arrive on BAR_FULL; the epilogue warps then
 * store C (16 bytes a lane, a warp a row) and quantize it, the fast FP4 tile encoder taking a row
 * whole (fz_quantize) or, any other format, a thread a block (quant_blocks) on the standalone
 * quantizer's parameters and encoders (quant_device.cuh: one copy of the quantizer), and only
 * then free the staging tile for the next one: the stores and the quantization overlap the
 * next tile's mainloop.
 * Stored-A prologue (agoq_wg_fwd_deqa): the stage holds A's packed codes (a TMA box of bytes, no
 * swizzle) instead of its bf16 tile, and the consumers decode them with the standalone decoder,
 * by default through a bf16 tile in shared memory (gemm_wg_deq.cuh), or (AGOQ_WG_DEQ_PRODUCER=1) a
 * fourth warpgroup decodes it into bf16 A tiles for the plain mainloop (gemm_wg_dqp.cuh: 512
 * threads, 192-wide tiles).
 * A fourth stage for the bf16 kernels with a plain epilogue (the default; AGOQ_WG_STAGES=3|4
 * forces one ring for every GEMM, gemm_wg_launch.cuh): room made by staging C a consumer
 * warpgroup's 64 rows at a time (a hand-off per warpgroup: BAR_*1). Behind a benchmark knob (off
 * by default): AGOQ_WG_TILE_N=128|192|auto, 128 x 128 or 128 x 192 tiles (wgmma m64n128k16 /
 * m64n192k16; template argument TN) against partly empty last waves. The epilogue warps' functions and their variants
 * (AGOQ_WG_EPI_ROWS: 4 rows a warp iteration by default, 8 for the general formats' row tiles;
 * AGOQ_WG_EPI_GEN: those row tiles, by default; AGOQ_WG_BULK, off): gemm_wg_epi.cuh.
 * AGOQ_WG_CLUSTER=2 (template argument CL; default 1, the kernels as before): the 4-stage kernels
 * without a quantized copy in clusters of two CTAs along M (tile_walk) that share the B tile:
 * each producer multicasts half of B into both CTAs, and a stage is refilled only after the
 * consumers of both freed it (free_stage; 16 arrivals a phase). */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include <mutex>
#include <type_traits>

#include "core/check.h"
#include "core/common.h"
#include "kernels/fused/fused_dev.cuh"
#include "kernels/gemm/gemm_wg.h"
#include "kernels/gemm/gemm_wg_ptx.cuh"
#include "kernels/gemm/gemm_wg_sk.h"

namespace {
/* STAGES: the 3-stage ring; the kernel's ST template argument may be 4 (plain epilogues,
 * four_stages in gemm_wg_launch.cuh), which stages C a consumer warpgroup's half at a time
 * (HALF_ROWS) to make room. */
constexpr int BM = AGOQ_WG_TILE_M, BN = AGOQ_WG_TILE_N, BK = 64, STAGES = 3, THREADS = 384, HALF_ROWS = BM / 2;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
constexpr int MN_BOX_BYTES = 64 * BK * 2; /* one MN-major TMA box: 64 k rows x 128 B */
constexpr int C_STRIDE = BN + 8;          /* bf16 per staged C row: 528 B, rows 4 banks apart */
constexpr int C_BYTES = BM * C_STRIDE * 2;
/* Epilogue warps: warps 1-3 of warpgroup 0 (thread 0 is the producer). Named barriers: BAR_EMPTY
 * and BAR_FULL hand the staging tile between the 256 consumer threads and them, BAR_EPI orders
 * them among themselves; 2 and 3 are the prologue's per-consumer barriers. */
/* AGOQ_WG_DESC_EARLY (compile time, default 1; 0 the kernels before the thirty-eighth session, for
 * the A/B): in the consumers' k loop of the bf16-A kernels, the stage's wgmma descriptors computed
 * before its full-barrier wait instead of after it, and the ring's and barriers' shared addresses
 * kept in registers (the warpgroup index is broadcast from lane 0 too, meant to make A's
 * descriptors uniform-datapath values; in the SASS they stay in vector registers). In the SASS
 * (tools/sass.sh) of the plain 4-stage kernel the wait was followed by a chain of about 30 (S2UR
 * SR_CgaCtaId, the ring offset, the descriptors in vector registers moved by R2UR) before the
 * first HGMMA could issue: on the critical path whenever the stage lands after the previous
 * k-tile's wgmma drain (the twenty-fifth session's ncu: 68% of the k-tiles' waits retried). */
#ifndef AGOQ_WG_DESC_EARLY
#define AGOQ_WG_DESC_EARLY 1
#endif
/* Registers a thread after setmaxnreg; together no more than the launch allocated (168 a thread:
 * 65536 / 384 rounded down to 8, what ptxas reports for every instantiation). */
constexpr int REGS_WG0 = 104, REGS_CONSUMER = 200;
static_assert(128 * REGS_WG0 + 256 * REGS_CONSUMER <= 384 * 168, "setmaxnreg counts exceed the launch's registers");
/* AGOQ_WG_EPI_ROWS=8 kernels (bf16 A): 136 / 176, the 8 rows' values without spills (ptxas -v,
 * nvcc 13.0: 44-296 B of spill stores at 128 / 184, none at 136 / 176, nor in the consumers) */
constexpr int REGS_WG0_ER8 = 136, REGS_CONSUMER_ER8 = 176;
static_assert(128 * REGS_WG0_ER8 + 256 * REGS_CONSUMER_ER8 <= 384 * 168, "setmaxnreg counts exceed the launch's registers");
constexpr int EPI_WARPS = 3, EPI_THREADS = 32 * EPI_WARPS, BAR_FULL = 4, BAR_EMPTY = 5, BAR_EPI = 6,
              BAR_HANDOFF = 256 + EPI_THREADS;
/* The 4-stage ring's half hand-off: consumer warpgroup cw stages its 64 rows through barriers
 * BAR_FULL / BAR_EMPTY (cw 0) or BAR_FULL1 / BAR_EMPTY1 (cw 1), 128 consumer threads each. */
constexpr int BAR_FULL1 = 7, BAR_EMPTY1 = 8, BAR_HALF = 128 + EPI_THREADS;
/* Dynamic shared memory of the bf16 kernels: the ring, the staging tile (+ slack to align the
 * ring to 1024). ST = 4 (196 KB of ring) leaves room for half a staging tile only, and no static
 * table (the host keeps table encoders on 3 stages): 231,424 B + ~100 B static <= 227 KB. */
/* TN: the tile's width, BN or (AGOQ_WG_TILE_N=128|192, gemm_wg_launch.cuh) 128 or 192; a stage, a staged row (bf16). */
template <int TN>
__host__ __device__ constexpr int stage_bytes() { return A_BYTES + TN * BK * 2; }
template <int TN>
__host__ __device__ constexpr int c_stride() { return TN + 8; } /* rows 4 banks apart for each width */
template <int ST, int TN = BN>
constexpr int smem_bytes() { return ST * stage_bytes<TN>() + (ST == 4 ? HALF_ROWS : BM) * c_stride<TN>() * 2 + 1024; }
static_assert(smem_bytes<4>() + 128 <= 232448, "4-stage ring + half staging tile exceed 227 KB");
static_assert(smem_bytes<STAGES, 192>() + 1024 <= 232448, "192-wide tiles: ring + staging tile exceed 227 KB");
/* Stored-A prologue: a stage holds A's codes (128 rows x 64 codes of <= 8 bits) instead of its
 * bf16 tile, and each consumer decodes its 64 rows into one of two bf16 tiles of its own. */
constexpr int CODE_BYTES = BM * BK;                 /* 8-bit codes; 4-bit use half */
constexpr int DQ_STAGE_BYTES = CODE_BYTES + B_BYTES;
constexpr int DQ_TILE_BYTES = 64 * BK * 2;          /* one consumer's bf16 A k-tile */
constexpr int DQ_SMEM_BYTES = STAGES * DQ_STAGE_BYTES + 4 * DQ_TILE_BYTES + C_BYTES + 1024;
/* The shared-memory prologue on 4 stages (AGOQ_WG_DEQ_SMEM=4, thirty-ninth session; 4-bit codes
 * whose decoders need no shared table: FP4, int4): 36 KB stages, AGOQ_WG_DQS_BUFS4 bf16 tiles a
 * consumer (default 3: two k-tiles of wgmma queued behind a decode), C staged in halves. */
#ifndef AGOQ_WG_DQS_BUFS4
#define AGOQ_WG_DQS_BUFS4 3
#endif
__host__ __device__ constexpr int dq4_stage_bytes(int tn) { return CODE_BYTES / 2 + tn * BK * 2; } /* 4-bit codes + B */
constexpr int DQ4_STAGE_BYTES = dq4_stage_bytes(BN);
constexpr int DQ4_SMEM_BYTES = 4 * DQ4_STAGE_BYTES + 2 * AGOQ_WG_DQS_BUFS4 * DQ_TILE_BYTES + HALF_ROWS * C_STRIDE * 2 + 1024;
static_assert(DQ4_SMEM_BYTES + 128 <= 232448, "4-stage prologue: ring + bf16 tiles + half staging tile exceed 227 KB");
constexpr int DQR_SMEM_BYTES = STAGES * DQ_STAGE_BYTES + C_BYTES + 1024; /* the register prologue */

struct wg_params {
    int m, n, k;
    const uint16_t *r; /* residual [m, n] bf16, or NULL */
    uint16_t *c;       /* [m, n] bf16 */
    agoq_cuda_qparams q;
    agoq_dqt cq;
    uint32_t mn_lbo, mn_sbo; /* descriptor strides of MN-major tiles (bytes), see the top comment */
    agoq_cuda_qparams qa;    /* stored-A prologue: A's format, and its planes (rowq [m][k]) */
    agoq_dqt aq;
    int group_m; /* row tiles of a rasterization group (tile_origin) */
    /* AGOQ_WG_STREAMK (kernels with SK; gemm_wg_sk.h): the plan, the workspace slots of the
     * split tiles' partial sums (BM x TN fp32 each) and their flags (0 between launches) */
    agoq_wg_sk sk;
    float4 *sk_ws;
    unsigned *sk_flags;
};

/* Two values rounded to bf16 (one cvt.rn.bf16x2.f32: round to nearest even, as agoq_f32_to_bf16
 * for every non-NaN value; a NaN's payload may differ, and a NaN stays a NaN either way). */
__device__ __forceinline__ uint32_t dqr_pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t *>(&h);
}
/* AGOQ_WG_CVT (compile time, default 1; 0 the kernels before the thirty-eighth session, for the
 * A/B): stage_acc rounds a pair of accumulators by dqr_pack, one F2FP instruction, instead of
 * agoq_f32_to_bf16's integer rounding twice (about 8 instructions an element: the 4-stage plain
 * kernel's staging of a consumer thread's 128 accumulators took about 1,500 instructions a tile,
 * SASS at be72629, issued while the consumer's next mainloop waits); with a residual, its bounds
 * tested only in the tiles that cross C's edge. */
#ifndef AGOQ_WG_CVT
#define AGOQ_WG_CVT 1
#endif
/* Epilogue, consumer side, by consumer thread ct (0..255) for the tile at (m0, n0): each fp32
 * accumulator (+ the residual, which the epilogue warps have put into the staging tile at the
 * same position) rounded once to bf16 into the staging tile, in place. Half staging (4 stages):
 * ct is the thread of its warpgroup (0..127) and m0 that warpgroup's first row, stage its half. */
template <int TN>
__device__ __forceinline__ void stage_acc(const wg_params &p, const float (&d)[TN / 2], uint16_t *stage, int ct,
                                          int m0, int n0) {
    constexpr int CS = c_stride<TN>(); /* bf16 per staged row */
    const int lane = ct & 31, row0 = (ct >> 5) * 16 + (lane >> 2); /* wgmma fragment: warp w owns rows 16w.. */
    /* res: with the residual; chk: its bounds tested a pair at a time (AGOQ_WG_CVT: loops of their
     * own without the predicated loads and adds where there is no residual, and without the bounds
     * where this thread's two rows and the tile's columns lie inside C) */
    auto rows = [&](auto res, auto chk) {
#pragma unroll
        for (int j = 0; j < TN / 8; j++) {
            const int col = j * 8 + (lane & 3) * 2;
#pragma unroll
            for (int h = 0; h < 2; h++) { /* rows row0 and row0 + 8 */
                float x0 = d[4 * j + 2 * h], x1 = d[4 * j + 2 * h + 1];
                const int r = row0 + 8 * h;
                uint32_t *sp = reinterpret_cast<uint32_t *>(stage + r * CS + col);
                if (decltype(res)::value && p.r && (!decltype(chk)::value || (m0 + r < p.m && n0 + col < p.n))) {
                    const uint32_t rv = *sp;
                    x0 += agoq_bf16_to_f32((uint16_t)(rv & 0xFFFFu));
                    x1 += agoq_bf16_to_f32((uint16_t)(rv >> 16));
                }
                *sp = AGOQ_WG_CVT ? dqr_pack(x0, x1) : (uint32_t)agoq_f32_to_bf16(x0) | (uint32_t)agoq_f32_to_bf16(x1) << 16;
            }
        }
    };
    if (!AGOQ_WG_CVT) rows(std::true_type(), std::true_type());
    else if (!p.r) rows(std::false_type(), std::false_type());
    else if (m0 + row0 + 8 < p.m && n0 + TN <= p.n) rows(std::true_type(), std::false_type());
    else rows(std::true_type(), std::true_type());
}
#include "kernels/gemm/gemm_wg_epi.cuh"

/* Origin of tile t: grouped rasterization, consecutive tiles walk gm row tiles of one
 * column of tiles, so the tiles in flight share their A rows and B columns through L2. */
template <int TN>
__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int gm, int *m0, int *n0) {
    const int first_m = t / (gm * tiles_n) * gm, gsize = min(tiles_m - first_m, gm);
    const int local = t % (gm * tiles_n);
    *m0 = (first_m + local % gsize) * BM;
    *n0 = local / gsize * TN;
}

/* A consumer warp frees a stage: one arrival on its empty barrier; CL = 2: on the empty barriers
 * of both CTAs (each stage's B halves came from both, so each producer refills only after the
 * consumers of both are done with it). */
template <int CL>
__device__ __forceinline__ void free_stage(uint32_t bar) {
    if constexpr (CL == 1) {
        mbar_arrive(bar);
    } else {
        mbar_arrive_cluster(bar, 0);
        mbar_arrive_cluster(bar, 1);
    }
}
/* The tiles of a persistent CTA, t = first(), + step(), ... < count, at origin(). CL = 1:
 * tiles blockIdx.x, + gridDim.x, ... of tile_origin's order. CL = 2 (AGOQ_WG_CLUSTER=2, clusters
 * of two CTAs along M): cluster c = blockIdx.x / 2 walks pairs of row tiles c, c + clusters, ...
 * in tile_origin's order over (tiles_m + 1) / 2 pair rows (groups of group_m / 2 pairs: the
 * same rows as group_m row tiles), and cluster rank r takes row tile 2 pair + r of each: the two
 * CTAs run column n0 together, the same number of tiles and k-tiles, so their rings stay in
 * lock-step. With tiles_m odd, rank 1's tile of the last pair row lies below C: a dummy whose
 * TMA boxes are all out of bounds (zeros) and whose rows the epilogue skips (m0 >= m). */
template <int TN, int CL, bool SK = false>
struct tile_walk {
    int count, tiles_m, tiles_n, rank;
    /* tm, tn, nt: row and column tiles of C, and their product (made where a loop starts; the
     * block indices and group_m read where the loops read them before clusters: CL = 1 compiles
     * to the same PTX) */
    __device__ __forceinline__ tile_walk(int tm, int tn, int nt, const agoq_wg_sk &sk) {
        tiles_n = tn;
        if constexpr (SK) {
            count = agoq_wg_sk_units(&sk, (int)blockIdx.x), tiles_m = tm, rank = 0;
        } else if constexpr (CL == 1) {
            count = nt, tiles_m = tm, rank = 0;
        } else {
            tiles_m = (tm + 1) / 2, count = tiles_m * tn, rank = (int)cluster_rank();
        }
    }
    __device__ __forceinline__ int first() const { return SK ? 0 : CL == 1 ? (int)blockIdx.x : (int)blockIdx.x / CL; }
    __device__ __forceinline__ int step() const { return SK ? 1 : CL == 1 ? (int)gridDim.x : (int)gridDim.x / CL; }
    /* group_m: wg_params' row tiles of a rasterization group */
    __device__ __forceinline__ void origin(int t, int group_m, int *m0, int *n0) const {
        if constexpr (CL == 1) {
            tile_origin<TN>(t, tiles_m, tiles_n, group_m, m0, n0);
        } else {
            tile_origin<TN>(t, tiles_m, tiles_n, max(1, group_m / 2), m0, n0);
            *m0 = 2 * *m0 + rank * BM;
        }
    }
    /* Work unit t: its tile's origin, k-tiles [*kb, *ke) and workspace slot (SK: unit t of this
     * CTA's plan; else tile t, whole); returns AGOQ_WG_SK_WHOLE, _PART or _LAST. */
    __device__ __forceinline__ int unit(int t, const wg_params &p, int ktiles, int *m0, int *n0, int *kb, int *ke,
                                        int *slot) const {
        if constexpr (SK) {
            int tile;
            const int kind = agoq_wg_sk_unit(&p.sk, (int)blockIdx.x, t, &tile, kb, ke, slot);
            tile_origin<TN>(tile, tiles_m, tiles_n, p.group_m, m0, n0);
            return kind;
        } else {
            origin(t, p.group_m, m0, n0);
            *kb = 0, *ke = ktiles, *slot = 0;
            return AGOQ_WG_SK_WHOLE;
        }
    }
};

/* The split tiles' hand-over between the 256 consumer threads of the CTAs (named barrier BAR_SK
 * among them), with one releasing and n acquiring threads a tile, not 256 (CUTLASS's generic
 * barrier has the same shape). PART: consumer thread ct's accumulators to slot `slot` (float4 i
 * of every thread side by side: coalesced), the CTA barrier, then thread 0's release of the
 * slot's flag (the barrier orders the other threads' stores before it). LAST: thread c < n waits
 * for slot c's flag (acquire), the CTA barrier, then every thread adds the n slots to its
 * accumulators in chunk order, 8 loads in flight (the same order whichever CTA is first), and
 * the flags are cleared for the next launch (a launch reads each slot once). */
constexpr int BAR_SK = 9;
template <int TN>
__device__ __forceinline__ void sk_put(const wg_params &p, const float (&d)[TN / 2], int ct, int slot) {
    float4 *w = p.sk_ws + (size_t)slot * (BM * TN / 4) + ct;
#pragma unroll
    for (int i = 0; i < TN / 8; i++) __stcg(w + 256 * i, make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]));
    nbar_sync(BAR_SK, 256);
    if (ct == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p.sk_flags + slot), "r"(1u) : "memory");
}
template <int TN>
__device__ __forceinline__ void sk_add(const wg_params &p, float (&d)[TN / 2], int ct, int slot0, int n) {
    static_assert(TN % 64 == 0, "the slot is read in batches of 8 float4 a thread");
    if (ct < n) {
        unsigned f = 0;
        for (;;) {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(p.sk_flags + slot0 + ct) : "memory");
            if (f) break;
            __nanosleep(64);
        }
    }
    nbar_sync(BAR_SK, 256);
    if (ct < n) p.sk_flags[slot0 + ct] = 0u;
#pragma unroll 1
    for (int c = 0; c < n; c++) {
        const float4 *w = p.sk_ws + (size_t)(slot0 + c) * (BM * TN / 4) + ct;
#pragma unroll
        for (int i0 = 0; i0 < TN / 8; i0 += 8) {
            float4 v[8];
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] = __ldcg(w + 256 * (i0 + j));
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int i = i0 + j;
                d[4 * i] += v[j].x, d[4 * i + 1] += v[j].y, d[4 * i + 2] += v[j].z, d[4 * i + 3] += v[j].w;
            }
        }
    }
}

#include "kernels/gemm/gemm_wg_deq.cuh"
#include "kernels/gemm/gemm_wg_dqp.cuh"

/* ST: stages of the ring, 3 or 4 (4: bf16 A only, no table encoder, C staged in halves).
 * TN: the tile's width, BN, 128 (bf16 A, general epilogue quantizer, 3 stages) or 192 (bf16 A, no
 * quantized copy: a block of 128 would straddle two tiles; 3 or 4 stages).
 * ER, BULK: the epilogue's AGOQ_WG_EPI_ROWS and AGOQ_WG_BULK; GQ: the general formats' copy
 * through the row tiles (AGOQ_WG_EPI_GEN=rows; gemm_wg_epi.cuh). */
template <int TA, int TB, bool QOUT, int DQ, bool FASTQ, int ST = STAGES, int TN = BN, int ER = 1, bool BULK = false,
          bool GQ = false, int CL = 1, bool SK = false>
__global__ void __launch_bounds__(DQ == 4 ? DQP_THREADS : THREADS, 1)
    wg_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, wg_params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr bool DEQA = DQ != 0; /* A from its stored codes: 1 decoded in shared memory, 2-3 in registers,
                                    * 4 by a decoder warpgroup (gemm_wg_dqp.cuh), 5-6 as 2-3 with
                                    * AGOQ_WG_DEQ_AHEAD (gemm_wg_deq.cuh's dqr_mainloop) */
    constexpr bool DQR = (DQ >= 2 && DQ <= 3) || (DQ >= 5 && DQ <= 6); /* the register prologue */
    /* the register prologue's decoders, split over two kernels: integer and FP4, or FP8 and table
     * (the latter build the 4-bit table pairs) */
    constexpr bool INTK = DQ == 2 || DQ == 5, PAIRS = DQR && !INTK;
    static_assert(ST == STAGES || (ST == 4 && (!DEQA || DQ == 1 || DQ == 4)) || (ST == 5 && DQ == 1),
                  "4 stages: the bf16 kernels, smem prologues; 5: the smem prologue storing C directly");
    static_assert(DQ != 4 || ST == 4, "the decoder warpgroup: 4 stages");
    static_assert(TN == BN || (TN == 128 && !DEQA && !FASTQ && ST == STAGES) ||
                      (TN == 192 && (!DEQA || DQ == 4 || (DQ == 1 && ST == 5)) && !QOUT),
                  "128-wide tiles: bf16 A, 3 stages; 192-wide: bf16 A, the decoder warpgroup or 5 smem stages, no copy");
    static_assert((ER == 1 && !BULK && !GQ) || (ST == STAGES && TN == BN && !DEQA), "epilogue variants: 3 stages, 256 wide");
    static_assert(!GQ || (QOUT && !FASTQ && !BULK), "the general row-tile copy: no fast FP4, no bulk copies");
    static_assert(CL == 1 || (CL == 2 && !DEQA && !BULK), "clusters of 2: the bf16 kernels, no bulk residual");
    static_assert(!SK || (CL == 1 && !DEQA && !BULK), "the split last wave: the bf16 kernels, no clusters, no bulk residual");
    constexpr bool DIRECT = ST == 5 && TN == BN; /* C stored by the consumers (store_direct), no staging */
    constexpr bool HALF = ST == 4 || (ST == 5 && !DIRECT); /* C staged a consumer warpgroup's 64 rows at a time */
    constexpr int NH = HALF ? 2 : 1, RS = BM / NH; /* hand-offs a tile, rows staged in each */
    extern __shared__ uint8_t raw[];
    __shared__ __align__(8) uint64_t full[ST], empty[ST], rbar; /* rbar: the bulk residual, a phase a tile */
    /* table encoders of the epilogue (none with 4 stages: no room; the host keeps them on 3) */
    __shared__ __align__(16) uint8_t tab_raw[HALF || DIRECT ? 16 : sizeof(agoq_smem_table)];
    agoq_smem_table &tab = *reinterpret_cast<agoq_smem_table *>(tab_raw);
    __shared__ float2 dq_pairs[PAIRS ? 256 : 1]; /* the register prologue's 4-bit table pairs */
    __shared__ __align__(8) uint64_t dqb[DQ == 4 ? 2 * DQP_SLOTS : 1]; /* the decoder warpgroup's afull, aempty */
    uint8_t *ring = raw + ((1024u - (saddr(raw) & 1023u)) & 1023u);
    const uint32_t ring_s = saddr(ring);
    /* the barriers' shared addresses once: in the consumers' mainloop saddr(&full[s]) compiled to
     * S2UR SR_CgaCtaId + ULEA a k-tile (ncu, twenty-fifth session: short-scoreboard stalls on
     * the way to the full barrier's wait) */
    uint32_t full_s = saddr(&full[0]), empty_s = saddr(&empty[0]);
    uint32_t ring_k = ring_s; /* AGOQ_WG_DESC_EARLY: kept in a register (below) */
    if constexpr (AGOQ_WG_DESC_EARLY) { /* opaque, so that nvcc keeps them instead of rematerializing
                                         * them from SR_CgaCtaId in every k-tile (SASS, thirty-eighth session) */
        asm volatile("" : "+r"(full_s), "+r"(empty_s), "+r"(ring_k));
    }
    const int tid = threadIdx.x, wg = tid >> 7;
    const int tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + TN - 1) / TN, ntiles = tiles_m * tiles_n;
    const int ktiles = (p.k + BK - 1) / BK;
    if (tid == 0) {
        for (int s = 0; s < ST; s++) {
            mbar_init(saddr(&full[s]), 1);
            mbar_init(saddr(&empty[s]), 8 * CL); /* one arrival per consumer warp (of both CTAs: CL = 2) */
        }
        mbar_init(saddr(&rbar), 1);
        if (DQ == 4) dqp_init(saddr(dqb));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (QOUT && !HALF && p.q.enc == AGOQ_ENC_TABLE) agoq_dev_load_table(&tab, p.q.table);
    if (DEQA && !HALF && !DIRECT) agoq_dev_load_table(&tab, p.qa.table); /* table decoders (NULL: nothing) */
    __syncthreads();
    /* CL = 2: both CTAs' barriers initialized before any multicast copy or remote arrival */
    if constexpr (CL == 2) cluster_sync();
    if (PAIRS && p.qa.dec == AGOQ_ENC_TABLE && p.qa.bits == 4) {
        for (int i = tid; i < 256; i += THREADS) dq_pairs[i] = make_float2(tab.value[i & 15], tab.value[i >> 4]);
        __syncthreads();
    }
    constexpr bool DQ4 = (DQ == 1 || DQ == 4) && ST >= 4; /* the 4- and 5-stage smem prologues: 4-bit codes a stage */
    constexpr int SB = DQ4 ? (DQ == 1 ? dq4_stage_bytes(TN) : DQ4_STAGE_BYTES) : DEQA ? DQ_STAGE_BYTES : stage_bytes<TN>();
    constexpr int AB = DQ4 ? CODE_BYTES / 2 : DEQA ? CODE_BYTES : A_BYTES, NB = DIRECT ? 2 : DQ4 ? AGOQ_WG_DQS_BUFS4 : 2;
    uint16_t *stage = reinterpret_cast<uint16_t *>(ring + ST * SB + (DQ == 1 || DQ == 4 ? 2 * NB * DQ_TILE_BYTES : 0));
    const uint32_t dqb_s = saddr(dqb), slots_s = ring_s + ST * SB; /* DQ 4: barriers, A slots */
    /* setmaxnreg: warpgroup 0 (producer + epilogue warps) gives registers to the consumers
     * (REGS_WG0 / REGS_CONSUMER); ptxas allocates each branch within its count, so the prologue's
     * decode fits beside the 128 accumulators without spills or serialized wgmma. */

    /* Persistent: CTA b runs tiles b, b + grid, ...; `it` counts k-tiles over all of them, so
     * stage it % ST is in its (it / ST)-th use and the barrier phases carry across tiles. */
    if (wg == 0) { /* producer (thread 0) and the epilogue warps (warps 1-3) */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(DQ == 4 ? DQP_REGS_WG0 : ER == 8 ? REGS_WG0_ER8 : REGS_WG0));
        if (tid == 0) {
            const tile_walk<TN, CL, SK> w(tiles_m, tiles_n, ntiles, p.sk);
            int it = 0;
            for (int t = w.first(); t < w.count; t += w.step()) {
                int m0, n0, kb, ke, slot;
                w.unit(t, p, ktiles, &m0, &n0, &kb, &ke, &slot);
                for (int kt = kb; kt < ke; kt++, it++) {
                    const int s = it % ST, k0 = kt * BK;
                    /* CL = 2: the consumers of both CTAs have freed the stage */
                    if (it >= ST) mbar_wait(saddr(&empty[s]), (uint32_t)((it / ST - 1) & 1));
                    const uint32_t bar = saddr(&full[s]), a = ring_s + s * SB, b = a + AB;
                    /* out-of-bounds box elements are zeros and count; CL = 2: A + the whole B, half of
                     * it multicast by the partner (its bytes may land before this arms the phase:
                     * the transaction count may go negative, the phase cannot complete without
                     * this arrival) */
                    mbar_expect_tx(bar, DEQA ? (uint32_t)(BM * BK * p.qa.bits / 8 + TN * BK * 2) : (uint32_t)SB);
                    if (DEQA) {
                        tma_load(a, &map_a, k0 * p.qa.bits / 8, m0, bar); /* codes: [m][k bits / 8] bytes */
                    } else if (TA) {
                        for (int j = 0; j < BM / 64; j++) tma_load(a + j * MN_BOX_BYTES, &map_a, m0 + 64 * j, k0, bar);
                    } else {
                        tma_load(a, &map_a, k0, m0, bar);
                    }
                    if (CL == 2 && TB) { /* this rank's half of B's boxes, into both CTAs */
                        for (int j = w.rank * TN / 128; j < (w.rank + 1) * TN / 128; j++)
                            tma_load_mc(b + j * MN_BOX_BYTES, &map_b, n0 + 64 * j, k0, bar, 0x3);
                    } else if (CL == 2) { /* rows n0 + rank TN / 2 .. of B (the map's box: TN / 2 rows) */
                        tma_load_mc(b + w.rank * (TN / 2) * 128, &map_b, k0, n0 + w.rank * (TN / 2), bar, 0x3);
                    } else if (TB) {
                        for (int j = 0; j < TN / 64; j++) tma_load(b + j * MN_BOX_BYTES, &map_b, n0 + 64 * j, k0, bar);
                    } else {
                        tma_load(b, &map_b, k0, n0, bar);
                    }
                }
            }
        } else if (tid >= 32 && !DIRECT) { /* epilogue warps: NH hand-offs of the staging tile per tile */
            const int et = tid - 32, ew = et >> 5, lane = tid & 31;
            const tile_walk<TN, CL, SK> w(tiles_m, tiles_n, ntiles, p.sk);
            for (int t = w.first(); t < w.count; t += w.step()) {
                int m0, n0, kb, ke, slot;
                if (w.unit(t, p, ktiles, &m0, &n0, &kb, &ke, &slot) == AGOQ_WG_SK_PART) continue; /* no epilogue here */
#pragma unroll 1
                for (int h = 0; h < NH; h++) { /* half h: consumer warpgroup h's rows (HALF) */
                    const int mh = m0 + h * RS;
                    const int bf = h ? BAR_FULL1 : BAR_FULL, be = h ? BAR_EMPTY1 : BAR_EMPTY;
                    if (p.r && BULK) load_residual_bulk<TN>(p, stage, saddr(&rbar), ew, lane, mh, n0, RS);
                    else if (p.r) load_residual<TN>(p, stage, et, mh, n0, RS);
                    nbar_arrive(be, HALF ? BAR_HALF : BAR_HANDOFF); /* staging free (and holding R, or soon: BULK) */
                    nbar_sync(bf, HALF ? BAR_HALF : BAR_HANDOFF);   /* the consumers have staged these rows */
                    if constexpr (BULK) store_c_bulk<TN>(p, stage, et, mh, n0, RS);
                    store_rows<QOUT && FASTQ, TN, ER, !BULK, GQ>(p, &tab, stage, ew, lane, mh, n0, RS);
                    if constexpr (QOUT && !FASTQ && !GQ) quant_blocks<TN>(p, &tab, stage, et, mh, n0, RS);
                    if constexpr (BULK) bulk_wait_read(); /* this thread's C copies have read the staging */
                    nbar_sync(BAR_EPI, EPI_THREADS); /* every epilogue thread is done reading the staging */
                }
            }
            if constexpr (BULK) bulk_wait(); /* the C copies are written */
        }
    } else if (DQ == 4 && wg == 3) { /* the decoder warpgroup (gemm_wg_dqp.cuh) */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(DQP_REGS_DEC));
        dqp_run<DQ, ST, SB, TN>(p, &tab, ring_s, full_s, dqb_s, slots_s, tid - 384, tiles_m, tiles_n, ntiles, ktiles);
    } else { /* consumers: rows 64 * (wg - 1) .. + 63 of each tile */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(DQ == 4 ? DQP_REGS_CONSUMER : ER == 8 ? REGS_CONSUMER_ER8 : REGS_CONSUMER));
        /* AGOQ_WG_DESC_EARLY: the warpgroup broadcast from lane 0 (warp-uniform; meant for A's
         * descriptors to be uniform-datapath values as B's are, which nvcc 13.0 did not do) */
        const int cw = AGOQ_WG_DESC_EARLY ? __shfl_sync(0xffffffffu, wg - 1, 0) : wg - 1;
        const int ct = tid - 128, lt = ct & 127; /* consumer thread, and its index in its warpgroup */
        float rs[2] = {0.0f, 0.0f}, rz[2] = {0.0f, 0.0f}; /* AGOQ_WG_DEQ_AHEAD: scales across tiles (dqr_mainloop) */
        const tile_walk<TN, CL, SK> w(tiles_m, tiles_n, ntiles, p.sk);
        int it = 0;
        for (int t = w.first(); t < w.count; t += w.step()) {
            int m0, n0, kb, ke, slot;
            [[maybe_unused]] const int kind = w.unit(t, p, ktiles, &m0, &n0, &kb, &ke, &slot);
            float d[TN / 2];
#pragma unroll
            for (int i = 0; i < TN / 2; i++) d[i] = 0.0f;
            acc_fence(d); /* the zeros are written before the first wgmma.fence, not inside its stage */
            if constexpr (DQ == 1) { /* the shared-memory prologue (gemm_wg_deq.cuh) */
                uint32_t pfb = 0;
                const uint16_t *pf = DIRECT ? direct_pf(p, m0 + cw * HALF_ROWS, n0, lt, pfb) : nullptr;
                dqs_run<ST, SB, AB, NB, TN>(p, &tab, d, ring_s, full_s, empty_s, ring_s + ST * SB + (uint32_t)(NB * cw * DQ_TILE_BYTES),
                                        m0, cw, lt, ktiles, it, pf, pfb);
            }
            /* register prologue: one mainloop per decoder and code width, the decoders split over
             * two kernels (DQ 2 / 5: integer and FP4, DQ 3 / 6: FP8 and table; all six in one
             * kernel make ptxas serialize the wgmma for want of registers) */
            if constexpr (DQR) {
                constexpr bool AH = DQ == 5 || DQ == 6;
                constexpr int D0 = INTK ? AGOQ_ENC_INT_SYM : AGOQ_ENC_FP8_E4M3;
                constexpr int D1 = INTK ? AGOQ_ENC_INT_ASYM : AGOQ_ENC_FP8_E5M2;
                constexpr int D2 = INTK ? AGOQ_ENC_FP4 : AGOQ_ENC_TABLE;
                const bool b4 = p.qa.bits == 4, t0 = t == w.first();
                int m0n = -1, n0n; /* AH: the CTA's next tile's rows (its scales are loaded a k-tile ahead) */
                if (AH && t + w.step() < w.count) w.origin(t + w.step(), p.group_m, &m0n, &n0n);
                float ls[2] = {0.0f, 0.0f}, lz[2] = {0.0f, 0.0f}; /* without AH: this tile's scales */
                float(&sc2)[2] = AH ? rs : ls;
                float(&zc2)[2] = AH ? rz : lz;
                auto run = [&](auto dec, auto bits) {
                    dqr_mainloop<decltype(dec)::value, decltype(bits)::value, AH>(p, &tab, dq_pairs, d, ring_s, full, empty,
                                                                                  m0, m0n, t0, sc2, zc2, cw, lt, ktiles, it);
                };
                using I4 = agoq_enc_t<4>;
                using I8 = agoq_enc_t<8>;
                if (p.qa.dec == D0) b4 ? run(agoq_enc_t<D0>(), I4()) : run(agoq_enc_t<D0>(), I8());
                else if (p.qa.dec == D1) b4 ? run(agoq_enc_t<D1>(), I4()) : run(agoq_enc_t<D1>(), I8());
                else if constexpr (D2 != AGOQ_ENC_FP4 || AH) /* FP4 (by arithmetic) implies AH: not in kernel 2 */
                    b4 ? run(agoq_enc_t<D2>(), I4()) : run(agoq_enc_t<D2>(), I8());
            }
            for (int kt = kb; (DQ == 0 || DQ == 4) && kt < ke; kt++, it++) {
                const uint32_t s = (uint32_t)it % ST;
                /* AGOQ_WG_DESC_EARLY (DQ 0): the stage's descriptors before its full-barrier wait, so
                 * that the first wgmma issues right after the wait returns */
                constexpr bool EARLY = AGOQ_WG_DESC_EARLY && DQ == 0;
                uint64_t da0 = 0, db0 = 0;
                if constexpr (EARLY) {
                    const uint32_t a = ring_k + s * SB + (uint32_t)cw * 64 * 128, b = ring_k + s * SB + AB;
                    da0 = TA ? sdesc(a, p.mn_lbo, p.mn_sbo) : sdesc(a, 16, 1024);
                    db0 = TB ? sdesc(b, p.mn_lbo, p.mn_sbo) : sdesc(b, 16, 1024);
                    asm volatile("" : "+l"(da0), "+l"(db0)); /* computed before the wait (volatile order) */
                }
                mbar_wait(full_s + 8u * s, ((uint32_t)it / ST) & 1u);
                uint32_t a = ring_s + s * SB + cw * 64 * 128;
                const uint32_t b = ring_s + s * SB + AB;
                if constexpr (DQ == 4) a = dqp_acquire(dqb_s, slots_s, it) + cw * 64 * 128;
                wg_fence();
                /* a k-step's descriptors: the k-tile's plus its offset >> 4 (2048 or 32 bytes a
                 * step), sdesc(a + off) bit for bit: shared addresses stay below 2^18, so the
                 * 14-bit address field never carries (one descriptor an operand a k-tile instead
                 * of four, each a mask, shift and OR chain) */
                if constexpr (!EARLY) {
                    da0 = TA ? sdesc(a, p.mn_lbo, p.mn_sbo) : sdesc(a, 16, 1024);
                    db0 = TB ? sdesc(b, p.mn_lbo, p.mn_sbo) : sdesc(b, 16, 1024);
                }
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) {
                    const uint64_t da = da0 + (uint64_t)(kk * (TA ? 2048 : 32) >> 4);
                    const uint64_t db = db0 + (uint64_t)(kk * (TB ? 2048 : 32) >> 4);
                    if constexpr (TN == 256) wgmma_256<TA, TB>(d, da, db);
                    else if constexpr (TN == 192) wgmma_192<TA, TB>(d, da, db);
                    else wgmma_128<TA, TB>(d, da, db);
                }
                wg_commit();
                wg_wait<1>(); /* the previous k-tile's wgmma are done: free its stage */
                if (kt > kb && (tid & 31) == 0) free_stage<CL>(empty_s + 8u * ((uint32_t)(it - 1) % ST));
                if (DQ == 4 && kt > 0 && (tid & 31) == 0) dqp_release(dqb_s, it - 1);
            }
            wg_wait<0>();
            acc_fence(d);
            if ((tid & 31) == 0) free_stage<CL>(empty_s + 8u * (uint32_t)((it - 1) % ST)); /* the tile's last stage */
            if (DQ == 4 && (tid & 31) == 0) dqp_release(dqb_s, it - 1);
            if constexpr (SK) { /* a split tile: a PART hands its sums over, the LAST adds them */
                if (kind == AGOQ_WG_SK_PART) {
                    sk_put<TN>(p, d, ct, slot);
                    continue;
                }
                if (kind == AGOQ_WG_SK_LAST) sk_add<TN>(p, d, ct, slot, p.sk.s - 1);
            }
            if constexpr (DIRECT) {
                store_direct<TN>(p, d, lt, m0 + cw * HALF_ROWS, n0);
            } else if constexpr (HALF) { /* this warpgroup's 64 rows in their own hand-off; warpgroup 1's
                                   * waits for the epilogue warps to finish warpgroup 0's */
                nbar_sync(cw ? BAR_EMPTY1 : BAR_EMPTY, BAR_HALF);
                stage_acc<TN>(p, d, stage, lt, m0 + cw * HALF_ROWS, n0);
                nbar_arrive(cw ? BAR_FULL1 : BAR_FULL, BAR_HALF);
            } else {
                nbar_sync(BAR_EMPTY, BAR_HANDOFF); /* the epilogue warps are done with the previous tile */
                if (BULK && p.r) /* the residual's bulk copies, the CTA's (t - blockIdx.x) / gridDim.x-th phase */
                    mbar_wait(saddr(&rbar), (uint32_t)(((t - w.first()) / w.step()) & 1));
                stage_acc<TN>(p, d, stage, ct, m0, n0);
                if constexpr (BULK) fence_proxy_async(); /* the staged tile visible to the bulk stores */
                nbar_arrive(BAR_FULL, BAR_HANDOFF); /* hand the tile over; on to the next one's mainloop */
            }
        }
    }
    /* CL = 2: no CTA exits while its partner may still multicast into it or arrive on its barriers */
    if constexpr (CL == 2) cluster_sync();
#else
    __trap(); /* built without sm_90a: no wgmma */
#endif
}
} // namespace

#include "kernels/gemm/gemm_wg_launch.cuh"
