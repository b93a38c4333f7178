/* GPU tests of kernels/gemm/gemm_wg.cu (the sm_90a wgmma GEMM):
 *  - the three layouts of the step engine (fwd, dgrad, wgrad; residual on fwd and dgrad) against
 *    the float64 reference (every entry of small shapes, a seeded sample of 4096 entries of
 *    large ones) and against cuBLASLt (kernels/blaslt) on the same inputs; half the cases on a
 *    grid capped at 3 CTAs (AGOQ_WG_GRID_CAP), so each persistent CTA runs several tiles;
 *  - the fused epilogue: C unchanged by it, and its quantized copy bit-exact against the
 *    reference quantizer applied to the kernel's own bf16 C, with and without the residual, on
 *    both epilogue quantizers (the general per-block one, AGOQ_WG_FAST_EPI=0, and the default
 *    that sends FP4 E2M1/128 through the fast tile encoder);
 *  - the stored-A prologue: bit-exact against the plain kernel on the host-dequantized A, on
 *    both decode paths (into wgmma's A registers, the default; through shared memory).
 *  - AGOQ_WG_CLUSTER=2 (clusters of two CTAs, B multicast) bit-exact against the default;
 *  - the knob variants against the default: AGOQ_WG_STAGES=4 (C staged a consumer warpgroup's
 *    half at a time), AGOQ_WG_EPI_ROWS=1|4 / AGOQ_WG_BULK=1 (the epilogue variants) bit-exact,
 *    AGOQ_WG_TILE_N=128 / 192 / 256 within one ulp of the default (auto), the fused copy bit-exact against
 *    the reference on each variant's C; invalid settings fall back.
 * Every test above also runs whatever AGOQ_WG_STAGES / AGOQ_WG_TILE_N / AGOQ_WG_CLUSTER the environment sets.
 * Error bound (each entry): |c - ref| <= 2^-8 |ref| + K 2^-23 sum|a||b|: the first term is the
 * one rounding of the fp32 result to bf16 (8-bit significand, round to nearest: at most 2^-8
 * relative), the second a fp32 sum of K products in any order (K 2^-24 sum|a||b|), doubled for
 * the tensor core's internal alignment of its partial sums. cuBLASLt is held to the same bound,
 * so |ours - cuBLASLt| <= twice it. The largest error / bound ratio of each is printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "kernels/blaslt/blaslt.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/gemm_wg.h"
#include "kernels/quant/quant_math.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/cuda/gemm/test_gemm_wg_util.h"
#include "tests/test.h"

enum { OP_FWD, OP_DGRAD, OP_WGRAD };
static const char *kOpName[] = {"fwd", "dgrad", "wgrad"};
/* blaslt.h's M, N, K of an op */
typedef struct {
    int op, M, N, K;
} wcase;

/* The op as a C[gm, gn] = A B GEMM of gemm_wg.h. */
static void as_gemm(wcase w, int *gm, int *gn, int *gk, int *a_mn, int *b_mn) {
    if (w.op == OP_FWD) { *gm = w.M; *gn = w.N; *gk = w.K; *a_mn = 0; *b_mn = 0; }
    else if (w.op == OP_DGRAD) { *gm = w.M; *gn = w.K; *gk = w.N; *a_mn = 0; *b_mn = 1; }
    else { *gm = w.N; *gn = w.K; *gk = w.M; *a_mn = 1; *b_mn = 1; }
}

/* Entries of C checked: all of them when small, else 4096 drawn with a fixed LCG. Returns the
 * number of violations of the bound (ours vs ref, cuBLASLt vs ref, ours vs cuBLASLt). */
static size_t check_entries(wcase w, const uint16_t *a, const uint16_t *b, const uint16_t *r, const uint16_t *c,
                            const uint16_t *lt, double *worst_ours, double *worst_lt) {
    int gm, gn, gk, a_mn, b_mn;
    as_gemm(w, &gm, &gn, &gk, &a_mn, &b_mn);
    const size_t total = (size_t)gm * (size_t)gn;
    const int full = (double)total * gk <= 3e7;
    const size_t count = full ? total : 4096;
    uint64_t s = 12345;
    size_t bad = 0;
    for (size_t e = 0; e < count; e++) {
        size_t idx = e;
        if (!full) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            idx = (size_t)(s >> 17) % total;
        }
        const int i = (int)(idx / (size_t)gn), j = (int)(idx % (size_t)gn);
        double mag;
        const double ref = agoq_wg_ref_entry(gm, gn, gk, a, a_mn, b, b_mn, r, i, j, &mag);
        const double tol = agoq_wg_ref_bound(ref, gk, mag);
        const double got = agoq_bf16_to_f32(c[idx]), want_lt = agoq_bf16_to_f32(lt[idx]);
        const double eo = fabs(got - ref) / tol, el = fabs(want_lt - ref) / tol;
        if (eo > *worst_ours || eo != eo) *worst_ours = eo;
        if (el > *worst_lt) *worst_lt = el;
        if (!(eo <= 1.0 && fabs(got - want_lt) <= 2.0 * tol) && bad++ < 5)
            fprintf(stderr, "    %s C[%d,%d]: ours %.8g cublasLt %.8g ref %.8g tol %.3g\n", kOpName[w.op], i, j, got,
                    want_lt, ref, tol);
    }
    return bad;
}

