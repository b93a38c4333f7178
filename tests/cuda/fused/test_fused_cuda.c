/* GPU tests: every fused kernel (kernels/fused*.cu) against its C reference: the stored copies
 * (codes, scales, zero points) bit for bit; RMSNorm's outputs (y, rstd, dx, dweight partials and
 * dweight; its sums and products by FMA) and the SiLU/GELU outputs and gradients, computed with
 * the fast math of kernels/fused/fused_fast.cuh, within the bounds derived in
 * kernels/fused/fused_tol.c; over formats
 * (FP4, NF4, int3/4/8, asymmetric, FP8, dyn8; fp32/bf16 scales; nearest/stochastic), odd row
 * widths, zero rows, NaN/Inf and denormal inputs; every config of the fast vector kernels
 * (fused_dev.cuh) on a shape with several tiles plus a tail and NaN/Inf in a few tiles (fast and
 * careful quantizer paths in one launch); the grid-stride loops (one CTA) and the general
 * kernels on fast shapes (AGOQ_FUSED_GRID_CAP / AGOQ_FUSED_NO_FAST), issue 15's A/B knobs
 * (AGOQ_F6, AGOQ_F8, AGOQ_F9, AGOQ_GELU_FWD_U, AGOQ_RMS_KEEP, AGOQ_DW_REDUCE, AGOQ_RMS_FWD_PAIR,
 * AGOQ_RMS_FWD_Q7, AGOQ_GELU_FWD_Q7, AGOQ_DW_FUSE, AGOQ_DW_FUSE_WAIT, AGOQ_SWI_FWD_TILE,
 * AGOQ_FWD_PF).
 * Both sides produce NaN in the same places but not the same NaN payload (x86 keeps the
 * operand's, CUDA returns the canonical one), so NaNs compare equal to NaNs. The dweight
 * reduction's own tests are in test_fused_dw_cuda.c. Run by `make test-cuda`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/fused/fused_tol.h"
#include "kernels/quant/quant_math.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/test.h"

typedef struct { agoq_format fmt; int block; agoq_scale_type scale; agoq_rounding round; } qcase;
static const qcase kCases[] = {
    {AGOQ_FMT_FP4_E2M1, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST}, {AGOQ_FMT_FP4_E2M1, 64, AGOQ_SCALE_BF16, AGOQ_ROUND_STOCHASTIC},
    {AGOQ_FMT_NF4, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},       {AGOQ_FMT_INT4, 32, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
    {AGOQ_FMT_INT4_ASYM, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST}, {AGOQ_FMT_INT3, 8, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
    {AGOQ_FMT_INT8, 256, AGOQ_SCALE_FP32, AGOQ_ROUND_STOCHASTIC},  {AGOQ_FMT_FP8_E4M3, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
    {AGOQ_FMT_DYN8, 256, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},     {AGOQ_FMT_INT5_ASYM, 40, AGOQ_SCALE_BF16, AGOQ_ROUND_STOCHASTIC},
};
/* {5, 4352}: 10 whole GELU tiles + a tail, 17 warp vectors per row (RMSNorm: a third group
 * for warp 0 only); {3, 8192}: the widest register-resident RMSNorm row; {2, 8200}: one wider
 * (general kernels); {7, 1536}: warps without a group; {4, 4096}, {6, 3072}, {33, 1024}: the
 * warp-per-row RMSNorm forward (16, 12 and 4 vectors per lane) */
static const int kShapes[][2] = {{4, 4096}, {3, 1000}, {5, 129}, {2, 8}, {1, 1}, {3, 333}, {2, 2056},
                                 {5, 4352}, {3, 8192}, {2, 8200}, {7, 1536}, {6, 3072}, {33, 1024}};
#define NCASES (sizeof kCases / sizeof kCases[0])
#define NSHAPES (sizeof kShapes / sizeof kShapes[0])

