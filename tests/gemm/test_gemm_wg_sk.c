/* The Hopper GEMM's stream-K schedule (kernels/gemm/gemm_wg_sk.h), without a GPU: for every tile
 * count, grid and k-tile count of a sweep (and the LLaMA shapes that motivate it), the units of
 * all CTAs cover every (tile, k-tile) exactly once; each tile is either whole on one CTA or split
 * once, a TAIL on CTA b + 1 (k-tiles [x, ktiles), its run's first unit) and a HEAD on CTA b
 * (k-tiles [0, x), its run's last unit), which is what the kernel's workspace slots (slot b + 1)
 * and its deadlock-free wait rely on; the plan is off where the last wave is full or shorter
 * than a tile's run, and the busiest CTA's k-tiles are within one of the ideal share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/gemm_wg_sk.h"
#include "tests/test.h"

/* Checks one schedule; returns the number of violations (the first few printed). */
static int check_plan(int ntiles, int grid, int ktiles) {
    const agoq_wg_sk s = agoq_wg_sk_plan(ntiles, grid, ktiles, 1);
    int bad = 0;
    unsigned char *seen = calloc((size_t)ntiles * ktiles, 1);
    int *head_cta = malloc(sizeof(int) * (size_t)ntiles), *tail_cta = malloc(sizeof(int) * (size_t)ntiles);
    for (int i = 0; i < ntiles; i++) head_cta[i] = tail_cta[i] = -1;
    long busiest = 0;
#define BAD(...) do { if (bad++ < 3) fprintf(stderr, "    tiles %d grid %d ktiles %d: ", ntiles, grid, ktiles), fprintf(stderr, __VA_ARGS__), fprintf(stderr, "\n"); } while (0)
    for (int b = 0; b < grid; b++) {
        const int n = agoq_wg_sk_units(&s, b);
        long work = 0;
        for (int j = 0; j < n; j++) {
            int t, kb, ke;
            const int kind = agoq_wg_sk_unit(&s, b, j, &t, &kb, &ke);
            if (t < 0 || t >= ntiles || kb < 0 || ke > ktiles || kb >= ke) { BAD("CTA %d unit %d: tile %d [%d, %d)", b, j, t, kb, ke); continue; }
            for (int k = kb; k < ke; k++) seen[(size_t)t * ktiles + k]++;
            work += ke - kb;
            if (kind == AGOQ_WG_SK_TAIL) {
                if (j != (b < s.dp ? (s.dp - b + grid - 1) / grid : 0) || ke != ktiles)
                    BAD("CTA %d unit %d: TAIL not its run's first unit or not to the tile's end", b, j);
                tail_cta[t] = b;
            } else if (kind == AGOQ_WG_SK_HEAD) {
                if (j != n - 1 || kb != 0) BAD("CTA %d unit %d: HEAD not its last unit or not from k-tile 0", b, j);
                head_cta[t] = b;
            } else if (kb != 0 || ke != ktiles) {
                BAD("CTA %d unit %d: WHOLE unit [%d, %d)", b, j, kb, ke);
            }
        }
        if (work > busiest) busiest = work;
    }
    for (long e = 0; e < (long)ntiles * ktiles; e++)
        if (seen[e] != 1) { BAD("tile %ld k-tile %ld computed %d times", e / ktiles, e % ktiles, seen[e]); break; }
    for (int t = 0; t < ntiles; t++)
        if ((head_cta[t] < 0) != (tail_cta[t] < 0) || (head_cta[t] >= 0 && tail_cta[t] != head_cta[t] + 1))
            BAD("tile %d: HEAD on CTA %d, TAIL on CTA %d", t, head_cta[t], tail_cta[t]);
    const int on = s.sk > 0;
    if (on != (grid > 1 && ktiles > 1 && ntiles > grid && ntiles % grid != 0)) BAD("plan %s", on ? "on" : "off");
    if (on && (s.dp % grid || s.sk <= grid || s.sk >= 2 * grid)) BAD("dp %d sk %d", s.dp, s.sk);
    /* balance: with stream-K the busiest CTA does ceil(total / grid) k-tiles, else ceil(tiles / grid) tiles */
    const long total = (long)ntiles * ktiles;
    const long ideal = on ? (total + grid - 1) / grid : (long)((ntiles + grid - 1) / grid) * ktiles;
    if (busiest != ideal) BAD("busiest CTA %ld k-tiles, expected %ld", busiest, ideal);
#undef BAD
    free(seen); free(head_cta); free(tail_cta);
    return bad;
}

TEST(gemm_wg_sk_schedule_covers_every_k_tile_once) {
    int bad = 0, planned = 0;
    for (int grid = 1; grid <= 12; grid++)
        for (int ntiles = 1; ntiles <= 40; ntiles++)
            for (int ktiles = 1; ktiles <= 9; ktiles++) {
                bad += check_plan(ntiles, grid, ktiles);
                planned += agoq_wg_sk_plan(ntiles, grid, ktiles, 1).sk > 0;
            }
    /* the bench's wave-limited shapes on 132 SMs: 7B TP=8 FC1 (352 tiles, K 4096), 13B TP=8 FC1
     * (448, K 5120), 7B TP=8 QKV (192, K 4096), 7B TP=8 FC1 wgrad (352, K 4096 / 65536) */
    static const int llama[][2] = {{352, 64}, {448, 80}, {192, 64}, {352, 1024}, {133, 2}, {263, 3}};
    for (size_t i = 0; i < sizeof llama / sizeof llama[0]; i++) {
        bad += check_plan(llama[i][0], 132, llama[i][1]);
        planned += agoq_wg_sk_plan(llama[i][0], 132, llama[i][1], 1).sk > 0;
    }
    printf("    %d schedules checked, %d of them stream-K\n", 12 * 40 * 9 + (int)(sizeof llama / sizeof llama[0]), planned);
    CHECK_MSG(bad == 0, "%d violations", bad);
    CHECK(planned > 1000);
    /* off by the knob, or where it cannot help: the plain persistent walk */
    agoq_wg_sk s = agoq_wg_sk_plan(352, 132, 64, 0);
    CHECK(s.sk == 0 && s.dp == 352);
    s = agoq_wg_sk_plan(264, 132, 64, 1);
    CHECK(s.sk == 0 && s.dp == 264);
    s = agoq_wg_sk_plan(100, 132, 64, 1);
    CHECK(s.sk == 0 && agoq_wg_sk_units(&s, 99) == 1 && agoq_wg_sk_units(&s, 100) == 0);
    s = agoq_wg_sk_plan(352, 132, 64, 1);
    CHECK(s.dp == 132 && s.sk == 220);
}
