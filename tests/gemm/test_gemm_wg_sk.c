/* The Hopper GEMM's split last wave (kernels/gemm/gemm_wg_sk.h), without a GPU: for every tile
 * count, grid and k-tile count of a sweep (and the LLaMA shapes that motivate it), the units of
 * all CTAs cover every (tile, k-tile) exactly once; a split tile has s chunks in k order, chunks
 * 0 .. s - 2 PARTs with distinct slots i (s - 1) + c inside the workspace's r (s - 1), and chunk
 * s - 1 the LAST, whose unit index is the tile's highest (so a CTA only ever waits for lower
 * units: the kernel's wait cannot deadlock); the plan is off where the last wave is full or the
 * split would not save a tenth of a tile or min_saved k-tiles (AGOQ_WG_STREAMK=1: 32; =all: 0),
 * and the busiest CTA's k-tiles are what the plan says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/gemm_wg_sk.h"
#include "tests/test.h"

/* Checks one plan; returns the number of violations (the first few printed). */
static int check_plan(int ntiles, int grid, int ktiles, int min_saved) {
    const agoq_wg_sk p = agoq_wg_sk_plan(ntiles, grid, ktiles, 1, min_saved);
    int bad = 0;
    unsigned char *seen = calloc((size_t)ntiles * ktiles, 1);
    int *parts = calloc((size_t)ntiles, sizeof(int)), *last_u = malloc(sizeof(int) * (size_t)ntiles),
        *max_u = malloc(sizeof(int) * (size_t)ntiles);
    unsigned char *slot_used = calloc((size_t)(p.r * (p.s - 1) + 1), 1);
    for (int i = 0; i < ntiles; i++) last_u[i] = max_u[i] = -1;
    long busiest = 0;
#define BAD(...) do { if (bad++ < 3) fprintf(stderr, "    tiles %d grid %d ktiles %d: ", ntiles, grid, ktiles), fprintf(stderr, __VA_ARGS__), fprintf(stderr, "\n"); } while (0)
    for (int b = 0; b < grid; b++) {
        const int n = agoq_wg_sk_units(&p, b);
        long work = 0;
        for (int j = 0; j < n; j++) {
            int t, kb, ke, slot;
            const int kind = agoq_wg_sk_unit(&p, b, j, &t, &kb, &ke, &slot);
            if (t < 0 || t >= ntiles || kb < 0 || ke > ktiles || kb >= ke) { BAD("CTA %d unit %d: tile %d [%d, %d)", b, j, t, kb, ke); continue; }
            for (int k = kb; k < ke; k++) seen[(size_t)t * ktiles + k]++;
            work += ke - kb;
            /* the unit's global order: its round j and CTA b (rounds run in order on every CTA) */
            const int u = j * grid + b;
            if (u > max_u[t]) max_u[t] = u;
            if (kind == AGOQ_WG_SK_PART) {
                parts[t]++;
                if (slot < 0 || slot >= p.r * (p.s - 1) || slot_used[slot]++) BAD("CTA %d unit %d: slot %d", b, j, slot);
                if (slot != (t - p.dp) * (p.s - 1) + (int)(((long)kb * p.s + ktiles - 1) / ktiles)) BAD("tile %d chunk at %d: slot %d", t, kb, slot);
            } else if (kind == AGOQ_WG_SK_LAST) {
                if (ke != ktiles || slot != (t - p.dp) * (p.s - 1)) BAD("tile %d: LAST [%d, %d) slot %d", t, kb, ke, slot);
                last_u[t] = u;
            } else if (kb != 0 || ke != ktiles || t >= p.dp) {
                BAD("CTA %d unit %d: WHOLE tile %d [%d, %d)", b, j, t, kb, ke);
            }
        }
        if (work > busiest) busiest = work;
    }
    for (long e = 0; e < (long)ntiles * ktiles; e++)
        if (seen[e] != 1) { BAD("tile %ld k-tile %ld computed %d times", e / ktiles, e % ktiles, seen[e]); break; }
    for (int t = p.dp; t < ntiles; t++)
        if (parts[t] != p.s - 1 || last_u[t] < 0 || last_u[t] != max_u[t])
            BAD("tile %d: %d PARTs, LAST at %d, highest unit %d", t, parts[t], last_u[t], max_u[t]);
    const int on = p.r > 0;
    if (on && (p.dp % grid || p.r != ntiles % grid || p.s < 2 || p.s > ktiles || p.r * (p.s - 1) > 2 * grid))
        BAD("plan dp %d r %d s %d", p.dp, p.r, p.s);
    if (!on && p.dp != ntiles) BAD("plan off but dp %d", p.dp);
    /* the busiest CTA: its whole tiles and ceil(r s / grid) chunks of at most ceil(kt / s) k-tiles */
    const long rounds = on ? (p.r * p.s + grid - 1) / grid : 0;
    const long ideal = (long)((p.dp + grid - 1) / grid) * ktiles + rounds * ((ktiles + p.s - 1) / p.s);
    if (busiest > ideal) BAD("busiest CTA %ld k-tiles, at most %ld expected", busiest, ideal);
    if (on && 10 * rounds >= 9L * p.s) BAD("split saves under a tenth of a tile");
    if (on && (long)ktiles * (p.s - rounds) < (long)min_saved * p.s) BAD("split saves under %d k-tiles", min_saved);
    const agoq_wg_sk all = agoq_wg_sk_plan(ntiles, grid, ktiles, 1, 0); /* a threshold only removes splits */
    if (!on && all.r && (long)ktiles * (all.s - (all.r * all.s + grid - 1) / grid) >= (long)min_saved * all.s)
        BAD("no split though s = %d saves enough", all.s);
#undef BAD
    free(seen); free(parts); free(last_u); free(max_u); free(slot_used);
    return bad;
}

