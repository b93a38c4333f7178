/* Device and launch helpers of the fused activation kernels (fused.cu, fused_gelu.cu,
 * fused_swiglu.cu, fused_rmsnorm.cu) and the GEMM epilogue. No quantization arithmetic lives
 * here: ranges, scales, encoders and decoders are those of the standalone quantizers
 * (quant_tile.cuh, quant_device.cuh), one copy, bit-exact with quant_ref.c; this file only
 * adapts them to the fused kernels' data layout.
 *
 * Fast paths ("vector" kernels): a lane owns 8 consecutive bf16 elements (one 16-byte vector),
 * a warp 32 lanes x 16 bytes = 256 consecutive elements ("warp vector"), so every warp load and
 * store is one contiguous 512-byte run. When a row is whole blocks (cols % B == 0) the rowq
 * layout (fused.h) is the flat layout of the whole tensor, and a block of 32..256 elements lies
 * inside one warp vector that starts at a multiple of 256 elements: agoq_tile_quantize<U>
 * quantizes U contiguous warp vectors as one tile (fast branch-free encoders, careful re-run
 * when a block holds NaN or Inf; fz_qt_at offsets the planes to a tile starting anywhere), and
 * agoq_tile_decode decodes a lane's 8 codes with its block's scale. The (encoder, width, block)
 * or (decoder, width) of a launch is dispatched once on the host: 9 x 4 or 9 instantiations.
 * General paths (any shape, format, rounding): one thread per 8-element group of the rowq
 * layout on quant_device.cuh's group primitives, the encoder / decoder picked per group by a
 * warp-uniform switch (one kernel per op instead of one per kind: these are the rare paths).
 *
 * Test knobs (environment): AGOQ_FUSED_GRID_CAP=N caps every grid at N CTAs (exercises the
 * grid-stride loops), AGOQ_FUSED_NO_FAST=1 sends everything through the general kernels. */
#ifndef AGOQ_FUSED_DEV_CUH
#define AGOQ_FUSED_DEV_CUH
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/fused/fused.h"
#include "kernels/fused/fused_fast.cuh"
#include "kernels/fused/fused_math.h"
#include "kernels/quant/quant_launch.cuh"

#define FZ_THREADS AGOQ_QUANT_THREADS /* CTA size of every fused kernel */
#define FZ_WVEC 256                   /* elements of a warp vector: 32 lanes x 8 bf16 */
static_assert(FZ_THREADS == AGOQ_ROW_THREADS, "the RMSNorm row kernels use the quantizers' CTA size");

enum { FZ_OP_NONE, FZ_OP_GELU, FZ_OP_SWIGLU };

/* ---- 16-byte bf16 vectors: read-once / write-once access, exact unpack, RNE pack ----
 * AGOQ_FZ_CACHE (compile time, the twenty-sixth session's A/B build flag; no value changes): the
 * cache operators of these loads and stores. 1 (default) ld.global.nc loads and plain (write-back)
 * stores; 0 .cs loads and stores (the default until then). H100 A/B (results/h100/logs/
 * s26_fbfd1d3_cache/, three rounds, copy ratio at 256 MiB / 1 GiB / 4 GiB, means of the rounds):
 * 1 against 0 +0.008 .. +0.052 on every forward (SwiGLU + FP4 copy 0.894 / 0.931 / 0.935 -> 0.930
 * / 0.980 / 0.988) and on the plain GELU / SwiGLU backwards, within +-0.01 on the backwards from
 * FP4 and on the RMSNorm backwards (cp.async-staged: not these loads). The two mixed forms
 * measured there and in s26_f2086e5_ld/ did not gain (.cs loads with plain stores -0.012 ..
 * +0.015, ld.global.nc loads with .cs stores -0.009 .. +0.006): the loads' .cs was the cost, and
 * they were dropped. At 16 - 128 MiB, where the tile sources' ld.global.nc lost (quant_ldst.cuh),
 * the twenty-seventh session's four-round A/B (s27_8e1bbba/varab_table.txt) found 0 ahead by
 * more than 0.010 nowhere and 1 ahead from 128 MiB: no size rule here (docs/kernels.md "Cache
 * operators"). The backwards' stored codes keep .cs (ld.global.nc for them measured within
 * +-0.006 in the mean, s26_ldnc/). */
