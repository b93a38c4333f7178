/* Faster scalar encoders for the CUDA kernels, equal bit for bit to the reference's table
 * search (tests/test_quant_math.c proves it over a bit-pattern sweep, every midpoint and the
 * specials). AGOQ_HD: compiled for host (the proof) and device (the kernels).
 *
 * agoq_fp4_encode_int: E2M1 round-to-nearest-even by integer arithmetic on the float's bits,
 * the fp8 trick of quant_math.h with 1 mantissa bit and bias 1: below the smallest normal
 * (1.0) the code is rint(2|y|) (steps of 0.5, exact); above, adding 2^21 - 1 plus the lowest
 * kept bit and shifting out 22 bits rounds the mantissa half to even, and the exponent carry
 * lands in the code. Saturates at 7 (6.0, +Inf too); NaN and zeros give 0; the sign is bit 3. */
#ifndef AGOQ_QUANT_FAST_H
#define AGOQ_QUANT_FAST_H
#include "kernels/quant_math.h"

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
#endif
