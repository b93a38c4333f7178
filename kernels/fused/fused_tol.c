/* Bounds of the fused kernels' fast producer math (fused_tol.h, fused_fast.cuh) and the
 * comparison that applies them.
 *
 * Derivation. Let d = 2^-16. On the GPU, sigmoid(z) = rcp.approx(1 + ex2.approx(-z log2 e))
 * (fused_fast.cuh; what __fdividef(1, 1 + __expf(-z)) computes, so the bounds of those apply): __expf
 * errs by at most 2 + floor(1.173 |z|) ulp (CUDA programming guide, table of intrinsics), i.e.
 * < 107 ulp = 2^-16.3 relative for |z| <= 88.7 (beyond, e^-z is 0 or +Inf on both sides and
 * the sigmoid is exactly 0 or 1 on both), and __fdividef by 2 ulp; the reference's
 * agoq_exp_det errs by <= 2 ulp and divides exactly. So each side's sigmoid s is within d
 * relative of the true one, and 1 - s within d absolute. Then per output (g = dy):
 *   - silu(gate) * up, dy * silu(gate), GELU(x) = x s: a product of such factors; both fp32
 *     values are within ~2d relative of each other, less than one bf16 ulp (2^-8 relative
 *     at least), so after rounding to bf16 (nearest even, both sides) they are equal or
 *     adjacent: |got - ref| <= ulp_bf16(max). Plus an absolute term for the ends: where
 *     1 + e^-z is in (2^126, 2^128) __fdividef returns 0, the reference s < 2^-126; and the
 *     reference's GELU is 0.5 x (1 + tanh u) with tanh u = 1 - 2 / (e^2u + 1): for x << 0 its
 *     1 + t cancels and carries an absolute error <= 2^-21 (two roundings near 1 and 2), i.e.
 *     0.5 |x| 2^-21 in y. Bound: ulp_bf16 + 2 d |x| (GELU y), 2 d |gate up| (SwiGLU out),
 *     2 d |g gate| (d_up).
 *   - d_gate = g up s (1 + gate (1 - s)): 1 + gate (1 - s) cancels near gate = -1.28, where
 *     gate (1 - s) errs by |gate| d absolute on either side: ulp_bf16 + 4 d |g up| (1 + |gate|).
 *   - GELU dx = g (s + 2 x s (1 - s) u'), u' = c (1 + 3 a x^2) (reference: g (0.5 (1 + t) +
 *     0.5 x (1 - t^2) u')): the sum cancels near x = -0.75; s (1 - s) errs by <= 2 d absolute
 *     (ours), 1 - t^2 by < 2^-20 (reference's t near +-1), 1 + t by 2^-21:
 *     ulp_bf16 + |g| (2^-20 + 8 d |x| u').
 * Non-finite results must agree exactly (NaN with NaN, +-Inf with the same Inf): the fast
 * formulas keep the reference's structure where NaN and Inf arise (fused_fast.cuh).
 *
 * RMSNorm forward (thirty-second session): the kernels' sum of squares takes each term by one
 * fused multiply-add (fz_sq_acc) where the reference rounds the product and then the sum; the
 * order is the same (fused_math.h). With u = 2^-24, a thread's partial holds n = 8 ceil(ceil(C / 8)
 * / 256) terms for C columns, then 8 levels of the halving tree: at most n + 9 roundings on any
 * term's path, and the terms are >= 0, so each side's sum is within gamma(n + 9) ~ (n + 9) u
 * relative of the exact one. rstd = 1 / sqrt(s / C + eps) halves a relative change of s, and
 * each side rounds four more times (<= 3 u in rstd): |rstd_gpu / rstd_ref - 1| <= (n + 9) u +
 * 6 u. Bound: agoq_rms_rstd_bound = (n + 16) 2^-23 (2x margin; 3.8e-6 at 4096 columns). Then y
 * = (x rstd) w, two more roundings a side: the fp32 values lie within (n + 20) u relative, far
 * below a bf16 ulp (2^-8 relative at least), so the bf16 results are equal or adjacent: |got -
 * ref| <= ulp_bf16(max) (AGOQ_OUT_RMS_Y, no absolute term; the denormal floor 2^-133 covers y
 * below 2^-126, where the fp32 sides differ by a few 2^-149). Squares below the fp32 denormals
 * round to 0 on both sides; a zero row sums to 0 exactly on both; a NaN, an Inf or a square
 * beyond FLT_MAX makes both sums NaN / Inf (rstd 0 on both). Not covered: a row whose finite sum
 * of squares lies within (n + 9) u of FLT_MAX, which one side may round to Inf (rstd 0) and the
 * other not; no test input comes near it.
 *
 * RMSNorm backward, the staged kernel (fused_rms_bwd.cu, AGOQ_RMS_BWD_FMA): the row sums S = sum
 * x^2 and D = sum g x (g = dy w, rounded alike on both sides) by FMA, dx = rstd fma(-x, coef, g),
 * the dweight terms fma(dy, x rstd, dw); the same order. Per row (reference quantities: rstd,
 * coef = (D / C) rstd^2, A = sum |g x|, rho = agoq_rms_rstd_bound): each side's D errs by at most
 * (n + 9) u A (products and sums of mixed signs: absolute, against A), so |coef_gpu - coef_ref| <=
 * (rstd^2 / C) (2 (n + 9) u A + |D| (2 rho + 7 u)) <= dc = (rstd^2 / C) A (6 n + 96) u. dx: with
 * s = g - x coef, the reference rounds x coef, s and rstd s, ours g - x coef and rstd s': the fp32
 * values differ by <= 1.01 rstd (|x| dc + u |x coef| + (rho + 4 u) |s|), added to the bf16 ulp
 * (agoq_rms_bwd_cmp's absolute term). The recomputed y: as the
 * forward's (one bf16 ulp). The dweight partial of a group of k rows, sum dy (x rstd) per column:
 * x rstd differs by (rho + 2 u) relative, and each side's k roundings of the sum (the product's
 * too in the reference) by gamma(k + 1) of B = sum |dy x| rstd: <= 1.01 B (rho + (2 k + 6) u).
 * The reduced dweight (the same sums in group order on both sides): the partials' bounds summed,
 * plus 2 gamma(G) of sum |partial| over G groups. A 2^-140 floor covers results in the fp32
 * denormals. NaN and Inf propagate alike (a NaN or Inf x makes its row's rstd or coef NaN or 0 on
 * both sides, its dx NaN and its group's partials NaN). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/fused/fused.h"
#include "kernels/fused/fused_math.h"
#include "kernels/fused/fused_tol.h"

static const double kD = 1.0 / 65536.0; /* d = 2^-16: relative error of either side's sigmoid */