#ifndef AGOQ_FZ_CACHE
#define AGOQ_FZ_CACHE 1
#endif
static_assert(AGOQ_FZ_CACHE == 0 || AGOQ_FZ_CACHE == 1, "AGOQ_FZ_CACHE: 0 (.cs) or 1 (ld.global.nc, plain stores)");
/* A hint: the `bytes` (a multiple of 16, > 0) at p (16-byte aligned) fetched into L2 by the
 * bulk-copy unit (cp.async.bulk.prefetch.L2, sm_90), no register or completion to track; the
 * forwards' AGOQ_FWD_L2PF (below) */
__device__ __forceinline__ void fz_l2_prefetch(const void *p, uint32_t bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
__device__ __forceinline__ uint4 fz_load(const uint16_t *p) {
    if constexpr (AGOQ_FZ_CACHE == 1) return __ldg((const uint4 *)p);
    else return __ldcs((const uint4 *)p);
}
__device__ __forceinline__ void fz_store(uint16_t *p, uint4 w) {
    if constexpr (AGOQ_FZ_CACHE == 1) *(uint4 *)p = w;
    else __stcs((uint4 *)p, w);
}

/* cp.async (agoq_cp_async, agoq_cp_commit, agoq_cp_wait): quant_ldst.cuh */

/* dw[j] for the CW (16 or 32) columns j = c0 .. c0 + CW - 1 below cols: the groups' partial rows
 * summed column by column in group order (agoq_dw_reduce_ref's additions: bit-exact), staged
 * through buf (at least chunk x CW floats): the CTA's NT threads copy up to `chunk` groups x CW
 * columns at a time (V16: 16-byte cp.async.cg, CW / 4 a group's row, for cols % 4 == 0 and a
 * 16-byte aligned partial; else 4 bytes a column), then warp 0's first CW lanes add them (rounds
 * of 8 shared-memory loads). Every thread of the CTA calls it (two barriers a chunk). The
 * standalone reduction (fused_rmsnorm.cu, CW 32) and the staged RMSNorm backward's fused tail
 * (fused_rms_bwd.cu, CW 16: a group's slice in 64 bytes, so the CTA's 48 KB of stages hold 768
 * groups, one wave's worth, in one chunk) run it. */
template <int NT, bool V16, int CW = 32>
__device__ __forceinline__ void fz_dw_reduce_cols(const float *partial, int groups, int cols, float *dw, int c0,
                                                  float *buf, int chunk) {
    static_assert(CW == 16 || CW == 32, "16 or 32 columns a call");
    constexpr int PR = CW / 4; /* 16-byte pieces a group's slice */
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, j = c0 + lane;
    const bool mine = lane < CW && j < cols; /* warp 0: the lane's column */
    float acc = 0.0f;
    for (int g0 = 0; g0 < groups; g0 += chunk) {
        const int n = min(chunk, groups - g0);
        if constexpr (V16) {
            const int piece = (int)threadIdx.x % PR, c = c0 + 4 * piece;
            if (c < cols)
                for (int g = (int)threadIdx.x / PR; g < n; g += NT / PR)
                    agoq_cp_async<16>(buf + g * CW + 4 * piece, partial + (size_t)(g0 + g) * (size_t)cols + (size_t)c);
        } else if (mine) {
            for (int g = warp; g < n; g += NT / 32)
                agoq_cp_async<4>(buf + g * CW + lane, partial + (size_t)(g0 + g) * (size_t)cols + (size_t)j);
        }
        agoq_cp_commit();
        agoq_cp_wait<0>();
        __syncthreads();
        if (warp == 0 && lane < CW) {
            const float *col = buf + lane;
            int g = 0;
            for (; g + 8 <= n; g += 8) {
                float t[8];
#pragma unroll
                for (int u = 0; u < 8; u++) t[u] = col[(g + u) * CW];
#pragma unroll
                for (int u = 0; u < 8; u++) acc = acc + t[u];
            }
            for (; g < n; g++) acc = acc + col[g * CW];
        }
        __syncthreads();
    }
    if (warp == 0 && mine) dw[j] = acc;
}

/* ---- fast path: whole warp vectors of the flat layout ---- */
/* Quantizes U warp vectors (tile `tile` of 256*U elements): the fast encoders, or the careful
 * ones when a block's range is not finite. All 32 lanes call it. */
/* split, PACK8: agoq_tile_quantize's split tile and fp4 encoder (the SwiGLU forward's). */
template <int ENC, int BITS, int LOG2B, int U, bool PACK8 = false>
__device__ __forceinline__ void fz_quantize(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                            const float (&v)[U][8], size_t tile, const agoq_cuda_qtensor &q,
                                            int lane, size_t split = 0) {
    if (!agoq_tile_quantize<ENC, BITS, LOG2B, 8, false, U, PACK8>(p, t, v, tile, q, lane, split))
        agoq_tile_quantize<ENC, BITS, LOG2B, 8, true, U, PACK8>(p, t, v, tile, q, lane, split);
}

/* fz_quantize over U packed bf16 vectors as loaded (4 words of 2 bf16 each; AGOQ_F8, the fused
 * SwiGLU forward): the quantizers' packed tile with the q7 options (quant_tile.cuh: the absmax by
 * max.NaN.xorsign.abs.bf16x2, FP4 codes by agoq_q7_fp4_pack_bf16 from the words; other encoders
 * unpack each vector), split as in fz_quantize. */
template <int ENC, int BITS, int LOG2B, int U>
__device__ __forceinline__ void fz_quantize_bf16p(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                  const uint32_t (&w)[U][4], const agoq_cuda_qtensor &q, int lane,
                                                  size_t split) {
    constexpr int OPT = AGOQ_TILE_OPT_PACK | AGOQ_TILE_OPT_Q7;
    if (!agoq_tile_quantize_bf16p<ENC, BITS, LOG2B, false, U, false, OPT>(p, t, w, 0, q, lane, split))
        agoq_tile_quantize_bf16p<ENC, BITS, LOG2B, true, U>(p, t, w, 0, q, lane, split);
}

/* The planes of q from element e0 on (a multiple of 256, so of the block): agoq_tile_quantize
 * writes tile 0 of this view = elements [e0, e0 + 256 U) of q. */
template <int BITS, int LOG2B>
__device__ __forceinline__ agoq_cuda_qtensor fz_qt_at(const agoq_cuda_qparams &p, const agoq_cuda_qtensor &q,
                                                      size_t e0) {
    const size_t sb = (e0 >> LOG2B) * (p.bf16_scale ? 2u : 4u);
    return agoq_cuda_qtensor{q.codes + e0 * BITS / 8, q.scales + sb, q.zeros ? q.zeros + sb : q.zeros, 0};
}

/* A lane's 8 codes (4 or 8 bytes) and its block's scale and zero point, loaded early and
 * decoded later (agoq_tile_decode) so that loads of several vectors are in flight. */
struct fz_codes {
    uint64_t c;
    float s, m;
};
template <int DEC, int BITS>
__device__ __forceinline__ fz_codes fz_load_codes(const agoq_cuda_qparams &p, const agoq_cuda_qtensor &q, size_t e0,
                                                  int log2b) {
    static_assert(BITS == 4 || BITS == 8, "vector codes: 4 or 8 bytes");
    fz_codes r;
    if constexpr (BITS == 4) {
        r.c = __ldcs((const unsigned int *)(q.codes + e0 / 2));
    } else {
        const uint2 w = __ldcs((const uint2 *)(q.codes + e0));
        r.c = (uint64_t)w.x | (uint64_t)w.y << 32;
    }
    const size_t blk = e0 >> log2b;
    r.s = agoq_dev_load_scale(q.scales, blk, p.bf16_scale);
    r.m = DEC == AGOQ_ENC_INT_ASYM ? agoq_dev_load_scale(q.zeros, blk, p.bf16_scale) : 0.0f;
    return r;
}
template <int DEC, int BITS>
__device__ __forceinline__ void fz_decode(const agoq_cuda_qparams &p, const agoq_smem_table *t, const fz_codes &c,
                                          float (&v)[8]) {
    agoq_tile_decode<DEC, BITS, 8>(p, t, c.c, c.s, c.m, v);
}

/* The 8 input values of a backward lane: decoded from the stored copy (DEQ: flat layout,
 * element e of q) or bf16 x[e]; loaded first, values taken later. */
template <int DEC, int BITS, bool DEQ>
struct fz_bwd_in {
    fz_codes c;
    uint4 raw;
    __device__ __forceinline__ void load(const agoq_cuda_qparams &p, const agoq_cuda_qtensor &q, const uint16_t *x,
                                         size_t e, int log2b) {
        if constexpr (DEQ) c = fz_load_codes<DEC, BITS>(p, q, e, log2b);
        else raw = fz_load(x + e);
    }
    __device__ __forceinline__ void get(const agoq_cuda_qparams &p, const agoq_smem_table *t, float (&v)[8]) const {
        if constexpr (DEQ) fz_decode<DEC, BITS>(p, t, c, v);
        else agoq_bf16x8_to_f32(raw, v);
    }
};

/* RMSNorm rows (fused_rmsnorm.cu, fused_rms_bwd.cu): the sum of the CTA's per-thread partials in
 * the order of agoq_tree_sum_ref; every thread gets it.
 * red: 2 * AGOQ_ROW_THREADS / 32 floats of shared memory. NV: values reduced at once (1 or 2). */
template <int NV>
__device__ __forceinline__ void row_tree_sum(float (&v)[NV], float *red) {
    constexpr int NW = AGOQ_ROW_THREADS / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int i = 0; i < NV; i++) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) v[i] = v[i] + __shfl_down_sync(0xffffffffu, v[i], off);
        if (lane == 0) red[i * NW + warp] = v[i];
    }
    __syncthreads();
    if (warp == 0)
