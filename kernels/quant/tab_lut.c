/* Builder of the round-to-nearest table LUT (tab_lut.h): the coarsest bucket grid in which the
 * reference's position (agoq_table_pos, u < 0) changes at most once, by one, per bucket and
 * never in the end buckets, each bucket's threshold found by bisection over the float bit
 * patterns of the bucket. Host only, once per table and device (quant.cu). Built like the
 * references: no fast-math, no contraction. */
#include "kernels/quant/tab_lut.h"

#include <string.h>

/* Floats in the total order of their values (-0 just below +0), as unsigned keys, and back. */
static uint32_t order_of(float f) {
    const uint32_t b = agoq_f32_bits(f);
    return b >> 31 ? ~b : b | 0x80000000u;
}
static float of_order(uint32_t k) { return agoq_bits_f32(k >> 31 ? k & 0x7fffffffu : ~k); }

typedef struct {
    const float *sorted, *mid;
    const uint8_t *code;
    int n;
} table_ref;
static int pos_at(const table_ref *t, uint32_t ord) {
    return agoq_table_pos(t->sorted, t->mid, t->code, t->n, of_order(ord), -1.0f);
}

/* One side's bucket m as orders [k0, k1] (both ends included). */
static void bucket_orders(int shift, int base, int nb, int neg, int m, uint32_t *k0, uint32_t *k1) {
    const uint32_t lo_mag = m == 0 ? 0u : (uint32_t)(base + m) << shift;
    const uint32_t hi_mag = m == nb - 1 ? 0x7f800000u : ((uint32_t)(base + m + 1) << shift) - 1u;
    const uint32_t sign = neg ? 0x80000000u : 0u;
    *k0 = order_of(agoq_bits_f32((neg ? hi_mag : lo_mag) | sign));
    *k1 = order_of(agoq_bits_f32((neg ? lo_mag : hi_mag) | sign));
}

/* The entry of bucket [k0, k1]; -1 when the position changes more than once or by more than
 * one there, or at all in an end bucket (`end`). */
static int fill_entry(const table_ref *t, uint32_t k0, uint32_t k1, int end, uint32_t out[2]) {
    const int p0 = pos_at(t, k0), p1 = pos_at(t, k1);
    uint32_t thr = 0x7f800000u; /* +Inf: constant */
    if (p0 != p1) {
        if (end || p1 != p0 + 1) return -1;
        uint32_t lo = k0, hi = k1; /* pos(lo) == p0, pos(hi) == p1 */
        while (hi - lo > 1) {
            const uint32_t m = lo + (hi - lo) / 2;
            if (pos_at(t, m) == p0) lo = m; else hi = m;
        }
        thr = agoq_f32_bits(of_order(lo));
        /* y > thr must hold exactly for the values above lo: fails only for thr = -0 (+0 > -0 is
         * false); the reference never separates -0 from +0, so this cannot happen */
        if (thr == 0x80000000u) return -1;
    }
    out[0] = thr;
    out[1] = (uint32_t)p0;
    return 0;
}

int agoq_tab_lut_build(agoq_tab_lut *lut, const float *sorted, const float *mid, const uint8_t *code, int n) {
    const table_ref t = {sorted, mid, code, n};
    float lo = 0.0f, hi = 0.0f; /* smallest and largest |mid| */
    int ident = 1;
    for (int i = 0; i < n; i++) ident &= code[i] == i;
    for (int i = 0; i + 1 < n; i++) {
        const float a = fabsf(mid[i]);
        if (a == 0.0f) break; /* no LUT: see tab_lut.h */
        if (lo == 0.0f || a < lo) lo = a;
        if (a > hi) hi = a;
    }
    for (int shift = 23; shift >= 9 && lo > 0.0f; shift--) { /* 1, 2, 4, ... buckets per octave */
        const int base = (int)(agoq_f32_bits(lo) >> shift) - 1, nb = (int)(agoq_f32_bits(hi) >> shift) - base + 2;
        if (2 * nb > AGOQ_TAB_LUT_MAX) break;
        if (base < 0) continue; /* midpoints below 2^-126: a finer grid starts higher */
        int ok = 1;
        for (int neg = 0; neg < 2 && ok; neg++)
            for (int m = 0; m < nb && ok; m++) {
                uint32_t k0, k1;
                bucket_orders(shift, base, nb, neg, m, &k0, &k1);
                ok = fill_entry(&t, k0, k1, m == 0 || m == nb - 1, lut->e[neg * nb + m]) == 0;
            }
        if (ok) {
            lut->shift = shift;
            lut->base = base;
            lut->nb = nb;
            lut->ident = ident;
            lut->lo = agoq_bits_f32((uint32_t)base << shift);
            lut->hi = agoq_bits_f32((uint32_t)(base + nb - 1) << shift);
            return 0;
        }
    }
    memset(lut, 0, sizeof *lut);
    return -1;
}

/* Index of y on the grid (k, mask) as a signed bucket number (tab_lut.h). */
static int grid_bucket(float k, uint32_t mask, float y) {
    const uint32_t i = agoq_tab_grid_index(k, mask, y);
    return i > mask / 2 ? (int)i - (int)(mask + 1u) : (int)i;
}

int agoq_tab_grid_build(agoq_tab_grid *g, const float *sorted, const float *mid, const uint8_t *code, int n) {
    const table_ref t = {sorted, mid, code, n};
    int ident = 1;
    for (int i = 0; i < n; i++) ident &= code[i] == i;
    for (int kk = 16; kk <= 32 && ident; kk *= 2) {
        const float k = (float)kk;
        /* 4k entries: buckets -2k .. 2k - 1, beyond the contract's |i| <= YMAX k + 1/2 */
        const uint32_t mask = agoq_tab_grid_mask(k);
        const int half = (int)(mask + 1u) / 2;
        if ((int)mask + 1 > AGOQ_TAB_GRID_MAX || AGOQ_TAB_GRID_YMAX * k + 1.0f > (float)half) break;
        int ok = 1;
        for (int i = -half; i < half && ok; i++) {
            /* bucket i = {y: rint(y k) = i}: between the ends (i -+ 1/2) / k (exact floats),
             * which belong to it when i is even (ties to even) */
            uint32_t k0 = order_of(((float)i - 0.5f) / k), k1 = order_of(((float)i + 0.5f) / k);
            if (i & 1) {
                k0++;
                k1--;
            }
            /* the index function itself must agree at both ends and just outside them */
            ok = grid_bucket(k, mask, of_order(k0)) == i && grid_bucket(k, mask, of_order(k1)) == i &&
                 grid_bucket(k, mask, of_order(k0 - 1u)) == (i == -half ? half - 1 : i - 1) &&
                 grid_bucket(k, mask, of_order(k1 + 1u)) == (i == half - 1 ? -half : i + 1);
            if (ok) ok = fill_entry(&t, k0, k1, 0, g->e[(uint32_t)i & mask]) == 0;
        }
        if (ok) {
            g->k = k;
            g->mask = mask;
            return 0;
        }
    }
    memset(g, 0, sizeof *g);
    return -1;
}
