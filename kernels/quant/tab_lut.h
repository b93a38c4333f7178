/* Round-to-nearest table encoding by one lookup (issue 15: the NF4 / dyn8 quantizers were bound
 * by a per-element search through shared memory: a bucket start, up to 3 midpoint steps, a tie
 * check, a code load, each its own shared-memory access and a divergent loop).
 *
 * The lookup: y (not NaN) falls into bucket b(y) = (bits(a) >> shift) - base of its sign, with
 * a = |y| clamped to [lo, hi] (the floats starting buckets 0 and nb - 1), i.e. entry
 * [sign(y) * nb + b(y)] of the LUT: 2^(23 - shift) buckets per octave of |y|; bucket 0 takes
 * everything below the smallest |midpoint|'s bucket, bucket nb - 1 everything above the
 * largest's, up to +Inf. The builder (tab_lut.c) picks the coarsest grid in which the
 * reference's position (agoq_table_pos with u < 0: nearest, ties to the even code) changes at
 * most once, by one, inside every bucket (never in the two end buckets). Entry = {thr, p}: the
 * position is p + (y > thr), thr the largest y that still takes p (+Inf: constant). So encoding
 * is two min/max, a shift, one 8-byte shared-memory load, a compare and an add, bit-exact with
 * the reference for every non-NaN y (+-Inf included): the builder checks each bucket's two
 * sides at their ends, which by monotonicity proves them constant. Tables whose code is the
 * sorted position (NF4, dyn8: `ident`) need no code lookup. tests/quant/test_quant_math.c
 * compares it with agoq_table_pos over a bit-pattern sweep and every midpoint. AGOQ_HD: host
 * (the builder's proof, the tests) and device (quant_device.cuh).
 * Limit: a table with a midpoint of exactly 0 has no LUT (the builder fails; none does). */
#ifndef AGOQ_TAB_LUT_H
#define AGOQ_TAB_LUT_H
#include <stdint.h>

#include "kernels/quant/quant_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Entries at most: dyn8 needs 2 x 1401 (64 buckets per octave), NF4 2 x 20 (4). 22 KB:
 * staged in shared memory by the quantizers and the fused forwards, read from the device
 * table (L1) by the rest (kernels with little shared memory left: RMSNorm rows, the GEMM). */
#define AGOQ_TAB_LUT_MAX 2816

typedef struct agoq_tab_lut {
    int shift;                       /* bucket = bits(|y|) >> shift, 9..23 */
    int base;                        /* bucket index of entry 0 (>= 0) */
    int nb;                          /* buckets per sign; entries [0, nb) y >= +0, [nb, 2 nb) y <= -0 */
    int ident;                       /* code == sorted position */
    float lo, hi;                    /* |y| clamped to [lo, hi]: the first floats of buckets 0, nb - 1 */
    uint32_t e[AGOQ_TAB_LUT_MAX][2]; /* {bits of thr, position} */
} agoq_tab_lut;

/* Fills the LUT of an ascending table (sorted, mid, code: agoq_table_pos's arguments, n entries).
 * Returns 0, or -1 when no grid of at most AGOQ_TAB_LUT_MAX entries fits (nothing usable then). */
int agoq_tab_lut_build(agoq_tab_lut *lut, const float *sorted, const float *mid, const uint8_t *code, int n);

#ifdef __cplusplus
}
#endif

/* Entry index of y (not NaN). */
AGOQ_HD int agoq_tab_lut_index(int shift, int base, int nb, float lo, float hi, float y) {
    const float a = fminf(fmaxf(fabsf(y), lo), hi);
    return (int)(agoq_f32_bits(a) >> shift) - base + (int)(agoq_f32_bits(y) >> 31) * nb;
}
/* The sorted position of y from its entry. */
AGOQ_HD uint32_t agoq_tab_lut_pos(uint32_t thr_bits, uint32_t pos, float y) {
    return pos + (y > agoq_bits_f32(thr_bits) ? 1u : 0u);
}
#endif