#pragma unroll
        for (int i = 0; i < NV; i++) {
            float w = lane < NW ? red[i * NW + lane] : 0.0f;
#pragma unroll
            for (int off = NW / 2; off > 0; off >>= 1) w = w + __shfl_down_sync(0xffffffffu, w, off);
            if (lane == 0) red[i * NW] = w;
        }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < NV; i++) v[i] = red[i * NW];
    __syncthreads(); /* red is reused by the next row */
}

/* One term of an RMSNorm forward's sum of squares, acc + v * v: by a fused multiply-add (every
 * forward since the thirty-second session: one instruction instead of a multiply and an add, and
 * one rounding instead of two) or as the reference does (FMA false: bit for bit with
 * agoq_row_dot_ref; the pair kernel built with -DAGOQ_RMS_FWD_FMA=0, for A/Bs). Issue 15 ends exactness
 * at the quantizer: the forwards' norm output and rstd are tested against rmsnorm_ref.c within
 * the bounds fused_tol.c derives (one bf16 ulp; rstd relative); the stored copy is of x and does
 * not depend on it. The staged backward takes its products by FMA too (fused_rms_bwd.cu's rb_mac);
 * the other backwards keep the reference's operations (inside the same bounds). */
template <bool FMA = true>
__device__ __forceinline__ float fz_sq_acc(float acc, float v) {
    if constexpr (FMA) return __fmaf_rn(v, v, acc);
    else return acc + v * v;
}

