/* CPU tests of the fused-op references (kernels/fused/fused_math.h, fused_ref.c, rmsnorm_ref.c,
 * swiglu_ref.c, gelu_ref.c): the deterministic exp against libm in double, hand-computed
 * reductions, each op's forward and backward against float64 math with stated tolerances,
 * the quantized-copy round trip, odd row widths, zeros and NaN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/fused/fused_math.h"
#include "kernels/quant/quant_ref.h"
#include "tests/test.h"

/* bf16 tensor of n N(0, scale^2) values (deterministic). */
static uint16_t *rand_bf16(size_t n, uint64_t seed, float scale) {
    float *f = malloc(n * sizeof(float));
    uint16_t *h = malloc(n * sizeof(uint16_t));
    agoq_fill(AGOQ_DIST_NORMAL, f, n, seed);
    for (size_t i = 0; i < n; i++) h[i] = agoq_f32_to_bf16(scale * f[i]);
    free(f);
    return h;
}
static double b2d(uint16_t h) { return (double)agoq_bf16_to_f32(h); }
/* |got - want| <= rel * |want| + abs, the bf16 output tolerance */
static int near(double got, double want, double rel, double abs_tol) { return fabs(got - want) <= rel * fabs(want) + abs_tol; }
static double ulp_err(float got, double want) {
    int e;
    frexp(want, &e);
    double ulp = ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
    return fabs((double)got - want) / ulp;
}

TEST(fused_exp_det_within_2ulp_of_libm) {
    double worst = 0.0;
    for (int i = 0; i <= 400000; i++) {
        float x = -103.0f + 192.0f * (float)i / 400000.0f;
        if (x > 88.7f) break;
        double u = ulp_err(agoq_exp_det(x), exp((double)x));
        if (u > worst) worst = u;
    }
    CHECK_MSG(worst <= 2.0, "worst error %.3f ulp", worst);
    CHECK(agoq_exp_det(0.0f) == 1.0f);
    CHECK(agoq_exp_det(1.0f) == 2.71828175f || agoq_exp_det(1.0f) == 2.71828198f);
    CHECK(isinf(agoq_exp_det(89.0f)) && agoq_exp_det(-104.0f) == 0.0f);
    CHECK(isnan(agoq_exp_det(NAN)) && isinf(agoq_exp_det(INFINITY)) && agoq_exp_det(-INFINITY) == 0.0f);
}

TEST(fused_activation_math_vs_double) {
    for (int i = -2000; i <= 2000; i++) {
        double x = i / 100.0, s = 1.0 / (1.0 + exp(-x));
        double t = tanh(0.7978845608 * (x + 0.044715 * x * x * x));
        double gelu = 0.5 * x * (1 + t);
        double dgelu = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x);
        CHECK_NEAR(agoq_silu((float)x), x * s, 1e-6 * fabs(x * s) + 1e-7);
        CHECK_NEAR(agoq_silu_grad((float)x), s * (1 + x * (1 - s)), 2e-6);
        /* 1 + tanh cancels for x << 0: absolute error ~ |x| * 2^-24 there */
        CHECK_NEAR(agoq_gelu((float)x), gelu, 2e-6 * fabs(gelu) + 1e-7 * (1 + fabs(x)));
        CHECK_NEAR(agoq_gelu_grad((float)x), dgelu, 4e-6);
    }
    CHECK(agoq_silu(-200.0f) == 0.0f && agoq_silu(200.0f) == 200.0f && agoq_gelu(-50.0f) == 0.0f);
}

TEST(fused_tree_sum_hand_values) {
    float p[256];
    for (int i = 0; i < 256; i++) p[i] = (float)i;
    CHECK(agoq_tree_sum_ref(p, 256) == 32640.0f);
    /* order matters: 1e8 + 1 - 1e8 loses the 1 unless the tree pairs (1, 0) first */
    memset(p, 0, sizeof p);
    p[0] = 1e8f;
    p[16] = -1e8f;
    p[1] = 1.0f;
    CHECK(agoq_tree_sum_ref(p, 256) == 1.0f); /* (p0 + p16) first inside warp 0 */
    p[16] = 0.0f;
    p[32] = -1e8f; /* now 1e8 + 1 happens inside warp 0, then warp 1's -1e8: the 1 is lost */
    CHECK(agoq_tree_sum_ref(p, 256) == 0.0f);
}