TEST(gemm_wg_sk_split_wave_covers_every_k_tile_once) {
    int bad = 0, planned = 0;
    for (int grid = 1; grid <= 12; grid++)
        for (int ntiles = 1; ntiles <= 40; ntiles++)
            for (int ktiles = 1; ktiles <= 9; ktiles++) {
                bad += check_plan(ntiles, grid, ktiles, 0);
                planned += agoq_wg_sk_plan(ntiles, grid, ktiles, 1, 0).r > 0;
            }
    /* the bench's wave-limited shapes on 132 SMs: 7B TP=8 FC1 (352 tiles, K 4096), 13B TP=8 FC1
     * (448, K 5120), 7B TP=8 QKV (192), 7B TP=8 FC1 wgrad (352, K 65536), 7B FC2 dgrad (1376) */
    static const int llama[][2] = {{352, 64}, {448, 80}, {192, 64}, {352, 1024}, {1376, 64}, {133, 2}, {100, 64}};
    for (size_t i = 0; i < sizeof llama / sizeof llama[0]; i++) {
        for (int ms = 0; ms <= AGOQ_WG_SK_MIN_SAVED; ms += AGOQ_WG_SK_MIN_SAVED) bad += check_plan(llama[i][0], 132, llama[i][1], ms);
        planned += agoq_wg_sk_plan(llama[i][0], 132, llama[i][1], 1, 0).r > 0;
    }
    printf("    %d plans checked, %d of them split\n", 12 * 40 * 9 + 2 * (int)(sizeof llama / sizeof llama[0]), planned);
    CHECK_MSG(bad == 0, "%d violations", bad);
    CHECK(planned > 500);
    /* the plans the GEMMs of the bench get: 352 tiles, 88 in the last wave, in 3 chunks (two
     * rounds of a third) with =all, none with =1 at 64 k-tiles (21 saved), 3 chunks at 1024;
     * 448: 52 in 2 (one round of a half, 40 of 80 saved) either way; off by the knob or a full wave */
    agoq_wg_sk p = agoq_wg_sk_plan(352, 132, 64, 1, 0);
    CHECK(p.dp == 264 && p.r == 88 && p.s == 3);
    p = agoq_wg_sk_plan(352, 132, 64, 1, AGOQ_WG_SK_MIN_SAVED);
    CHECK(p.r == 0 && p.dp == 352);
    p = agoq_wg_sk_plan(352, 132, 1024, 1, AGOQ_WG_SK_MIN_SAVED);
    CHECK(p.r == 88 && p.s == 3);
    p = agoq_wg_sk_plan(448, 132, 80, 1, AGOQ_WG_SK_MIN_SAVED);
    CHECK(p.dp == 396 && p.r == 52 && p.s == 2);
    p = agoq_wg_sk_plan(352, 132, 64, 0, 0);
    CHECK(p.r == 0 && p.dp == 352);
    p = agoq_wg_sk_plan(264, 132, 64, 1, 0);
    CHECK(p.r == 0 && p.dp == 264);
    p = agoq_wg_sk_plan(100, 132, 64, 1, 0); /* 100 tiles, 132 CTAs: no split halves a round's time */
    CHECK(p.r == 0 && agoq_wg_sk_units(&p, 99) == 1 && agoq_wg_sk_units(&p, 100) == 0);
}