/* The same sum where one warp holds the CTA's partials (the RMSNorm forwards of a warp or a pair of
 * warps a row, fused_rmsnorm.cu, fused_rms_pair.cu): part[k] of lane l is thread 32 k + l's
 * partial; the shuffles of row_tree_sum per k, then the halving tree over k (agoq_row_dot_ref
 * bit for bit). Every lane gets the row's sum. */
template <int NW>
__device__ __forceinline__ float warp_row_sum(float (&part)[NW]) {
#pragma unroll
    for (int k = 0; k < NW; k++) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) part[k] = part[k] + __shfl_down_sync(0xffffffffu, part[k], off);
        part[k] = __shfl_sync(0xffffffffu, part[k], 0);
    }
#pragma unroll
    for (int h = NW / 2; h > 0; h /= 2)
#pragma unroll
        for (int i = 0; i < h; i++) part[i] = part[i] + part[i + h];
    return part[0];
}

/* row_tree_sum with one barrier instead of three (AGOQ_F6, the staged RMSNorm backward): every
 * warp sums the NW warp partials itself with warp 0's shuffle tree above (the same bits), from
 * a buffer picked by the call's parity (alternate it call by call: the barrier of call n + 1
 * orders every read of call n before the writes of call n + 2). red: 2 * NV * NW floats.
 * In two halves for callers that work between them (AGOQ_F8): row_sum_post (the warp trees,
 * lane 0 writes the warp sums) and row_sum_finish (the barrier, the tree over the warp sums). */