TEST(cuda_wg_gemm_layouts_match_reference_and_cublaslt) {
    static const wcase cases[] = {
        {OP_FWD, 128, 256, 64},     {OP_FWD, 200, 328, 136},     {OP_FWD, 64, 40, 8},
        {OP_FWD, 256, 2752, 1376},  {OP_FWD, 1024, 4096, 4096},  {OP_FWD, 512, 1536, 512},
        {OP_DGRAD, 200, 136, 328},  {OP_DGRAD, 128, 256, 64},    {OP_DGRAD, 512, 4096, 1376},
        {OP_WGRAD, 136, 200, 328},  {OP_WGRAD, 128, 256, 64},    {OP_WGRAD, 4096, 512, 1024},
    };
    const size_t ws_bytes = (size_t)32 << 20;
    void *ws = agoq_fused_dmalloc(ws_bytes);
    agoq_lt *lt = NULL;
    CHECK(agoq_lt_create(ws, ws_bytes, &lt) == 0);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const wcase w = cases[ci];
        /* odd cases on a grid of 3 CTAs: several tiles per persistent CTA, the ring's phases
         * carried across tiles */
        if (ci & 1) setenv("AGOQ_WG_GRID_CAP", "3", 1);
        else unsetenv("AGOQ_WG_GRID_CAP");
        int gm, gn, gk, a_mn, b_mn;
        as_gemm(w, &gm, &gn, &gk, &a_mn, &b_mn);
        for (int with_r = 0; with_r < (w.op == OP_WGRAD ? 1 : 2); with_r++) {
            uint16_t *a = rand_bf16((size_t)gm * gk, 31 + ci), *b = rand_bf16((size_t)gn * gk, 57 + ci);
            uint16_t *r = with_r ? rand_bf16((size_t)gm * gn, 77 + ci) : NULL;
            uint16_t *da = up16(a, (size_t)gm * gk), *db = up16(b, (size_t)gn * gk), *dr = r ? up16(r, (size_t)gm * gn) : NULL;
            uint16_t *dc = agoq_fused_dmalloc((size_t)gm * gn * 2), *dl = agoq_fused_dmalloc((size_t)gm * gn * 2);
            int rc_ours = -1, rc_lt = -1;
            if (w.op == OP_FWD) {
                rc_ours = agoq_wg_fwd(w.M, w.N, w.K, da, db, dr, dc, NULL, (agoq_dqt){0}, NULL);
                rc_lt = agoq_lt_fwd(lt, w.M, w.N, w.K, da, db, dr, dl, NULL);
            } else if (w.op == OP_DGRAD) {
                rc_ours = agoq_wg_dgrad(w.M, w.N, w.K, da, db, dr, dc, NULL);
                rc_lt = agoq_lt_dgrad(lt, w.M, w.N, w.K, da, db, dr, dl, NULL);
            } else {
                rc_ours = agoq_wg_wgrad(w.M, w.N, w.K, da, db, dc, NULL);
                rc_lt = agoq_lt_wgrad(lt, w.M, w.N, w.K, da, db, 0, NULL, dl, NULL);
            }
            CHECK(rc_ours == 0 && rc_lt == 0);
            agoq_fused_dsync();
            uint16_t *c = down16(dc, (size_t)gm * gn), *l = down16(dl, (size_t)gm * gn);
            double wo = 0.0, wl = 0.0;
            const size_t bad = check_entries(w, a, b, r, c, l, &wo, &wl);
            printf("    wg %-5s M=%d N=%d K=%d%s: max err/bound ours %.3f cublasLt %.3f\n", kOpName[w.op], w.M, w.N, w.K,
                   with_r ? " +R" : "", wo, wl);
            CHECK_MSG(bad == 0, "%s M=%d N=%d K=%d residual=%d: %zu entries out of bound", kOpName[w.op], w.M, w.N,
                      w.K, with_r, bad);
            agoq_fused_dfree(da); agoq_fused_dfree(db); agoq_fused_dfree(dc); agoq_fused_dfree(dl);
            if (dr) agoq_fused_dfree(dr);
            free(a); free(b); free(r); free(c); free(l);
        }
    }
    unsetenv("AGOQ_WG_GRID_CAP");
    agoq_lt_destroy(lt);
    agoq_fused_dfree(ws);
}

typedef struct { agoq_format fmt; int block; agoq_scale_type scale; agoq_rounding round; } qcase;

