/* Faster scalar encoders for the CUDA kernels, equal bit for bit to the reference's table
 * search (tests/quant/test_quant_math.c proves it over a bit-pattern sweep, every midpoint and the
 * specials). AGOQ_HD: compiled for host (the proof) and device (the kernels).
 *
 * agoq_fp4_encode_int: E2M1 round-to-nearest-even by integer arithmetic on the float's bits,
 * the fp8 trick of quant_math.h with 1 mantissa bit and bias 1: below the smallest normal
 * (1.0) the code is rint(2|y|) (steps of 0.5, exact); above, adding 2^21 - 1 plus the lowest
 * kept bit and shifting out 22 bits rounds the mantissa half to even, and the exponent carry
 * lands in the code. Saturates at 7 (6.0, +Inf too); NaN and zeros give 0; the sign is bit 3.
 *
 * agoq_fp4_encode_finite: the same function for finite |y| < 7 (the tile kernels' fast path: a
 * block whose range is finite has |y| <= 6 / (1 - 2^-9)), in fewer instructions and no select:
 * one float add rounds |y| to the fp4 step of its binade, half to even. With e the binade of
 * |y| clamped below at [1, 2) (where the step 0.5 also serves [0, 1)), M = 2^(e + 22) has an
 * ulp of 2^(e - 1), the fp4 step there, so |y| + M = M + rint(|y| / 2^(e-1)) * 2^(e-1) and
 * the code is that integer plus 2e. The sign bit is set exactly when the code is nonzero and y
 * negative, i.e. y < -0.25 (so -0 and tiny negatives give 0).  */
#ifndef AGOQ_QUANT_FAST_H
#define AGOQ_QUANT_FAST_H
#include "kernels/quant/quant_math.h"

AGOQ_HD uint32_t agoq_fp4_encode_int(float y) {
    const float a = fabsf(y);
    const uint32_t b = agoq_f32_bits(a);
    uint32_t m = (b + 0x1fffffu + ((b >> 22) & 1u)) >> 22; /* b <= 0x7fffffff: no overflow */
    m = m - 252u;                                          /* (127 - 1) << 1 */
    if (m > 7u) m = 7u;
    if (a < 1.0f) m = (uint32_t)rintf(a * 2.0f);
    if (agoq_isnan(y)) m = 0;
    return m ? (m | ((agoq_f32_bits(y) >> 28) & 8u)) : 0u;
}

AGOQ_HD uint32_t agoq_fp4_encode_finite(float y) {
    const uint32_t e8 = agoq_f32_bits(y) & 0x7f800000u;           /* exponent field of |y| */
    const uint32_t ec = e8 > 0x3f800000u ? e8 : 0x3f800000u;        /* binade, at least [1, 2) */
    const uint32_t mb = ec + (22u << 23);                           /* M = 2^(e + 22) */
    const uint32_t q = agoq_f32_bits(fabsf(y) + agoq_bits_f32(mb)) - mb; /* rint(|y| / step) */
    return q + (ec >> 22) - 254u + (y < -0.25f ? 8u : 0u);          /* + 2e, + the sign */
}

/* agoq_fp4_pack8_finite: agoq_fp4_encode_finite of 8 values, packed 4 bits LSB first, in fewer
 * instructions (issue 15: the fused SwiGLU forward was issue-bound on its encoder). The magic
 * M' = M + 2e ulp(M) = 2^(e + 22) + 2e 2^(e - 1) keeps M's exponent and adds an even number of
 * steps, so |y| + M' rounds like |y| + M (half to even) and its low mantissa bits hold the code
 * magnitude q + 2e itself (<= 7 for |y| < 7: no carry into bit 3). The signs are merged once
 * for all 8: bit 3 of a nibble is y's sign bit where the magnitude is nonzero (y < -0.25
 * exactly when y is negative and rounds away from zero); (mag + 7) sets bit 3 of a nibble
 * exactly when its magnitude is nonzero. */
