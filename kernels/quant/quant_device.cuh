/* __device__ building blocks of the block quantizers (kernels/quant/quant.cu, kernels/grad8/grad8.cu) for
 * any kernel that quantizes or dequantizes in registers, e.g. the fused activation kernels.
 * Everything is bit-exact with quant_ref.c when built with the Makefile's nvcc flags.
 *
 * The unit of work is a "group": 8 consecutive elements of one block (blocks are multiples of
 * 8, so a group never straddles blocks). Group g of a flat qtensor covers elements [8g, 8g+8)
 * and its codes are exactly `bits` bytes at byte offset g*bits of the codes plane (the codes
 * plane is a dense bit stream). A block of B elements is G = B/8 groups; blocks of up to 256
 * elements are handled by G consecutive lanes of a warp ("segment"), reduced with
 * agoq_warp_seg_max/min, which work for any G <= 32 (segments start at lane - lane % G).
 *
 * Typical use inside a kernel (all lanes of the warp must call the seg_* reductions):
 *   __shared__ agoq_smem_table tab;                    // only for table formats
 *   AGOQ_STAGE_TABLE(tab, p.table);                     // loads it, then __syncthreads()
 *   float v[8]; ...                                     // this lane's group, nvalid in 0..8
 *   float amax = agoq_warp_seg_max(agoq_dev_absmax8(v, nvalid), G);
 *   float s, m, inv; agoq_dev_block_params(p, amax, 0, 0, &s, &m, &inv);   // sym / table
 *   uint64_t codes = agoq_dev_encode8<ENC>(p, &tab, v, nvalid, inv, m, first_elem_index);
 *   agoq_dev_store_group(q.codes, group, p.bits, codes);
 *   if (lane % G == 0) agoq_dev_store_scale(q.scales, block, s, p.bf16_scale);
 * Asymmetric formats reduce agoq_dev_min8 / agoq_dev_max8 instead and pass lo, hi. */
#ifndef AGOQ_QUANT_DEVICE_CUH
#define AGOQ_QUANT_DEVICE_CUH
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_fast.h"
#include "kernels/quant/quant_math.h"

#define AGOQ_GROUP_ELEMS 8

/* A table staged in shared memory (4.1 KB), and where its round-to-nearest LUT is. */
struct agoq_smem_table {
    float sorted[256];
    float mid[256];
    float value[256];
    uint8_t code[256];
    int n;               /* nsorted */
    const uint2 *lut;    /* tab_lut.h entries: a shared copy (AGOQ_STAGE_TABLE_LUT) or the device table's */
};

/* Copies n words into shared memory, dst[i] = src[i / R], with every load of a batch of B per
 * thread issued before its stores (read-only loads, __ldg): the copy costs about ceil(n / (B *
 * nthreads)) round trips to L2 / DRAM instead of one per 4 words a thread, which the plain loop
 * took (ptxas unrolled it into iterations of 4 loads and their 4 stores). A CTA's prologue
 * before any streaming: with a resident grid every CTA waits it at once (twenty-first session). */
template <int B, int R = 1, typename T>
__device__ __forceinline__ void agoq_dev_stage_words(T *dst, const T *__restrict__ src, int n, int tid, int nthreads) {
    static_assert(B > 0, "a batch of at least one load a thread");
    for (int i0 = tid; i0 < n; i0 += B * nthreads) {
        T r[B];
#pragma unroll
        for (int k = 0; k < B; k++)
            if (i0 + k * nthreads < n) r[k] = __ldg(src + (i0 + k * nthreads) / R);
#pragma unroll
        for (int k = 0; k < B; k++)
            if (i0 + k * nthreads < n) dst[i0 + k * nthreads] = r[k];
    }
}

/* All threads of the CTA copy the table (g may be NULL: nothing to do) and, given `lut` (shared,
 * AGOQ_TAB_LUT_MAX entries), its LUT; without, the encoders read the device table's LUT (22 KB,
 * through L1). Every load of the table's four arrays is issued before their stores, the LUT's
 * in batches (agoq_dev_stage_words). The caller then __syncthreads() before use. */
