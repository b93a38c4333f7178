/* GPU tests of the RMSNorm dweight reduction (kernels/fused/fused_rms_bwd.cu): the standalone
 * reduction in every AGOQ_DW_REDUCE form bit for bit against agoq_dw_reduce_ref, and the backward's
 * fused reduction (AGOQ_DW_FUSE=1, AGOQ_DW_FUSE_WAIT) on more groups than the device holds CTAs.
 * Split from test_fused_cuda.c (the other fused kernels). Run by `make test-cuda`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/fused/fused_tol.h"
#include "kernels/quant/quant_math.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/test.h"

/* The dweight reduction, every AGOQ_DW_REDUCE form, bit for bit against agoq_dw_reduce_ref:
 * group counts from one to past the staged kernel's chunk of 1024 (one chunk, whole chunks and a
 * tail; rounds of 16 groups and of 8 in its sum) and widths around its 32 columns a CTA;
 * partials of magnitudes 2^-20 .. 2^20 and both signs, so that a sum in another order differs
 * in its last bits. */
TEST(cuda_fused_dw_reduce_every_form) {
    static const int kGroups[] = {1, 3, 17, 391, 1024, 2100}, kCols[] = {1, 8, 33, 4096, 5000};
    static const char *const forms[] = {"0", "1", "2"};
    size_t bad = 0, runs = 0, reordered = 0;
    for (int gi = 0; gi < (int)(sizeof kGroups / sizeof *kGroups); gi++)
        for (int ci = 0; ci < (int)(sizeof kCols / sizeof *kCols); ci++) {
            const int groups = kGroups[gi], cols = kCols[ci];
            const size_t n = (size_t)groups * (size_t)cols;
            float *part = malloc(n * sizeof(float)), *want = malloc((size_t)cols * sizeof(float));
            float *got = malloc((size_t)cols * sizeof(float)), *rev = malloc((size_t)cols * sizeof(float));
            agoq_rng r = {0x5eedu + (uint64_t)(gi * 16 + ci)};
            for (size_t i = 0; i < n; i++)
                part[i] = ldexpf((float)agoq_rng_u01(&r) - 0.5f, (int)(agoq_rng_next(&r) % 41) - 20);
            agoq_dw_reduce_ref(part, groups, cols, want);
            for (int j = 0; j < cols; j++) { /* the same sums backwards: the check can see order */
                float acc = 0.0f;
                for (int g = groups - 1; g >= 0; g--) acc = acc + part[(size_t)g * (size_t)cols + (size_t)j];
                rev[j] = acc;
            }
            reordered += memcmp(rev, want, (size_t)cols * sizeof(float)) != 0;
            float *d_part = agoq_fused_dmalloc(n * sizeof(float)), *d_dw = agoq_fused_dmalloc((size_t)cols * sizeof(float));
            agoq_fused_h2d(d_part, part, n * sizeof(float));
            for (int f = 0; f < 3; f++) {
                setenv("AGOQ_DW_REDUCE", forms[f], 1);
                memset(got, 0xff, (size_t)cols * sizeof(float));
                agoq_fused_h2d(d_dw, got, (size_t)cols * sizeof(float));
                const int rc = agoq_dw_reduce_cuda(d_part, groups, cols, d_dw, NULL);
                agoq_fused_dsync();
                agoq_fused_d2h(got, d_dw, (size_t)cols * sizeof(float));
                const size_t b = (size_t)(rc != 0) + cmp_f32("dw", want, got, (size_t)cols);
                if (b) fprintf(stderr, "    ^ AGOQ_DW_REDUCE=%s groups %d cols %d\n", forms[f], groups, cols);
                bad += b;
                runs++;
            }
            unsetenv("AGOQ_DW_REDUCE");
            agoq_fused_dfree(d_part); agoq_fused_dfree(d_dw);
            free(part); free(want); free(got); free(rev);
        }
    CHECK_MSG(bad == 0, "%zu mismatches in %zu reductions", bad, runs);
    CHECK_MSG(reordered > 0, "no shape's sums change with their order: the check cannot see it");
}

/* The RMSNorm backward's fused dweight reduction (agoq_rmsnorm_bwd_dw_cuda, AGOQ_DW_FUSE=1) on
 * more groups than the device holds CTAs (the cooperative grid's CTAs then take several groups
 * each) and than a CTA's stages hold in one chunk (768 groups x 16 columns at up to 4096 columns,
 * 1536 at 8192), against the reference's partials summed by agoq_dw_reduce_ref within the bounds
 * of agoq_rms_bwd_cmp, from bf16 and from an FP4 copy; dx and the partials checked too. Rows of one
 * and of two per group. */