double agoq_bf16_ulp(double v) {
    v = fabs(v);
    if (!(v >= 0x1p-126)) return 0x1p-133;
    return ldexp(1.0, ilogb(v) - 7);
}

float *agoq_fused_input_f32(const agoq_qconfig *qc, const agoq_qtensor *xq, const uint16_t *x, size_t rows,
                            size_t cols) {
    float *f = malloc(rows * cols * sizeof(float));
    if (!f) abort();
    if (qc) agoq_rowq_dequantize_ref(qc, xq, rows, cols, f);
    else
        for (size_t i = 0; i < rows * cols; i++) f[i] = agoq_bf16_to_f32(x[i]);
    return f;
}

/* The absolute term of output element i (see the derivation above). */
static double abs_term(agoq_fused_out which, const float *x, const uint16_t *dy, size_t cols, size_t i) {
    const size_t r = i / cols, c = i % cols, f = cols / 2;
    switch (which) {
    case AGOQ_OUT_GELU_Y: return 2.0 * kD * fabs((double)x[i]);
    case AGOQ_OUT_GELU_DX: {
        const double v = x[i], du = AGOQ_GELU_C * (1.0 + 3.0 * AGOQ_GELU_A * v * v);
        return fabs((double)agoq_bf16_to_f32(dy[i])) * (0x1p-20 + 8.0 * kD * fabs(v) * du);
    }
    case AGOQ_OUT_SWIGLU_OUT: /* cols = F here; h row r = [gate | up] of 2F */
        return 2.0 * kD * fabs((double)x[r * 2 * cols + c] * x[r * 2 * cols + cols + c]);
    case AGOQ_OUT_SWIGLU_DH: { /* cols = 2F: element i of dh; dy is [rows, F] */
        const size_t j = c < f ? c : c - f;
        const double gate = x[r * cols + j], up = x[r * cols + f + j], g = agoq_bf16_to_f32(dy[r * f + j]);
        return c < f ? 4.0 * kD * fabs(g * up) * (1.0 + fabs(gate)) : 2.0 * kD * fabs(g * gate);
    }
    default: return 0.0;
    }
}

