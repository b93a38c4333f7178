/* The bounds of the fused kernels' fast producer math (kernels/fused/fused_tol.c): bf16 ulp,
 * exact outputs, one hand-computed GELU / SwiGLU bound each, the RMSNorm forward's y and rstd
 * bounds, and those against the FMA sum of squares they are derived for. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/fused/fused_math.h"
#include "kernels/fused/fused_tol.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"

TEST(fused_tol_bf16_ulp) {
    CHECK(agoq_bf16_ulp(1.0) == 0x1p-7 && agoq_bf16_ulp(-1.5) == 0x1p-7 && agoq_bf16_ulp(2.0) == 0x1p-6);
    CHECK(agoq_bf16_ulp(0.0) == 0x1p-133 && agoq_bf16_ulp(0x1p-130) == 0x1p-133);
}

TEST(fused_tol_exact_and_non_finite) {
    const uint16_t ref[] = {0x3f80, 0x7fc0, 0x7f80, 0x0000}, ok[] = {0x3f80, 0x7fc1, 0x7f80, 0x0000};
    const uint16_t off[] = {0x3f81, 0x3f80, 0xff80, 0x0001};
    const float x[] = {1, 1, 1, 1};
    CHECK(agoq_fused_cmp(AGOQ_OUT_EXACT, "t", x, NULL, 1, 4, ref, ok) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_EXACT, "t", x, NULL, 1, 4, ref, off) == 4);
    /* GELU at x = 1: 1 vs 1 + 2^-7 is one ulp, 0 vs the smallest denormal is inside 2^-15 |x|;
     * NaN must meet NaN and Inf the same Inf whatever the bound */
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x, NULL, 1, 4, ref, off) == 2);
}

TEST(fused_tol_gelu_and_swiglu_bounds) {
    /* GELU y at x = 1 (y = 0x3f58 = 0.84375): one bf16 ulp 2^-8 at 0.84 plus 2^-15 |x|. */
    const float x1[] = {1.0f};
    const uint16_t r1[] = {agoq_f32_to_bf16(0.84375f)}, up1[] = {agoq_f32_to_bf16(0.84375f + 0x1p-8f)};
    const uint16_t up2[] = {agoq_f32_to_bf16(0.84375f + 0x1p-7f)};
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x1, NULL, 1, 1, r1, up1) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x1, NULL, 1, 1, r1, up2) == 1);
    /* GELU y at x = -2^10: the absolute term 2^-15 * 2^10 = 2^-5 allows ref 0 vs got -2^-6. */
    const float x2[] = {-1024.0f};
    const uint16_t z[] = {0}, s6[] = {agoq_f32_to_bf16(-0x1p-6f)}, s4[] = {agoq_f32_to_bf16(-0x1p-4f)};
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x2, NULL, 1, 1, z, s6) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x2, NULL, 1, 1, z, s4) == 1);
    /* SwiGLU dh, F = 1, h = [gate 3, up 2], dout 4: d_gate term 4 d |4 * 2| (1 + 3) = 2^-9,
     * d_up term 2 d |4 * 3| = 24 * 2^-16; 0 vs 2^-10 passes for d_gate, 0 vs 2^-8 does not. */
    const float h[] = {3.0f, 2.0f};
    const uint16_t dout[] = {agoq_f32_to_bf16(4.0f)}, zz[] = {0, 0};
    const uint16_t g1[] = {agoq_f32_to_bf16(0x1p-10f), 0}, g2[] = {agoq_f32_to_bf16(0x1p-8f), 0};
    CHECK(agoq_fused_cmp(AGOQ_OUT_SWIGLU_DH, "t", h, dout, 1, 1, zz, g1) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_SWIGLU_DH, "t", h, dout, 1, 1, zz, g2) == 1);
}