template <bool BATCH = true> /* false: the plain loop (a load / store pair an array; quant_tile.cuh kStageB) */
__device__ __forceinline__ void agoq_dev_load_table(agoq_smem_table *s, const agoq_dev_table *g,
                                                    uint2 *lut = nullptr) {
    if (!g) return;
    const int tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
    const int nthreads = (int)(blockDim.x * blockDim.y * blockDim.z), nc = g->ncodes;
    for (int i = tid; i < nc; i += nthreads) {
        if constexpr (BATCH) {
            const float so = __ldg(&g->sorted[i]), mi = __ldg(&g->mid[i]), va = __ldg(&g->value[i]);
            const uint8_t co = __ldg(&g->sorted_code[i]);
            s->sorted[i] = so;
            s->mid[i] = mi;
            s->value[i] = va;
            s->code[i] = co;
        } else {
            s->sorted[i] = g->sorted[i];
            s->mid[i] = g->mid[i];
            s->value[i] = g->value[i];
            s->code[i] = g->sorted_code[i];
        }
    }
    if (tid == 0) {
        s->n = g->nsorted;
        s->lut = lut ? lut : (const uint2 *)g->lut.e;
    }
    if (lut) agoq_dev_stage_words<12>(lut, (const uint2 *)g->lut.e, 2 * g->lut.nb, tid, nthreads);
}
/* A kernel's table prologue, inside a CTA-uniform branch (a compile-time condition, or kernel
 * parameters): agoq_dev_load_table, then the CTA barrier. */
#define AGOQ_STAGE_TABLE(tab, table)                                    \
    do {                                                                \
        agoq_dev_load_table(&(tab), (table));                           \
        __syncthreads();                                                \
    } while (0)
/* The same with the LUT staged too (22 KB more shared memory): kernels whose round-to-nearest
 * table encoding is hot (the quantizers, the fused forwards). */
#define AGOQ_STAGE_TABLE_LUT(tab, table)                                \
    do {                                                                \
        __shared__ uint2 agoq_lut_smem_[AGOQ_TAB_LUT_MAX];              \
        agoq_dev_load_table(&(tab), (table), agoq_lut_smem_);           \
        __syncthreads();                                                \
    } while (0)
/* The tables of a quantizer kernel of encoder ENC reading source Src: the table and its LUT for
 * the table encoder, else the table alone for a source that decodes with one (Src::kTable). */
