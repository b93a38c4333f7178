/* The split last wave of the Hopper GEMM (gemm_wg.cu, AGOQ_WG_STREAMK=1, the default; see
 * gemm_wg_knobs.h): where
 * the output tiles do not fill the persistent CTAs' last wave (7B TP=8 FC1 at 4096 tokens: 352
 * tiles of 128 x 256 on 132 SMs, 2.67 waves run as 3), the full waves stay whole tiles (`dp`
 * tiles, a multiple of the grid, CTA b taking b, b + grid, ...), and each of the `r` tiles of the
 * partial wave is split into `s` chunks of its k-tiles, chunk c = [c kt / s, (c + 1) kt / s).
 * Units u = c r + i (tile dp + i, chunk c) go to CTA u % grid in rounds: the last wave takes
 * ceil(r s / grid) / s of a tile's time instead of one (352 tiles: s = 3, 2/3). The CTAs of a
 * round start their chunks at the same few k-tiles, so A and B stream through L2 as in the full
 * waves. (The seventeenth session's first form, stream-K proper, gave every CTA an equal run of
 * the partial wave's (tile, k-tile) sequence: each CTA then read A and B at its own k, and it
 * ran 0.86x the unsplit kernel on an H100: results/h100/logs/s17_ab_26027579/.)
 *   - PART (chunk c < s - 1): its fp32 partial sums to workspace slot i (s - 1) + c, then that
 *     slot's flag raised; no epilogue;
 *   - LAST (chunk s - 1, the tile's highest unit, so the latest round): waits for the tile's
 *     s - 1 slots, adds them to its accumulators in chunk order (C does not depend on timing),
 *     clears the flags and runs the tile's epilogue (residual, C, quantized copy) as usual.
 * A CTA waits only at a LAST unit, only for lower units: no cycle (every CTA resident).
 * C differs from the unsplit kernel's by the order of s - 1 fp32 additions per entry (within the
 * GPU test's bound; not bit-identical). Plain C with AGOQ_HD: the kernel, the launcher and the
 * host test (tests/gemm/test_gemm_wg_sk.c) share it. */
#ifndef AGOQ_GEMM_WG_SK_H
#define AGOQ_GEMM_WG_SK_H

#include "kernels/quant/quant_math.h"

typedef struct {
    int dp;     /* whole tiles 0 .. dp - 1 */
    int r;      /* split tiles dp .. dp + r - 1 (0: none) */
    int s;      /* chunks a split tile */
    int grid;   /* persistent CTAs */
    int ktiles; /* k-tiles a tile */
} agoq_wg_sk;

enum { AGOQ_WG_SK_WHOLE = 0, AGOQ_WG_SK_PART = 1, AGOQ_WG_SK_LAST = 2, AGOQ_WG_SK_MAX_S = 8 };

/* The plan for ntiles tiles of ktiles k-tiles on grid CTAs (on = 0: every tile whole). The last
 * wave of s chunks (2 .. AGOQ_WG_SK_MAX_S, <= ktiles, workspace within 2 grid slots) takes
 * ceil(r s / grid) / s of a tile; the smallest s within a tenth of a tile of the shortest (fewer
 * partial sums to write and read), only where that saves at least a tenth of a tile and at least
 * min_saved k-tiles (the partial sums' traffic: AGOQ_WG_SK_MIN_SAVED, below). */
