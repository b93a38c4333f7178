/* Scalar quantization math shared by the C references and the CUDA kernels (AGOQ_HD marks
 * functions compiled for both). Everything here is exact IEEE float arithmetic with no FMA and
 * a single rounding function (rintf: round half to even), so host and device agree bit for bit
 * when both are built as the Makefile says (-ffp-contract=off; nvcc --fmad=false --ftz=false).
 *
 * The quantizer expression, everywhere: y = x * inv, inv = 1.0f / s (one IEEE division per
 * block, none per element), s the stored (already rounded) scale. */
#ifndef AGOQ_QUANT_MATH_H
#define AGOQ_QUANT_MATH_H
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define AGOQ_HD __host__ __device__ __forceinline__
#else
#include <math.h>
#define AGOQ_HD static inline
#endif

AGOQ_HD uint32_t agoq_f32_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}
AGOQ_HD float agoq_bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}
AGOQ_HD int agoq_isfinite(float f) { return (agoq_f32_bits(f) & 0x7f800000u) != 0x7f800000u; }
AGOQ_HD int agoq_isnan(float f) { return (agoq_f32_bits(f) & 0x7fffffffu) > 0x7f800000u; }

/* bf16 <-> fp32: round to nearest even; NaN stays a (quiet) NaN. */
AGOQ_HD uint16_t agoq_f32_to_bf16(float f) {
    uint32_t u = agoq_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
AGOQ_HD float agoq_bf16_to_f32(uint16_t h) { return agoq_bits_f32((uint32_t)h << 16); }
AGOQ_HD float agoq_round_bf16(float f) { return agoq_bf16_to_f32(agoq_f32_to_bf16(f)); }

/* Counter-based uniform in [0, 1) for stochastic rounding: splitmix64 of (seed, index), top 24
 * bits. Identical on host and device, independent of thread layout. */
AGOQ_HD float agoq_u01(uint64_t seed, uint64_t idx) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (idx + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(uint32_t)(z >> 40) * (1.0f / 16777216.0f);
}

/* The stored scale of a block: raw = absmax / qmax (or (max - min) / qmax), floored at FLT_MIN
 * for a nonzero block so that inv = 1/s stays finite (1/s overflows for s < ~2^-128: all-denormal
 * blocks then quantize with error <= FLT_MIN/2 instead of saturating), then rounded to the scale
 * dtype. Host and device must both call this. */
AGOQ_HD float agoq_block_scale(float range, float qmax, int bf16_scale) {
    float s = range / qmax;
    if (range > 0.0f && s < 1.17549435e-38f) s = 1.17549435e-38f;
    return bf16_scale ? agoq_round_bf16(s) : s;
}

/* 1/s, or 0 for a zero scale (all-zero or constant block: every code becomes the zero code). */
AGOQ_HD float agoq_inv_scale(float s) { return s > 0.0f ? 1.0f / s : 0.0f; }

/* A NaN in the scaled domain (NaN input, or Inf times a zero inv) becomes 0 there: the zero
 * code for symmetric and table formats, code 0 (the block minimum) for asymmetric ones.
 * Infinities saturate through the clamps below. */
AGOQ_HD float agoq_nan_to_zero(float x) { return agoq_isnan(x) ? 0.0f : x; }

/* Integer codes. Symmetric: q in [-qmax, qmax], code = q + 2^(bits-1) (offset binary).
 * Asymmetric: q in [0, 2^bits - 1], code = q. u is the stochastic-rounding draw, or < 0 for RNE. */
AGOQ_HD float agoq_round_q(float y, float u) { return u < 0.0f ? rintf(y) : floorf(y + u); }
AGOQ_HD uint32_t agoq_encode_int_sym(float x, float inv, int bits, float u) {
    float qmax = (float)((1 << (bits - 1)) - 1);
    float q = agoq_round_q(agoq_nan_to_zero(x * inv), u);
    q = q > qmax ? qmax : (q < -qmax ? -qmax : q);
    return (uint32_t)((int)q + (1 << (bits - 1)));
}
AGOQ_HD float agoq_decode_int_sym(uint32_t code, int bits, float s) {
    return (float)((int)code - (1 << (bits - 1))) * s;
}
AGOQ_HD uint32_t agoq_encode_int_asym(float x, float inv, float m, int bits, float u) {
    float qmax = (float)((1 << bits) - 1);
    float q = agoq_round_q(agoq_nan_to_zero((x - m) * inv), u);
    q = q > qmax ? qmax : (q < 0.0f ? 0.0f : q);
    return (uint32_t)q;
}
AGOQ_HD float agoq_decode_int_asym(uint32_t code, float s, float m) { return (float)code * s + m; }

/* FP4 E2M1: code = sign << 3 | magnitude index; magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6.
 * Nearest with ties to the even code (= round half to even); saturates at 6; -0 encodes as 0. */
AGOQ_HD uint32_t agoq_fp4_encode_rne(float y) {
    float a = fabsf(y);
    uint32_t m = (uint32_t)(a > 0.25f) + (uint32_t)(a >= 0.75f) + (uint32_t)(a > 1.25f) +
                 (uint32_t)(a >= 1.75f) + (uint32_t)(a > 2.5f) + (uint32_t)(a >= 3.5f) +
                 (uint32_t)(a > 5.0f);
    if (agoq_isnan(y)) m = 0;
    return m ? (m | ((agoq_f32_bits(y) >> 28) & 8u)) : 0u;
}
AGOQ_HD float agoq_fp4_decode(uint32_t code) {
    /* magnitude index m: 0,1 -> m*0.5 ; 2,3 -> 1 + (m-2)*0.5 ; 4,5 -> 2 + (m-4) ; 6,7 -> 4 + (m-6)*2 */
    uint32_t m = code & 7u;
    float e = (float)(1u << (m >> 1)) * 0.5f; /* 0.5, 1, 2, 4 */
    float v = m < 2 ? (float)m * 0.5f : e * (1.0f + 0.5f * (float)(m & 1u));
    return (code & 8u) ? -v : v;
}

/* OCP FP8 with saturation (satfinite): E4M3 (bias 7, max 448, no inf, NaN = 0x7f/0xff) and
 * E5M2 (bias 15, max 57344). Round half to even on the mantissa; -0 encodes as 0; NaN -> 0. */
AGOQ_HD uint32_t agoq_fp8_encode_rne(float y, int e5m2) {
    if (agoq_isnan(y)) return 0;
    uint32_t sign = (agoq_f32_bits(y) >> 24) & 0x80u;
    float a = fabsf(y);
    const int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
    const uint32_t maxcode = e5m2 ? 0x7bu : 0x7eu;
    const float min_normal = e5m2 ? 6.103515625e-05f : 0.015625f; /* 2^-14, 2^-6 */
    uint32_t code;
    if (a < min_normal) {
        /* subnormal: steps of 2^(1 - bias - mbits); the scaling is exact */
        code = (uint32_t)rintf(a * (e5m2 ? 65536.0f : 512.0f));
    } else if (a >= 65536.0f * 4.0f) {
        code = maxcode; /* far above range (and +inf): saturate without integer overflow */
    } else {
        uint32_t b = agoq_f32_bits(a);
        int drop = 23 - mbits;
        uint32_t r = (b + ((1u << (drop - 1)) - 1u) + ((b >> drop) & 1u)) >> drop;
        code = r - ((uint32_t)(127 - bias) << mbits);
        if (code > maxcode) code = maxcode;
    }
    return code ? (code | sign) : 0u;
}
AGOQ_HD float agoq_fp8_decode(uint32_t code, int e5m2) {
    const int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
    uint32_t e = (code & 0x7fu) >> mbits, m = code & ((1u << mbits) - 1u);
    float v;
    if (e == 0) v = (float)m * (e5m2 ? 1.52587890625e-05f : 0.001953125f); /* m * 2^(1-bias-mbits) */
    else v = agoq_bits_f32(((e + 127u - (uint32_t)bias) << 23) | (m << (23 - mbits)));
    if (e5m2 ? ((code & 0x7fu) >= 0x7cu) : ((code & 0x7fu) == 0x7fu))
        v = (e5m2 && (code & 0x7fu) == 0x7cu) ? INFINITY : NAN; /* codes never produced */
    return (code & 0x80u) ? -v : v;
}

/* Nearest entry of an ascending value table with midpoints mid[i] = 0.5f*(v[i]+v[i+1]):
 * the smallest p with y <= mid[p]; an exact tie goes to the neighbour whose code is even.
 * Stochastic: between the two neighbours v[p] <= y < v[p+1], the upper with probability
 * (y - v[p]) / (v[p+1] - v[p]). Saturates at both ends. Returns the sorted position. */
/* The smallest p in [0, n - 1] with y <= mid[p] (n - 1 when there is none). */
AGOQ_HD int agoq_table_lower(const float *mid, int n, float y) {
    int lo = 0, hi = n - 1; /* answer in [lo, hi] */
    while (lo < hi) {
        int p = (lo + hi) >> 1;
        if (y <= mid[p]) hi = p; else lo = p + 1;
    }
    return lo;
}
AGOQ_HD int agoq_table_pos(const float *v, const float *mid, const uint8_t *code, int n, float y, float u) {
    if (agoq_isnan(y)) y = 0.0f;
    if (u < 0.0f) {
        int lo = agoq_table_lower(mid, n, y);
        if (lo < n - 1 && y == mid[lo] && (code[lo] & 1u)) lo++;
        return lo;
    }
    if (y <= v[0]) return 0;
    if (y >= v[n - 1]) return n - 1;
    int lo = 0, hi = n - 1; /* v[lo] <= y < v[hi] */
    while (hi - lo > 1) {
        int p = (lo + hi) >> 1;
        if (v[p] <= y) lo = p; else hi = p;
    }
    float frac = (y - v[lo]) / (v[hi] - v[lo]);
    return u < frac ? hi : lo;
}

/* Dense bit packing: element i of a block occupies bits [i*bits, (i+1)*bits) of the block's
 * bytes, least significant bit first. bits <= 8, so a code spans at most two bytes. */
AGOQ_HD void agoq_put_code(uint8_t *blk, int i, int bits, uint32_t code) {
    uint32_t bit = (uint32_t)i * (uint32_t)bits, byte = bit >> 3, sh = bit & 7u;
    blk[byte] = (uint8_t)(blk[byte] | (code << sh));
    if (sh + (uint32_t)bits > 8u) blk[byte + 1] = (uint8_t)(blk[byte + 1] | (code >> (8u - sh)));
}
AGOQ_HD uint32_t agoq_get_code(const uint8_t *blk, int i, int bits) {
    uint32_t bit = (uint32_t)i * (uint32_t)bits, byte = bit >> 3, sh = bit & 7u;
    uint32_t w = blk[byte];
    if (sh + (uint32_t)bits > 8u) w |= (uint32_t)blk[byte + 1] << 8;
    return (w >> sh) & ((1u << bits) - 1u);
}
#endif
