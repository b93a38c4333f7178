/* __device__ helpers of the fused kernels and the GEMM epilogue/prologue: block statistics
 * over a warp, the stored scale, and encode/decode of 8-element groups of a quantized block,
 * bit-exact with kernels/quant_ref.c (same quant_math.h functions, same order).
 *
 * Work split: one warp quantizes one block (lanes take 8-element groups gi = lane, lane + 32,
 * ...); block absmax / min / max are warp all-reductions of fmaxf/fminf, which are exact and
 * order-independent. A group of 8 codes is `bits` whole bytes (B is a multiple of 8), so each
 * lane writes its own bytes and no two lanes share a byte. */
#ifndef AGOQ_FUSED_QUANT_CUH
#define AGOQ_FUSED_QUANT_CUH
#include <stdint.h>

#include "kernels/fused.h"
#include "kernels/quant_math.h"

/* Running statistics of one block (finite elements only, as agoq_block_params_ref). */
struct fq_stat {
    float amax, lo, hi;
};
__device__ __forceinline__ fq_stat fq_stat_init() { return {0.0f, __int_as_float(0x7f800000), __int_as_float(0xff800000)}; }
__device__ __forceinline__ void fq_stat_add(fq_stat &st, const float *v, int n) {
#pragma unroll
    for (int e = 0; e < 8; e++)
        if (e < n && agoq_isfinite(v[e])) {
            st.amax = fmaxf(st.amax, fabsf(v[e]));
            st.lo = fminf(st.lo, v[e]);
            st.hi = fmaxf(st.hi, v[e]);
        }
}
__device__ __forceinline__ fq_stat fq_stat_warp(fq_stat st) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        st.amax = fmaxf(st.amax, __shfl_xor_sync(0xffffffffu, st.amax, off));
        st.lo = fminf(st.lo, __shfl_xor_sync(0xffffffffu, st.lo, off));
        st.hi = fmaxf(st.hi, __shfl_xor_sync(0xffffffffu, st.hi, off));
    }
    return st;
}

/* The same over aligned segments of g lanes (g a power of two <= 32: one block of 8g elements
 * per segment, as in the thread-per-group kernels); every lane of the warp must call it. */
__device__ __forceinline__ fq_stat fq_stat_seg(fq_stat st, int g) {
    for (int off = g >> 1; off > 0; off >>= 1) {
        st.amax = fmaxf(st.amax, __shfl_xor_sync(0xffffffffu, st.amax, off));
        st.lo = fminf(st.lo, __shfl_xor_sync(0xffffffffu, st.lo, off));
        st.hi = fmaxf(st.hi, __shfl_xor_sync(0xffffffffu, st.hi, off));
    }
    return st;
}
/* Blocks the thread-per-group kernels handle: 8..256 elements, a power of two. */
__host__ __device__ __forceinline__ int fq_seg_ok(int block) { return block >= 8 && block <= 256 && (block & (block - 1)) == 0; }

/* Stored scale s and zero m of a block from its (warp-reduced) statistics; inv = 1/s. */
__device__ __forceinline__ void fq_params(const agoq_fq &q, fq_stat st, float *s, float *m, float *inv) {
    if (q.kind == AGOQ_CODE_INT_ASYM) {
        if (st.lo > st.hi) st.lo = st.hi = 0.0f;
        st.lo = st.lo + 0.0f; /* canonical +0, as agoq_block_params_ref: fminf/fmaxf may return either zero */
        st.hi = st.hi + 0.0f;
        *s = agoq_block_scale(st.hi - st.lo, q.qmax, q.bf16_scale);
        *m = q.bf16_scale ? agoq_round_bf16(st.lo) : st.lo;
    } else {
        *s = agoq_block_scale(st.amax, q.qmax, q.bf16_scale);
        *m = 0.0f;
    }
    *inv = agoq_inv_scale(*s);
}

__device__ __forceinline__ void fq_store_scale(const agoq_fq &q, uint8_t *plane, size_t b, float v) {
    if (q.bf16_scale) reinterpret_cast<uint16_t *>(plane)[b] = agoq_f32_to_bf16(v);
    else reinterpret_cast<float *>(plane)[b] = v;
}
__device__ __forceinline__ float fq_load_scale(const agoq_fq &q, const uint8_t *plane, size_t b) {
    return q.bf16_scale ? agoq_bf16_to_f32(reinterpret_cast<const uint16_t *>(plane)[b])
                        : reinterpret_cast<const float *>(plane)[b];
}
/* Writes the block's scale (and zero point) once. */
__device__ __forceinline__ void fq_store_params(const agoq_fq &q, agoq_dqt t, size_t b, float s, float m) {
    fq_store_scale(q, t.scales, b, s);
    if (q.kind == AGOQ_CODE_INT_ASYM) fq_store_scale(q, t.zeros, b, m);
}