size_t agoq_fused_cmp(agoq_fused_out which, const char *what, const float *x, const uint16_t *dy, size_t rows,
                      size_t cols, const uint16_t *ref, const uint16_t *got) {
    const size_t ocols = which == AGOQ_OUT_SWIGLU_DH ? 2 * cols : cols, n = rows * ocols;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double a = agoq_bf16_to_f32(ref[i]), b = agoq_bf16_to_f32(got[i]);
        double bound = 0.0;
        int ok;
        if (isnan(a) || isnan(b)) ok = isnan(a) && isnan(b);
        else if (isinf(a) || isinf(b) || which == AGOQ_OUT_EXACT) ok = ref[i] == got[i];
        else {
            bound = agoq_bf16_ulp(fmax(fabs(a), fabs(b))) + abs_term(which, x, dy, ocols, i);
            ok = fabs(a - b) <= bound;
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "    %s[%zu]: ref %.9g (0x%04x) got %.9g (0x%04x), bound %.3g\n", what, i, a, ref[i], b,
                    got[i], bound);
    }
    if (bad) fprintf(stderr, "    %s: %zu of %zu outside the bound\n", what, bad, n);
    return bad;
}

agoq_fused_out agoq_fused_out_of(int op, int out) {
    /* RMSNorm's dx: agoq_rms_bwd_cmp (its bound needs w and the row sums) */
    static const agoq_fused_out k[3][3] = {{AGOQ_OUT_RMS_Y, AGOQ_OUT_EXACT, AGOQ_OUT_RMS_Y},
                                           {AGOQ_OUT_SWIGLU_OUT, AGOQ_OUT_SWIGLU_DH, AGOQ_OUT_SWIGLU_OUT},
                                           {AGOQ_OUT_GELU_Y, AGOQ_OUT_GELU_DX, AGOQ_OUT_GELU_Y}};
    return op >= 0 && op < 3 && out >= 0 && out < 3 ? k[op][out] : AGOQ_OUT_EXACT;
}

/* n: the terms of a thread's partial of a row sum over cols columns (the derivation above) */
static double rms_partial_terms(size_t cols) {
    return 8.0 * (double)(((cols + 7) / 8 + AGOQ_ROW_THREADS - 1) / AGOQ_ROW_THREADS);
}

double agoq_rms_rstd_bound(size_t cols) { return (rms_partial_terms(cols) + 16.0) * 0x1p-23; }

/* fp32 values within an absolute bound; NaN equals NaN, an infinity only itself */
static int f32_ok(double a, double b, double bound) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= bound;
}

size_t agoq_rms_rstd_cmp(const char *what, const float *ref, const float *got, size_t rows, size_t cols) {
    const double rel = agoq_rms_rstd_bound(cols);
    size_t bad = 0;
    for (size_t i = 0; i < rows; i++) {
        const double a = ref[i], b = got[i];
        const int ok = f32_ok(a, b, rel * fabs(a)); /* a zero only equals a zero */
        if (!ok && bad++ < 5)
            fprintf(stderr, "    %s[%zu]: ref %.9g got %.9g, relative bound %.3g\n", what, i, a, b, rel);
    }
    if (bad) fprintf(stderr, "    %s: %zu of %zu outside the bound\n", what, bad, rows);
    return bad;
}

/* Reference row scalars of the backward (the reference's float operations, -ffp-contract=off) and
 * A = sum |g x|. g: scratch of cols floats, set to dy w. */
