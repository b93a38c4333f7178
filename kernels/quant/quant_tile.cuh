/* The fast path of the block quantizers (quant.cu, grad8.cu): round to nearest, blocks of 32,
 * 64, 128 or 256 elements, sources that deliver 16-byte vectors. Bit-exact with quant_ref.c
 * like everything in quant_device.cuh, whose encoders and block parameters it uses.
 *
 * Why a second kernel shape: the thread-per-group kernels give each lane 32 bytes of fp32
 * input, so every warp load instruction touches 32 half-used sectors, and each lane reduces
 * its block with log2(B/8) shuffles and computes the IEEE division 1/s itself. Here:
 *  - a warp owns a tile of U vectors of 32 lanes x 16 bytes; vector j of lane l is at byte
 *    j*512 + l*16 of the tile, so every load and code store of the warp is one contiguous run;
 *  - a vector of E elements (4 fp32, 8 bf16) lies in one block; a block is LB = B/E lanes of
 *    one vector (LB <= 32) or VB = B/(32E) whole vectors of the warp;
 *  - the K = U/VB block ranges of a lane are reduced over their LB lanes by a "transpose
 *    reduction": each xor step halves the values a lane keeps (it sends the half its partner
 *    keeps), so the shuffles per lane are K-1 + log2(LB/K) instead of K*log2(LB); afterwards
 *    each block's range sits in a known lane (agoq_tile_holder), which computes s, m and 1/s
 *    once and writes the scale, and the warp fetches 1/s (and m) with one shuffle per block;
 *  - the range is a NaN-propagating max/min (PTX max.NaN), so a block whose range is finite
 *    has no NaN or Inf: its elements take the branch-free encoders below. A warp that meets a
 *    non-finite range redoes its tile on the careful path (finite-only range, the NaN/Inf-aware
 *    encoders of quant_device.cuh), so the results never depend on which path ran.
 * Tensors are cut into whole tiles (this kernel) and a tail of whole blocks (the segment or
 * warp kernel); quant_launch.cuh decides. */
#ifndef AGOQ_QUANT_TILE_CUH
#define AGOQ_QUANT_TILE_CUH
#include "kernels/quant/quant_device.cuh"
#include "kernels/quant/quant_fast.h"
#include "kernels/quant/quant_ldst.cuh"
#include "kernels/quant/quant_tile_geom.h"

#include "kernels/quant/quant_q7.cuh"
#include "kernels/quant/quant_tile_dec.cuh"
#include "kernels/quant/tab_lut32.h"

#include <type_traits>

/* Tile geometry of block size B = 2^LOG2B over U vectors of E elements (the fused kernels of
 * fused_*.cu quantize single vectors: U = 1). */
template <int LOG2B, int E, int U_ = AGOQ_TILE_U>
struct agoq_tile_geom {
    static constexpr int B = 1 << LOG2B, U = U_;
    static constexpr int LB = B / E <= 32 ? B / E : 32;         /* lanes of one block */
    static constexpr int VB = B / E <= 32 ? 1 : B / (32 * E);   /* vectors of one block */
    static constexpr int K = U / VB;                            /* block ranges per lane */
    static constexpr int BPV = 32 / LB;                         /* blocks side by side in a vector */
    static constexpr int H = K > LB ? K / LB : 1;               /* ranges a lane holds after the reduction */
    static constexpr int TILE = 32 * U * E;                     /* elements per tile */
    static_assert(B % E == 0 && VB <= U, "block does not fit the tile");
};