__device__ __forceinline__ uint32_t fq_encode(const agoq_fq &q, float x, float inv, float m, float u) {
    if (q.kind == AGOQ_CODE_INT_SYM) return agoq_encode_int_sym(x, inv, q.bits, u);
    if (q.kind == AGOQ_CODE_INT_ASYM) return agoq_encode_int_asym(x, inv, m, q.bits, u);
    if (q.fp4 && u < 0.0f) return agoq_fp4_encode_rne(x * inv); /* == the table search, cheaper */
    return q.sorted_code[agoq_table_pos(q.sorted, q.mid, q.sorted_code, q.nsorted, x * inv, u)];
}
__device__ __forceinline__ float fq_decode(const agoq_fq &q, uint32_t code, float s, float m) {
    if (q.kind == AGOQ_CODE_INT_SYM) return agoq_decode_int_sym(code, q.bits, s);
    if (q.kind == AGOQ_CODE_INT_ASYM) return agoq_decode_int_asym(code, s, m);
    if (q.fp4) return agoq_fp4_decode(code) * s;
    return q.value[code] * s;
}

/* Encodes the first n of 8 values (the rest get code 0, the padding code) and writes the
 * group's `bits` bytes at dst. idx0: global element index of v[0] (stochastic draws). */
__device__ __forceinline__ void fq_put_group(const agoq_fq &q, const float *v, int n, float inv, float m,
                                             uint64_t idx0, uint8_t *dst) {
    uint8_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < 8; e++)
        if (e < n) {
            float u = q.stochastic ? agoq_u01(q.seed, idx0 + (uint64_t)e) : -1.0f;
            agoq_put_code(buf, e, q.bits, fq_encode(q, v[e], inv, m, u));
        }
    if (q.bits == 4) {
        *reinterpret_cast<uint32_t *>(dst) = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
                                             (uint32_t)buf[3] << 24;
    } else {
        for (int i = 0; i < q.bits; i++) dst[i] = buf[i];
    }
}
/* Decodes 8 codes of a group (bits bytes at src) with the block's s and m. */
__device__ __forceinline__ void fq_get_group(const agoq_fq &q, const uint8_t *src, float s, float m, float *v) {
    uint8_t buf[8];
    if (q.bits == 4) {
        uint32_t w = *reinterpret_cast<const uint32_t *>(src);
#pragma unroll
        for (int i = 0; i < 4; i++) buf[i] = (uint8_t)(w >> (8 * i));
    } else {
        for (int i = 0; i < q.bits; i++) buf[i] = src[i];
    }
#pragma unroll
    for (int e = 0; e < 8; e++) v[e] = fq_decode(q, agoq_get_code(buf, e, q.bits), s, m);
}

/* bf16 group load/store: 16-byte vector when the group is full and aligned (vec), else per
 * element; missing elements read as 0. */
__device__ __forceinline__ void bf16_load8(const uint16_t *p, int n, bool vec, float *v) {
    if (vec && n >= 8) {
        uint4 u = *reinterpret_cast<const uint4 *>(p);
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[2 * i] = agoq_bits_f32(w[i] << 16);
            v[2 * i + 1] = agoq_bits_f32(w[i] & 0xffff0000u);
        }
    } else {
#pragma unroll
        for (int e = 0; e < 8; e++) v[e] = e < n ? agoq_bf16_to_f32(p[e]) : 0.0f;
    }
}
__device__ __forceinline__ void bf16_store8(uint16_t *p, int n, bool vec, const float *v) {
    if (vec && n >= 8) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; i++) w[i] = (uint32_t)agoq_f32_to_bf16(v[2 * i]) | (uint32_t)agoq_f32_to_bf16(v[2 * i + 1]) << 16;
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
        for (int e = 0; e < 8 && e < n; e++) p[e] = agoq_f32_to_bf16(v[e]);
    }
}

/* Group of 8 columns [col0, col0 + 8) of row r of a rowq tensor (cols wide) decoded to v. */
__device__ __forceinline__ void fq_load_rowq_group(const agoq_fq &q, agoq_dqt t, int cols, size_t r, int col0, float *v) {
    const size_t nbpr = (size_t)((cols + q.block - 1) / q.block), b = r * nbpr + (size_t)(col0 / q.block);
    const size_t cb = (size_t)q.block * (size_t)q.bits / 8;
    float s = fq_load_scale(q, t.scales, b), m = q.kind == AGOQ_CODE_INT_ASYM ? fq_load_scale(q, t.zeros, b) : 0.0f;
    fq_get_group(q, t.codes + b * cb + (size_t)(col0 % q.block) * (size_t)q.bits / 8, s, m, v);
}
#endif