TEST(fused_row_dot_matches_double_odd_widths) {
    static const int widths[] = {1, 2, 3, 5, 7, 8, 9, 127, 1023, 2049, 4096};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        int n = widths[w];
        float *a = malloc((size_t)n * sizeof(float));
        agoq_fill(AGOQ_DIST_NORMAL, a, (size_t)n, 7 + (uint64_t)n);
        double want = 0.0;
        for (int i = 0; i < n; i++) want += (double)a[i] * a[i];
        CHECK_NEAR(agoq_row_dot_ref(a, a, n), want, 1e-6 * want);
        free(a);
    }
}

/* float64 RMSNorm forward/backward of one row (x, dy, w as doubles). */
static void rms_double(const double *x, const double *dy, const double *w, int n, double eps, double *y, double *dx,
                       double *dwn) {
    double ss = 0, dot = 0;
    for (int j = 0; j < n; j++) ss += x[j] * x[j];
    double r = 1.0 / sqrt(ss / n + eps);
    for (int j = 0; j < n; j++) dot += dy[j] * w[j] * x[j];
    for (int j = 0; j < n; j++) {
        y[j] = x[j] * r * w[j];
        dx[j] = r * (dy[j] * w[j] - x[j] * r * r * dot / n);
        dwn[j] = dy[j] * x[j] * r;
    }
}

TEST(fused_rmsnorm_ref_vs_double) {
    const int rows = 5, cols = 333, rpg = 2, groups = 3;
    const float eps = 1e-5f;
    uint16_t *x = rand_bf16((size_t)rows * cols, 11, 1.5f), *dy = rand_bf16((size_t)rows * cols, 12, 1.0f);
    uint16_t *w = rand_bf16(cols, 13, 1.0f);
    uint16_t *y = malloc((size_t)rows * cols * 2), *dx = malloc((size_t)rows * cols * 2), *y2 = malloc((size_t)rows * cols * 2);
    float *dwp = malloc((size_t)groups * cols * sizeof(float)), *dw = malloc(cols * sizeof(float)), rstd[5];
    double xd[333], dyd[333], wd[333], yd[333], dxd[333], dwn[333], *dwd = calloc(cols, sizeof(double));
    agoq_rmsnorm_fwd_ref(NULL, x, w, rows, cols, eps, y, NULL, rstd);
    agoq_rmsnorm_bwd_ref(NULL, NULL, x, dy, w, rows, cols, eps, rpg, dx, y2, dwp);
    agoq_dw_reduce_ref(dwp, groups, cols, dw);
    double dxmax = 0;
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < cols; j++) {
            xd[j] = b2d(x[r * cols + j]);
            dyd[j] = b2d(dy[r * cols + j]);
            wd[j] = b2d(w[j]);
        }
        rms_double(xd, dyd, wd, cols, eps, yd, dxd, dwn);
        for (int j = 0; j < cols; j++) {
            dwd[j] += dwn[j];
            if (fabs(dxd[j]) > dxmax) dxmax = fabs(dxd[j]);
        }
        for (int j = 0; j < cols; j++) {
            /* bf16 output: half an ulp of 2^-8 relative, plus the fp32 path's few ulps */
            CHECK_MSG(near(b2d(y[r * cols + j]), yd[j], 1.0 / 256, 1e-6), "y[%d,%d]", r, j);
            CHECK(y2[r * cols + j] == y[r * cols + j]); /* the recomputed output is the forward output */
            /* dx: bf16 rounding, and cancellation in g - x*coef: absolute 1e-4 of the row's scale */
            CHECK_MSG(near(b2d(dx[r * cols + j]), dxd[j], 1.0 / 256, 1e-4 * dxmax + 1e-6), "dx[%d,%d]", r, j);
        }
    }
    for (int j = 0; j < cols; j++) CHECK_NEAR(dw[j], dwd[j], 1e-5 * (1 + fabs(dwd[j])));
    free(x); free(dy); free(w); free(y); free(dx); free(y2); free(dwp); free(dw); free(dwd);
}