/* NaN-propagating max / min: a NaN anywhere in a block reaches its range. */
__device__ __forceinline__ float agoq_max_nan(float a, float b) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
__device__ __forceinline__ float agoq_min_nan(float a, float b) {
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
template <bool MAX, bool NAN_PROP>
__device__ __forceinline__ float agoq_tile_op(float a, float b) {
    if constexpr (NAN_PROP) return MAX ? agoq_max_nan(a, b) : agoq_min_nan(a, b);
    else return MAX ? fmaxf(a, b) : fminf(a, b);
}

/* Transpose reduction of p[0..K) over aligned segments of LB lanes; on return p[0..H) hold the
 * reduced ranges k = agoq_tile_holder^-1 (see above). All 32 lanes must call it. Fully unrolled:
 * every index is a compile-time constant, so p stays in registers. */
template <int K, int LB, bool MAX, bool NAN_PROP>
__device__ __forceinline__ void agoq_tile_reduce(float (&p)[K], int lane) {
    int c = K;
#pragma unroll
    for (int o = LB / 2; o >= 1; o >>= 1) {
        if (c > 1) {
            const int half = c / 2;
            const bool up = (lane & o) != 0;
#pragma unroll
            for (int i = 0; i < half; i++) {
                const float send = up ? p[i] : p[i + half], keep = up ? p[i + half] : p[i];
                p[i] = agoq_tile_op<MAX, NAN_PROP>(keep, __shfl_xor_sync(0xffffffffu, send, o));
            }
            c = half;
        } else {
            p[0] = agoq_tile_op<MAX, NAN_PROP>(p[0], __shfl_xor_sync(0xffffffffu, p[0], o));
        }
    }
}

#include "kernels/quant/quant_tile_lut.cuh" /* the staged LUT / grid and the code packing */

#include "kernels/quant/quant_q8.cuh" /* q8's staging and encoder: over the LUT and packing above */

/* ---- branch-free encoders of finite scaled values (the block's range is finite) ----
 * int symmetric: |y| <= ~qmax (1 + 2^-8) < qmax + 1/2 (the scale's bf16 rounding is the
 * largest error; tests/quant/test_quant_math.c sweeps every absmax), so
 * agoq_int_sym_encode_magic applies. fp8: the hardware pair conversion
 * (satfinite, round half to even), then agoq_fp8_clear_neg_zero. fp4: agoq_fp4_encode_finite
 * (all three in quant_fast.h, proved on the host by tests/quant/test_quant_math.c). Tables
 * (NF4, dyn8): the LUT of tab_lut.h without the NaN test. Others: the general encoder. N codes of BITS are packed LSB first. */
/* PACK8 (fp4, N = 8): agoq_fp4_pack8_finite, the same codes in fewer instructions. LUT_SMEM
 * (tables): the CTA's own LUT (agoq_tile_table_pos). OPT (a mask of AGOQ_TILE_OPT_*, issue 15
 * q6): ASYM: int asym codes by the magic add of quant_fast.h instead of the float-to-int
 * conversion (quarter rate) and integer clamps: with fp32 scales unclamped (y in [0, qmax (1 +
 * 2^-21)]: m = lo exactly), with bf16 scales clamped to [0, qmax] first (the branch is uniform);
 * GRID: table positions by the uniform grid (agoq_tile_grid_pos; the launcher selects it only
 * for tables that have one and whose code is the position). */
template <int ENC, int BITS, int N, bool PACK8 = false, bool LUT_SMEM = false, int OPT = 0>
__device__ __forceinline__ uint64_t agoq_tile_encode_finite(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                            const float (&v)[N], float inv, float m) {
    uint64_t packed = 0;
    if constexpr (ENC == AGOQ_ENC_INT_ASYM && (OPT & AGOQ_TILE_OPT_ASYM)) {
        uint32_t w[N];
        if (p.bf16_scale) {
#pragma unroll
            for (int j = 0; j < N; j++) w[j] = agoq_int_asym_magic_word(agoq_int_asym_clamp((v[j] - m) * inv, BITS));
        } else {
#pragma unroll
            for (int j = 0; j < N; j++) w[j] = agoq_int_asym_magic_word((v[j] - m) * inv);
        }
        packed = agoq_tile_pack_low<BITS, N>(w);
    } else if constexpr (ENC == AGOQ_ENC_TABLE && LUT_SMEM && (OPT & AGOQ_TILE_OPT_Q8)) {
        packed = agoq_tile_q8_table<BITS, N, (OPT & AGOQ_TILE_OPT_LUT32) != 0>(p, v, inv);
    } else if constexpr (ENC == AGOQ_ENC_TABLE && (OPT & AGOQ_TILE_OPT_GRID)) {
#pragma unroll
        for (int j = 0; j < N; j++) packed |= (uint64_t)agoq_tile_grid_pos(p, v[j] * inv) << (j * BITS);
    } else if constexpr (ENC == AGOQ_ENC_FP4 && PACK8 && N == 8) {
        float y[8];
#pragma unroll
        for (int j = 0; j < 8; j++) y[j] = v[j] * inv;
        packed = agoq_fp4_pack8_finite(y);
    } else if constexpr (ENC == AGOQ_ENC_INT_SYM) {
#pragma unroll
        for (int j = 0; j < N; j++) packed |= (uint64_t)agoq_int_sym_encode_magic(v[j] * inv, BITS) << (j * BITS);
    } else if constexpr (ENC == AGOQ_ENC_FP4) {
#pragma unroll
        for (int j = 0; j < N; j++) packed |= (uint64_t)agoq_fp4_encode_finite(v[j] * inv) << (4 * j);
    } else if constexpr (ENC == AGOQ_ENC_FP8_E4M3 || ENC == AGOQ_ENC_FP8_E5M2) {
        constexpr __nv_fp8_interpretation_t kind = ENC == AGOQ_ENC_FP8_E5M2 ? __NV_E5M2 : __NV_E4M3;
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            const float2 y = make_float2(v[j] * inv, v[j + 1] * inv);
            packed |= (uint64_t)__nv_cvt_float2_to_fp8x2(y, __NV_SATFINITE, kind) << (8 * j);
        }
        packed = agoq_fp8_clear_neg_zero(packed);
    } else if constexpr (ENC == AGOQ_ENC_TABLE && LUT_SMEM) {
#pragma unroll
        for (int j = 0; j < N; j++)
            packed |= (uint64_t)agoq_tile_table_pos(p, v[j] * inv) << (j * BITS);
    } else if constexpr (ENC == AGOQ_ENC_TABLE) { /* x * inv of finite x and inv is never NaN */
#pragma unroll
        for (int j = 0; j < N; j++) packed |= (uint64_t)agoq_dev_table_code_rn(p, t, v[j] * inv) << (j * BITS);
    } else {
#pragma unroll
        for (int j = 0; j < N; j++) packed |= (uint64_t)agoq_dev_encode<ENC>(p, t, v[j], inv, m, -1.0f) << (j * BITS);
    }
    return packed;
}
/* The careful path: the general encoders (NaN -> zero code, +-Inf saturate). */
template <int ENC, int BITS, int N>
__device__ __forceinline__ uint64_t agoq_tile_encode_any(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                         const float (&v)[N], float inv, float m) {
    uint64_t packed = 0;
#pragma unroll
    for (int j = 0; j < N; j++) packed |= (uint64_t)agoq_dev_encode<ENC>(p, t, v[j], inv, m, -1.0f) << (j * BITS);
    return packed;
}