#define AGOQ_STAGE_QUANT_TABLES(tab, p, ENC, Src)                                    \
    do {                                                                             \
        if constexpr ((ENC) == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE_LUT(tab, (p).table); \
        else if constexpr (Src::kTable) AGOQ_STAGE_TABLE(tab, (p).table);            \
    } while (0)

/* The round-to-nearest code of y (not NaN) by the LUT of tab_lut.h: one 8-byte load (shared
 * memory when staged), a compare and an add (and the code of the position unless the table's
 * codes are its positions), bit-exact with t->code[agoq_table_pos(.., y, -1)]. */
__device__ __forceinline__ uint32_t agoq_dev_table_code_rn(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                           float y) {
    const uint2 e = t->lut[agoq_tab_lut_index(p.tab_shift, p.tab_base, p.tab_nb, p.tab_lo, p.tab_hi, y)];
    const uint32_t pos = agoq_tab_lut_pos(e.x, e.y, y);
    return p.tab_ident ? pos : t->code[pos];
}

/* ---- block range: over finite elements only (formats.h) ---- */
__device__ __forceinline__ float agoq_dev_absmax8(const float v[8], int nvalid) {
    float a = 0.0f;
    if (nvalid == 8) {
#pragma unroll
        for (int j = 0; j < 8; j++) a = fmaxf(a, agoq_isfinite(v[j]) ? fabsf(v[j]) : 0.0f);
        return a;
    }
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (j < nvalid && agoq_isfinite(v[j])) a = fmaxf(a, fabsf(v[j]));
    return a;
}
__device__ __forceinline__ float agoq_dev_min8(const float v[8], int nvalid) {
    float a = __int_as_float(0x7f800000); /* +inf: "no finite element yet" */
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (j < nvalid && agoq_isfinite(v[j])) a = fminf(a, v[j]);
    return a;
}
__device__ __forceinline__ float agoq_dev_max8(const float v[8], int nvalid) {
    float a = __int_as_float(0xff800000); /* -inf */
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (j < nvalid && agoq_isfinite(v[j])) a = fmaxf(a, v[j]);
    return a;
}

/* Max / min over the `width` (1..32) consecutive lanes of this lane's segment, returned to every
 * lane of the segment. Exact for any width: max/min are order independent. All 32 lanes of the
 * warp must call it (full-mask shuffles); lanes past the last whole segment get garbage. */
/* *_pos: the same with the lane's position in its segment (lane % width) precomputed. A
 * power-of-two width uses an xor butterfly (log2(width) shuffles, the result in every lane). */
template <bool MAX>
__device__ __forceinline__ float agoq_warp_seg_reduce(float v, int width, int pos) {
    if ((width & (width - 1)) == 0) {
        for (int off = width >> 1; off > 0; off >>= 1) {
            const float o = __shfl_xor_sync(0xffffffffu, v, off);
            v = MAX ? fmaxf(v, o) : fminf(v, o);
        }
        return v;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_down_sync(0xffffffffu, v, off);
        if (pos + off < width) v = MAX ? fmaxf(v, o) : fminf(v, o);
    }
    return __shfl_sync(0xffffffffu, v, (int)(threadIdx.x & 31u) - pos);
}
__device__ __forceinline__ float agoq_warp_seg_max_pos(float v, int width, int pos) {
    return agoq_warp_seg_reduce<true>(v, width, pos);
}
__device__ __forceinline__ float agoq_warp_seg_min_pos(float v, int width, int pos) {
    return agoq_warp_seg_reduce<false>(v, width, pos);
}
__device__ __forceinline__ float agoq_warp_seg_max(float v, int width) {
    return agoq_warp_seg_max_pos(v, width, (int)(threadIdx.x & 31u) % width);
}
__device__ __forceinline__ float agoq_warp_seg_min(float v, int width) {
    return agoq_warp_seg_min_pos(v, width, (int)(threadIdx.x & 31u) % width);
}

/* Stored scale s, zero point m and inv = 1/s of a block from its range (agoq_block_params_ref):
 * symmetric and table formats use amax; asymmetric ones lo, hi (lo > hi: no finite element).
 * lo/hi are canonicalised (+0.0f turns -0 into +0) because fminf/fmaxf may return either zero.
 * ASYM = (p.kind == AGOQ_CODE_INT_ASYM), which holds exactly when p.enc == AGOQ_ENC_INT_ASYM
 * (quant.cu's agoq_cuda_qparams_make), so kernels templated on their encoder resolve it at compile
 * time: with the runtime test, nvcc hoisted the asymmetric branch's (0 - 0) / qmax out of the
 * FP4 SwiGLU forward's loop and took the division's slow path once a warp (~45 of its 789
 * instructions a warp, ncu, thirty-seventh session). */
template <bool ASYM>
__device__ __forceinline__ void agoq_dev_block_params_k(const agoq_cuda_qparams &p, float amax, float lo, float hi,
                                                        float *s, float *m, float *inv) {
    if constexpr (ASYM) {
        if (lo > hi) lo = hi = 0.0f;
        lo = lo + 0.0f;
        hi = hi + 0.0f;
        *s = agoq_block_scale(hi - lo, p.qmax, p.bf16_scale);
        *m = p.bf16_scale ? agoq_round_bf16(lo) : lo;
    } else {
        *s = agoq_block_scale(amax, p.qmax, p.bf16_scale);
        *m = 0.0f;
    }
    *inv = agoq_inv_scale(*s);
}
__device__ __forceinline__ void agoq_dev_block_params(const agoq_cuda_qparams &p, float amax, float lo, float hi,
                                                      float *s, float *m, float *inv) {
    if (p.kind == AGOQ_CODE_INT_ASYM) agoq_dev_block_params_k<true>(p, amax, lo, hi, s, m, inv);
    else agoq_dev_block_params_k<false>(p, amax, lo, hi, s, m, inv);
}

/* ---- one element ----
 * Integers: the float-to-int conversion rounds (rn: half to even = rintf; rd: floor for the
 * stochastic y + u), maps NaN to 0 (= agoq_nan_to_zero) and saturates +-Inf, so the integer
 * clamp gives the reference's code. FP8: the hardware satfinite conversion (round half to
 * even, Inf -> the largest finite) with the reference's two conventions patched in: NaN and
 * -0 encode as code 0. FP4: the integer encoder of quant_fast.h. All are checked bit for bit
 * against the reference by tests/cuda/quant/test_quant_cuda.c (bit-pattern sweep included). */
template <int ENC>
__device__ __forceinline__ uint32_t agoq_dev_encode(const agoq_cuda_qparams &p, const agoq_smem_table *t, float x,
                                                    float inv, float m, float u) {
    if constexpr (ENC == AGOQ_ENC_INT_SYM) {
        const float y = x * inv;
        const int qm = (1 << (p.bits - 1)) - 1;
        int q = u < 0.0f ? __float2int_rn(y) : __float2int_rd(y + u);
        q = q > qm ? qm : (q < -qm ? -qm : q);
        return (uint32_t)(q + qm + 1);
    } else if constexpr (ENC == AGOQ_ENC_INT_ASYM) {
        const float y = (x - m) * inv;
        const int qm = (1 << p.bits) - 1;
        int q = u < 0.0f ? __float2int_rn(y) : __float2int_rd(y + u);
        return (uint32_t)(q > qm ? qm : (q < 0 ? 0 : q));
    } else if constexpr (ENC == AGOQ_ENC_FP4) {
        return agoq_fp4_encode_int(x * inv);
    } else if constexpr (ENC == AGOQ_ENC_FP8_E4M3 || ENC == AGOQ_ENC_FP8_E5M2) {
        const float y = x * inv;
        uint32_t c = __nv_cvt_float_to_fp8(y, __NV_SATFINITE, ENC == AGOQ_ENC_FP8_E5M2 ? __NV_E5M2 : __NV_E4M3);
        return (agoq_isnan(y) || c == 0x80u) ? 0u : c;
    } else {
        const float y = agoq_nan_to_zero(x * inv);
        return u < 0.0f ? agoq_dev_table_code_rn(p, t, y) : t->code[agoq_table_pos(t->sorted, t->mid, t->code, t->n, y, u)];
    }
}
template <int DEC>
__device__ __forceinline__ float agoq_dev_decode(const agoq_cuda_qparams &p, const agoq_smem_table *t, uint32_t code,
                                                 float s, float m) {
    if constexpr (DEC == AGOQ_ENC_INT_SYM) return agoq_decode_int_sym(code, p.bits, s);
    else if constexpr (DEC == AGOQ_ENC_INT_ASYM) return agoq_decode_int_asym(code, s, m);
    else if constexpr (DEC == AGOQ_ENC_FP4) return agoq_fp4_decode(code) * s;
    else if constexpr (DEC == AGOQ_ENC_FP8_E4M3)
        return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, __NV_E4M3))) * s;
    else if constexpr (DEC == AGOQ_ENC_FP8_E5M2) { /* E5M2 is the top byte of an fp16 */
        __half_raw h;
        h.x = (unsigned short)(code << 8);
        return __half2float(__half(h)) * s;
    }
    else return t->value[code] * s;
}