/* Shapes [s0, s1) of the list below through the fused epilogue, every format: C unchanged by it,
 * the copy bit-exact against the reference quantizer on the kernel's own C. */
static void epilogue_quant_shapes(size_t s0, size_t s1) {
    static const qcase cases[] = {
        {AGOQ_FMT_FP4_E2M1, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST}, {AGOQ_FMT_INT4, 32, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_INT8, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_STOCHASTIC},   {AGOQ_FMT_FP8_E4M3, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_NF4, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},       {AGOQ_FMT_INT4_ASYM, 16, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_INT3, 8, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},       {AGOQ_FMT_FP4_E2M1, 256, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
    };
    static const int shapes[][3] = {{256, 512, 192}, {200, 384, 136}, {200, 512, 136}};
    for (size_t si = s0; si < s1; si++) {
        const int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        if (si) setenv("AGOQ_WG_GRID_CAP", "2", 1); /* several tiles per CTA */
        uint16_t *a = rand_bf16((size_t)m * k, 7 + si), *b = rand_bf16((size_t)n * k, 8 + si);
        uint16_t *r = rand_bf16((size_t)m * n, 9 + si);
        uint16_t *da = up16(a, (size_t)m * k), *db = up16(b, (size_t)n * k), *dr = up16(r, (size_t)m * n);
        uint16_t *dc = agoq_fused_dmalloc((size_t)m * n * 2), *dp = agoq_fused_dmalloc((size_t)m * n * 2);
        for (int with_r = 0; with_r < 2; with_r++) {
            const uint16_t *R = with_r ? dr : NULL;
            CHECK(agoq_wg_fwd(m, n, k, da, db, R, dp, NULL, (agoq_dqt){0}, NULL) == 0);
            agoq_fused_dsync();
            uint16_t *plain = down16(dp, (size_t)m * n);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                if (n % cases[i].block) continue;
                agoq_qconfig c = agoq_qconfig_default(cases[i].fmt);
                c.block = cases[i].block;
                c.scale = cases[i].scale;
                c.rounding = cases[i].round;
                c.seed = 5;
                agoq_fq q;
                agoq_dqt dq;
                agoq_qtensor want, got;
                CHECK(agoq_fq_make(&c, &q) == 0 && agoq_dqt_alloc(&c, m, n, &dq) == 0);
                CHECK(agoq_wg_fwd(m, n, k, da, db, R, dc, &q, dq, NULL) == 0);
                agoq_fused_dsync();
                uint16_t *cc = down16(dc, (size_t)m * n);
                CHECK_MSG(agoq_validate_bytes("C fused vs plain", (const uint8_t *)plain, (const uint8_t *)cc,
                                              (size_t)m * n * 2) == 0, "%s/%d", agoq_formats[c.fmt].name, c.block);
                const size_t nq = agoq_rowq_alloc_n(&c, m, n);
                CHECK(agoq_qtensor_alloc(&want, &c, nq) == 0 && agoq_qtensor_alloc(&got, &c, nq) == 0);
                agoq_rowq_quantize_ref(&c, cc, m, n, &want);
                agoq_dqt_download(&c, m, n, dq, &got);
                CHECK_MSG(agoq_validate_bytes("codes", want.codes, got.codes, agoq_codes_bytes(&c, nq)) == 0,
                          "%s/%d M=%d N=%d residual=%d", agoq_formats[c.fmt].name, c.block, m, n, with_r);
                CHECK_MSG(agoq_validate_bytes("scales", want.scales, got.scales, agoq_scales_bytes(&c, nq)) == 0,
                          "%s/%d M=%d N=%d residual=%d", agoq_formats[c.fmt].name, c.block, m, n, with_r);
                if (agoq_has_zeros(&c))
                    CHECK(agoq_validate_bytes("zeros", want.zeros, got.zeros, agoq_zeros_bytes(&c, nq)) == 0);
                agoq_qtensor_free(&want); agoq_qtensor_free(&got);
                agoq_dqt_free(&dq); agoq_fq_free(&q);
                free(cc);
            }
            free(plain);
        }
        agoq_fused_dfree(da); agoq_fused_dfree(db); agoq_fused_dfree(dr); agoq_fused_dfree(dc); agoq_fused_dfree(dp);
        free(a); free(b); free(r);
    }
    unsetenv("AGOQ_WG_GRID_CAP");
}

/* The general per-block epilogue quantizer (AGOQ_WG_FAST_EPI=0) on every format and shape. */
TEST(cuda_wg_gemm_epilogue_quant_bit_exact) {
    setenv("AGOQ_WG_FAST_EPI", "0", 1);
    epilogue_quant_shapes(0, 3);
    unsetenv("AGOQ_WG_FAST_EPI");
}