/* Stores the codes of the vector starting at element e0 (N * BITS / 8 bytes: 1, 2, 4 or 8,
 * aligned: the launcher checks the codes plane). */
template <int BITS, int N>
__device__ __forceinline__ void agoq_tile_store_codes(uint8_t *codes, size_t e0, uint64_t packed) {
    constexpr int kBytes = N * BITS / 8;
    static_assert(kBytes == 1 || kBytes == 2 || kBytes == 4 || kBytes == 8, "codes of a vector: 1, 2, 4 or 8 bytes");
    uint8_t *dst = codes + e0 * BITS / 8;
    if constexpr (kBytes == 1) *dst = (uint8_t)packed;
    else if constexpr (kBytes == 2) *(uint16_t *)dst = (uint16_t)packed;
    else if constexpr (kBytes == 4) *(uint32_t *)dst = (uint32_t)packed;
    else *(uint2 *)dst = make_uint2((uint32_t)packed, (uint32_t)(packed >> 32));
}

/* Range of one block slot: absmax (symmetric, table) or lo/hi (asymmetric) of VB vectors. */
template <int ENC, int E, int VB, bool CAREFUL>
__device__ __forceinline__ void agoq_tile_range(const float (*v)[E], float &a, float &lo, float &hi) {
#pragma unroll
    for (int jj = 0; jj < VB; jj++)
#pragma unroll
        for (int e = 0; e < E; e++) {
            const float x = v[jj][e];
            if constexpr (ENC == AGOQ_ENC_INT_ASYM) {
                if (!CAREFUL) {
                    lo = agoq_min_nan(lo, x);
                    hi = agoq_max_nan(hi, x);
                } else if (agoq_isfinite(x)) {
                    lo = fminf(lo, x);
                    hi = fmaxf(hi, x);
                }
            } else {
                if (!CAREFUL) a = agoq_max_nan(a, fabsf(x));
                else if (agoq_isfinite(x)) a = fmaxf(a, fabsf(x));
            }
        }
}

/* A tile's vectors as the tile quantizer reads them: range<ENC, VB, CAREFUL>(j0, a, lo, hi)
 * folds vectors j0 .. j0 + VB - 1 into a block slot's range (agoq_tile_range), vec(j, buf)
 * returns vector j as E floats (the array itself, or buf filled). agoq_tile_view_f32: the fp32
 * arrays of the sources. */
template <int U, int E>
struct agoq_tile_view_f32 {
    const float (&v)[U][E];
    template <int ENC, int VB, bool CAREFUL>
    __device__ __forceinline__ void range(int j0, float &a, float &lo, float &hi) const {
        agoq_tile_range<ENC, E, VB, CAREFUL>(&v[j0], a, lo, hi);
    }
    __device__ __forceinline__ const float (&vec(int j, float (&)[E]) const)[E] { return v[j]; }
};
/* agoq_tile_view_bf16p (AGOQ_TILE_OPT_PACK, issue 15 q6): bf16 vectors kept as loaded, 4 words of
 * 2 bf16 (32 registers for a tile of 8 vectors instead of 64 floats), unpacked to fp32 (exact)
 * only by vec(). The fast path's range works on the packed pairs and equals the fp32 one:
 * absmax: the unsigned max of the magnitude bits (bits & 0x7fff per bf16, max.u16x2): finite
 * magnitudes order like their values, +Inf (0x7f80) lies above them and every NaN above +Inf,
 * so the result is the absmax, +Inf, or a NaN exactly when the fp32 max.NaN gives one;
 * asymmetric: min.NaN / max.NaN on bf16x2 pairs (exact: the values are bf16; a NaN gives NaN,
 * the zero's sign is canonicalised later), the two halves then folded in fp32. The careful
 * path unpacks each vector for agoq_tile_range. Q7 (AGOQ_TILE_OPT_Q7, fast path): the absmax by
 * agoq_bf16x2_absmax_xs (quant_q7.cuh), and FP4 codes from the words (agoq_q7_fp4_pack_bf16). */