static agoq_qconfig qc_of(const qcase *k) {
    agoq_qconfig c = agoq_qconfig_default(k->fmt);
    c.block = k->block;
    c.scale = k->scale;
    c.rounding = k->round;
    c.seed = 99;
    return c;
}

/* The block patterns of the quantizer tile tests (test_quant_cuda.c, tile_data) as bf16: normal,
 * huge, tiny, signed zeros, constant, denormal bit patterns, fp4/int ties, near the bf16 maximum
 * (the asymmetric range overflows); and a NaN and an Inf in every third 2048-element tile, so
 * fast and careful tiles run in one launch. */
static uint16_t *tile_input(size_t n, int block, uint64_t seed) {
    float *f = malloc(n * sizeof(float));
    uint16_t *h = malloc(n * sizeof(uint16_t));
    agoq_fill(AGOQ_DIST_NORMAL, f, n, seed);
    agoq_rng r = {seed ^ 0x9e3779b9u};
    for (size_t i = 0; i < n; i++) {
        switch ((i / (size_t)block) % 8) {
        case 1: f[i] *= 1e30f; break;
        case 2: f[i] *= 1e-30f; break;
        case 3: f[i] = (i & 1) ? -0.0f : 0.0f; break;
        case 4: f[i] = 0.37f; break;
        case 5: f[i] = agoq_bits_f32((uint32_t)(agoq_rng_next(&r) & 0x807fffffu)); break;
        case 6: f[i] = 0.25f * (float)((int)(agoq_rng_next(&r) % 49) - 24); break;
        case 7: f[i] = (i & 1) ? 3.0e38f : ((i % 3) ? -3.0e38f : -1.0e38f); break;
        default: break;
        }
        h[i] = agoq_f32_to_bf16(f[i]);
    }
    for (size_t t = 2; t * 2048 < n; t += 3) {
        h[t * 2048 + seed % 1000 % (n - t * 2048)] = 0x7fc0;
        if (t * 2048 + 1500 < n) h[t * 2048 + 1500] = 0x7f80;
    }
    free(f);
    return h;
}

static int is_nan_bf16(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }
static size_t cmp_bf16(const char *what, const uint16_t *ref, const uint16_t *got, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (ref[i] != got[i] && !(is_nan_bf16(ref[i]) && is_nan_bf16(got[i]))) {
            if (bad++ < 5) fprintf(stderr, "    mismatch %s[%zu]: ref 0x%04x got 0x%04x\n", what, i, ref[i], got[i]);
        }
    if (bad) fprintf(stderr, "    %s: %zu of %zu differ\n", what, bad, n);
    return bad;
}
static size_t cmp_qt(const agoq_qconfig *c, size_t rows, size_t cols, const agoq_qtensor *ref, agoq_dqt d) {
    agoq_qtensor got;
    size_t n = agoq_rowq_alloc_n(c, rows, cols), bad = 0;
    if (agoq_qtensor_alloc(&got, c, n)) return 1;
    agoq_dqt_download(c, rows, cols, d, &got);
    bad += agoq_validate_bytes("codes", ref->codes, got.codes, agoq_codes_bytes(c, n));
    bad += agoq_validate_bytes("scales", ref->scales, got.scales, agoq_scales_bytes(c, n));
    if (agoq_has_zeros(c)) bad += agoq_validate_bytes("zeros", ref->zeros, got.zeros, agoq_zeros_bytes(c, n));
    agoq_qtensor_free(&got);
    return bad;
}


typedef enum { OP_RMS, OP_SWIGLU, OP_GELU } op_kind;

/* Output `out` of op (0 forward y, 1 dx, 2 recomputed y) against the reference, within its bound. */
static size_t cmp_out(op_kind op, int out, const char *what, const float *xf, const uint16_t *dy, int rows, int cols,
                      const uint16_t *ref, const uint16_t *got) {
    return agoq_fused_cmp(agoq_fused_out_of((int)op, out), what, xf, dy, (size_t)rows, (size_t)cols, ref, got);
}