AGOQ_HD uint32_t agoq_fp4_pack8_finite(const float y[8]) {
    uint32_t mag = 0, sgn = 0;
    for (int j = 0; j < 8; j++) {
        const uint32_t b = agoq_f32_bits(y[j]);
        const uint32_t e8 = b & 0x7f800000u;
        const uint32_t ec = e8 > 0x3f800000u ? e8 : 0x3f800000u;     /* binade, at least [1, 2) */
        const uint32_t mp = ec + (ec >> 22) + ((22u << 23) - 254u); /* M' = 2^(e + 22) + 2e ulp */
        mag |= (agoq_f32_bits(fabsf(y[j]) + agoq_bits_f32(mp)) & 7u) << (4 * j);
        sgn |= (b >> (28 - 4 * j)) & (8u << (4 * j));
    }
    return mag | (sgn & ((mag + 0x77777777u) & 0x88888888u));
}

/* Eight packed fp8 codes with every 0x80 (-0, what the hardware conversion gives a negative
 * value that rounds to zero) replaced by 0x00, the reference's zero: a byte keeps bit 7 only
 * when one of its low 7 bits is set (the add cannot carry into the next byte). */
AGOQ_HD uint64_t agoq_fp8_clear_neg_zero(uint64_t packed) {
    const uint64_t low7 = packed & 0x7f7f7f7f7f7f7f7full;
    return packed & ((low7 + 0x7f7f7f7f7f7f7f7full) | 0x7f7f7f7f7f7f7f7full);
}

/* Symmetric integer code of a scaled value with |y| < qmax + 1/2 (no clamp needed): rint(y)
 * half to even lands in the low bits of y + 1.5 * 2^23 (+ the code offset 2^(bits-1)), one add. */
AGOQ_HD uint32_t agoq_int_sym_encode_magic(float y, int bits) {
    const float magic = 12582912.0f + (float)(1 << (bits - 1));
    return agoq_f32_bits(y + magic) & ((1u << bits) - 1u);
}

/* Asymmetric integer code of a scaled value y = (x - m) * inv (agoq_encode_int_asym, round to
 * nearest) by the same magic add, for y in [-1/2, qmax + 1/2) (qmax = 2^bits - 1; no clamp
 * needed). The tile kernels' fast path with fp32 scales is inside: m = lo exactly, so
 * x - m >= +-0, and y <= fl(R * fl(1 / fl(R / qmax))) with R = fl(hi - lo), which
 * tests/quant/test_quant_math.c sweeps exhaustively over R (< qmax (1 + 2^-21)). */
AGOQ_HD uint32_t agoq_int_asym_magic_word(float y) { return agoq_f32_bits(y + 12582912.0f); } /* code: low bits */
AGOQ_HD uint32_t agoq_int_asym_encode_magic(float y, int bits) { return agoq_int_asym_magic_word(y) & ((1u << bits) - 1u); }
/* The same for any y but a signaling NaN (quiet NaN and +-Inf included): clamped to [0, qmax]
 * first. Rounding commutes with a clamp to integer bounds, and fmaxf(qNaN, 0) = 0 is the
 * reference's agoq_nan_to_zero (PTX max.f32 and C99 fmaxf both return the non-NaN operand; C
 * returns NaN for a signaling one, which arithmetic never produces). The fast path with bf16
 * scales needs it: m = bf16(lo) may lie above lo (y < 0) or be +-Inf (then y may be +-Inf, or
 * a quiet NaN from Inf * 0). */
AGOQ_HD float agoq_int_asym_clamp(float y, int bits) { return fminf(fmaxf(y, 0.0f), (float)((1 << bits) - 1)); }
AGOQ_HD uint32_t agoq_int_asym_encode_clamp(float y, int bits) {
    return agoq_int_asym_encode_magic(agoq_int_asym_clamp(y, bits), bits);
}
#endif