__device__ __forceinline__ uint32_t agoq_u16x2_max(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t r;
    asm("max.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    return __vmaxu2(a, b);
#endif
}
__device__ __forceinline__ uint32_t agoq_bf16x2_minmax_nan(uint32_t a, uint32_t b, bool max) {
    __nv_bfloat162 x, y, r;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    r = max ? __hmax2_nan(x, y) : __hmin2_nan(x, y);
    uint32_t u;
    memcpy(&u, &r, 4);
    return u;
}
template <int U, bool Q7 = false>
struct agoq_tile_view_bf16p {
    const uint32_t (&w)[U][4];
    template <int ENC, int VB, bool CAREFUL>
    __device__ __forceinline__ void range(int j0, float &a, float &lo, float &hi) const {
        if constexpr (CAREFUL) {
#pragma unroll
            for (int jj = 0; jj < VB; jj++) {
                float x[1][8];
                unpack(j0 + jj, x[0]);
                agoq_tile_range<ENC, 8, 1, true>(x, a, lo, hi);
            }
        } else if constexpr (ENC == AGOQ_ENC_INT_ASYM) {
            uint32_t l = w[j0][0], h = w[j0][0];
#pragma unroll
            for (int jj = 0; jj < VB; jj++)
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    l = agoq_bf16x2_minmax_nan(l, w[j0 + jj][k], false);
                    h = agoq_bf16x2_minmax_nan(h, w[j0 + jj][k], true);
                }
            lo = agoq_min_nan(lo, agoq_min_nan(__uint_as_float(l << 16), __uint_as_float(l & 0xffff0000u)));
            hi = agoq_max_nan(hi, agoq_max_nan(__uint_as_float(h << 16), __uint_as_float(h & 0xffff0000u)));
        } else {
            uint32_t m = 0;
#pragma unroll
            for (int jj = 0; jj < VB; jj++)
#pragma unroll
                for (int k = 0; k < 4; k++)
                    m = Q7 ? agoq_bf16x2_absmax_xs(m, w[j0 + jj][k]) : agoq_u16x2_max(m, w[j0 + jj][k] & 0x7fff7fffu);
            if (Q7) m &= 0x7fff7fffu; /* the xorsign max's signs */
            const uint32_t m2 = max(m << 16, m & 0xffff0000u); /* the larger magnitude (NaN above all) */
            a = agoq_max_nan(a, __uint_as_float(m2));
        }
    }
    __device__ __forceinline__ void unpack(int j, float (&x)[8]) const {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            x[2 * k] = __uint_as_float(w[j][k] << 16);
            x[2 * k + 1] = __uint_as_float(w[j][k] & 0xffff0000u);
        }
    }
    __device__ __forceinline__ const float (&vec(int j, float (&buf)[8]) const)[8] {
        unpack(j, buf);
        return buf;
    }
};

/* The reduced block ranges -> stored scale s, zero point m and 1/s of the ranges this lane holds
 * after the transpose reduction (a for symmetric and table formats, lo / hi for asymmetric ones;
 * all 32 lanes). Returns false when the fast path (!CAREFUL) meets a non-finite range anywhere in
 * the warp (the caller then redoes its tile on the careful path). */
#ifndef AGOQ_TILE_PARAMS_RT /* 1: the block parameters by the runtime kind test, as before the thirty-seventh session (A/B) */
#define AGOQ_TILE_PARAMS_RT 0
#endif
template <int ENC, int K, int LB, int H, bool CAREFUL>
__device__ __forceinline__ bool agoq_tile_params(const agoq_cuda_qparams &p, float (&a)[K], float (&lo)[K], float (&hi)[K],
                                                 float (&s)[H], float (&m)[H], float (&inv)[H], int lane) {
    constexpr bool kAsym = ENC == AGOQ_ENC_INT_ASYM;
    if constexpr (kAsym) {
        agoq_tile_reduce<K, LB, false, !CAREFUL>(lo, lane);
        agoq_tile_reduce<K, LB, true, !CAREFUL>(hi, lane);
    } else {
        agoq_tile_reduce<K, LB, true, !CAREFUL>(a, lane);
    }
    bool finite = true;
#pragma unroll
    for (int i = 0; i < H; i++) {
        if constexpr (AGOQ_TILE_PARAMS_RT) agoq_dev_block_params(p, a[i], lo[i], hi[i], &s[i], &m[i], &inv[i]);
        else agoq_dev_block_params_k<kAsym>(p, a[i], lo[i], hi[i], &s[i], &m[i], &inv[i]);
        finite &= kAsym ? agoq_isfinite(lo[i]) && agoq_isfinite(hi[i]) && agoq_isfinite(s[i]) : agoq_isfinite(a[i]);
    }
    return CAREFUL || !__any_sync(0xffffffffu, !finite);
}
/* The ranges of this lane's G::K block slots of a tile view (G: its agoq_tile_geom): slot k folds
 * vectors k VB .. k VB + VB - 1 (a: absmax, lo / hi: min / max; 0, +Inf, -Inf when empty), for
 * agoq_tile_params. The arrays stay the caller's: a helper owning them (and calling
 * agoq_tile_params) changed the registers and spills of the tile kernels. */
