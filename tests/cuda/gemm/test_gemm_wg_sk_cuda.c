/* GPU test of the Hopper GEMM's split last wave (AGOQ_WG_STREAMK=all, kernels/gemm/gemm_wg_sk.h;
 * the plan itself is tested on the host by tests/gemm/test_gemm_wg_sk.c). On grids capped so that
 * the last wave is partial (AGOQ_WG_GRID_CAP 3-9: its tiles split into 2, 3 or 5 chunks of k, the
 * partial sums handed over through the workspace), every kernel that takes it: the plain 4-stage ones of
 * the three layouts (fwd, dgrad, wgrad), the forward 3-stage ones with a residual and with the
 * fast FP4 E2M1/128 copy (+ residual). Each entry of C (prefilled with NaN: an entry never
 * written is caught) within agoq_wg_ref_bound (gemm_wg.h) against the float64 reference
 * (|c - ref| <= 2^-8 |ref| + K 2^-23 sum|a||b|: s chunks add s - 1 fp32 additions in another
 * order, inside that bound); the same C on a second launch (the flags left at zero, the sum
 * order fixed: C does not depend on which CTA gets there first); the FP4 copy bit-exact against
 * the reference quantizer on that C. The entries that differ from the unsplit kernel's are
 * counted (printed, not required to be zero). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/gemm_wg.h"
#include "kernels/gemm/gemm_wg_sk.h"
#include "kernels/quant/quant_math.h"
#include "step/dev.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/cuda/gemm/test_gemm_wg_util.h"
#include "tests/test.h"
#include "tests/test_bf16.h"

/* C of g with every split (AGOQ_WG_STREAMK=all; =1 needs 32 k-tiles saved) or none (=0). */
static uint16_t *run_sk(const agoq_wg_args *g, int sk, int *fails) { return wg_run_knob(g, "AGOQ_WG_STREAMK", sk ? "all" : "0", fails); }

/* Entries of c out of the reference bound (all of them checked). */
static size_t out_of_bound(const agoq_wg_args *g, const uint16_t *a, const uint16_t *b, const uint16_t *r,
                           const uint16_t *c, double *worst) {
    size_t bad = 0;
    for (int i = 0; i < g->m; i++)
        for (int j = 0; j < g->n; j++) {
            double mag;
            const double ref = agoq_wg_ref_entry(g->m, g->n, g->k, a, g->a_mn, b, g->b_mn, r, i, j, &mag);
            const double tol = agoq_wg_ref_bound(ref, g->k, mag);
            const double e = fabs(agoq_bf16_to_f32(c[(size_t)i * g->n + j]) - ref) / tol;
            if (!(e <= 1.0) && bad++ < 3) fprintf(stderr, "    C[%d,%d] err/bound %.3g\n", i, j, e);
            if (e > *worst || e != e) *worst = e;
        }
    return bad;
}