/* ---- one group of 8: codes packed LSB first, element j at bits [j*bits, (j+1)*bits) ----
 * Elements j >= nvalid (past the end of the tensor) get code 0 (the padding of formats.h).
 * idx0 = global element index of v[0]: the stochastic-rounding draw of v[j] is agoq_u01(seed, idx0+j). */
template <int ENC>
__device__ __forceinline__ uint64_t agoq_dev_encode8(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                     const float v[8], int nvalid, float inv, float m, uint64_t idx0) {
    /* the fp4 / fp8 encoders fix the width: constant shifts */
    constexpr int kBits = ENC == AGOQ_ENC_FP4 ? 4 : (ENC == AGOQ_ENC_FP8_E4M3 || ENC == AGOQ_ENC_FP8_E5M2) ? 8 : 0;
    const int bits = kBits ? kBits : p.bits;
    uint64_t packed = 0;
    if (p.stochastic) {
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < nvalid)
                packed |= (uint64_t)agoq_dev_encode<ENC>(p, t, v[j], inv, m, agoq_u01(p.seed, idx0 + (uint64_t)j))
                          << (j * bits);
    } else if (nvalid == 8) { /* the common full group: no per-element predicate */
#pragma unroll
        for (int j = 0; j < 8; j++) packed |= (uint64_t)agoq_dev_encode<ENC>(p, t, v[j], inv, m, -1.0f) << (j * bits);
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < nvalid) packed |= (uint64_t)agoq_dev_encode<ENC>(p, t, v[j], inv, m, -1.0f) << (j * bits);
    }
    return packed;
}
template <int DEC>
__device__ __forceinline__ void agoq_dev_decode8(const agoq_cuda_qparams &p, const agoq_smem_table *t, uint64_t packed,
                                                 float s, float m, float out[8]) {
    const uint32_t mask = (1u << p.bits) - 1u;
#pragma unroll
    for (int j = 0; j < 8; j++) out[j] = agoq_dev_decode<DEC>(p, t, (uint32_t)(packed >> (j * p.bits)) & mask, s, m);
}