template <int NV>
__device__ __forceinline__ void row_sum_post(float (&v)[NV], float *red, int parity) {
    constexpr int NW = AGOQ_ROW_THREADS / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float *buf = red + parity * NV * NW;
#pragma unroll
    for (int i = 0; i < NV; i++) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) v[i] = v[i] + __shfl_down_sync(0xffffffffu, v[i], off);
        if (lane == 0) buf[i * NW + warp] = v[i];
    }
}
template <int NV>
__device__ __forceinline__ void row_sum_finish(float (&v)[NV], const float *red, int parity) {
    constexpr int NW = AGOQ_ROW_THREADS / 32;
    const int lane = threadIdx.x & 31;
    const float *buf = red + parity * NV * NW;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < NV; i++) {
        float w = lane < NW ? buf[i * NW + lane] : 0.0f;
#pragma unroll
        for (int off = NW / 2; off > 0; off >>= 1) w = w + __shfl_down_sync(0xffffffffu, w, off);
        v[i] = __shfl_sync(0xffffffffu, w, 0);
    }
}
template <int NV>
__device__ __forceinline__ void row_tree_sum_1bar(float (&v)[NV], float *red, int parity) {
    row_sum_post<NV>(v, red, parity);
    row_sum_finish<NV>(v, red, parity);
}

/* ---- general path: 8-element groups of the rowq layout, runtime kinds (agoq_dispatch_enc) ---- */
/* Scale, zero point and 1/s of the block held by `width` consecutive lanes (this one at pos);
 * every lane of the warp calls it. Only asymmetric formats reduce differently. */
__device__ __forceinline__ void fz_params_seg(const agoq_cuda_qparams &p, const float (&v)[8], int nvalid, int width,
                                              int pos, float *s, float *m, float *inv) {
    if (p.kind == AGOQ_CODE_INT_ASYM) agoq_dev_params_seg<AGOQ_ENC_INT_ASYM>(p, v, nvalid, width, pos, s, m, inv);
    else agoq_dev_params_seg<AGOQ_ENC_INT_SYM>(p, v, nvalid, width, pos, s, m, inv);
}
/* Block parameters from a whole warp's partial ranges (one block per warp). */
__device__ __forceinline__ void fz_params_warp(const agoq_cuda_qparams &p, float amax, float lo, float hi, float *s,
                                               float *m, float *inv) {
    agoq_dev_block_params(p, agoq_warp_seg_max(amax, 32), agoq_warp_seg_min(lo, 32), agoq_warp_seg_max(hi, 32), s, m,
                          inv);
}
__device__ __forceinline__ void fz_range8(const float (&v)[8], int nvalid, float &amax, float &lo, float &hi) {
    amax = fmaxf(amax, agoq_dev_absmax8(v, nvalid));
    lo = fminf(lo, agoq_dev_min8(v, nvalid));
    hi = fmaxf(hi, agoq_dev_max8(v, nvalid));
}
/* Codes of a group (nvalid elements, the rest code 0; idx0 = the stochastic draw index of v[0]). */
__device__ __forceinline__ uint64_t fz_encode8(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                               const float (&v)[8], int nvalid, float inv, float m, uint64_t idx0) {
    uint64_t r = 0;
    agoq_dispatch_enc(p.enc, [&](auto k) { r = agoq_dev_encode8<decltype(k)::value>(p, t, v, nvalid, inv, m, idx0); });
    return r;
}
/* Columns [col0, col0 + 8) of row `row` of a rowq tensor cols wide (block B, G = B/8 groups). */
__device__ __forceinline__ void fz_decode_rowq(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                               const agoq_cuda_qtensor &q, int cols, size_t row, int col0,
                                               float (&v)[8]) {
    const size_t nbpr = (size_t)((cols + p.block - 1) / p.block), blk = row * nbpr + (size_t)(col0 / p.block);
    const size_t g = blk * (size_t)(p.block >> 3) + (size_t)((col0 % p.block) >> 3);
    agoq_dispatch_enc(p.dec, [&](auto k) {
        agoq_dev_decode_group<decltype(k)::value>(p, t, q.codes, q.scales, q.zeros, g, blk, v);
    });
}
/* Elements of the group at column c of a row of `cols` (0..8). */
__device__ __forceinline__ int fz_nvalid(int cols, int c) { return cols - c >= 8 ? 8 : (cols > c ? cols - c : 0); }

/* ---- host side ---- */
__host__ __device__ inline agoq_cuda_qtensor fz_qt(agoq_dqt d, size_t n) {
    return agoq_cuda_qtensor{d.codes, d.scales, d.zeros, n};
}
static inline bool fz_al16(const void *p) { return ((uintptr_t)p & 15u) == 0; }
/* log2 of a block the tile geometry handles (32..256), else 0 */
static inline int fz_tile_log2b(int block) {
    return block == 32 ? 5 : block == 64 ? 6 : block == 128 ? 7 : block == 256 ? 8 : 0;
}
/* The fast quantizer: round to nearest, 4- or 8-bit codes, blocks of 32..256, codes plane
 * aligned to a lane's 4 or 8 code bytes. */