template <int ENC, class G, bool CAREFUL, class View>
__device__ __forceinline__ void agoq_tile_ranges(const View &tv, float (&a)[G::K], float (&lo)[G::K],
                                                 float (&hi)[G::K]) {
#pragma unroll
    for (int k = 0; k < G::K; k++) {
        a[k] = 0.0f;
        lo[k] = __int_as_float(0x7f800000);
        hi[k] = __int_as_float(0xff800000);
        tv.template range<ENC, G::VB, CAREFUL>(k * G::VB, a[k], lo[k], hi[k]);
    }
}
/* 1/s (and m) of block slot k of this lane's segment seg, fetched from the lane that holds it. */
template <int K, int LB, int H, bool ASYM>
__device__ __forceinline__ void agoq_tile_held(int k, int seg, const float (&inv)[H], const float (&m)[H], float &inv_k,
                                               float &m_k) {
    const int src = seg * LB + agoq_tile_holder(k, K, LB), i = agoq_tile_held_index(k, K, LB);
    inv_k = __shfl_sync(0xffffffffu, inv[i], src);
    m_k = ASYM ? __shfl_sync(0xffffffffu, m[i], src) : 0.0f;
}

/* One tile: ranges, reduction, parameters, scales, codes. Returns false (and writes nothing)
 * when the fast path meets a non-finite range; the caller then runs it with CAREFUL. U (the
 * vectors of v, deduced) sets the tile: TILE = 32*U*E elements starting at tile * TILE.
 * split (tile 0 only; a multiple of the block, blocks of <= 32 E: one vector per block): the
 * tile is two runs of U/2 vectors, the first at element 0, the second at element split (the
 * fused SwiGLU forward quantizes a gate run and its up run, F apart, as one tile): vector
 * U/2 + i is stored at split + 32 E i, block K/2 + b at (split >> LOG2B) + b BPV + seg; 0 = one
 * contiguous run. PACK8, LUT_SMEM, OPT: agoq_tile_encode_finite's fp4 pack8 / CTA-LUT / optional
 * encoders. */