/* Codes of group g: `bits` bytes at codes + g*bits. Word access when aligned, bytes otherwise. */
__device__ __forceinline__ void agoq_dev_store_group(uint8_t *codes, size_t g, int bits, uint64_t packed) {
    uint8_t *dst = codes + g * (size_t)bits;
    const uintptr_t a = (uintptr_t)dst;
    if (bits == 8 && (a & 7u) == 0) *(uint2 *)dst = make_uint2((uint32_t)packed, (uint32_t)(packed >> 32));
    else if (bits == 4 && (a & 3u) == 0) *(uint32_t *)dst = (uint32_t)packed;
    else if (bits == 2 && (a & 1u) == 0) *(uint16_t *)dst = (uint16_t)packed;
    else
        for (int b = 0; b < bits; b++) dst[b] = (uint8_t)(packed >> (8 * b));
}
__device__ __forceinline__ uint64_t agoq_dev_load_group(const uint8_t *codes, size_t g, int bits) {
    const uint8_t *src = codes + g * (size_t)bits;
    const uintptr_t a = (uintptr_t)src;
    if (bits == 8 && (a & 7u) == 0) {
        uint2 w = *(const uint2 *)src;
        return (uint64_t)w.x | ((uint64_t)w.y << 32);
    }
    if (bits == 4 && (a & 3u) == 0) return *(const uint32_t *)src;
    if (bits == 2 && (a & 1u) == 0) return *(const uint16_t *)src;
    uint64_t w = 0;
    for (int b = 0; b < bits; b++) w |= (uint64_t)src[b] << (8 * b);
    return w;
}

