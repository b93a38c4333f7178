/* Issue 15 (q7): the FP4 E2M1 encoder of the tile quantizers' packed bf16 fast path
 * (AGOQ_TILE_OPT_Q7, quant_tile.cuh), written once for host and device (AGOQ_HD) so that
 * tests/quant/test_quant_math.c proves on the host the very code the kernels run.
 *
 * Why FP4 cost more than int4 (fast path, bf16 input, per element): int4 is x * inv, one magic
 * add and a shift/or into the word. agoq_fp4_encode_finite also finds the binade of |y| (an
 * and, a max, a shift-add: the magic 2^(e+22) depends on it: the fp4 step is 0.5, 1 or 2),
 * picks the sign by a compare and a select, and subtracts the magic: ~8 integer-pipe
 * instructions more per element. The scale rule (absmax / 6) costs nothing extra: it is one
 * division per block, like int4's absmax / 7.
 *
 * The q7 encoder needs no binade: on the fast path |y| < 7 and, with a = |y|,
 *     fp4 magnitude code = min(rint(2a), 2 + rint(a), 4 + rint(a / 2))
 * (the three lines through the code points of the binades [0, 2), [2, 4), [4, 8): each line
 * lies above the others outside its binade, and rint commutes with min). Each term is one
 * correctly rounded fp32 add of a to a magic M = 1.5 * 2^23 (+ 2, + 4): fl(2a + M) by an FMA
 * (2a and a / 2 are exact products; the FMA rounds once), so ties go to the even integer, the
 * reference's round-half-to-even; the low byte of each sum's bits is the term itself and the
 * unsigned min of the bit patterns is the min of the terms (same exponent). The eight codes of
 * a vector are gathered into nibbles by byte permutes, and the signs come from the bf16 words
 * themselves (permute bytes 1 and 3 with sign replication: 0x00 / 0xff per element), set only
 * where the magnitude is nonzero ((mag + 7) has bit 3 exactly then): -0 and tiny negatives
 * encode as 0, like the reference. */
#ifndef AGOQ_QUANT_Q7_H
#define AGOQ_QUANT_Q7_H
#include "kernels/quant/quant_math.h"

/* PTX prmt.b32, default mode: byte i of the result is byte s_i & 7 of the 8-byte pair (y:x),
 * or that byte's sign bit replicated when s_i & 8 (s_i: nibble i of s). */
AGOQ_HD uint32_t agoq_prmt(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
    return r;
#else
    const uint64_t xy = (uint64_t)y << 32 | x;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        const uint32_t sel = (s >> (4 * i)) & 15u, b = (uint32_t)(xy >> (8 * (sel & 7u))) & 0xffu;
        r |= ((sel & 8u) ? ((b & 0x80u) ? 0xffu : 0u) : b) << (8 * i);
    }
    return r;
#endif
}

/* Correctly rounded a * b + c (one rounding; the Makefile's --fmad=false does not touch it). */
AGOQ_HD float agoq_fma_rn(float a, float b, float c) {
#ifdef __CUDA_ARCH__
    return __fmaf_rn(a, b, c);
#else
    return fmaf(a, b, c);
#endif
}

#define AGOQ_Q7_MAGIC 12582912.0f /* 1.5 * 2^23: integers in the low mantissa bits */

/* Bits of M + fp4 magnitude code of a = |y| (finite, 0 <= a < 7): the code is the low byte. */
AGOQ_HD uint32_t agoq_q7_fp4_mag_word(float a) {
    const uint32_t c1 = agoq_f32_bits(agoq_fma_rn(a, 2.0f, AGOQ_Q7_MAGIC));  /* rint(2a)       */
    const uint32_t c2 = agoq_f32_bits(a + (AGOQ_Q7_MAGIC + 2.0f));           /* 2 + rint(a)    */
    const uint32_t c3 = agoq_f32_bits(agoq_fma_rn(a, 0.5f, AGOQ_Q7_MAGIC + 4.0f)); /* 4 + rint(a/2) */
    const uint32_t m = c1 < c2 ? c1 : c2;
    return m < c3 ? m : c3;
}

/* The 8 fp4 codes (nibbles, LSB first) of the bf16 vector w (4 words of 2 bf16, element 2k in
 * the low half of w[k]) with 1/s = inv, for finite x with |x * inv| < 7 (the fast path).
 * Equal to agoq_fp4_encode_rne(x * inv) per element: tests/quant/test_quant_math.c. */
AGOQ_HD uint32_t agoq_q7_fp4_pack_bf16(const uint32_t w[4], float inv) {
    uint32_t m[8];
    for (int k = 0; k < 4; k++) {
        m[2 * k] = agoq_q7_fp4_mag_word(fabsf(agoq_bits_f32(w[k] << 16)) * inv);
        m[2 * k + 1] = agoq_q7_fp4_mag_word(fabsf(agoq_bits_f32(w[k] & 0xffff0000u)) * inv);
    }
    /* magnitudes: even elements to the low nibbles, odd ones to the high nibbles */
    const uint32_t ev = agoq_prmt(agoq_prmt(m[0], m[2], 0x0040u), agoq_prmt(m[4], m[6], 0x0040u), 0x5410u);
    const uint32_t od = agoq_prmt(agoq_prmt(m[1], m[3], 0x0040u), agoq_prmt(m[5], m[7], 0x0040u), 0x5410u);
    const uint32_t mag = ev + (od << 4);
    /* signs as 0x00 / 0xff bytes: pa = [s0, s2, s1, s3], pb = [s4, s6, s5, s7] */
    const uint32_t pa = agoq_prmt(w[0], w[1], 0xfbd9u), pb = agoq_prmt(w[2], w[3], 0xfbd9u);
    const uint32_t se = agoq_prmt(pa, pb, 0x5410u), so = agoq_prmt(pa, pb, 0x7632u); /* [s0 s2 s4 s6], [s1 s3 s5 s7] */
    const uint32_t sgn = (se & 0x0f0f0f0fu) | (so & 0xf0f0f0f0u);
    return mag | (sgn & (mag + 0x77777777u) & 0x88888888u);
}
#endif
