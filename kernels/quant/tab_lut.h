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

/* The uniform grid (issue 15, q6), for tables whose midpoints lie >= 1/K apart (NF4: levels in
 * [-1, 1], midpoints >= 0.085 apart): bucket i = rint(y K), K a power of two, found by ONE add:
 * y K is exact, so fl(y K + 1.5 * 2^23) = 1.5 * 2^23 + rint(y K) (ties to even) and its low
 * bits are i in two's complement; the entry is [i & mask], mask = 4K - 1 (a table of 4K
 * entries indexed modulo its size, so NO input, NaN and +-Inf included, reads outside it).
 * Entry = {thr, p} as above. The builder proves every bucket i in [-2K, 2K) (position constant
 * or changing once, by one, between the bucket's two end floats, found from the index function
 * itself), so the grid equals agoq_table_pos for every y with |y| <= AGOQ_TAB_GRID_YMAX (the
 * buckets cover more: |y| < 2 - 1/(2K)). Contract: |y| <= AGOQ_TAB_GRID_YMAX. The
 * quantizers' fast path (absmax scale, qmax = 1: y = x * (1 / s), s = amax or bf16(amax)) has
 * |y| < 1 / (1 - 2^-8) < 1.004 (bf16's relative half ulp; fp32 scales: 1 + 2^-22):
 * tests/quant/test_quant_math.c proves the bound over every amax of a binade and the edge
 * binades. */
#define AGOQ_TAB_GRID_MAX 128
#define AGOQ_TAB_GRID_YMAX 1.0625f
typedef struct agoq_tab_grid {
    float k;                          /* buckets per unit of y (16 or 32); 0: no grid for this table */
    uint32_t mask;                    /* entries - 1 = agoq_tab_grid_mask(k) */
    uint32_t e[AGOQ_TAB_GRID_MAX][2]; /* entry i & mask: {bits of thr, position} */
} agoq_tab_grid;

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
/* The uniform grid of the same table (the coarsest K of 16, 32 that works). Returns 0, or -1
 * (g->k = 0) when none fits: the table keeps the LUT above. */
int agoq_tab_grid_build(agoq_tab_grid *g, const float *sorted, const float *mid, const uint8_t *code, int n);

#ifdef __cplusplus
}
#endif

/* Entry index of y (not NaN). */
AGOQ_HD int agoq_tab_lut_index(int shift, int base, int nb, float lo, float hi, float y) {
    const float a = fminf(fmaxf(fabsf(y), lo), hi);
    return (int)(agoq_f32_bits(a) >> shift) - base + (int)(agoq_f32_bits(y) >> 31) * nb;
}
/* The index mask of a grid of K buckets per unit: 4K - 1. */
AGOQ_HD uint32_t agoq_tab_grid_mask(float k) { return (uint32_t)(4.0f * k) - 1u; }
/* Grid entry index of y: bits(y K + 1.5 * 2^23) & mask (two roundings here, one FFMA on the
 * device: the same value, y K being exact). */
AGOQ_HD uint32_t agoq_tab_grid_index(float k, uint32_t mask, float y) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(__fmaf_rn(y, k, 12582912.0f)) & mask;
#else
    return agoq_f32_bits(y * k + 12582912.0f) & mask;
#endif
}
/* The sorted position of y from its entry. */
AGOQ_HD uint32_t agoq_tab_lut_pos(uint32_t thr_bits, uint32_t pos, float y) {
    return pos + (y > agoq_bits_f32(thr_bits) ? 1u : 0u);
}
#endif