/* Scale / zero-point planes: element `blk` as fp32 or bf16 (planes aligned to their element). */
__device__ __forceinline__ void agoq_dev_store_scale(uint8_t *plane, size_t blk, float v, int bf16) {
    if (bf16) ((uint16_t *)plane)[blk] = agoq_f32_to_bf16(v);
    else ((float *)plane)[blk] = v;
}
__device__ __forceinline__ float agoq_dev_load_scale(const uint8_t *plane, size_t blk, int bf16) {
    return bf16 ? agoq_bf16_to_f32(((const uint16_t *)plane)[blk]) : ((const float *)plane)[blk];
}

/* Loads 8 consecutive fp32 / bf16 values x[e0..e0+nvalid) as fp32 (vector loads when vec and
 * nvalid == 8; the caller guarantees x is 16-byte aligned for fp32 and bf16 when vec). */
__device__ __forceinline__ void agoq_dev_load8(const float *x, size_t e0, int nvalid, int vec, float v[8]) {
    if (vec && nvalid == 8) {
        float4 a = *(const float4 *)(x + e0), b = *(const float4 *)(x + e0 + 4);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
        return;
    }
#pragma unroll
    for (int j = 0; j < 8; j++) v[j] = j < nvalid ? x[e0 + j] : 0.0f;
}
__device__ __forceinline__ void agoq_dev_load8(const uint16_t *x, size_t e0, int nvalid, int vec, float v[8]) {
    if (vec && nvalid == 8) {
        uint4 w = *(const uint4 *)(x + e0);
        const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            v[2 * j] = __uint_as_float(u[j] << 16);
            v[2 * j + 1] = __uint_as_float(u[j] & 0xffff0000u);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < 8; j++) v[j] = j < nvalid ? agoq_bf16_to_f32(x[e0 + j]) : 0.0f;
}
/* Stores y[e0..e0+nvalid) from v (bf16: round to nearest even), vector stores as for load8. */
__device__ __forceinline__ void agoq_dev_store8(float *y, size_t e0, int nvalid, int vec, const float v[8]) {
    if (vec && nvalid == 8) {
        *(float4 *)(y + e0) = make_float4(v[0], v[1], v[2], v[3]);
        *(float4 *)(y + e0 + 4) = make_float4(v[4], v[5], v[6], v[7]);
        return;
    }
    /* constant trip count + predicate: a run-time bound would put v[] in local memory */
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (j < nvalid) y[e0 + j] = v[j];
}
__device__ __forceinline__ void agoq_dev_store8(uint16_t *y, size_t e0, int nvalid, int vec, const float v[8]) {
    if (vec && nvalid == 8) { /* one round-to-nearest-even pack instruction per pair (NaN: any NaN) */
        uint32_t u[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
            u[j] = *(const uint32_t *)&h;
        }
        *(uint4 *)(y + e0) = make_uint4(u[0], u[1], u[2], u[3]);
        return;
    }
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (j < nvalid) y[e0 + j] = agoq_f32_to_bf16(v[j]);
}

/* Elements of group starting at e0 that lie inside a tensor of n elements (0..8). */
__device__ __forceinline__ int agoq_dev_group_valid(size_t e0, size_t n) {
    return e0 >= n ? 0 : (n - e0 >= 8 ? 8 : (int)(n - e0));
}
/* ---- generic block-quantize kernels over a value source ----
 * A source yields the fp32 values of one group (group index g, block blk, first element e0,
 * nvalid >= 1 of them): quantize reads the input, accumulate decodes the stored gradient and
 * adds the new one, reduce sums N decoded chunks. `last` marks the pass whose values are
 * quantized (sources with a side output write it then). Src::kTable: the source decodes
 * through the shared-memory table. The output qtensor may be read by the source of the same
 * group and block (in place): every read of a block happens before its codes or scale are
 * written (segment kernel: reads precede the block reduction; warp kernel: __syncwarp).
 *
 *   Src: __device__ void load(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t g,
 *                             size_t blk, size_t e0, int nvalid, bool last, float v[8]) const;
 *
 * agoq_quant_seg_kernel: blocks of <= 256 elements, one warp segment of G = B/8 lanes per
 * block, floor(32/G) blocks per warp, U independent tasks per iteration (more loads in flight).
 * agoq_quant_warp_kernel: any block size, one warp per block, two passes over the block.
 * Both start at block blk0 (the blocks before it were quantized by quant_tile.cuh's kernel). */