TEST(cuda_fused_rms_bwd_dw_many_groups) {
    static const int kShape[][3] = {{1700, 4096, 2}, {1700, 4096, 1}, {1600, 8192, 1}, {1031, 1536, 1}};
    size_t bad = 0;
    setenv("AGOQ_DW_FUSE", "1", 1);
    for (int si = 0; si < 4; si++)
        for (int fused = 0; fused < 2; fused++) {
            if (si == 3) setenv("AGOQ_DW_FUSE_WAIT", "all", 1); /* every CTA at the barrier */
            const int rows = kShape[si][0], cols = kShape[si][1], rpg = kShape[si][2], groups = (rows + rpg - 1) / rpg;
            const agoq_qconfig cq = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1), *c = fused ? &cq : NULL;
            const size_t n = (size_t)rows * cols, np = (size_t)groups * cols;
            uint16_t *x = make_input(rows, cols, 70 + (uint64_t)si, 0), *dy = make_input(rows, cols, 80 + (uint64_t)si, 0);
            uint16_t *w = make_input(1, cols, 90, 0), *dx = malloc(n * 2), *yb = malloc(n * 2);
            float *dwp = malloc(np * 4), *dw = malloc((size_t)cols * 4), *g = malloc(np * 4);
            agoq_qtensor xq = {0};
            agoq_fq q = {0};
            agoq_dqt dq = {0};
            if (fused && (agoq_qtensor_alloc(&xq, c, agoq_rowq_alloc_n(c, rows, cols)) || agoq_fq_make(c, &q) ||
                          agoq_dqt_alloc(c, rows, cols, &dq))) {
                bad++;
                continue;
            }
            if (fused) {
                uint16_t *y0 = malloc(n * 2);
                float *r0 = malloc((size_t)rows * 4);
                agoq_rmsnorm_fwd_ref(c, x, w, rows, cols, 1e-5f, y0, &xq, r0); /* the stored copy */
                agoq_dqt_upload(c, rows, cols, &xq, dq);
                free(y0);
                free(r0);
            }
            agoq_rmsnorm_bwd_ref(c, &xq, x, dy, w, rows, cols, 1e-5f, rpg, dx, yb, dwp);
            agoq_dw_reduce_ref(dwp, groups, cols, dw);
            uint16_t *d_x = up16(x, n), *d_dy = up16(dy, n), *d_w = up16(w, cols);
            uint16_t *d_dx = agoq_fused_dmalloc(n * 2), *d_yb = agoq_fused_dmalloc(n * 2);
            float *d_dwp = agoq_fused_dmalloc(np * 4), *d_dw = agoq_fused_dmalloc((size_t)cols * 4);
            const int rc = agoq_rmsnorm_bwd_dw_cuda(fused ? &q : NULL, dq, d_x, d_dy, d_w, rows, cols, 1e-5f, rpg, d_dx,
                                                    d_yb, d_dwp, d_dw, NULL);
            agoq_fused_dsync();
            size_t b = (size_t)(rc != 0);
            uint16_t *g_dx = down16(d_dx, n);
            float *gd = malloc((size_t)cols * 4), *xf = agoq_fused_input_f32(c, &xq, x, rows, cols);
            agoq_fused_d2h(g, d_dwp, np * 4);
            agoq_fused_d2h(gd, d_dw, (size_t)cols * 4);
            b += agoq_rms_bwd_cmp(xf, dy, w, (size_t)rows, (size_t)cols, 1e-5f, rpg, dx, g_dx, dwp, g, dw, gd);
            free(gd);
            free(xf);
            if (b) fprintf(stderr, "    ^ %s rows %d cols %d rpg %d (%d groups)\n", fused ? "fp4" : "bf16", rows, cols, rpg, groups);
            bad += b;
            agoq_fused_dfree(d_x); agoq_fused_dfree(d_dy); agoq_fused_dfree(d_w); agoq_fused_dfree(d_dx);
            agoq_fused_dfree(d_yb); agoq_fused_dfree(d_dwp); agoq_fused_dfree(d_dw);
            if (fused) {
                agoq_dqt_free(&dq);
                agoq_fq_free(&q);
                agoq_qtensor_free(&xq);
            }
            free(x); free(dy); free(w); free(dx); free(yb); free(dwp); free(dw); free(g); free(g_dx);
        }
    unsetenv("AGOQ_DW_FUSE");
    unsetenv("AGOQ_DW_FUSE_WAIT");
    CHECK(bad == 0);
}