template <int ENC, int BITS, int LOG2B, int E, bool CAREFUL, int U, bool PACK8, bool LUT_SMEM, int OPT, class View>
__device__ __forceinline__ bool agoq_tile_quantize_view(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                        const View &tv, size_t tile, agoq_cuda_qtensor out, int lane,
                                                        size_t split) {
    using G = agoq_tile_geom<LOG2B, E, U>;
    constexpr bool kAsym = ENC == AGOQ_ENC_INT_ASYM;
    float a[G::K], lo[G::K], hi[G::K];
    agoq_tile_ranges<ENC, G, CAREFUL>(tv, a, lo, hi);
    float s[G::H], m[G::H], inv[G::H];
    if (!agoq_tile_params<ENC, G::K, G::LB, G::H, CAREFUL>(p, a, lo, hi, s, m, inv, lane)) return false;
    const int seg = lane / G::LB, pos = lane % G::LB;
    const size_t blk0 = tile * (size_t)(G::K * G::BPV) + (size_t)seg;
    constexpr int kSpread = G::K <= G::LB ? G::LB / G::K : 1; /* lanes holding one slot */
#pragma unroll
    for (int i = 0; i < G::H; i++) {
        const int k = pos / kSpread * G::H + i;
        /* second run: + its block offset - the K/2 blocks of the first (modular size_t arithmetic) */
        const size_t hk = split && k * G::VB >= U / 2 ? (split >> LOG2B) - (size_t)(G::K / 2 * G::BPV) : 0;
        if (pos % kSpread == 0) {
            if constexpr (AGOQ_TILE_PARAMS_RT) agoq_dev_store_params(p, out, blk0 + (size_t)k * G::BPV + hk, s[i], m[i]);
            else agoq_dev_store_params_k<ENC == AGOQ_ENC_INT_ASYM>(p, out, blk0 + (size_t)k * G::BPV + hk, s[i], m[i]);
        }
    }
    const size_t e_tile = tile * (size_t)G::TILE;
#pragma unroll
    for (int k = 0; k < G::K; k++) {
        float inv_k, m_k;
        agoq_tile_held<G::K, G::LB, G::H, kAsym>(k, seg, inv, m, inv_k, m_k);
#pragma unroll
        for (int jj = 0; jj < G::VB; jj++) {
            const int j = k * G::VB + jj;
            float buf[E];
            const float(&x)[E] = tv.vec(j, buf);
            uint64_t packed;
            if constexpr (!CAREFUL && ENC == AGOQ_ENC_FP4 && (OPT & AGOQ_TILE_OPT_Q7) != 0) /* packed bf16 view */
                packed = agoq_q7_fp4_pack_bf16(tv.w[j], inv_k);
            else
                packed = CAREFUL ? agoq_tile_encode_any<ENC, BITS, E>(p, t, x, inv_k, m_k)
                                 : agoq_tile_encode_finite<ENC, BITS, E, PACK8, LUT_SMEM, OPT>(p, t, x, inv_k, m_k);
            const size_t hj = split && j >= U / 2 ? split - (size_t)(U / 2 * 32 * E) : 0;
            agoq_tile_store_codes<BITS, E>(out.codes, e_tile + (size_t)j * 32 * E + (size_t)lane * E + hj, packed);
        }
    }
    return true;
}
template <int ENC, int BITS, int LOG2B, int E, bool CAREFUL, int U, bool PACK8 = false, bool LUT_SMEM = false, int OPT = 0>
__device__ __forceinline__ bool agoq_tile_quantize(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                   const float (&v)[U][E], size_t tile,
                                                   agoq_cuda_qtensor out, int lane, size_t split = 0) {
    const agoq_tile_view_f32<U, E> tv{v};
    return agoq_tile_quantize_view<ENC, BITS, LOG2B, E, CAREFUL, U, PACK8, LUT_SMEM, OPT>(p, t, tv, tile, out, lane, split);
}
/* The same over packed bf16 vectors (agoq_tile_view_bf16p; E = 8); split as above (the fused
 * SwiGLU forward under AGOQ_F8). */
template <int ENC, int BITS, int LOG2B, bool CAREFUL, int U, bool LUT_SMEM = false, int OPT = 0>
__device__ __forceinline__ bool agoq_tile_quantize_bf16p(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                         const uint32_t (&w)[U][4], size_t tile, agoq_cuda_qtensor out,
                                                         int lane, size_t split = 0) {
    const agoq_tile_view_bf16p<U, !CAREFUL && (OPT & AGOQ_TILE_OPT_Q7) != 0> tv{w};
    return agoq_tile_quantize_view<ENC, BITS, LOG2B, 8, CAREFUL, U, false, LUT_SMEM, OPT>(p, t, tv, tile, out, lane, split);
}

/* Tile sources deliver a whole tile: vector j of lane l, E = Src::kVec elements, starts at
 * element e_tile + j*32*E + l*E (tiles never reach the tensor's end). All 32 lanes call it.
 *   Src: static constexpr int kVec, kBits (the only code width it serves, 0: any), kU (vectors
 *        per lane and tile, usually AGOQ_TILE_U), kMinCtas (launch bound, 0: none); static constexpr bool kTable;
 *        __device__ void load_tile(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t e_tile,
 *                                  int lane, float (&v)[kU][kVec]) const;
 * In-place sources (the accumulation) read a block's planes before the tile writes them: every
 * value read is consumed by the range reduction, whose shuffles every lane passes first. */
/* Sources with kLoadB = true also take the block size at compile time: load_tile_b<LOG2B>(same
 * arguments) instead of load_tile (grad8.cu's reduce core under AGOQ_RED_LD: scale offsets as
 * immediates). */
template <class S, class = void>
struct agoq_src_load_b : std::false_type {};
template <class S>
struct agoq_src_load_b<S, std::void_t<decltype(S::kLoadB)>> : std::integral_constant<bool, (bool)S::kLoadB> {};
/* Src::kStageB (default 1): the CTA's table and 8-byte LUT copies in batches of loads
 * (agoq_dev_stage_words); 0: the plain loops, as before the twenty-first session (the dyn8 reduce
 * core: 4-5% slower with the batches on the H200 at 256 MiB and 1 GiB; its main loop compiled
 * differently around them, PTX the same, ptxas's spills 16 / 32 -> 16 / 16 bytes;
 * results/h200/logs/s21_8b9053e/; since AGOQ_G8_LUT32 that core stages q8's 32-bit LUT, batched).
 * The replicated value table: agoq_tile_stage_vrep (twenty-second session) with 1, the plain loop
 * with 0 (the dyn8 reduce core ran 6-9% slower at every size with agoq_tile_stage_vrep on an
 * H100, results/h100/logs/s22_b8870d5/: its main loop again). */