/* The default: FP4 E2M1/128 through the fast FP4 tile encoder in the epilogue warps (N = 384 too,
 * N % 256 == 128 since the nineteenth session: its last tile's second block lies past N, and
 * every odd row starts half a vector in), FP8 E4M3/128 through the general formats' row tiles,
 * the other formats through the general per-block one. */
TEST(cuda_wg_gemm_epilogue_fast_fp4_bit_exact) { epilogue_quant_shapes(0, 3); }

/* The stored-A prologue, three ways (A fragments decoded in registers, AGOQ_WG_DEQ_SMEM=0, FP4
 * through the rows' bf16 tables; through a shared-memory tile, =1, and on 4 stages with three
 * tiles a consumer for FP4 and int4, =4, the default; by a fourth warpgroup of decoders into the
 * plain mainloop's bf16 A tiles, AGOQ_WG_DEQ_PRODUCER=1: FP4 and int4, the other formats take the
 * default way there), and the register variants: scales a k-tile
 * ahead (AGOQ_WG_DEQ_AHEAD=1; FP4 through the pairs table there, arithmetic implies AHEAD) and FP4
 * by the pairs table (AGOQ_WG_DEQ_FP4=table): bit-exact against the plain kernel on A dequantized on the host
 * (agoq_rowq_dequantize_ref, rounded to bf16), with and without the residual; the second shape
 * on 2 CTAs (several tiles a CTA: the decoders' hand-off across tiles). */
TEST(cuda_wg_gemm_prologue_dequant_bit_exact) {
    static const qcase cases[] = {
        {AGOQ_FMT_FP4_E2M1, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST}, {AGOQ_FMT_INT4, 64, AGOQ_SCALE_BF16, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_INT8, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},     {AGOQ_FMT_INT4_ASYM, 128, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
        {AGOQ_FMT_NF4, 64, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},       {AGOQ_FMT_FP8_E4M3, 256, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST},
    };
    static const int shapes[][3] = {{200, 384, 256}, {256, 512, 1024}};
    /* the plain reference on the prologue's own tile width (AGOQ_WG_TILE_N leaves deqa at 256) */
    static const char *const knobs[] = {"AGOQ_WG_TILE_N",    "AGOQ_WG_GRID_CAP", "AGOQ_WG_DEQ_SMEM", "AGOQ_WG_DEQ_PRODUCER",
                                        "AGOQ_WG_DEQ_AHEAD", "AGOQ_WG_DEQ_FP4",  "AGOQ_WG_STREAMK"};
    char *saved[7]; /* each way below sets its own knobs, from none set */
    agoq_test_env_save(knobs, 7, saved);
    setenv("AGOQ_WG_TILE_N", "256", 1);
    setenv("AGOQ_WG_STREAMK", "0", 1); /* the plain reference unsplit, as the prologue kernels */
    for (size_t si = 0; si < 2; si++) {
        const int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        if (si) setenv("AGOQ_WG_GRID_CAP", "2", 1);
        uint16_t *a = rand_bf16((size_t)m * k, 17 + si), *b = rand_bf16((size_t)n * k, 18 + si);
        uint16_t *r = rand_bf16((size_t)m * n, 19 + si);
        uint16_t *db = up16(b, (size_t)n * k), *dr = up16(r, (size_t)m * n);
        uint16_t *dc = agoq_fused_dmalloc((size_t)m * n * 2), *dp = agoq_fused_dmalloc((size_t)m * n * 2);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            agoq_qconfig c = agoq_qconfig_default(cases[i].fmt);
            c.block = cases[i].block;
            c.scale = cases[i].scale;
            c.rounding = cases[i].round;
            c.seed = 5;
            const size_t nq = agoq_rowq_alloc_n(&c, m, k);
            agoq_qtensor qt;
            agoq_fq q;
            agoq_dqt dq;
            CHECK(agoq_qtensor_alloc(&qt, &c, nq) == 0 && agoq_fq_make(&c, &q) == 0 && agoq_dqt_alloc(&c, m, k, &dq) == 0);
            agoq_rowq_quantize_ref(&c, a, m, k, &qt);
            agoq_dqt_upload(&c, m, k, &qt, dq);
            float *y = malloc((size_t)m * k * sizeof(float));
            uint16_t *adq = malloc((size_t)m * k * 2);
            agoq_rowq_dequantize_ref(&c, &qt, m, k, y);
            for (size_t e = 0; e < (size_t)m * k; e++) adq[e] = agoq_f32_to_bf16(y[e]);
            uint16_t *dadq = up16(adq, (size_t)m * k);
            for (int with_r = 0; with_r < 2; with_r++) {
                const uint16_t *R = with_r ? dr : NULL;
                CHECK(agoq_wg_fwd(m, n, k, dadq, db, R, dp, NULL, (agoq_dqt){0}, NULL) == 0);
                agoq_fused_dsync();
                uint16_t *want = down16(dp, (size_t)m * n);
                static const char *const way[] = {"registers", "smem", "decoder warpgroup", "registers, scales ahead",
                                                  "registers, FP4 by the pairs table", "smem, 4 stages (the default)",
                                                  "smem, 5 stages, C stored by the consumers", "smem, 5 stages, 128 x 192 tiles"};
                for (int smem = 0; smem < 8; smem++) { /* registers, through smem, by the decoder warpgroup, ahead, ... */
                    if (smem == 4 && c.fmt != AGOQ_FMT_FP4_E2M1) continue;
                    if (smem == 0 || smem == 3 || smem == 4) setenv("AGOQ_WG_DEQ_SMEM", "0", 1); /* the register ways */
                    if (smem == 1) setenv("AGOQ_WG_DEQ_SMEM", "1", 1); /* 5: unset, the default (4 stages, 3 where the codes need them) */
                    if (smem == 6) setenv("AGOQ_WG_DEQ_SMEM", "5", 1); /* 5 stages where the codes allow, else 3 */
                    if (smem == 7) setenv("AGOQ_WG_DEQ_SMEM", "6", 1); /* the same, 192-wide tiles */
                    if (smem == 2) setenv("AGOQ_WG_DEQ_PRODUCER", "1", 1);
                    if (smem == 3) setenv("AGOQ_WG_DEQ_AHEAD", "1", 1);
                    if (smem >= 3 && c.fmt == AGOQ_FMT_FP4_E2M1) setenv("AGOQ_WG_DEQ_FP4", "table", 1);
                    CHECK(agoq_wg_fwd_deqa(m, n, k, &q, dq, db, R, dc, NULL) == 0);
                    unsetenv("AGOQ_WG_DEQ_SMEM");
                    unsetenv("AGOQ_WG_DEQ_PRODUCER");
                    unsetenv("AGOQ_WG_DEQ_AHEAD");
                    unsetenv("AGOQ_WG_DEQ_FP4");
                    agoq_fused_dsync();
                    uint16_t *got = down16(dc, (size_t)m * n);
                    CHECK_MSG(agoq_validate_bytes("C deqa vs plain on dequantized A", (const uint8_t *)want,
                                                  (const uint8_t *)got, (size_t)m * n * 2) == 0,
                              "%s/%d M=%d N=%d K=%d residual=%d %s", agoq_formats[c.fmt].name, c.block, m, n, k, with_r,
                              way[smem]);
                    free(got);
                }
                free(want);
            }
            agoq_fused_dfree(dadq);
            free(y); free(adq);
            agoq_qtensor_free(&qt); agoq_dqt_free(&dq); agoq_fq_free(&q);
        }
        agoq_fused_dfree(db); agoq_fused_dfree(dr); agoq_fused_dfree(dc); agoq_fused_dfree(dp);
        free(a); free(b); free(r);
    }
    agoq_test_env_restore(knobs, 7, saved);
}