#define AGOQ_QUANT_THREADS 256

/* A block's scale (and, ASYM as for agoq_dev_block_params_k, its zero point) */
template <bool ASYM>
__device__ __forceinline__ void agoq_dev_store_params_k(const agoq_cuda_qparams &p, agoq_cuda_qtensor out, size_t blk,
                                                        float s, float m) {
    agoq_dev_store_scale(out.scales, blk, s, p.bf16_scale);
    if constexpr (ASYM) agoq_dev_store_scale(out.zeros, blk, m, p.bf16_scale);
}
__device__ __forceinline__ void agoq_dev_store_params(const agoq_cuda_qparams &p, agoq_cuda_qtensor out, size_t blk,
                                                      float s, float m) {
    if (p.kind == AGOQ_CODE_INT_ASYM) agoq_dev_store_params_k<true>(p, out, blk, s, m);
    else agoq_dev_store_params_k<false>(p, out, blk, s, m);
}

template <int ENC>
__device__ __forceinline__ void agoq_dev_params_seg(const agoq_cuda_qparams &p, const float v[8], int nvalid, int width,
                                                    int pos, float *s, float *m, float *inv) {
    if constexpr (ENC == AGOQ_ENC_INT_ASYM) {
        float lo = agoq_warp_seg_min_pos(agoq_dev_min8(v, nvalid), width, pos);
        float hi = agoq_warp_seg_max_pos(agoq_dev_max8(v, nvalid), width, pos);
        agoq_dev_block_params_k<true>(p, 0.0f, lo, hi, s, m, inv);
    } else {
        agoq_dev_block_params_k<false>(p, agoq_warp_seg_max_pos(agoq_dev_absmax8(v, nvalid), width, pos), 0.0f, 0.0f, s,
                                       m, inv);
    }
}

template <int ENC, int U, class Src>
__global__ void __launch_bounds__(AGOQ_QUANT_THREADS) agoq_quant_seg_kernel(agoq_cuda_qparams p, Src src,
                                                                             agoq_cuda_qtensor out, size_t blk0) {
    __shared__ agoq_smem_table tab;
    AGOQ_STAGE_QUANT_TABLES(tab, p, ENC, Src);
    const size_t n = out.n, B = (size_t)p.block;
    const int G = p.block >> 3, bpw = 32 / G, lane = (int)(threadIdx.x & 31u), seg = lane / G, pos = lane - seg * G;
    const size_t nblocks = (n + B - 1) / B, ntasks = (nblocks - blk0 + (size_t)bpw - 1) / (size_t)bpw;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t t0 = warp * U; t0 < ntasks; t0 += nwarps * U) {
        float v[U][8];
        int nv[U], act[U];
        size_t blk[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const size_t task = t0 + (size_t)u;
            blk[u] = blk0 + task * (size_t)bpw + (size_t)seg;
            act[u] = seg < bpw && task < ntasks && blk[u] < nblocks;
            const size_t e0 = blk[u] * B + (size_t)pos * 8;
            nv[u] = act[u] ? agoq_dev_group_valid(e0, n) : 0;
            if (nv[u]) src.load(p, &tab, blk[u] * (size_t)G + (size_t)pos, blk[u], e0, nv[u], true, v[u]);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            float s, m, inv;
            agoq_dev_params_seg<ENC>(p, v[u], nv[u], G, pos, &s, &m, &inv);
            if (act[u]) {
                const size_t e0 = blk[u] * B + (size_t)pos * 8;
                agoq_dev_store_group(out.codes, blk[u] * (size_t)G + (size_t)pos, p.bits,
                                     agoq_dev_encode8<ENC>(p, &tab, v[u], nv[u], inv, m, e0));
                if (pos == 0) agoq_dev_store_params_k<ENC == AGOQ_ENC_INT_ASYM>(p, out, blk[u], s, m);
            }
        }
    }
}