template <class S, class = void>
struct agoq_src_stage_b : std::true_type {};
template <class S>
struct agoq_src_stage_b<S, std::void_t<decltype(S::kStageB)>> : std::integral_constant<bool, (bool)S::kStageB> {};
/* CTAs per SM the kernel is register-bounded for: Src::kMinCtas (0: unbounded), at least 3
 * (80 registers) for table encoders (NF4, dyn8: the LUT lookups are independent, and unbounded
 * ptxas keeps all of a tile's in flight at 112-128 registers, 2 CTAs). */
#define AGOQ_TILE_MIN_CTAS(ENC, Src) ((ENC) == AGOQ_ENC_TABLE && (Src::kMinCtas) < 3 ? 3 : (Src::kMinCtas))
/* q8: asymmetric integers bounded to 3 CTAs too (unbounded: 127 registers, 2 CTAs, 16 warps an
 * SM); pf: 2 CTAs for every encoder (two tiles of registers: spills at 3) */
#define AGOQ_TILE_MIN_CTAS_OPT(ENC, Src, OPT)                                              \
    (((OPT) & AGOQ_TILE_OPT_PF) ? 2                                                         \
     : (ENC) == AGOQ_ENC_INT_ASYM && ((OPT) & AGOQ_TILE_OPT_Q8) ? 3 : AGOQ_TILE_MIN_CTAS(ENC, Src))
/* OPT: agoq_tile_encode_finite's optional encoders (the launcher picks them, quant_launch.cuh);
 * with GRID the CTA stages the 1 KB grid, not the 22 KB LUT (the careful path reads the device
 * table's LUT through L1). */
template <int ENC, int BITS, int LOG2B, class Src, int OPT = 0>
__global__ void __launch_bounds__(AGOQ_QUANT_THREADS, AGOQ_TILE_MIN_CTAS_OPT(ENC, Src, OPT))
    agoq_quant_tile_kernel(agoq_cuda_qparams p, Src src, agoq_cuda_qtensor out, size_t ntiles) {
    constexpr int E = Src::kVec;
    using G = agoq_tile_geom<LOG2B, E, Src::kU>;
    __shared__ agoq_smem_table tab;
    constexpr int kVrep = agoq_src_vrep<Src>::value; /* replicas of the value table, 0: none */
    static_assert(kVrep == 0 || kVrep == AGOQ_VREP, "the replicated value table has AGOQ_VREP replicas");
    constexpr bool kStageB = agoq_src_stage_b<Src>::value; /* the tables' copies in batches of loads */
    if constexpr (kVrep != 0) { /* Src::kTable: synchronised below */
        float *vrep = agoq_tile_vrep();
        if constexpr (kStageB) agoq_tile_stage_vrep(vrep, p.table->value);
        else
            for (int i = (int)threadIdx.x; i < 256 * kVrep; i += (int)blockDim.x) vrep[i] = p.table->value[i / kVrep];
    }
    constexpr bool kGrid = ENC == AGOQ_ENC_TABLE && (OPT & AGOQ_TILE_OPT_GRID) != 0;
    constexpr bool kLutSmem = ENC == AGOQ_ENC_TABLE && (kVrep != 0 || (!kGrid && (OPT & AGOQ_TILE_OPT_Q8)));
    static_assert(!(kGrid && kLutSmem), "the grid and the CTA LUT are alternatives");
    if constexpr (kGrid) {
        agoq_dev_load_table(&tab, p.table);
        agoq_tile_stage_grid(p);
        __syncthreads();
    } else if constexpr (kLutSmem) { /* the careful path reads the device table's LUT (tab.lut) */
        if constexpr ((OPT & AGOQ_TILE_OPT_Q8) != 0) {
            agoq_tile_stage_q8<(OPT & AGOQ_TILE_OPT_LUT32) != 0>(&tab, p);
        } else {
            agoq_dev_load_table<kStageB>(&tab, p.table);
            agoq_tile_stage_lut<kStageB ? 12 : 0>(p);
        }
        __syncthreads();
    } else {
        AGOQ_STAGE_QUANT_TABLES(tab, p, ENC, Src);
    }
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    if constexpr ((OPT & AGOQ_TILE_OPT_PF) != 0) { /* packed tiles, resident grid: the next tile in flight */
        uint32_t w[G::U][4];
        if (warp < ntiles) src.load_tile_packed(warp * (size_t)G::TILE, lane, w);
        for (size_t tile = warp; tile < ntiles; tile += nwarps) {
            uint32_t wn[G::U][4];
            if (tile + nwarps < ntiles) src.load_tile_packed((tile + nwarps) * (size_t)G::TILE, lane, wn);
            if (!agoq_tile_quantize_bf16p<ENC, BITS, LOG2B, false, G::U, kLutSmem, OPT>(p, &tab, w, tile, out, lane))
                agoq_tile_quantize_bf16p<ENC, BITS, LOG2B, true, G::U>(p, &tab, w, tile, out, lane);
#pragma unroll
            for (int j = 0; j < G::U; j++)
#pragma unroll
                for (int k = 0; k < 4; k++) w[j][k] = wn[j][k];
        }
    } else {
    for (size_t tile = warp; tile < ntiles; tile += nwarps) {
        if constexpr ((OPT & AGOQ_TILE_OPT_PACK) != 0) { /* Src: agoq_tile_src_bf16 (the launcher checks) */
            uint32_t w[G::U][4];
            src.load_tile_packed(tile * (size_t)G::TILE, lane, w);
            if (!agoq_tile_quantize_bf16p<ENC, BITS, LOG2B, false, G::U, kLutSmem, OPT>(p, &tab, w, tile, out, lane))
                agoq_tile_quantize_bf16p<ENC, BITS, LOG2B, true, G::U>(p, &tab, w, tile, out, lane);
        } else {
            float v[G::U][E];
            if constexpr (agoq_src_load_b<Src>::value) src.template load_tile_b<LOG2B>(p, &tab, tile * (size_t)G::TILE, lane, v);
            else src.load_tile(p, &tab, tile * (size_t)G::TILE, lane, v);
            if (!agoq_tile_quantize<ENC, BITS, LOG2B, E, false, G::U, false, kLutSmem, OPT>(p, &tab, v, tile, out, lane))
                agoq_tile_quantize<ENC, BITS, LOG2B, E, true>(p, &tab, v, tile, out, lane);
        }
    }
    }
}

