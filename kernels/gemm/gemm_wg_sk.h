/* Stream-K schedule of the Hopper GEMM (gemm_wg.cu, AGOQ_WG_STREAMK=1; off by default): where the
 * output tiles do not fill the persistent CTAs' last wave (7B TP=8 FC1 at 4096 tokens: 352 tiles
 * of 128 x 256 on 132 SMs, 2.67 waves run as 3), all but the last one or two waves stay whole
 * tiles, a tile per CTA per wave (data-parallel, `dp` tiles, a multiple of the grid), and the
 * remaining `sk` tiles' k-tiles are split evenly over the CTAs: CTA b takes the contiguous run
 * [s0, s1) of the (tile, k-tile) sequence of those tiles (tile-major), about sk * ktiles / grid
 * k-tiles. Planned only with sk >= grid, so every run is at least ktiles long and a tile is
 * split at most once, between two CTAs:
 *   - TAIL: CTA b + 1 starts its run inside the tile, at k-tile kb > 0: it computes k-tiles
 *     [kb, ktiles) first (its run's start), writes its fp32 partial sums to workspace slot b + 1
 *     and raises that slot's flag; no epilogue;
 *   - HEAD: CTA b ends its run inside the same tile: it computes k-tiles [0, ke) last, waits for
 *     slot b + 1's flag, adds the partial to its accumulators (always in that order: C does not
 *     depend on timing) and runs the tile's epilogue (residual, C, quantized copy) as usual.
 * The HEAD's CTA reaches the tile at the end of its run, the TAIL's at the start of its own, so
 * the wait is short. C differs from the unsplit kernel's only by the order of one fp32 addition
 * per entry (within the GPU test's bound; not bit-identical). Plain C with AGOQ_HD: the kernel,
 * the launcher and the host test (tests/gemm/test_gemm_wg_sk.c: every (tile, k-tile) exactly
 * once, each split tile one TAIL and one HEAD on adjacent CTAs) share it. */
#ifndef AGOQ_GEMM_WG_SK_H
#define AGOQ_GEMM_WG_SK_H

#include "kernels/quant/quant_math.h"

typedef struct {
    int dp;     /* data-parallel tiles 0 .. dp - 1: CTA b takes b, b + grid, ... */
    int sk;     /* stream-K tiles dp .. dp + sk - 1 (0: none) */
    int grid;   /* persistent CTAs */
    int ktiles; /* k-tiles a tile */
} agoq_wg_sk;

enum { AGOQ_WG_SK_WHOLE = 0, AGOQ_WG_SK_TAIL = 1, AGOQ_WG_SK_HEAD = 2 };

/* The schedule of ntiles tiles of ktiles k-tiles on grid CTAs: stream-K (on) where the last wave
 * is partial and every run can cover a whole tile; else every tile whole (sk = 0). */
AGOQ_HD agoq_wg_sk agoq_wg_sk_plan(int ntiles, int grid, int ktiles, int on) {
    agoq_wg_sk s;
    s.dp = ntiles, s.sk = 0, s.grid = grid, s.ktiles = ktiles;
    if (on && grid > 1 && ktiles > 1 && ntiles > grid && ntiles % grid) {
        s.dp = (ntiles / grid - 1) * grid;
        s.sk = ntiles - s.dp; /* grid < sk < 2 grid */
    }
    return s;
}
/* CTA b's run of the stream-K k-tiles: [*s0, *s1) */
AGOQ_HD void agoq_wg_sk_run(const agoq_wg_sk *s, int b, long *s0, long *s1) {
    const long total = (long)s->sk * s->ktiles, base = total / s->grid, rem = total % s->grid;
    *s0 = (long)b * base + (b < rem ? b : rem);
    *s1 = *s0 + base + (b < rem ? 1 : 0);
}
/* Work units of CTA b: its data-parallel tiles, then the tiles its run touches. */
AGOQ_HD int agoq_wg_sk_units(const agoq_wg_sk *s, int b) {
    int n = b < s->dp ? (s->dp - b + s->grid - 1) / s->grid : 0;
    if (s->sk) {
        long s0, s1;
        agoq_wg_sk_run(s, b, &s0, &s1);
        n += (int)((s1 - 1) / s->ktiles - s0 / s->ktiles + 1);
    }
    return n;
}
/* Unit j of CTA b: tile *t (tile_origin's order), k-tiles [*kb, *ke); returns its kind. */
AGOQ_HD int agoq_wg_sk_unit(const agoq_wg_sk *s, int b, int j, int *t, int *kb, int *ke) {
    const int ndp = b < s->dp ? (s->dp - b + s->grid - 1) / s->grid : 0;
    if (j < ndp) {
        *t = b + j * s->grid, *kb = 0, *ke = s->ktiles;
        return AGOQ_WG_SK_WHOLE;
    }
    long s0, s1;
    agoq_wg_sk_run(s, b, &s0, &s1);
    const long kt = s->ktiles, tt = s0 / kt + (j - ndp);
    const long lo = s0 > tt * kt ? s0 : tt * kt, hi = s1 < (tt + 1) * kt ? s1 : (tt + 1) * kt;
    *t = s->dp + (int)tt, *kb = (int)(lo - tt * kt), *ke = (int)(hi - tt * kt);
    return *kb > 0 ? AGOQ_WG_SK_TAIL : *ke < s->ktiles ? AGOQ_WG_SK_HEAD : AGOQ_WG_SK_WHOLE;
}
#endif