AGOQ_HD int agoq_wg_sk_rounds(int r, int s, int grid) { return (r * s + grid - 1) / grid; }
AGOQ_HD double agoq_wg_sk_wave(int r, int s, int grid) { return (double)agoq_wg_sk_rounds(r, s, grid) / s; }
AGOQ_HD agoq_wg_sk agoq_wg_sk_plan(int ntiles, int grid, int ktiles, int on, int min_saved) {
    agoq_wg_sk p;
    p.dp = ntiles, p.r = 0, p.s = 1, p.grid = grid, p.ktiles = ktiles;
    const int r = grid > 0 ? ntiles % grid : 0;
    if (!on || grid < 2 || r == 0) return p;
    /* s: at most AGOQ_WG_SK_MAX_S and ktiles chunks, r (s - 1) <= 2 grid workspace slots */
    int smax = 2 * grid / r + 1;
    if (smax > AGOQ_WG_SK_MAX_S) smax = AGOQ_WG_SK_MAX_S;
    if (smax > ktiles) smax = ktiles;
    double best = 0.9 + 1e-9;
    for (int s = 2; s <= smax; s++)
        if (agoq_wg_sk_wave(r, s, grid) < best) best = agoq_wg_sk_wave(r, s, grid);
    for (int s = 2; s <= smax; s++)
        if (agoq_wg_sk_wave(r, s, grid) < 0.9 - 1e-9 && agoq_wg_sk_wave(r, s, grid) <= best + 0.1 + 1e-9) {
            if ((long)ktiles * (s - agoq_wg_sk_rounds(r, s, grid)) >= (long)min_saved * s) p.dp = ntiles - r, p.r = r, p.s = s;
            break;
        }
    return p;
}
/* The k-tiles a split must save for AGOQ_WG_STREAMK=1 (=all: 0). From the seventeenth session's
 * H200 A/B of every split (results/h200/logs/s17_e664521/sk/, 12 points, two rounds each way):
 * the splits that saved 32-128 k-tiles (13B TP=8 FC1 at 4096 tokens: 40; 7B TP=8 FC1 wgrad at
 * 16384: 85; 7B FC2 dgrad and wgrad: 32, 128) ran 0.995-1.11x the unsplit kernel, those that
 * saved 21-27 (3 chunks of 64 or 80 k-tiles) 0.95-1.04x (an unsplit point in both arms read
 * 0.974x: about 3% is noise): a chunk's partial sums (128 KB written, read by the LAST) and its
 * pipeline fill cost more than 21-27 k-tiles save. (The FP4 copy of 13B TP=8 FC1, N = 3456, went
 * through the per-block epilogue, which never splits, until the nineteenth session gave N % 256
 * == 128 the fast FP4 copy, which does.) Chosen from that A/B; then
 * measured as such on an H100 (eighteenth session, results/h100/logs/s18_*): 1.017-1.018x. */
enum { AGOQ_WG_SK_MIN_SAVED = 32 };
/* Of 0 .. n - 1, the indices b, b + grid, ...: CTA b's whole tiles (n = dp) or chunks (n = r s) */
AGOQ_HD int agoq_wg_sk_strided(int n, int b, int grid) { return b < n ? (n - b + grid - 1) / grid : 0; }
/* Work units of CTA b: its whole tiles, then its chunks. */
AGOQ_HD int agoq_wg_sk_units(const agoq_wg_sk *p, int b) {
    return agoq_wg_sk_strided(p->dp, b, p->grid) + agoq_wg_sk_strided(p->r * p->s, b, p->grid);
}
/* Unit j of CTA b: tile *t (tile_origin's order), k-tiles [*kb, *ke), and *slot: a PART's slot,
 * a LAST's first slot (its tile's s - 1 slots follow); returns the kind. */
AGOQ_HD int agoq_wg_sk_unit(const agoq_wg_sk *p, int b, int j, int *t, int *kb, int *ke, int *slot) {
    const int ndp = agoq_wg_sk_strided(p->dp, b, p->grid);
    *slot = 0;
    if (j < ndp) {
        *t = b + j * p->grid, *kb = 0, *ke = p->ktiles;
        return AGOQ_WG_SK_WHOLE;
    }
    const int u = b + (j - ndp) * p->grid, i = u % p->r, c = u / p->r;
    *t = p->dp + i;
    *kb = (int)((long)c * p->ktiles / p->s), *ke = (int)((long)(c + 1) * p->ktiles / p->s);
    *slot = i * (p->s - 1) + (c < p->s - 1 ? c : 0);
    return c < p->s - 1 ? AGOQ_WG_SK_PART : AGOQ_WG_SK_LAST;
}
#endif