/* The quantize sources of the tile kernel: fp32 (4 per vector) or bf16 (8) input. */
struct agoq_tile_src_f32 {
    static constexpr int kVec = 4, kBits = 0, kU = AGOQ_TILE_U, kMinCtas = 0;
    static constexpr bool kTable = false;
    const float *x;
    int nc; /* agoq_ld_once's ld.global.nc (quant_ldst.cuh agoq_ld_nc) */
    __device__ __forceinline__ void load_tile(const agoq_cuda_qparams &, const agoq_smem_table *, size_t e_tile,
                                              int lane, float (&v)[AGOQ_TILE_U][4]) const {
#pragma unroll
        for (int j = 0; j < AGOQ_TILE_U; j++) {
            const float4 a = agoq_ld_once((const float4 *)(x + e_tile + (size_t)(j * 128 + lane * 4)), nc); /* read once */
            v[j][0] = a.x; v[j][1] = a.y; v[j][2] = a.z; v[j][3] = a.w;
        }
    }
};
/* 8 bf16 of a 16-byte word -> fp32 (exact) */
__device__ __forceinline__ void agoq_bf16x8_to_f32(uint4 w, float (&v)[8]) {
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        v[2 * k] = __uint_as_float(u[k] << 16);
        v[2 * k + 1] = __uint_as_float(u[k] & 0xffff0000u);
    }
}
/* 8 fp32 -> 8 bf16 in a 16-byte word: one cvt.rn.bf16x2 per pair (agoq_f32_to_bf16 bit for bit
 * except NaN payloads: any NaN) */
__device__ __forceinline__ uint4 agoq_f32x8_to_bf16(const float (&v)[8]) {
    uint32_t u[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
        u[k] = *(const uint32_t *)&h;
    }
    return make_uint4(u[0], u[1], u[2], u[3]);
}
struct agoq_tile_src_bf16 {
    static constexpr int kVec = 8, kBits = 0, kU = AGOQ_TILE_U, kMinCtas = 0;
    static constexpr bool kTable = false;
    const uint16_t *x;
    int nc; /* as agoq_tile_src_f32's */
    __device__ __forceinline__ void load_tile(const agoq_cuda_qparams &, const agoq_smem_table *, size_t e_tile,
                                              int lane, float (&v)[AGOQ_TILE_U][8]) const {
#pragma unroll
        for (int j = 0; j < AGOQ_TILE_U; j++)
            agoq_bf16x8_to_f32(agoq_ld_once((const uint4 *)(x + e_tile + (size_t)(j * 256 + lane * 8)), nc), v[j]);
    }
    /* the same vectors as loaded (AGOQ_TILE_OPT_PACK) */
    __device__ __forceinline__ void load_tile_packed(size_t e_tile, int lane, uint32_t (&w)[AGOQ_TILE_U][4]) const {
#pragma unroll
        for (int j = 0; j < AGOQ_TILE_U; j++) {
            const uint4 q = agoq_ld_once((const uint4 *)(x + e_tile + (size_t)(j * 256 + lane * 8)), nc);
            w[j][0] = q.x; w[j][1] = q.y; w[j][2] = q.z; w[j][3] = q.w;
        }
    }
};
#endif