template <int ENC, class Src>
__global__ void __launch_bounds__(AGOQ_QUANT_THREADS) agoq_quant_warp_kernel(agoq_cuda_qparams p, Src src,
                                                                              agoq_cuda_qtensor out, size_t blk0) {
    __shared__ agoq_smem_table tab;
    AGOQ_STAGE_QUANT_TABLES(tab, p, ENC, Src);
    const size_t n = out.n, B = (size_t)p.block;
    const int G = p.block >> 3, lane = (int)(threadIdx.x & 31u);
    const size_t nblocks = (n + B - 1) / B;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t blk = blk0 + warp; blk < nblocks; blk += nwarps) {
        float amax = 0.0f, lo = __int_as_float(0x7f800000), hi = __int_as_float(0xff800000);
        for (int g = lane; g < G; g += 32) {
            const size_t e0 = blk * B + (size_t)g * 8;
            const int nv = agoq_dev_group_valid(e0, n);
            if (!nv) break;
            float v[8];
            src.load(p, &tab, blk * (size_t)G + (size_t)g, blk, e0, nv, false, v);
            if constexpr (ENC == AGOQ_ENC_INT_ASYM) {
                lo = fminf(lo, agoq_dev_min8(v, nv));
                hi = fmaxf(hi, agoq_dev_max8(v, nv));
            } else {
                amax = fmaxf(amax, agoq_dev_absmax8(v, nv));
            }
        }
        float s, m, inv;
        agoq_dev_block_params_k<ENC == AGOQ_ENC_INT_ASYM>(p, agoq_warp_seg_max(amax, 32), agoq_warp_seg_min(lo, 32),
                                                          agoq_warp_seg_max(hi, 32), &s, &m, &inv);
        for (int g = lane; g < G; g += 32) {
            const size_t e0 = blk * B + (size_t)g * 8;
            const int nv = agoq_dev_group_valid(e0, n);
            float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (nv) src.load(p, &tab, blk * (size_t)G + (size_t)g, blk, e0, nv, true, v);
            agoq_dev_store_group(out.codes, blk * (size_t)G + (size_t)g, p.bits,
                                 agoq_dev_encode8<ENC>(p, &tab, v, nv, inv, m, e0));
        }
        __syncwarp();
        if (lane == 0) agoq_dev_store_params_k<ENC == AGOQ_ENC_INT_ASYM>(p, out, blk, s, m);
    }
}

/* The quantize source: fp32 or bf16 input (vec: aligned for vector loads). */
template <typename T>
struct agoq_src_input {
    static constexpr bool kTable = false;
    const T *x;
    int vec;
    __device__ __forceinline__ void load(const agoq_cuda_qparams &, const agoq_smem_table *, size_t, size_t, size_t e0,
                                         int nvalid, bool, float v[8]) const {
        agoq_dev_load8(x, e0, nvalid, vec, v);
    }
};

/* Decodes group g (block blk) of a device qtensor's planes with decoder DEC. */
template <int DEC>
__device__ __forceinline__ void agoq_dev_decode_group(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                      const uint8_t *codes, const uint8_t *scales,
                                                      const uint8_t *zeros, size_t g, size_t blk, float v[8]) {
    const uint64_t packed = agoq_dev_load_group(codes, g, p.bits);
    const float s = agoq_dev_load_scale(scales, blk, p.bf16_scale);
    const float m = DEC == AGOQ_ENC_INT_ASYM ? agoq_dev_load_scale(zeros, blk, p.bf16_scale) : 0.0f;
    agoq_dev_decode8<DEC>(p, t, packed, s, m, v);
}
#endif