TEST(fused_rowq_round_trip_is_per_row_fake_quant) {
    /* odd width: blocks do not divide the row, so each row is its own quantized vector */
    const int rows = 3, cols = 200;
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1); /* block 128 */
    uint16_t *x = rand_bf16((size_t)rows * cols, 21, 2.0f);
    agoq_qtensor q;
    CHECK(agoq_qtensor_alloc(&q, &c, agoq_rowq_alloc_n(&c, rows, cols)) == 0);
    float *y = malloc((size_t)rows * cols * sizeof(float)), want[200], xf[200];
    agoq_rowq_quantize_ref(&c, x, rows, cols, &q);
    agoq_rowq_dequantize_ref(&c, &q, rows, cols, y);
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < cols; j++) xf[j] = agoq_bf16_to_f32(x[r * cols + j]);
        agoq_fake_quant_ref(&c, xf, cols, want);
        CHECK(agoq_validate_floats("rowq", want, y + r * cols, cols) == 0);
    }
    /* padding of each row's last block stays code 0 */
    for (int r = 0; r < rows; r++)
        for (int i = 72; i < 128; i++) CHECK(agoq_get_code(q.codes + (r * 2 + 1) * 64, i, 4) == 0);
    agoq_qtensor_free(&q);
    free(x); free(y);
}

TEST(fused_rmsnorm_zeros_and_nan) {
    const int cols = 130;
    uint16_t x[2 * 130], w[130], y[2 * 130];
    float rstd[2];
    for (int j = 0; j < cols; j++) {
        x[j] = 0;
        x[cols + j] = agoq_f32_to_bf16(1.0f);
        w[j] = agoq_f32_to_bf16(1.0f);
    }
    x[cols + 5] = agoq_f32_to_bf16(NAN);
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
    agoq_qtensor q;
    CHECK(agoq_qtensor_alloc(&q, &c, agoq_rowq_alloc_n(&c, 2, cols)) == 0);
    agoq_rmsnorm_fwd_ref(&c, x, w, 2, cols, 1e-6f, y, &q, rstd);
    CHECK(rstd[0] == 1.0f / sqrtf(1e-6f));
    for (int j = 0; j < cols; j++) CHECK(y[j] == 0);
    CHECK(agoq_qtensor_scale(&c, &q, 0) == 0.0f && q.codes[0] == 0); /* zero block: s = 0, zero code */
    CHECK(isnan(rstd[1]) && isnan(agoq_bf16_to_f32(y[cols])));       /* NaN propagates through the row sum */
    /* the stored copy ignores the NaN for the scale (1/6) and gives it the zero code */
    CHECK(agoq_qtensor_scale(&c, &q, 2) == 1.0f / 6.0f);
    CHECK(agoq_get_code(q.codes + 2 * 64, 5, 4) == 0 && agoq_get_code(q.codes + 2 * 64, 4, 4) == 7);
    agoq_qtensor_free(&q);
}