static inline bool fz_fast_quant(const agoq_cuda_qparams &p, agoq_dqt d) {
    return !p.stochastic && fz_tile_log2b(p.block) && (p.bits == 4 || p.bits == 8) && ((uintptr_t)d.codes & 7u) == 0;
}
/* The fast decoder: 4- or 8-bit codes, power-of-two blocks (a lane's 8 elements share one). */
static inline bool fz_fast_dequant(const agoq_cuda_qparams &p, agoq_dqt d) {
    return (p.bits == 4 || p.bits == 8) && (p.block & (p.block - 1)) == 0 && ((uintptr_t)d.codes & 7u) == 0;
}
/* The vector decoder kind: fp4 by byte permutes (its qparams decode through the table). */
static inline int fz_fast_dec(const agoq_cuda_qparams &p) { return agoq_formats[p.fmt].enc == AGOQ_ENC_FP4 ? AGOQ_ENC_FP4 : p.dec; }

/* f(enc, bits, log2b) for the fast quantizer's (kind, width, block) of p; fp4 / fp8 encoders
 * have one width, so only 9 (kind, width) pairs x 4 blocks are instantiated. */
template <class F>
static void fz_dispatch_quant(const agoq_cuda_qparams &p, F f) {
    const int lb = fz_tile_log2b(p.block);
    agoq_dispatch_enc(p.enc, [&](auto enc) {
        constexpr int ENC = decltype(enc)::value;
        auto with_bits = [&](auto bits) {
            constexpr int BITS = decltype(bits)::value;
            if constexpr ((ENC == AGOQ_ENC_FP4 && BITS != 4) ||
                          ((ENC == AGOQ_ENC_FP8_E4M3 || ENC == AGOQ_ENC_FP8_E5M2) && BITS != 8)) {
                return;
            } else {
                switch (lb) {
                case 5: f(enc, bits, agoq_enc_t<5>()); break;
                case 6: f(enc, bits, agoq_enc_t<6>()); break;
                case 7: f(enc, bits, agoq_enc_t<7>()); break;
                default: f(enc, bits, agoq_enc_t<8>()); break;
                }
            }
        };
        if (p.bits == 4) with_bits(agoq_enc_t<4>());
        else with_bits(agoq_enc_t<8>());
    });
}
/* f(dec, bits) for the fast decoder of p (9 pairs). */
template <class F>
static void fz_dispatch_dequant(const agoq_cuda_qparams &p, F f) {
    agoq_dispatch_enc(fz_fast_dec(p), [&](auto dec) {
        constexpr int DEC = decltype(dec)::value;
        if constexpr (DEC == AGOQ_ENC_FP4) {
            f(dec, agoq_enc_t<4>());
        } else if constexpr (DEC == AGOQ_ENC_FP8_E4M3 || DEC == AGOQ_ENC_FP8_E5M2) {
            f(dec, agoq_enc_t<8>());
        } else {
            if (p.bits == 4) f(dec, agoq_enc_t<4>());
            else f(dec, agoq_enc_t<8>());
        }
    });
}

/* CTAs per SM the vector kernels are register-bounded for (<= 128 registers; without a bound
 * ptxas picked 64 registers and an 8-byte spill for one backward kernel). */
#define FZ_EW_CTAS 2
/* The same for the GELU / SwiGLU forwards (tiles of 4 vectors; issue 15): 4 CTAs (<= 64
 * registers), 3 for table encoders (at 64 their LUT lookups spill 32-48 bytes) */
#define FZ_FWD_CTAS(ENC) ((ENC) == AGOQ_ENC_TABLE ? 3 : 4)
/* Launch of a grid-stride vector kernel over `units` warps of work on stream s; lut: the kernel
 * stages the encode LUT (a table encoder's forward). */
#define FZ_LAUNCH(kernel, units, lut, ...)                                                          \
    do {                                                                                           \
        kernel<<<fz_grid<kernel>(units, lut), FZ_THREADS, 0, s>>>(__VA_ARGS__);                    \
        cudaCheckLaunch();                                                                         \
    } while (0)

/* Grid of a grid-stride kernel: quant_launch.cuh's agoq_grid_units (one unit per warp, or what
 * stays resident for kernels that stage the LUT), capped by AGOQ_FUSED_GRID_CAP=N (>= 0; 0,
 * the default: no cap). fz_no_fast: AGOQ_FUSED_NO_FAST=1 (0 or 1, default 0). Every knob here is
 * read at every launch (core/knob.h: a bad value exits after one line). (fused.cu) */