/* The op as g's GEMM with N(0, 1) operands on the device (A, B and the returned residual [m][n]
 * from seeds seed, seed + 2, seed + 6) and C allocated. */
static uint16_t *wg_operands(wcase w, uint64_t seed, agoq_wg_args *g) {
    as_gemm(w, &g->m, &g->n, &g->k, &g->a_mn, &g->b_mn);
    const size_t na = (size_t)g->m * g->k, nb = (size_t)g->n * g->k, nc = (size_t)g->m * g->n;
    uint16_t *a = rand_bf16(na, seed), *b = rand_bf16(nb, seed + 2), *r = rand_bf16(nc, seed + 6);
    g->a = up16(a, na);
    g->b = up16(b, nb);
    uint16_t *dr = up16(r, nc);
    g->c = agoq_fused_dmalloc(nc * 2);
    free(a); free(b); free(r);
    return dr;
}
static void wg_operands_free(agoq_wg_args *g, uint16_t *dr) {
    agoq_fused_dfree((void *)g->a); agoq_fused_dfree((void *)g->b); agoq_fused_dfree(dr); agoq_fused_dfree(g->c);
}

/* A bf16 bit pattern as an integer that orders like the value (+0 and -0 both 0). */
static int ord16(uint16_t x) { return x & 0x8000 ? -(int)(x & 0x7fff) : (int)x; }

/* One run of g with knob = val (NULL: unset): C downloaded; with a fused copy (c), its codes and
 * scales checked bit-exact against the reference quantizer on that C. */