/* One op, fused (q) and plain (no q), every case and shape: forward outputs + stored copy,
 * backward from the reference's stored copy (fused) or from bf16 x (plain). nin = 2: SwiGLU. */

static size_t run_op(op_kind op, const qcase *k, int rows, int cols, int tiles) {
    const agoq_qconfig cq = k ? qc_of(k) : agoq_qconfig_default(AGOQ_FMT_FP4_E2M1); /* k NULL: plain bf16 */
    const int nin = op == OP_SWIGLU ? 2 : 1, fused = k != NULL;
    const agoq_qconfig *c = fused ? &cq : NULL;
    const size_t nx = (size_t)nin * rows * cols, ny = (size_t)rows * cols, srows = (size_t)nin * rows;
    const int rpg = 2, groups = (rows + rpg - 1) / rpg;
    const float eps = 1e-5f;
    size_t bad = 0;
    uint16_t *x = tiles ? tile_input(nx, k ? k->block : 32, 1000 + (uint64_t)cols)
                        : make_input(srows, cols, 1000 + (uint64_t)cols, op != OP_RMS || rows > 3);
    uint16_t *dy = make_input(rows, cols, 2000 + (uint64_t)cols, 0), *w = make_input(1, cols, 3000, 0);
    uint16_t *y = malloc(ny * 2), *dx = malloc(nx * 2), *yb = malloc(ny * 2);
    float *rstd = malloc(rows * sizeof(float)), *dwp = malloc((size_t)groups * cols * sizeof(float));
    float *dw = malloc(cols * sizeof(float));
    agoq_qtensor xq = {0};
    if (fused && agoq_qtensor_alloc(&xq, c, agoq_rowq_alloc_n(c, srows, cols))) return 1;
    /* reference */
    if (op == OP_RMS) {
        agoq_rmsnorm_fwd_ref(c, x, w, rows, cols, eps, y, &xq, rstd);
        agoq_rmsnorm_bwd_ref(c, &xq, x, dy, w, rows, cols, eps, rpg, dx, yb, dwp);
        agoq_dw_reduce_ref(dwp, groups, cols, dw);
    } else if (op == OP_SWIGLU) {
        agoq_swiglu_fwd_ref(c, x, rows, cols, y, &xq);
        agoq_swiglu_bwd_ref(c, &xq, x, dy, rows, cols, dx, yb);
    } else {
        agoq_gelu_fwd_ref(c, x, rows, cols, y, &xq);
        agoq_gelu_bwd_ref(c, &xq, x, dy, rows, cols, dx, yb);
    }
    /* device */
    agoq_fq q = {0};
    agoq_dqt dq = {0};
    if (fused && (agoq_fq_make(c, &q) || agoq_dqt_alloc(c, srows, cols, &dq))) return 1;
    const agoq_fq *qp = fused ? &q : NULL;
    uint16_t *d_x = up16(x, nx), *d_dy = up16(dy, ny), *d_w = up16(w, cols);
    uint16_t *d_y = agoq_fused_dmalloc(ny * 2), *d_dx = agoq_fused_dmalloc(nx * 2), *d_yb = agoq_fused_dmalloc(ny * 2);
    float *d_rstd = agoq_fused_dmalloc(rows * 4), *d_dwp = agoq_fused_dmalloc((size_t)groups * cols * 4);
    float *d_dw = agoq_fused_dmalloc(cols * 4);
    int rc = 0;
    if (op == OP_RMS) rc = agoq_rmsnorm_fwd_cuda(qp, d_x, d_w, rows, cols, eps, d_y, dq, d_rstd, NULL);
    else if (op == OP_SWIGLU) rc = agoq_swiglu_fwd_cuda(qp, d_x, rows, cols, d_y, dq, NULL);
    else rc = agoq_gelu_fwd_cuda(qp, d_x, rows, cols, d_y, dq, NULL);
    agoq_fused_dsync();
    uint16_t *g_y = down16(d_y, ny);
    float *xf = agoq_fused_input_f32(NULL, NULL, x, srows, cols);
    bad += (size_t)(rc != 0) + cmp_out(op, 0, "fwd y", xf, NULL, rows, cols, y, g_y);
    free(xf);
    if (fused) bad += cmp_qt(c, srows, cols, &xq, dq);
    if (op == OP_RMS) {
        float *g_rstd = malloc(rows * 4);
        agoq_fused_d2h(g_rstd, d_rstd, rows * 4);
        bad += agoq_rms_rstd_cmp("rstd", rstd, g_rstd, (size_t)rows, (size_t)cols);
        free(g_rstd);
    }
    if (fused) agoq_dqt_upload(c, srows, cols, &xq, dq); /* backward from the reference's copy */
    if (op == OP_RMS) {
        /* with its dweight (AGOQ_DW_FUSE: by default in the staged kernel's launch) */
        rc = agoq_rmsnorm_bwd_dw_cuda(qp, dq, d_x, d_dy, d_w, rows, cols, eps, rpg, d_dx, d_yb, d_dwp, d_dw, NULL);
    } else if (op == OP_SWIGLU) {
        rc = agoq_swiglu_bwd_cuda(qp, dq, d_x, d_dy, rows, cols, d_dx, d_yb, NULL);
    } else {
        rc = agoq_gelu_bwd_cuda(qp, dq, d_x, d_dy, rows, cols, d_dx, d_yb, NULL);
    }
    agoq_fused_dsync();
    uint16_t *g_dx = down16(d_dx, nx), *g_yb = down16(d_yb, ny);
    xf = agoq_fused_input_f32(c, &xq, x, srows, cols); /* what the backward read */
    bad += (size_t)(rc != 0) + cmp_out(op, 2, "bwd y (recomputed)", xf, NULL, rows, cols, yb, g_yb);
    if (op == OP_RMS) { /* dx and the dweight (partials and reduced): their bounds need w and the row sums */
        float *g = malloc((size_t)groups * cols * 4), *gd = malloc(cols * 4);
        agoq_fused_d2h(g, d_dwp, (size_t)groups * cols * 4);
        agoq_fused_d2h(gd, d_dw, cols * 4);
        bad += agoq_rms_bwd_cmp(xf, dy, w, (size_t)rows, (size_t)cols, eps, rpg, dx, g_dx, dwp, g, dw, gd);
        free(g);
        free(gd);
    } else {
        bad += cmp_out(op, 1, "bwd dx", xf, dy, rows, cols, dx, g_dx);
    }
    free(xf);
    if (bad) fprintf(stderr, "    ^ op %d fmt %s block %d rows %d cols %d\n", (int)op,
                     fused ? agoq_formats[c->fmt].name : "bf16", fused ? c->block : 0, rows, cols);
    agoq_fused_dfree(d_x); agoq_fused_dfree(d_dy); agoq_fused_dfree(d_w); agoq_fused_dfree(d_y);
    agoq_fused_dfree(d_dx); agoq_fused_dfree(d_yb); agoq_fused_dfree(d_rstd); agoq_fused_dfree(d_dwp);
    agoq_fused_dfree(d_dw);
    if (fused) {
        agoq_dqt_free(&dq);
        agoq_fq_free(&q);
        agoq_qtensor_free(&xq);
    }
    free(x); free(dy); free(w); free(y); free(dx); free(yb); free(rstd); free(dwp); free(dw);
    free(g_y); free(g_dx); free(g_yb);
    return bad;
}