static void rms_row_ref(const float *x, const uint16_t *dy, const uint16_t *w, size_t cols, float eps, float *g,
                        float *rstd, float *coef, double *a) {
    double s = 0.0;
    for (size_t j = 0; j < cols; j++) {
        g[j] = agoq_bf16_to_f32(dy[j]) * agoq_bf16_to_f32(w[j]);
        s += fabs((double)g[j] * x[j]);
    }
    *rstd = agoq_rms_rstd(agoq_row_dot_ref(x, x, (int)cols), (int)cols, eps);
    *coef = agoq_rms_coef(agoq_row_dot_ref(g, x, (int)cols), (int)cols, *rstd);
    *a = s;
}

size_t agoq_rms_bwd_cmp(const float *x, const uint16_t *dy, const uint16_t *w, size_t rows, size_t cols, float eps,
                        int rpg, const uint16_t *dx_ref, const uint16_t *dx_got, const float *dwp_ref,
                        const float *dwp_got, const float *dw_ref, const float *dw_got) {
    const double u = 0x1p-24, rho = agoq_rms_rstd_bound(cols), n = rms_partial_terms(cols), floor = 0x1p-140;
    const size_t groups = (rows + (size_t)rpg - 1) / (size_t)rpg;
    float *g = malloc(cols * sizeof(float));
    double *b = calloc(groups * cols, sizeof(double)), *bp = calloc(groups * cols, sizeof(double));
    if (!g || !b || !bp) abort();
    size_t bad = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        const uint16_t *dyr = dy + r * cols;
        float rstd, coef;
        double a;
        rms_row_ref(xr, dyr, w, cols, eps, g, &rstd, &coef, &a);
        const double dc = (double)rstd * rstd / (double)cols * a * (6.0 * n + 96.0) * u;
        for (size_t j = 0; j < cols; j++) {
            const double xj = xr[j], s = g[j] - xj * coef;
            b[(r / (size_t)rpg) * cols + j] += fabs((double)agoq_bf16_to_f32(dyr[j]) * xj) * rstd;
            if (!dx_ref) continue;
            const size_t i = r * cols + j;
            const double ra = agoq_bf16_to_f32(dx_ref[i]), ga = agoq_bf16_to_f32(dx_got[i]);
            const double bound = agoq_bf16_ulp(fmax(fabs(ra), fabs(ga))) +
                                 1.01 * rstd * (fabs(xj) * dc + u * fabs(xj * coef) + (rho + 4.0 * u) * fabs(s));
            if (!f32_ok(ra, ga, bound) && bad++ < 5)
                fprintf(stderr, "    dx[%zu]: ref %.9g (0x%04x) got %.9g (0x%04x), bound %.3g\n", i, ra, dx_ref[i], ga,
                        dx_got[i], bound);
        }
    }
    for (size_t gi = 0; gi < groups; gi++) {
        const size_t k = rows - gi * (size_t)rpg < (size_t)rpg ? rows - gi * (size_t)rpg : (size_t)rpg;
        for (size_t j = 0; j < cols; j++) {
            const size_t i = gi * cols + j;
            bp[i] = 1.01 * b[i] * (rho + (2.0 * (double)k + 6.0) * u) + floor;
            if (dwp_ref && !f32_ok(dwp_ref[i], dwp_got[i], bp[i]) && bad++ < 5)
                fprintf(stderr, "    dw partial[%zu]: ref %.9g got %.9g, bound %.3g\n", i, dwp_ref[i], dwp_got[i], bp[i]);
        }
    }
    if (dw_ref && dwp_ref)
        for (size_t j = 0; j < cols; j++) {
            double bound = floor, mag = 0.0;
            for (size_t gi = 0; gi < groups; gi++) {
                bound += bp[gi * cols + j];
                mag += fabs((double)dwp_ref[gi * cols + j]);
            }
            bound += 1.01 * 2.0 * (double)groups * u * mag;
            if (!f32_ok(dw_ref[j], dw_got[j], bound) && bad++ < 5)
                fprintf(stderr, "    dw[%zu]: ref %.9g got %.9g, bound %.3g\n", j, dw_ref[j], dw_got[j], bound);
        }
    if (bad) fprintf(stderr, "    RMSNorm backward: %zu outputs outside the bounds\n", bad);
    free(g);
    free(b);
    free(bp);
    return bad;
}