static void run_knob(const char *knob, const char *val, const agoq_wg_args *g, const agoq_qconfig *c, uint16_t **out) {
    if (val) setenv(knob, val, 1);
    else unsetenv(knob);
    const int rc = agoq_wg_gemm(g, NULL);
    agoq_fused_dsync();
    unsetenv(knob);
    *out = down16(g->c, (size_t)g->m * g->n);
    int bad = 0;
    if (c) {
        const size_t nq = agoq_rowq_alloc_n(c, g->m, g->n);
        agoq_qtensor want, got;
        if (agoq_qtensor_alloc(&want, c, nq) || agoq_qtensor_alloc(&got, c, nq)) agoq_die("test: out of memory");
        agoq_rowq_quantize_ref(c, *out, g->m, g->n, &want);
        agoq_dqt_download(c, g->m, g->n, g->cq, &got);
        bad = agoq_validate_bytes("codes", want.codes, got.codes, agoq_codes_bytes(c, nq)) != 0 ||
              agoq_validate_bytes("scales", want.scales, got.scales, agoq_scales_bytes(c, nq)) != 0;
        agoq_qtensor_free(&want); agoq_qtensor_free(&got);
    }
    CHECK(rc == 0);
    CHECK_MSG(!bad, "%s=%s %s/%d M=%d N=%d", knob, val ? val : "-", agoq_formats[c->fmt].name, c->block, g->m, g->n);
}

/* The kernel variants behind knobs against the default, every layout, with and without the
 * residual and the fused copy (FP4/128: the fast tile encoder by default; INT4/32; NF4/64, whose
 * table encoder stays on 3 stages), half the cases on a grid of 2 CTAs (several tiles a CTA):
 * AGOQ_WG_STAGES=4 and =3 bit-exact against the default (4 stages for a plain epilogue, 3 with
 * a residual or copy: the same wgmma in the same k order); AGOQ_WG_TILE_N=128 / 192 / 256
 * (m64n128 / m64n192 / m64n256 wgmma; 192 only without a quantized copy, 256 otherwise) within
 * one bf16 ulp of the default (auto: 192 or 256 by the wave fill), entry by entry (the sums run
 * in the same order; a difference is reported); AGOQ_WG_EPI_ROWS=1, =4 and =8 (defaults: 4, and 8 for the general row
 * tiles), AGOQ_WG_BULK=1 with 1 and 8, AGOQ_WG_EPI_GEN=blocks and =rows (the default),
 * AGOQ_WG_FAST_EPI=0, AGOQ_WG_CLUSTER=2 and =2all bit-exact (C, codes and
 * scales; the forward cases' plain, residual and quantized copies); AGOQ_WG_STAGES=auto and
 * AGOQ_WG_TILE_N=auto (the defaults spelled out) bit-exact. An invalid setting exits after one
 * line (core/knob.h; tested on the host by tests/gemm/test_gemm_wg_knobs.c). */