TEST(fused_tol_rms_bounds) {
    CHECK(agoq_fused_out_of(0, 0) == AGOQ_OUT_RMS_Y && agoq_fused_out_of(0, 1) == AGOQ_OUT_EXACT &&
          agoq_fused_out_of(0, 2) == AGOQ_OUT_RMS_Y && agoq_fused_out_of(1, 1) == AGOQ_OUT_SWIGLU_DH &&
          agoq_fused_out_of(2, 2) == AGOQ_OUT_GELU_Y);
    /* y: one bf16 ulp of the larger (2^-7 at 1.0) passes, beyond it not, whatever x */
    const float x[] = {1.0f, 1.0f};
    const uint16_t r[] = {0x3f80, 0x3f80}, g1[] = {0x3f81, 0x3f7f}, g2[] = {0x3f82, 0x3f7d};
    CHECK(agoq_fused_cmp(AGOQ_OUT_RMS_Y, "t", x, NULL, 1, 2, r, g1) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_RMS_Y, "t", x, NULL, 1, 2, r, g2) == 2);
    /* rstd: 4096 columns -> n = 16 terms a partial, bound 32 * 2^-23 = 3.8e-6 relative */
    CHECK(agoq_rms_rstd_bound(4096) == 32 * 0x1p-23 && agoq_rms_rstd_bound(1) == 24 * 0x1p-23);
    const float rr[] = {2.0f, 2.0f, 0.0f, NAN, INFINITY}, ok[] = {2.0f * (1 + 3e-6f), 2.0f * (1 - 3e-6f), 0.0f, NAN, INFINITY};
    const float off[] = {2.0f * (1 + 5e-6f), 2.0f, 1e-30f, 1.0f, 1e30f};
    CHECK(agoq_rms_rstd_cmp("t", rr, ok, 5, 4096) == 0);
    CHECK(agoq_rms_rstd_cmp("t", rr, off, 5, 4096) == 4);
}

/* The bound against the arithmetic it is derived for: the reference's sum of squares (round the
 * product, then the sum) against the kernels' (one fmaf a term, fused_dev.cuh's fz_sq_acc) in
 * the specification's order, on rows of 1 .. 65536 columns at scales 2^-60 .. 2^60 (and bf16
 * inputs, as the kernels read them): rstd within agoq_rms_rstd_bound, y within one bf16 ulp. */
static float row_dot_fma(const float *a, const float *b, int cols) {
    float part[AGOQ_ROW_THREADS] = {0};
    for (int g = 0; g * AGOQ_GROUP < cols; g++)
        for (int j = g * AGOQ_GROUP; j < cols && j < (g + 1) * AGOQ_GROUP; j++)
            part[g % AGOQ_ROW_THREADS] = fmaf(a[j], b[j], part[g % AGOQ_ROW_THREADS]);
    return agoq_tree_sum_ref(part, AGOQ_ROW_THREADS);
}
static float row_sq_fma(const float *a, int cols) { return row_dot_fma(a, a, cols); }
TEST(fused_tol_rms_bound_holds_for_the_fma_sum) {
    static const int cols[] = {1, 129, 4096, 8200, 65536};
    static const float scale[] = {0x1p-60f, 1.0f, 3.0f, 0x1p60f};
    float *x = malloc(65536 * sizeof(float));
    uint16_t *yr = malloc(65536 * 2), *yg = malloc(65536 * 2), w = agoq_f32_to_bf16(0.75f);
    double worst = 0.0;
    size_t bad = 0;
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        for (size_t s = 0; s < sizeof scale / sizeof scale[0]; s++) {
            const int n = cols[c];
            agoq_fill(AGOQ_DIST_NORMAL, x, (size_t)n, 77 + c * 8 + s);
            for (int j = 0; j < n; j++) x[j] = agoq_bf16_to_f32(agoq_f32_to_bf16(scale[s] * x[j]));
            const float rref = agoq_rms_rstd(agoq_row_dot_ref(x, x, n), n, 1e-5f);
            const float rfma = agoq_rms_rstd(row_sq_fma(x, n), n, 1e-5f);
            if (rref > 0.0f) worst = fmax(worst, fabs((double)rfma / rref - 1.0) / agoq_rms_rstd_bound((size_t)n));
            bad += agoq_rms_rstd_cmp("rstd", &rref, &rfma, 1, (size_t)n);
            for (int j = 0; j < n; j++) {
                yr[j] = agoq_f32_to_bf16(agoq_rms_out(x[j], rref, agoq_bf16_to_f32(w)));
                yg[j] = agoq_f32_to_bf16(agoq_rms_out(x[j], rfma, agoq_bf16_to_f32(w)));
            }
            bad += agoq_fused_cmp(AGOQ_OUT_RMS_Y, "y", x, NULL, 1, (size_t)n, yr, yg);
        }
    CHECK_MSG(bad == 0, "%zu outside the bounds", bad);
    CHECK_MSG(worst < 1.0, "worst rstd difference %.3f of the bound", worst);
    free(x);
    free(yr);
    free(yg);
}

/* The same for the backward (agoq_rms_bwd_cmp): the staged kernel's operations (fused_rms_bwd.cu,
 * AGOQ_RMS_BWD_FMA) in C, against agoq_rmsnorm_bwd_ref from bf16, rows of 4096 / 1000 / 8 columns
 * at scales 2^-40 .. 2^40, 1-3 rows a dweight group: every dx, partial and dweight inside; then a
 * dx one bf16 ulp beyond and a partial moved by 1e-3 relative are caught. */