TEST(fused_swiglu_ref_vs_double_and_round_trip) {
    const int rows = 3, f = 77;
    uint16_t *h = rand_bf16((size_t)rows * 2 * f, 31, 2.0f), *dout = rand_bf16((size_t)rows * f, 32, 1.0f);
    uint16_t *out = malloc((size_t)rows * f * 2), *out2 = malloc((size_t)rows * f * 2), *dh = malloc((size_t)rows * 2 * f * 2);
    agoq_swiglu_fwd_ref(NULL, h, rows, f, out, NULL);
    agoq_swiglu_bwd_ref(NULL, NULL, h, dout, rows, f, dh, out2);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < f; j++) {
            double g = b2d(h[r * 2 * f + j]), u = b2d(h[r * 2 * f + f + j]), d = b2d(dout[r * f + j]);
            double s = 1 / (1 + exp(-g));
            CHECK(near(b2d(out[r * f + j]), g * s * u, 1.0 / 256, 1e-6));
            CHECK(out2[r * f + j] == out[r * f + j]);
            CHECK(near(b2d(dh[r * 2 * f + j]), d * u * s * (1 + g * (1 - s)), 1.0 / 256, 1e-6));
            CHECK(near(b2d(dh[r * 2 * f + f + j]), d * g * s, 1.0 / 256, 1e-6));
        }
    /* from the stored copy: backward sees exactly dequant(h) */
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_INT4);
    c.block = 32;
    agoq_qtensor q;
    CHECK(agoq_qtensor_alloc(&q, &c, agoq_rowq_alloc_n(&c, 2 * rows, f)) == 0);
    agoq_swiglu_fwd_ref(&c, h, rows, f, out, &q);
    float *hd = malloc((size_t)rows * 2 * f * sizeof(float));
    agoq_rowq_dequantize_ref(&c, &q, 2 * rows, f, hd);
    agoq_swiglu_bwd_ref(&c, &q, NULL, dout, rows, f, dh, out2);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < f; j++) {
            float dg, du, o;
            agoq_swiglu_bwd(hd[r * 2 * f + j], hd[r * 2 * f + f + j], agoq_bf16_to_f32(dout[r * f + j]), &dg, &du, &o);
            CHECK(dh[r * 2 * f + j] == agoq_f32_to_bf16(dg) && out2[r * f + j] == agoq_f32_to_bf16(o));
        }
    agoq_qtensor_free(&q);
    free(h); free(dout); free(out); free(out2); free(dh); free(hd);
}

TEST(fused_gelu_ref_vs_double) {
    const int rows = 2, cols = 1023;
    uint16_t *x = rand_bf16((size_t)rows * cols, 41, 3.0f), *dy = rand_bf16((size_t)rows * cols, 42, 1.0f);
    uint16_t *y = malloc((size_t)rows * cols * 2), *y2 = malloc((size_t)rows * cols * 2), *dx = malloc((size_t)rows * cols * 2);
    agoq_gelu_fwd_ref(NULL, x, rows, cols, y, NULL);
    agoq_gelu_bwd_ref(NULL, NULL, x, dy, rows, cols, dx, y2);
    for (int i = 0; i < rows * cols; i++) {
        double v = b2d(x[i]), t = tanh(0.7978845608 * (v + 0.044715 * v * v * v));
        double dg = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * v * v);
        CHECK_MSG(near(b2d(y[i]), 0.5 * v * (1 + t), 1.0 / 256, 1e-6), "y[%d]", i);
        CHECK(y2[i] == y[i]);
        CHECK_MSG(near(b2d(dx[i]), b2d(dy[i]) * dg, 1.0 / 256, 1e-5), "dx[%d]", i);
    }
    free(x); free(dy); free(y); free(y2); free(dx);
}

TEST(fused_fp4_arithmetic_encode_equals_table_search) {
    /* the CUDA kernels use agoq_fp4_encode_rne; the reference searches the value table */
    const agoq_code_table *t = agoq_table(AGOQ_FMT_FP4_E2M1);
    for (uint32_t h = 0; h < 65536; h++) {
        float y = agoq_bf16_to_f32((uint16_t)h);
        uint32_t want = t->sorted_code[agoq_table_pos(t->sorted, t->mid, t->sorted_code, t->nsorted, y, -1.0f)];
        CHECK_MSG(agoq_fp4_encode_rne(y) == want, "y = %g: %u vs table %u", y, agoq_fp4_encode_rne(y), want);
    }
    for (int i = 0; i < 14; i++) {
        float m = t->mid[i];
        uint32_t want = t->sorted_code[agoq_table_pos(t->sorted, t->mid, t->sorted_code, t->nsorted, m, -1.0f)];
        CHECK(agoq_fp4_encode_rne(m) == want);
        CHECK(agoq_fp4_encode_rne(nextafterf(m, 10.f)) == t->sorted_code[i + 1]);
    }
}