TEST(cuda_wg_gemm_streamk_matches_reference) {
    /* C[m, n] = A B with A [m][k] (a_mn: [k][m]), B [n][k] (b_mn: [k][n]); grid cap; variant:
     * 0 plain, 1 residual, 2 FP4 copy, 3 FP4 copy + residual */
    static const struct { int m, n, k, a_mn, b_mn, cap, v; } cases[] = {
        {520, 600, 520, 0, 0, 6, 0},  {520, 600, 520, 0, 0, 7, 0},  {384, 1024, 2048, 0, 0, 9, 0},
        {520, 776, 264, 0, 1, 3, 0},  {264, 456, 200, 1, 1, 4, 0},  {520, 600, 520, 0, 0, 6, 1},
        {520, 512, 520, 0, 0, 4, 2},  {520, 512, 520, 0, 0, 6, 3},  {384, 1024, 2048, 0, 0, 8, 3},
    };
    const char *names[3] = {"AGOQ_WG_TILE_N", "AGOQ_WG_GRID_CAP", "AGOQ_WG_STREAMK"};
    char *saved[3];
    agoq_test_env_save(names, 3, saved);
    setenv("AGOQ_WG_TILE_N", "256", 1); /* the width the split takes (auto may pick 192) */
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        agoq_wg_args g = {0};
        g.m = cases[ci].m, g.n = cases[ci].n, g.k = cases[ci].k, g.a_mn = cases[ci].a_mn, g.b_mn = cases[ci].b_mn;
        const size_t na = (size_t)g.m * g.k, nb = (size_t)g.n * g.k, nc = (size_t)g.m * g.n;
        uint16_t *a = rand_bf16(na, 101 + ci), *b = rand_bf16(nb, 203 + ci);
        uint16_t *r = cases[ci].v & 1 ? rand_bf16(nc, 307 + ci) : NULL;
        g.a = up16(a, na), g.b = up16(b, nb), g.r = r ? up16(r, nc) : NULL;
        g.c = agoq_fused_dmalloc(nc * 2);
        agoq_qconfig qc = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
        qc.block = 128;
        agoq_fq q;
        if (cases[ci].v >= 2) {
            CHECK(agoq_fq_make(&qc, &q) == 0 && agoq_dqt_alloc(&qc, g.m, g.n, &g.cq) == 0);
            g.q = &q;
        }
        char cap[16];
        snprintf(cap, sizeof cap, "%d", cases[ci].cap);
        setenv("AGOQ_WG_GRID_CAP", cap, 1);
        const int tiles = (g.m + 127) / 128 * ((g.n + 255) / 256), ktiles = (g.k + 63) / 64;
        const agoq_wg_sk plan = agoq_wg_sk_plan(tiles, cases[ci].cap, ktiles, 1, 0);
        CHECK_MSG(plan.r > 0, "case %zu: no split tiles planned (%d tiles, cap %d)", ci, tiles, cases[ci].cap);
        int fails = 0;
        uint16_t *c0 = run_sk(&g, 0, &fails), *c1 = run_sk(&g, 1, &fails), *c2 = run_sk(&g, 1, &fails);
        CHECK(fails == 0);
        double w0 = 0.0, w1 = 0.0;
        const size_t bad0 = out_of_bound(&g, a, b, r, c0, &w0), bad1 = out_of_bound(&g, a, b, r, c1, &w1);
        size_t differ = 0, again = 0;
        for (size_t e = 0; e < nc; e++) {
            differ += c1[e] != c0[e];
            again += c2[e] != c1[e];
        }
        if (g.q) { /* the copy of the second split run, against the reference on its C */
            const size_t nq = agoq_rowq_alloc_n(&qc, g.m, g.n);
            agoq_qtensor want, got;
            CHECK(agoq_qtensor_alloc(&want, &qc, nq) == 0 && agoq_qtensor_alloc(&got, &qc, nq) == 0);
            agoq_rowq_quantize_ref(&qc, c2, g.m, g.n, &want);
            agoq_dqt_download(&qc, g.m, g.n, g.cq, &got);
            CHECK_MSG(agoq_validate_bytes("codes", want.codes, got.codes, agoq_codes_bytes(&qc, nq)) == 0 &&
                          agoq_validate_bytes("scales", want.scales, got.scales, agoq_scales_bytes(&qc, nq)) == 0,
                      "case %zu: FP4 copy", ci);
            agoq_qtensor_free(&want); agoq_qtensor_free(&got);
            agoq_dqt_free(&g.cq); agoq_fq_free(&q);
        }
        printf("    split wave %s%s M=%d N=%d K=%d cap %d: %d tiles (%d whole, %d in %d chunks of k), err/bound %.3f "
               "(unsplit %.3f), %zu entries differ from the unsplit kernel\n",
               g.a_mn ? "wgrad" : g.b_mn ? "dgrad" : "fwd", cases[ci].v == 1 ? " +R" : cases[ci].v == 2 ? " +FP4" : cases[ci].v == 3 ? " +R+FP4" : "",
               g.m, g.n, g.k, cases[ci].cap, tiles, plan.dp, plan.r, plan.s, w1, w0, differ);
        CHECK_MSG(bad0 == 0 && bad1 == 0, "case %zu: %zu / %zu entries out of bound (unsplit / split)", ci, bad0, bad1);
        CHECK_MSG(again == 0, "case %zu: a second split launch changed %zu entries", ci, again);
        agoq_fused_dfree((void *)g.a); agoq_fused_dfree((void *)g.b); agoq_fused_dfree(g.c);
        if (g.r) agoq_fused_dfree((void *)g.r);
        free(a); free(b); free(r); free(c0); free(c1); free(c2);
    }
    agoq_test_env_restore(names, 3, saved);
}

/* Split GEMMs launched on four streams at once, twice each, with no synchronization between
 * them: the one workspace of the device is handed from stream to stream by events
 * (gemm_wg_launch.cuh, sk_acquire / sk_release), so every C equals a lone launch's bit for bit
 * (the split's sum order is fixed) and the flags are left at zero (a later launch still agrees). */
TEST(cuda_wg_gemm_streamk_streams_take_turns) {
    enum { NS = 4 };
    const char *names[3] = {"AGOQ_WG_TILE_N", "AGOQ_WG_GRID_CAP", "AGOQ_WG_STREAMK"};
    char *saved[3];
    agoq_test_env_save(names, 3, saved);
    setenv("AGOQ_WG_TILE_N", "256", 1);
    setenv("AGOQ_WG_GRID_CAP", "6", 1);
    agoq_wg_args g = {0};
    g.m = 520, g.n = 600, g.k = 1544; /* 15 tiles on 6 CTAs: the last 3 split in 2 chunks of k */
    const size_t na = (size_t)g.m * g.k, nb = (size_t)g.n * g.k, nc = (size_t)g.m * g.n;
    uint16_t *a = rand_bf16(na, 401), *b = rand_bf16(nb, 402);
    g.a = up16(a, na), g.b = up16(b, nb), g.c = agoq_fused_dmalloc(nc * 2);
    int fails = 0;
    uint16_t *want = run_sk(&g, 1, &fails);
    CHECK(fails == 0);
    void *st[NS];
    uint16_t *dc[NS];
    for (int i = 0; i < NS; i++) st[i] = step_dev_stream_create(), dc[i] = agoq_fused_dmalloc(nc * 2);
    setenv("AGOQ_WG_STREAMK", "all", 1);
    for (int rep = 0; rep < 2; rep++)
        for (int i = 0; i < NS; i++) {
            agoq_wg_args gi = g;
            gi.c = dc[i];
            CHECK(agoq_wg_gemm(&gi, st[i]) == 0);
        }
    step_dev_sync();
    for (int i = 0; i < NS; i++) {
        uint16_t *got = down16(dc[i], nc);
        CHECK_MSG(agoq_validate_bytes("C on a stream vs alone", (const uint8_t *)want, (const uint8_t *)got, nc * 2) == 0,
                  "stream %d", i);
        free(got);
        step_dev_stream_destroy(st[i]);
        agoq_fused_dfree(dc[i]);
    }
    uint16_t *again = run_sk(&g, 1, &fails);
    CHECK(fails == 0 && memcmp(again, want, nc * 2) == 0);
    agoq_fused_dfree((void *)g.a); agoq_fused_dfree((void *)g.b); agoq_fused_dfree(g.c);
    free(a); free(b); free(want); free(again);
    agoq_test_env_restore(names, 3, saved);
}