unsigned fz_grid_cap(unsigned grid);
bool fz_no_fast(void);
/* AGOQ_F6=1 (read at every launch): issue 15's third round, A/B against the default: the staged
 * RMSNorm backward's row sums with one barrier, row_tree_sum_1bar (+0.01 of copy at 1-4 GiB,
 * logs/f6_ab_s5.log; its SwiGLU forward part was removed in the eleventh session). (fused.cu) */
bool fz_f6(void);
/* AGOQ_F8=0|1 (read at every launch, default 0): issue 15's fourth round, A/B against the
 * default: the plain bf16 SwiGLU forward in units of 4 vectors (fused_swiglu.cu) and the staged
 * RMSNorm backward's rows pipelined (fused_rms_bwd.cu); it takes precedence over AGOQ_F6 (its
 * dweight reduction with 16 loads in flight is AGOQ_DW_REDUCE=1 since the twenty-seventh
 * session). The eighth session's A/B (H200, ca17d3f, logs/s8_callB_ca17d3f/, two rounds, FP4
 * E2M1/128) had the plain forward within noise and the RMSNorm backward -0.005 of copy, so both
 * stay off; the quantized SwiGLU forward's F8 kernel won (0.70 / 0.74 / 0.75 -> 0.77 / 0.81 /
 * 0.81 at 256 MiB / 1 GiB / 4 GiB) and is the only one it has since the eleventh session.
 * (fused.cu) */
int fz_f8(void);
/* AGOQ_DW_REDUCE=0|1|2 (read at every launch, default 2): the RMSNorm dweight reduction
 * (fused_rmsnorm.cu): 0 a thread per column, one load at a time; 1 the same with 16 loads in
 * flight (AGOQ_F8's form until the twenty-seventh session); 2 chunks of up to 1024 groups x 32
 * columns copied into shared memory with cp.async, then summed by one warp (the default since
 * the twenty-seventh session: docs/kernels.md). The same additions in the same order. (fused.cu) */
int fz_dw_reduce(void);
/* AGOQ_DW_FUSE=0|1 (read at every call, default 1): agoq_rmsnorm_bwd_dw_cuda's dweight
 * reduction inside the staged backward's cooperative launch (1, where the device takes
 * cooperative launches) or the standalone reduction after it (0). (fused.cu) */
bool fz_dw_fuse(void);
/* AGOQ_DW_FUSE_WAIT=all|owners (read at every call; default owners): in that launch, every CTA
 * waits at the grid barrier (all: cooperative_groups' grid.sync) or only those with a slice to
 * sum, the others arriving and leaving (owners: barrier_arrive / barrier_wait). 0 all, 1 owners.
 * (fused.cu) */
int fz_dw_fuse_wait(void);
/* AGOQ_SWI_FWD_TILE=auto|4|2 (read at every launch; 0 for auto, the default): the quantized
 * SwiGLU forward's whole unit quantized as one split tile of 4 vectors (gate run, up run) or as
 * two tiles of 2 (the same codes and scales: a block lies inside one vector); auto takes 2 for
 * the FP4 and asymmetric-integer encoders, whose split tile spills at 64 registers, 4 for the
 * others (fused_swiglu.cu). (fused.cu) */
int fz_swi_fwd_tile(void);
/* AGOQ_FWD_PF=0|1 (read at every launch, default 0): the quantized SwiGLU and GELU forwards of
 * the non-table encoders pipelined, each warp of a resident grid (FZ_FWD_PF_CTAS CTAs an SM)
 * loading its next unit before this one's math (SwiGLU in auto's tiles, GELU in tiles of 4), for
 * an A/B on the H200 (issue 15: 0.82 / 0.88 of copy there at 4 GiB); on an H100 it lost 0.03-0.07
 * of copy at >= 256 MiB (docs/kernels.md, thirty-fourth session). (fused.cu) */