/* The fused/GEMM experiment files validate (the CPU build then stops at the backend, writing
 * nothing); a bad key in one names the file and the key, and writes nothing either. */
TEST(fused_experiment_files_validate_and_bad_key_is_named) {
    char out[4096], args[2048], bad[512], res[512];
    static const char *const files[] = {"experiments/kernels_fused.json", "experiments/gemm.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(res, sizeof res, "%s/ok%d.json", agoq_test_tmpdir(), i);
        snprintf(args, sizeof args, "run %s --backend cpu --out %s", files[i], res);
        CHECK(agoq_test_run_cli(args, out, sizeof out) != 0);
        CHECK_MSG(strstr(out, "needs the cuda backend") != NULL, "%s: %s", files[i], out);
        CHECK(!agoq_test_file_exists(res));
    }
    snprintf(bad, sizeof bad, "%s/bad_fused.json", agoq_test_tmpdir());
    snprintf(res, sizeof res, "%s/bad_fused_out.json", agoq_test_tmpdir());
    agoq_test_write(bad, "{\"kind\": \"kernels\", \"config\": {\"cases\": [\"fused\"], \"cols\": 3}}");
    snprintf(args, sizeof args, "run %s --backend cpu --out %s", bad, res);
    CHECK(agoq_test_run_cli(args, out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bad_fused.json: key 'config.cols'") != NULL, "%s", out);
    CHECK(!agoq_test_file_exists(res));
}

/* The RMSNorm backward's row groups (fused.h): one CTA a group, at most the resident CTAs (SMs x
 * 4, or 3 when it keeps a stored copy's inputs, 2 past 4096 columns), as few rows a group as
 * that allows; the knobs AGOQ_RMS_KEEP and AGOQ_RMS_RPG. */
TEST(fused_rmsnorm_bwd_row_groups_fill_one_wave) {
    unsetenv("AGOQ_RMS_KEEP");
    unsetenv("AGOQ_RMS_RPG");
    static const int rows[] = {1, 100, 395, 396, 397, 4096, 16384, 262144, 1000003};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int stored = 0; stored <= 1; stored++)
            for (int cols = 4096; cols <= 8192; cols += 4096) {
                const int slots = 132 * (cols > 4096 ? 2 : stored ? 3 : 4);
                const int rpg = agoq_rmsnorm_bwd_rows_per_group(132, stored, rows[i], cols);
                const int groups = (rows[i] + rpg - 1) / rpg;
                CHECK_MSG(rpg >= 1 && groups <= slots && (rpg == 1 || (rows[i] + rpg - 2) / (rpg - 1) > slots),
                          "rows %d stored %d cols %d: %d rows a group, %d groups, %d slots", rows[i], stored, cols,
                          rpg, groups, slots);
            }
    CHECK(agoq_rmsnorm_bwd_rows_per_group(132, 1, 262144, 4096) == 662); /* 396 groups */
    CHECK(agoq_rmsnorm_bwd_rows_per_group(0, 0, 262144, 4096) == 497);  /* AGOQ_PLAN_SMS: 528 */
    CHECK(agoq_rmsnorm_bwd_keep(1) && !agoq_rmsnorm_bwd_keep(0));
    setenv("AGOQ_RMS_KEEP", "1", 1);
    CHECK(agoq_rmsnorm_bwd_keep(0) && agoq_rmsnorm_bwd_rows_per_group(132, 0, 262144, 4096) == 662);
    setenv("AGOQ_RMS_KEEP", "0", 1);
    CHECK(!agoq_rmsnorm_bwd_keep(1) && agoq_rmsnorm_bwd_rows_per_group(132, 1, 262144, 4096) == 497);
    unsetenv("AGOQ_RMS_KEEP");
    setenv("AGOQ_RMS_RPG", "64", 1);
    CHECK(agoq_rmsnorm_bwd_rows_per_group(132, 1, 4096, 4096) == 64);
    unsetenv("AGOQ_RMS_RPG");
}