static size_t run_all(op_kind op) {
    size_t bad = 0;
    for (size_t s = 0; s < NSHAPES; s++) {
        bad += run_op(op, NULL, kShapes[s][0], kShapes[s][1], 0);
        for (size_t k = 0; k < NCASES; k++) bad += run_op(op, &kCases[k], kShapes[s][0], kShapes[s][1], 0);
    }
    return bad;
}

TEST(cuda_fused_rmsnorm) { CHECK(run_all(OP_RMS) == 0); }
TEST(cuda_fused_swiglu) { CHECK(run_all(OP_SWIGLU) == 0); }
TEST(cuda_fused_gelu) { CHECK(run_all(OP_GELU) == 0); }

/* Every config of the fast vector kernels (fused_dev.cuh: round to nearest, blocks 32..256,
 * 4- and 8-bit codes), on a shape with several tiles plus a tail and the tile test patterns
 * (a few tiles take the careful path). */
static const agoq_format kFastFmts[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT4,     AGOQ_FMT_INT8,
                                        AGOQ_FMT_INT4_ASYM, AGOQ_FMT_INT8_ASYM, AGOQ_FMT_FP8_E4M3,
                                        AGOQ_FMT_FP8_E5M2, AGOQ_FMT_NF4,      AGOQ_FMT_DYN8};