TEST(cuda_wg_gemm_knob_variants_match_default) {
    /* with2: a second knob set to "1" for the run (AGOQ_WG_EPI_ROWS=1 with AGOQ_WG_BULK=1) */
    static const struct { const char *knob, *val; int exact; const char *with2; } vars[] = {
        {"AGOQ_WG_STAGES", "4", 1, NULL}, {"AGOQ_WG_STAGES", "3", 1, NULL}, {"AGOQ_WG_STAGES", "auto", 1, NULL},
        {"AGOQ_WG_TILE_N", "128", 0, NULL}, {"AGOQ_WG_TILE_N", "192", 0, NULL}, {"AGOQ_WG_TILE_N", "256", 0, NULL},
        {"AGOQ_WG_TILE_N", "auto", 1, NULL},
        {"AGOQ_WG_EPI_ROWS", "1", 1, NULL}, {"AGOQ_WG_EPI_ROWS", "4", 1, NULL},
        {"AGOQ_WG_BULK", "1", 1, NULL}, {"AGOQ_WG_EPI_ROWS", "1", 1, "AGOQ_WG_BULK"},
        {"AGOQ_WG_EPI_ROWS", "8", 1, NULL}, {"AGOQ_WG_EPI_ROWS", "8", 1, "AGOQ_WG_BULK"},
        {"AGOQ_WG_EPI_GEN", "blocks", 1, NULL}, {"AGOQ_WG_EPI_GEN", "rows", 1, NULL},
        {"AGOQ_WG_FAST_EPI", "0", 1, NULL}, {"AGOQ_WG_CLUSTER", "2", 1, NULL}, {"AGOQ_WG_CLUSTER", "2all", 1, NULL},
    };
    static const wcase cases[] = {
        {OP_FWD, 200, 328, 136}, {OP_FWD, 512, 1536, 512}, {OP_FWD, 384, 1024, 2048}, {OP_DGRAD, 200, 136, 328},
        {OP_DGRAD, 512, 512, 1024}, {OP_WGRAD, 136, 200, 328}, {OP_WGRAD, 1024, 512, 384},
    };
    /* the copies' formats and blocks: FP4/128 (fast tile encoder), INT4/32 and NF4/64 (a thread a
     * block), INT8, FP8 E4M3, INT4 asym, NF4 at 128 (the general row tiles by default) */
    static const agoq_format fmts[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT4, AGOQ_FMT_NF4, AGOQ_FMT_INT8,
                                       AGOQ_FMT_FP8_E4M3, AGOQ_FMT_INT4_ASYM, AGOQ_FMT_NF4};
    static const int blocks[] = {128, 32, 64, 128, 128, 128, 128};
    enum { NF = sizeof fmts / sizeof fmts[0], NK = 8 };
    const char *names[NK] = {"AGOQ_WG_STAGES",   "AGOQ_WG_TILE_N",  "AGOQ_WG_EPI_ROWS", "AGOQ_WG_BULK",
                             "AGOQ_WG_EPI_GEN",  "AGOQ_WG_FAST_EPI", "AGOQ_WG_CLUSTER", "AGOQ_WG_STREAMK"};
    char *saved[NK];
    agoq_test_env_save(names, NK, saved);
    setenv("AGOQ_WG_STREAMK", "0", 1); /* bit-exact between variants: no split wave on either side */
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        if (ci & 1) setenv("AGOQ_WG_GRID_CAP", "2", 1);
        else unsetenv("AGOQ_WG_GRID_CAP");
        agoq_wg_args g = {0};
        uint16_t *dr = wg_operands(cases[ci], 41 + ci, &g);
        /* v: 0 plain, 1 residual, 2.. fused copy in fmts[v - 2] (+ residual; fwd layout only) */
        const int nv = cases[ci].op == OP_WGRAD ? 1 : cases[ci].op == OP_DGRAD ? 2 : 2 + NF;
        size_t ulp1 = 0;
        for (int v = 0; v < nv; v++) {
            g.r = v ? dr : NULL;
            agoq_qconfig c = agoq_qconfig_default(v >= 2 ? fmts[v - 2] : AGOQ_FMT_FP4_E2M1);
            if (v >= 2) c.block = blocks[v - 2];
            c.seed = 5;
            agoq_fq q;
            g.q = NULL;
            g.cq = (agoq_dqt){0};
            if (v >= 2) {
                if (g.n % c.block) continue;
                CHECK(agoq_fq_make(&c, &q) == 0 && agoq_dqt_alloc(&c, g.m, g.n, &g.cq) == 0);
                g.q = &q;
            }
            uint16_t *c0, *cv;
            run_knob("AGOQ_WG_STAGES", NULL, &g, g.q ? &c : NULL, &c0);
            for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
                if (vars[k].with2) setenv(vars[k].with2, "1", 1);
                run_knob(vars[k].knob, vars[k].val, &g, g.q ? &c : NULL, &cv);
                if (vars[k].with2) unsetenv(vars[k].with2);
                size_t diff = 0, far = 0;
                for (size_t e = 0; e < (size_t)g.m * g.n; e++) { /* bf16 as ordered integers: ulps apart */
                    const int d = ord16(cv[e]) - ord16(c0[e]);
                    diff += cv[e] != c0[e];
                    far += d > 1 || d < -1;
                }
                if (!vars[k].exact) ulp1 += diff;
                CHECK_MSG(vars[k].exact ? diff == 0 : far == 0, "%s=%s %s M=%d N=%d K=%d variant %d: %zu entries differ, %zu by more than one ulp",
                          vars[k].knob, vars[k].val, kOpName[cases[ci].op], cases[ci].M, cases[ci].N, cases[ci].K, v, diff, far);
                free(cv);
            }
            free(c0);
            if (g.q) { agoq_dqt_free(&g.cq); agoq_fq_free(&q); }
        }
        printf("    knobs vs default: %s M=%d N=%d K=%d, %d variant(s); 128/192-wide tiles, auto: %zu entries one ulp apart\n",
               kOpName[cases[ci].op], cases[ci].M, cases[ci].N, cases[ci].K, nv, ulp1);
        wg_operands_free(&g, dr);
    }
    unsetenv("AGOQ_WG_GRID_CAP");
    agoq_test_env_restore(names, NK, saved);
}

/* AGOQ_WG_CLUSTER=2 (clusters of two CTAs along M sharing B by TMA multicast; the 4-stage
 * kernels without a quantized copy) bit-exact against AGOQ_WG_CLUSTER=1 (the same wgmma in the
 * same k order per tile), every layout, ragged M, N and K, odd numbers of row tiles (the
 * partner's dummy tile: 1, 3, 5, 9), each on the full grid and on grids capped at 2 and 5 CTAs
 * (one and two clusters: several tile pairs per cluster, the rings' phases carried across
 * them), plain and (AGOQ_WG_STAGES=4) with the residual; every entry written (NaN prefill).
 * AGOQ_WG_CLUSTER=2all on the forward cases: the residual on the 3-stage kernel, and where N is
 * a multiple of 128 the residual with the fast FP4 copy (its codes and scales are checked against
 * the reference by cuda_wg_gemm_knob_variants_match_default). */