static void bwd_fma(const float *x, const uint16_t *dy, const uint16_t *w, int rows, int cols, int rpg, uint16_t *dx,
                    float *dwp) {
    float *g = malloc((size_t)cols * sizeof(float));
    for (size_t i = 0; i < (size_t)((rows + rpg - 1) / rpg) * (size_t)cols; i++) dwp[i] = 0.0f;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        const uint16_t *dyr = dy + (size_t)r * cols;
        for (int j = 0; j < cols; j++) g[j] = agoq_bf16_to_f32(dyr[j]) * agoq_bf16_to_f32(w[j]);
        const float rstd = agoq_rms_rstd(row_sq_fma(xr, cols), cols, 1e-5f);
        const float coef = agoq_rms_coef(row_dot_fma(g, xr, cols), cols, rstd);
        float *p = dwp + (size_t)(r / rpg) * cols;
        for (int j = 0; j < cols; j++) {
            dx[(size_t)r * cols + j] = agoq_f32_to_bf16(rstd * fmaf(-xr[j], coef, g[j]));
            p[j] = fmaf(agoq_bf16_to_f32(dyr[j]), xr[j] * rstd, p[j]);
        }
    }
    free(g);
}
TEST(fused_tol_rms_bwd_bound_holds_for_the_fma_backward) {
    static const int shapes[][3] = {{6, 4096, 2}, {5, 1000, 3}, {4, 8, 1}};
    static const float scale[] = {0x1p-40f, 1.0f, 0x1p40f};
    size_t bad = 0, caught = 0;
    for (size_t k = 0; k < 3; k++)
        for (size_t s = 0; s < 3; s++) {
            const int rows = shapes[k][0], cols = shapes[k][1], rpg = shapes[k][2], groups = (rows + rpg - 1) / rpg;
            const size_t n = (size_t)rows * cols, np = (size_t)groups * cols;
            float *f = malloc(n * sizeof(float)), *xf = malloc(n * sizeof(float));
            uint16_t *x = malloc(n * 2), *dy = malloc(n * 2), *w = malloc((size_t)cols * 2);
            uint16_t *dxr = malloc(n * 2), *dxg = malloc(n * 2), *yr = malloc(n * 2);
            float *pr = malloc(np * 4), *pg = malloc(np * 4), *dwr = malloc((size_t)cols * 4), *dwg = malloc((size_t)cols * 4);
            agoq_fill(AGOQ_DIST_NORMAL, f, n, 300 + k * 4 + s);
            for (size_t i = 0; i < n; i++) x[i] = agoq_f32_to_bf16(scale[s] * f[i]), xf[i] = agoq_bf16_to_f32(x[i]);
            agoq_fill(AGOQ_DIST_NORMAL, f, n, 400 + k * 4 + s);
            for (size_t i = 0; i < n; i++) dy[i] = agoq_f32_to_bf16(f[i]);
            agoq_fill(AGOQ_DIST_NORMAL, f, (size_t)cols, 500 + k);
            for (int j = 0; j < cols; j++) w[j] = agoq_f32_to_bf16(1.0f + 0.1f * f[j]);
            agoq_rmsnorm_bwd_ref(NULL, NULL, x, dy, w, rows, cols, 1e-5f, rpg, dxr, yr, pr);
            agoq_dw_reduce_ref(pr, groups, cols, dwr);
            bwd_fma(xf, dy, w, rows, cols, rpg, dxg, pg);
            agoq_dw_reduce_ref(pg, groups, cols, dwg);
            bad += agoq_rms_bwd_cmp(xf, dy, w, (size_t)rows, (size_t)cols, 1e-5f, rpg, dxr, dxg, pr, pg, dwr, dwg);
            dxg[1] = (uint16_t)(dxr[1] + 2); /* two bf16 steps from the reference: beyond one ulp + a tiny term */
            pg[2] = pr[2] * 1.001f;
            caught += agoq_rms_bwd_cmp(xf, dy, w, (size_t)rows, (size_t)cols, 1e-5f, rpg, dxr, dxg, pr, pg, NULL, NULL) >= 2;
            free(f); free(xf); free(x); free(dy); free(w); free(dxr); free(dxg); free(yr);
            free(pr); free(pg); free(dwr); free(dwg);
        }
    CHECK_MSG(bad == 0, "%zu outside the bounds", bad);
    CHECK_MSG(caught == 9, "%zu of 9 perturbations caught", caught);
}