static size_t run_fast_configs(size_t *configs) {
    static const int blocks[] = {32, 64, 128, 256};
    size_t bad = 0;
    *configs = 0;
    for (int op = OP_RMS; op <= OP_GELU; op++)
        for (size_t f = 0; f < sizeof kFastFmts / sizeof kFastFmts[0]; f++)
            for (size_t b = 0; b < 4; b++, (*configs)++) {
                const qcase k = {kFastFmts[f], blocks[b], *configs % 3 ? AGOQ_SCALE_FP32 : AGOQ_SCALE_BF16,
                                 AGOQ_ROUND_NEAREST};
                bad += run_op((op_kind)op, &k, 5, 4352, 1);
            }
    return bad;
}
TEST(cuda_fused_fast_paths_every_eligible_config) {
    size_t configs;
    const size_t bad = run_fast_configs(&configs);
    CHECK_MSG(bad == 0, "%zu mismatches over %zu configs", bad, configs);
}

/* The same kernels with one CTA (every grid-stride loop and the RMSNorm next-row loads run),
 * and the general kernels on shapes that would take the fast ones. */
static size_t run_env(const char *var, const char *val, int rows, int cols, int tiles) {
    static const qcase ks[] = {{AGOQ_FMT_FP4_E2M1, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
                               {AGOQ_FMT_INT8_ASYM, 64, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
                               {AGOQ_FMT_NF4, 32, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
                               {AGOQ_FMT_FP8_E5M2, 256, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
                               {AGOQ_FMT_INT4, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_STOCHASTIC}};
    size_t bad = 0;
    setenv(var, val, 1);
    for (int op = OP_RMS; op <= OP_GELU; op++) {
        bad += run_op((op_kind)op, NULL, rows, cols, 0);
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) bad += run_op((op_kind)op, &ks[k], rows, cols, tiles);
    }
    unsetenv(var);
    return bad;
}
/* A knob's value on the fast shapes and a tail of tail_cols columns, then with one CTA */
static size_t run_knob_env(const char *var, const char *val, int tail_cols) {
    size_t bad = run_env(var, val, 5, 4352, 1);
    bad += run_env(var, val, 7, tail_cols, 0);
    setenv(var, val, 1);
    bad += run_env("AGOQ_FUSED_GRID_CAP", "1", 37, 4352, 1);
    unsetenv(var);
    return bad;
}
TEST(cuda_fused_grid_stride_and_general_paths) {
    size_t bad = run_env("AGOQ_FUSED_GRID_CAP", "1", 5, 4352, 1);
    bad += run_env("AGOQ_FUSED_GRID_CAP", "1", 9, 1536, 0);
    bad += run_env("AGOQ_FUSED_GRID_CAP", "1", 11, 2048, 0); /* warp-per-row RMSNorm: 8 warps, 11 rows */
    bad += run_env("AGOQ_FUSED_NO_FAST", "1", 4, 4096, 1);
    bad += run_env("AGOQ_FUSED_NO_FAST", "1", 3, 8192, 0);
    /* the RMSNorm forward a row to a pair of warps, forced (AGOQ_RMS_FWD_PAIR=1: the default takes
     * it from 24 rows an SM, more than these shapes have), also with one CTA (4 pairs, many rows) */
    bad += run_env("AGOQ_RMS_FWD_PAIR", "1", 11, 4096, 1);
    bad += run_env("AGOQ_RMS_FWD_PAIR", "1", 7, 2048, 0);
    setenv("AGOQ_RMS_FWD_PAIR", "1", 1);
    bad += run_env("AGOQ_FUSED_GRID_CAP", "1", 37, 4096, 1);
    unsetenv("AGOQ_RMS_FWD_PAIR");
    /* the same with the copy quantized from the row's bf16 words by the packed q7 tile for every
     * encoder (AGOQ_RMS_FWD_Q7=1) and for none (0); above, the default (FP4 only) */
    for (int v = 0; v <= 1; v++) {
        setenv("AGOQ_RMS_FWD_Q7", v ? "1" : "0", 1);
        bad += run_env("AGOQ_RMS_FWD_PAIR", "1", 11, 4096, 1);
        bad += run_env("AGOQ_RMS_FWD_PAIR", "1", 7, 2048, 0);
        setenv("AGOQ_RMS_FWD_PAIR", "1", 1);
        bad += run_env("AGOQ_FUSED_GRID_CAP", "1", 37, 4096, 1);
        unsetenv("AGOQ_RMS_FWD_PAIR");
        unsetenv("AGOQ_RMS_FWD_Q7");
    }
    /* the dweight reduced after the backward (AGOQ_DW_FUSE=0) or in its launch (1, the default),
     * there with every CTA waiting at the grid barrier too (AGOQ_DW_FUSE_WAIT=all), also with one
     * CTA */
    for (int v = 0; v <= 2; v++) {
        const char *val = v ? "1" : "0";
        if (v == 2) setenv("AGOQ_DW_FUSE_WAIT", "all", 1);
        bad += run_knob_env("AGOQ_DW_FUSE", val, 1536);
        unsetenv("AGOQ_DW_FUSE_WAIT");
    }
    /* issue 15's third round (AGOQ_F6: the RMSNorm backward row sums with one barrier), also
     * with one CTA (every CTA streams many row groups) */
    bad += run_knob_env("AGOQ_F6", "1", 1536);
    /* the ninth session's plain bf16 GELU backward in units of 4 / 1 (the default) / 2 vectors
     * (AGOQ_F9=0 / 1 / 2), also with one CTA and a tail of part of a unit */
    for (int v = 0; v <= 2; v++) {
        const char *val = v == 0 ? "0" : v == 1 ? "1" : "2";
        bad += run_knob_env("AGOQ_F9", val, 1064);
    }
    CHECK(bad == 0);
}

/* A knob's values in turn: every eligible config of the fast kernels under each, the grid-stride
 * loops with one CTA (37 rows: 19 dweight groups), and the general paths and tails beside them
 * (rows of tail_cols and of 4096). */
static size_t run_knob_values(const char *var, const char *const *vals, int nvals, int tail_cols, size_t *configs) {
    size_t bad = 0;
    for (int v = 0; v < nvals; v++) {
        setenv(var, vals[v], 1);
        bad += run_fast_configs(configs);
        bad += run_env("AGOQ_FUSED_GRID_CAP", "1", 37, 4352, 1);
        unsetenv(var);
        bad += run_env(var, vals[v], 7, tail_cols, 0);
        bad += run_env(var, vals[v], 3, 4096, 1);
    }
    return bad;
}

/* Issue 15's fourth round (AGOQ_F8=1: the plain bf16 SwiGLU forward in units of 4 vectors and
 * the RMSNorm backward's pipelined rows; the quantized SwiGLU forward has one kernel whatever it
 * says). */
TEST(cuda_fused_f8_every_eligible_config) {
    static const char *const vals[] = {"0", "1"};
    size_t configs = 0;
    const size_t bad = run_knob_values("AGOQ_F8", vals, 2, 1536, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches (AGOQ_F8=0 and 1, %zu fast configs each)", bad, configs);
}

/* The staged RMSNorm backward keeping a row's decoded inputs (AGOQ_RMS_KEEP: 0 never, 1 always,
 * 2 the default, a stored copy only), every eligible config, one CTA, tails. */
TEST(cuda_fused_rms_keep_every_eligible_config) {
    static const char *const vals[] = {"0", "1", "2"};
    size_t configs = 0;
    const size_t bad = run_knob_values("AGOQ_RMS_KEEP", vals, 3, 1536, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches (AGOQ_RMS_KEEP=0, 1 and 2, %zu fast configs each)", bad, configs);
}

/* The quantized SwiGLU forward's whole unit as two tiles of 2 vectors (AGOQ_SWI_FWD_TILE=2, the
 * twenty-eighth session's spill-free form; auto, the default, takes it for FP4 and the asymmetric
 * integers) and as one split tile of 4 (4), every eligible config, one CTA, tails (partial units). */
TEST(cuda_fused_swiglu_fwd_tile_every_eligible_config) {
    static const char *const vals[] = {"4", "2"};
    size_t configs = 0;
    const size_t bad = run_knob_values("AGOQ_SWI_FWD_TILE", vals, 2, 1536, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches (AGOQ_SWI_FWD_TILE=4 and 2, %zu fast configs each)", bad, configs);
}

/* The quantized SwiGLU and GELU forwards pipelined on the resident grid (AGOQ_FWD_PF=1: each
 * warp loads its next unit before this one's math), every eligible config, one CTA (every warp
 * loops over many units), tails. */
TEST(cuda_fused_fwd_pf_every_eligible_config) {
    static const char *const vals[] = {"1"};
    size_t configs = 0;
    const size_t bad = run_knob_values("AGOQ_FWD_PF", vals, 1, 1536, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches (AGOQ_FWD_PF=1, %zu fast configs)", bad, configs);
}

/* The SwiGLU and GELU forwards asking L2 for the input N/4 resident grids ahead (AGOQ_FWD_L2PF=1
 * and 16: a hint that changes no value, so what this checks is that every prefetched range is a
 * legal one, 16-byte aligned whole vectors inside the input, on every eligible config, the plain
 * forwards, one CTA and the tails of partial units and tiles; and 0, off, since the default
 * auto prefetches in the quantized GELU forward, which the other tests run). */
TEST(cuda_fused_fwd_l2pf_every_eligible_config) {
    static const char *const vals[] = {"0", "1", "16"};
    size_t configs = 0;
    const size_t bad = run_knob_values("AGOQ_FWD_L2PF", vals, 3, 1064, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches (AGOQ_FWD_L2PF=0, 1 and 16, %zu fast configs each)", bad, configs);
}

/* The ninth session's GELU forward in tiles of 4 / 2 / 1 warp vectors (AGOQ_GELU_FWD_U; unset:
 * 4 with a quantized copy, 1 without). */
TEST(cuda_fused_gelu_fwd_units) {
    static const char *const vals[] = {"4", "2", "1"};
    size_t configs = 0;
    const size_t bad = run_knob_values("AGOQ_GELU_FWD_U", vals, 3, 1064, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches (AGOQ_GELU_FWD_U=4, 2 and 1, %zu fast configs each)", bad, configs);
}

/* The quantized GELU forward's copy from the fp32 values (AGOQ_GELU_FWD_Q7=0) and from the bf16
 * words by the packed q7 tile for every encoder (1); the default (2: FP4 only) runs in the other
 * tests. Every eligible config, one CTA, tails (the rest of the tensor after the whole tiles). */
TEST(cuda_fused_gelu_fwd_q7_every_eligible_config) {
    static const char *const vals[] = {"0", "1"};
    size_t configs = 0;
    const size_t bad = run_knob_values("AGOQ_GELU_FWD_Q7", vals, 2, 1064, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches (AGOQ_GELU_FWD_Q7=0 and 1, %zu fast configs each)", bad, configs);
}

/* The warp-per-row RMSNorm forward with one CTA (AGOQ_FUSED_GRID_CAP=1: 8 warps, 37 rows of
 * 4096, so every warp loops over several rows) for every fast quantizer config, and rows of
 * 2048 beside the other paths. (It tested the tenth session's AGOQ_RMS_PF row prefetch too,
 * removed in the twelfth.) */
TEST(cuda_fused_rms_warp_rows) {
    static const int blocks[] = {32, 64, 128, 256};
    size_t bad = 0, configs = 0;
    setenv("AGOQ_FUSED_GRID_CAP", "1", 1);
    for (size_t f = 0; f < sizeof kFastFmts / sizeof kFastFmts[0]; f++)
        for (size_t b = 0; b < 4; b++, configs++) {
            const qcase k = {kFastFmts[f], blocks[b], configs % 3 ? AGOQ_SCALE_FP32 : AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST};
            bad += run_op(OP_RMS, &k, 37, 4096, 1);
        }
    bad += run_env("AGOQ_FUSED_GRID_CAP", "1", 11, 2048, 0);
    unsetenv("AGOQ_FUSED_GRID_CAP");
    CHECK_MSG(bad == 0, "%zu mismatches (%zu fast configs)", bad, configs);
}

/* The unfused baseline's standalone kernels: quantize == rowq reference, dequantize == bf16
 * of the reference's dequantized values. */
TEST(cuda_rowq_quantize_dequantize_bit_exact) {
    size_t bad = 0;
    for (size_t s = 0; s < NSHAPES; s++)
        for (size_t k = 0; k < NCASES; k++) {
            const int rows = kShapes[s][0], cols = kShapes[s][1];
            const agoq_qconfig c = qc_of(&kCases[k]);
            const size_t n = (size_t)rows * cols;
            uint16_t *x = make_input(rows, cols, 77, 1), *want = malloc(n * 2);
            float *deq = malloc(n * sizeof(float));
            agoq_qtensor q;
            agoq_fq fq;
            agoq_dqt d;
            CHECK(agoq_qtensor_alloc(&q, &c, agoq_rowq_alloc_n(&c, rows, cols)) == 0);
            CHECK(agoq_fq_make(&c, &fq) == 0 && agoq_dqt_alloc(&c, rows, cols, &d) == 0);
            agoq_rowq_quantize_ref(&c, x, rows, cols, &q);
            agoq_rowq_dequantize_ref(&c, &q, rows, cols, deq);
            for (size_t i = 0; i < n; i++) want[i] = agoq_f32_to_bf16(deq[i]);
            uint16_t *d_x = up16(x, n), *d_y = agoq_fused_dmalloc(n * 2);
            CHECK(agoq_rowq_quantize_cuda(&fq, d_x, rows, cols, d, NULL) == 0);
            agoq_fused_dsync();
            bad += cmp_qt(&c, rows, cols, &q, d);
            CHECK(agoq_rowq_dequantize_cuda(&fq, d, rows, cols, d_y, NULL) == 0);
            uint16_t *got = down16(d_y, n);
            bad += cmp_bf16("dequant", want, got, n);
            agoq_fused_dfree(d_x); agoq_fused_dfree(d_y);
            agoq_dqt_free(&d); agoq_fq_free(&fq); agoq_qtensor_free(&q);
            free(x); free(want); free(deq); free(got);
        }
    CHECK(bad == 0);
}

TEST(cuda_fused_rejects_bad_shapes) {
    CHECK(agoq_gelu_fwd_cuda(NULL, NULL, 0, 16, NULL, (agoq_dqt){0}, NULL) == -1);
    CHECK(agoq_rmsnorm_bwd_cuda(NULL, (agoq_dqt){0}, NULL, NULL, NULL, 4, 60000, 1e-5f, 1, NULL, NULL, NULL, NULL) == -1);
    CHECK(agoq_rmsnorm_bwd_cuda(NULL, (agoq_dqt){0}, NULL, NULL, NULL, 4, 64, 1e-5f, 0, NULL, NULL, NULL, NULL) == -1);
}