TEST(cuda_wg_gemm_cluster_matches_default) {
    static const wcase cases[] = {
        {OP_FWD, 328, 600, 200},    {OP_FWD, 128, 256, 64},     {OP_FWD, 1032, 1544, 520}, {OP_FWD, 512, 1536, 512},
        {OP_DGRAD, 520, 264, 776},  {OP_DGRAD, 200, 136, 328},  {OP_WGRAD, 200, 264, 456}, {OP_WGRAD, 1024, 1160, 384},
    };
    static const char *caps[] = {NULL, "2", "5"};
    /* restored at the end (the split wave off: clusters take none, the baseline would); the
     * 256-wide tile that clusters take (auto would run 1032 x 1544 on 192-wide tiles, without
     * clusters, on both sides) */
    const char *names[5] = {"AGOQ_WG_STAGES", "AGOQ_WG_GRID_CAP", "AGOQ_WG_CLUSTER", "AGOQ_WG_TILE_N", "AGOQ_WG_STREAMK"};
    char *saved[5];
    agoq_test_env_save(names, 5, saved);
    setenv("AGOQ_WG_TILE_N", "256", 1);
    setenv("AGOQ_WG_STREAMK", "0", 1);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        agoq_wg_args g = {0};
        uint16_t *dr = wg_operands(cases[ci], 61 + ci, &g);
        size_t nan_entries = 0;
        agoq_qconfig qc = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
        qc.block = 128;
        agoq_fq q;
        CHECK(agoq_fq_make(&qc, &q) == 0);
        /* v: 0 plain, 1 the residual on 4 stages (fwd, dgrad); 2all (fwd): 2 the residual on 3
         * stages, 3 the residual and the FP4 copy */
        for (int v = 0; v < 4; v++) {
            if (v && cases[ci].op == OP_WGRAD) continue;
            if (v >= 2 && (cases[ci].op != OP_FWD || (v == 3 && g.n % 128))) continue;
            const char *cl = v >= 2 ? "2all" : "2";
            g.r = v ? dr : NULL;
            if (v == 3) CHECK(agoq_dqt_alloc(&qc, g.m, g.n, &g.cq) == 0);
            g.q = v == 3 ? &q : NULL;
            if (v == 1) setenv("AGOQ_WG_STAGES", "4", 1);
            for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
                if (caps[k]) setenv("AGOQ_WG_GRID_CAP", caps[k], 1);
                else unsetenv("AGOQ_WG_GRID_CAP");
                int fails = 0;
                uint16_t *c1 = wg_run_knob(&g, "AGOQ_WG_CLUSTER", NULL, &fails), *c2 = wg_run_knob(&g, "AGOQ_WG_CLUSTER", cl, &fails);
                CHECK(fails == 0);
                size_t diff = 0, first = (size_t)-1;
                for (size_t e = 0; e < (size_t)g.m * g.n; e++) {
                    if (c1[e] != c2[e] && !diff++) first = e;
                    nan_entries += c2[e] == 0xffff;
                }
                CHECK_MSG(diff == 0, "AGOQ_WG_CLUSTER=%s %s M=%d N=%d K=%d variant=%d cap=%s: %zu entries differ, first (%zu, %zu): %04x vs %04x",
                          cl, kOpName[cases[ci].op], cases[ci].M, cases[ci].N, cases[ci].K, v, caps[k] ? caps[k] : "-", diff,
                          diff ? first / g.n : 0, diff ? first % g.n : 0, diff ? c2[first] : 0, diff ? c1[first] : 0);
                free(c1); free(c2);
            }
            unsetenv("AGOQ_WG_STAGES");
            if (v == 3) agoq_dqt_free(&g.cq);
            g.q = NULL;
            g.cq = (agoq_dqt){0};
        }
        agoq_fq_free(&q);
        CHECK_MSG(nan_entries == 0, "AGOQ_WG_CLUSTER=2 / 2all %s: %zu entries left unwritten", kOpName[cases[ci].op], nan_entries);
        printf("    cluster 2 / 2all vs 1: %s M=%d N=%d K=%d (C %d x %d, %d row tiles): bit-exact\n", kOpName[cases[ci].op],
               cases[ci].M, cases[ci].N, cases[ci].K, g.m, g.n, (g.m + 127) / 128);
        wg_operands_free(&g, dr);
    }
    agoq_test_env_restore(names, 5, saved);
}

TEST(cuda_wg_gemm_rejects_unsupported_shapes) {
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
    c.block = 128;
    CHECK(agoq_wg_check(128, 256, 64, NULL) == 0);
    CHECK(agoq_wg_check(128, 250, 64, NULL) == -1); /* N not a multiple of 8 */
    CHECK(agoq_wg_check(0, 256, 64, NULL) == -1);
    CHECK(agoq_wg_check(128, 2752, 64, &c) == -1);  /* 2752 = 21.5 blocks of 128 */
    CHECK(agoq_wg_check(128, 2816, 64, &c) == 0);
}