#define FZ_FWD_PF_CTAS 3 /* 85 registers: two units' words (at 4 CTAs' 64 they would spill) */
bool fz_fwd_pf(void);
/* AGOQ_FWD_L2PF=auto|0..16 (read at every launch): the SwiGLU and GELU forwards (plain and
 * quantized, not under AGOQ_FWD_PF) with lane 0 of each warp asking L2 for the input of the
 * unit N/4 resident grids ahead of its own (fz_l2_prefetch), so that the warps the SMs start
 * later find their loads in L2: more DRAM bytes in flight than the registers of the resident
 * warps hold (issue 15: the H200's 0.82 / 0.88 of copy, where the H100 reaches 0.99 with the
 * same SM). 0: off. auto (the default): the kernel's own dflt, FZ_L2PF_GELU_Q for the quantized
 * GELU forward with a non-table encoder (H100, three rounds, results/h100/logs/s36_1eed958/:
 * FP4 0.904 / 0.968 / 0.992 / 0.993 -> 0.939 / 0.984 / 0.999 / 0.993 of copy at 64 MiB .. 4 GiB,
 * int8 higher in every round at every size), 0 for the rest (the SwiGLU forwards lost at 64 MiB
 * and 4 GiB, the plain GELU at 64 MiB). fz_l2pf_units: that distance in units for `Kernel` (0
 * when off). (fused.cu) */
#define FZ_L2PF_GELU_Q 2
int fz_fwd_l2pf(int dflt);
template <auto Kernel>
static uint32_t fz_l2pf_units(int dflt = 0) {
    const int q = fz_fwd_l2pf(dflt);
    if (!q) return 0;
    const size_t warps = (size_t)agoq_grid_resident<Kernel>((size_t)1 << 40) * (FZ_THREADS / 32);
    return (uint32_t)(warps * (size_t)q / 4);
}
/* Dynamic shared memory above 48 KB for `kernel` (cudaFuncSetAttribute once per device: done is
 * the caller's per-kernel mask of devices, bit d; racing sets are benign); with per_sm (the
 * caller's per-kernel int[32], one entry a device, 0: not yet), also its resident CTAs per SM at
 * FZ_THREADS threads with `smem` bytes (>= 1), queried once per device (every call on a device
 * past 32) and returned; without it, 0 (no occupancy query per launch). (fused.cu) */
int fz_smem_optin(const void *kernel, size_t smem, unsigned *done, int *per_sm);
template <auto Kernel>
static unsigned fz_grid(size_t warps, bool lut) {
    return fz_grid_cap(agoq_grid_units<Kernel>(warps, lut));
}
int fz_check_shape(const char *what, int rows, int cols);
/* The RMSNorm forward a row to a pair of warps (fused_rms_pair.cu) for rows of 2048 or 4096
 * columns and a fast config, on the warp-per-row kernel's shapes only (aligned, AGOQ_FUSED_NO_FAST
 * unset: the caller's by_warp), as AGOQ_RMS_FWD_PAIR says (read at every launch): 2, the default,
 * from 24 rows an SM (with a quantized copy since the twenty-seventh session, the plain forward
 * too since the twenty-eighth); 1 always; 0 never. false: nothing launched.
 * (fz_rms_fwd_pair_mode: fused.cu) */
int fz_rms_fwd_pair_mode(void);
/* Whether a forward quantizes its copy by the q7 tile for encoder enc under knob (0 never, 1
 * always, 2 the default: FP4 only): AGOQ_RMS_FWD_Q7 (fused_rms_pair.cu), AGOQ_GELU_FWD_Q7
 * (fused_gelu.cu). (fused.cu) */
bool fz_fwd_q7(const char *knob, int enc);
bool fz_rms_fwd_pair(const agoq_fq *q, const uint16_t *x, const uint16_t *w, int rows, int cols, float eps, uint16_t *y,
                     agoq_dqt xq, float *rstd, cudaStream_t s);
/* The staged RMSNorm backward (fused_rms_bwd.cu) when the shape, alignment and config allow it
 * and AGOQ_FUSED_NO_FAST is unset; false: nothing launched. dw set: also the dweight reduction
 * into it, in the same (cooperative) launch. */
bool fz_rms_bwd_staged(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, const uint16_t *w,
                       int rows, int cols, float eps, int rpg, uint16_t *dx, uint16_t *y, float *dw_partial,
                       float *dw, cudaStream_t s);

/* General-path launchers (fused.cu): rowq layout, any shape, format and rounding. op is
 * FZ_OP_*; q NULL = nothing quantized. Forward starts at output block ob0 (blocks before it
 * were done by a fast kernel); SwiGLU: cols = F, x = h [rows, 2F]. */
void fz_ew_fwd_general(int op, const agoq_fq *q, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_dqt xq,
                       size_t ob0, cudaStream_t s);
void fz_ew_bwd_general(int op, const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, int rows,
                       int cols, uint16_t *dx, uint16_t *y, cudaStream_t s);
#endif
