/* GPU tests of kernels/blaslt (cuBLASLt linear ops) against agoq_linear_ref, at several shapes
 * (odd ones included), with and without R / accumulate, fp32 and bf16 out; the plan cache; the
 * argument checks (R overlapping the output is refused: the first H200 run found cuBLASLt's
 * aligned kernels a few bf16 ulps off in place). And a timing mode at LLaMA-2-7B layer shapes (bench_lt_llama7b, runs only
 * with AGOQ_LT_BENCH=1).
 *
 * Bound per output element (ref = the double-accumulated reference, mag = sum |a||b| of its
 * products, c = the added R or dW, L = the reduction length):
 *   E = L * 2^-23 * mag + 2^-23 |c|   fp32 accumulation in any order (split-K included), each
 *                                     add counted as 2 ulps (tensor-core adders may truncate)
 *   fp32 out: |got - ref| <= E + 2^-24 |ref|  (the reference's own rounding to fp32)
 *   bf16 out: |got - ref| <= 2^-8 (|ref| + E) + E  (round to nearest bf16: 0.5 ulp <= 2^-8 |x|) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/blaslt/blaslt.h"
#include "kernels/fused/fused.h"
#include "kernels/quant/quant_math.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/test.h"
#include "tests/test_bf16.h"

/* Violations of the bound of the file comment; prints the first few. got_bf16 or got_f32. */
static size_t check_out(const char *what, const uint16_t *got_bf16, const float *got_f32, const float *ref,
                        const float *mag, const float *c, size_t n, int len) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double r = ref[i], e = (double)len * 0x1p-23 * mag[i] + (c ? 0x1p-23 * fabs((double)c[i]) : 0.0);
        const double got = got_bf16 ? (double)agoq_bf16_to_f32(got_bf16[i]) : (double)got_f32[i];
        const double tol = got_bf16 ? 0x1p-8 * (fabs(r) + e) + e : e + 0x1p-24 * fabs(r);
        if (!(fabs(got - r) <= tol) && bad++ < 5)
            fprintf(stderr, "    %s[%zu]: got %.8g ref %.8g tol %.3g\n", what, i, got, r, tol);
    }
    return bad;
}

static const int kShapes[][3] = {{64, 64, 64}, {128, 96, 256}, {256, 512, 1024}, {37, 53, 71}, {1, 16, 8},
                                 {200, 3, 1000}, {17, 1, 1}};

/* One op at one shape: out (and ref) with c added when addc (R for fwd/dgrad, dW for wgrad). */
static int run_case(agoq_lt *lt, int op, int M, int N, int K, int addc, int out_f32, uint64_t seed) {
    /* operand shapes per op: fwd A=X[M,K] B=W[N,K] out[M,N]; dgrad A=dY[M,N] B=W[N,K] out[M,K];
     * wgrad A=dY[M,N] B=X[M,K] out[N,K] */
    const size_t na = (size_t)M * (op == AGOQ_LT_FWD ? K : N);
    const size_t nb = op == AGOQ_LT_WGRAD ? (size_t)M * K : (size_t)N * K;
    const size_t no = op == AGOQ_LT_FWD ? (size_t)M * N : op == AGOQ_LT_DGRAD ? (size_t)M * K : (size_t)N * K;
    const int len = op == AGOQ_LT_FWD ? K : op == AGOQ_LT_DGRAD ? N : M;
    uint16_t *a = rand_bf16(na, seed), *b = rand_bf16(nb, seed + 1), *c16 = rand_bf16(no, seed + 2);
    uint16_t *aa = abs_bf16(a, na), *ab = abs_bf16(b, nb);
    float *c = malloc(no * 4), *ref = malloc(no * 4), *mag = malloc(no * 4), *got32 = malloc(no * 4);
    for (size_t i = 0; i < no; i++) c[i] = agoq_bf16_to_f32(c16[i]);
    agoq_linear_ref(op, M, N, K, a, b, addc ? c : NULL, ref);
    agoq_linear_ref(op, M, N, K, aa, ab, NULL, mag);
    uint16_t *da = up16(a, na), *db = up16(b, nb), *dc16 = up16(c16, no);
    void *dout = agoq_fused_dmalloc(no * 4);
    int rc;
    if (op == AGOQ_LT_WGRAD) {
        if (out_f32) agoq_fused_h2d(dout, c, no * 4); /* the dW accumulated into */
        rc = agoq_lt_wgrad(lt, M, N, K, da, db, addc, out_f32 ? (float *)dout : NULL, out_f32 ? NULL : (uint16_t *)dout,
                           NULL);
    } else {
        const uint16_t *R = addc ? dc16 : NULL;
        rc = op == AGOQ_LT_FWD ? agoq_lt_fwd(lt, M, N, K, da, db, R, (uint16_t *)dout, NULL)
                               : agoq_lt_dgrad(lt, M, N, K, da, db, R, (uint16_t *)dout, NULL);
    }
    agoq_fused_dsync();
    size_t bad = (size_t)-1;
    if (rc == 0) {
        agoq_fused_d2h(got32, dout, no * (out_f32 ? 4 : 2));
        bad = check_out("lt", out_f32 ? NULL : (const uint16_t *)got32, out_f32 ? got32 : NULL, ref, mag,
                        addc ? c : NULL, no, len);
    }
    if (bad)
        fprintf(stderr, "    op %d M=%d N=%d K=%d add %d out %s: rc %d, %lld bad\n", op, M, N, K, addc,
                out_f32 ? "fp32" : "bf16", rc, rc ? -1LL : (long long)bad);
    agoq_fused_dfree(da), agoq_fused_dfree(db), agoq_fused_dfree(dc16), agoq_fused_dfree(dout);
    free(a), free(b), free(c16), free(aa), free(ab), free(c), free(ref), free(mag), free(got32);
    return bad == 0 ? 0 : -1;
}

TEST(cuda_blaslt_fwd_dgrad_wgrad_match_reference) {
    void *ws = agoq_fused_dmalloc(32u << 20);
    agoq_lt *lt = NULL;
    CHECK(agoq_lt_create(ws, 32u << 20, &lt) == 0);
    int fails = 0, cases = 0;
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++) {
        const int M = kShapes[s][0], N = kShapes[s][1], K = kShapes[s][2];
        const uint64_t seed = 100 * s;
        for (int addc = 0; addc <= 1; addc++) {
            fails += run_case(lt, AGOQ_LT_FWD, M, N, K, addc, 0, seed) != 0;
            fails += run_case(lt, AGOQ_LT_DGRAD, M, N, K, addc, 0, seed + 10) != 0;
            fails += run_case(lt, AGOQ_LT_WGRAD, M, N, K, addc, 1, seed + 20) != 0; /* fp32, acc 0/1 */
            cases += 3;
        }
        fails += run_case(lt, AGOQ_LT_WGRAD, M, N, K, 0, 0, seed + 50) != 0; /* bf16 out */
        cases += 1;
    }
    fprintf(stderr, "    %d cases, %d failed, %d plans cached\n", cases, fails, agoq_lt_plan_count(lt));
    agoq_lt_destroy(lt);
    agoq_fused_dfree(ws);
    CHECK(fails == 0);
}

/* A repeated call finds its plan: the count grows on the first call of a key only. */
TEST(cuda_blaslt_plan_cache_reuses_plans) {
    void *ws = agoq_fused_dmalloc(32u << 20);
    agoq_lt *lt = NULL;
    CHECK(agoq_lt_create(ws, 32u << 20, &lt) == 0);
    const int M = 64, N = 128, K = 96;
    uint16_t *x = agoq_fused_dmalloc((size_t)M * K * 2), *w = agoq_fused_dmalloc((size_t)N * K * 2),
             *y = agoq_fused_dmalloc((size_t)M * N * 2), *r = agoq_fused_dmalloc((size_t)M * N * 2);
    float *dw = agoq_fused_dmalloc((size_t)N * K * 4);
    CHECK(agoq_lt_plan_count(lt) == 0);
    CHECK(agoq_lt_fwd(lt, M, N, K, x, w, NULL, y, NULL) == 0);
    CHECK(agoq_lt_plan_count(lt) == 1);
    for (int i = 0; i < 3; i++) CHECK(agoq_lt_fwd(lt, M, N, K, x, w, NULL, y, NULL) == 0);
    CHECK(agoq_lt_plan_count(lt) == 1);
    CHECK(agoq_lt_fwd(lt, M, N, K, x, w, r, y, NULL) == 0); /* with R: another key */
    CHECK(agoq_lt_wgrad(lt, M, N, K, y, x, 1, dw, NULL, NULL) == 0);
    CHECK(agoq_lt_wgrad(lt, M, N, K, y, x, 1, dw, NULL, NULL) == 0);
    CHECK(agoq_lt_plan_count(lt) == 3);
    agoq_fused_dsync();
    agoq_fused_dfree(x), agoq_fused_dfree(w), agoq_fused_dfree(y), agoq_fused_dfree(r), agoq_fused_dfree(dw);
    agoq_lt_destroy(lt);
    agoq_fused_dfree(ws);
}

TEST(cuda_blaslt_rejects_bad_arguments) {
    agoq_lt *lt = NULL;
    CHECK(agoq_lt_create(NULL, 0, &lt) == 0); /* no workspace: allowed, heuristic limited to 0 bytes */
    uint16_t *b = agoq_fused_dmalloc(4096);
    float *f = agoq_fused_dmalloc(4096);
    CHECK(agoq_lt_fwd(lt, 0, 4, 4, b, b, NULL, b, NULL) == -1);
    CHECK(agoq_lt_fwd(lt, 4, 4, 4, NULL, b, NULL, b, NULL) == -1);
    CHECK(agoq_lt_wgrad(lt, 4, 4, 4, b, b, 0, NULL, NULL, NULL) == -1); /* no output */
    CHECK(agoq_lt_wgrad(lt, 4, 4, 4, b, b, 0, f, b, NULL) == -1);       /* two outputs */
    CHECK(agoq_lt_wgrad(lt, 4, 4, 4, b, b, 1, NULL, b, NULL) == -1);    /* accumulate into bf16 */
    CHECK(agoq_lt_wgrad(lt, 4, 4, 4, b, b, 2, f, NULL, NULL) == -1);
    CHECK(agoq_lt_fwd(lt, 4, 4, 4, b, (const uint16_t *)((char *)b + 1), NULL, b, NULL) == -1); /* odd address */
    CHECK(agoq_lt_fwd(lt, 4, 4, 4, b, b, b + 64, b + 64, NULL) == -1);   /* R == Y: refused (blaslt.h) */
    CHECK(agoq_lt_dgrad(lt, 4, 4, 4, b, b, b + 70, b + 64, NULL) == -1); /* R overlaps dX */
    CHECK(agoq_lt_fwd(lt, 4, 4, 4, b, b, NULL, b + 64, NULL) == 0); /* and a good call works without workspace */
    agoq_fused_dsync();
    CHECK(agoq_lt_plan_count(lt) == 1);
    agoq_fused_dfree(b), agoq_fused_dfree(f);
    agoq_lt_destroy(lt);
}

/* TFLOP/s (2 M N K flops per op) at the LLaMA-2-7B layer GEMMs, M = 4096 and 16384 tokens:
 * fwd (bf16 out), dgrad (bf16 out), wgrad (fp32 main gradient, accumulate 1); CUDA events,
 * 3 warm-up calls, median of 10. Random N(0,1) bf16 operands (a 16M-element pattern tiled). */
TEST(bench_lt_llama7b) {
    if (!getenv("AGOQ_LT_BENCH")) {
        fprintf(stderr, "    skipped: set AGOQ_LT_BENCH=1 to time the LLaMA-2-7B GEMM shapes\n");
        return;
    }
    static const struct {
        const char *name;
        int n, k;
    } layers[] = {{"qkv", 12288, 4096}, {"out", 4096, 4096}, {"fc1", 22016, 4096}, {"fc2", 4096, 11008}};
    const size_t maxa = (size_t)16384 * 22016, maxb = (size_t)16384 * 11008; /* dY [M, N]; X [M, K] */
    const size_t chunk = (size_t)1 << 24;
    uint16_t *pattern = rand_bf16(chunk, 7);
    uint16_t *da = agoq_fused_dmalloc(maxa * 2), *db = agoq_fused_dmalloc(maxb * 2);
    void *dout = agoq_fused_dmalloc(maxa * 2), *ws = agoq_fused_dmalloc(32u << 20);
    for (size_t o = 0; o < maxa; o += chunk)
        agoq_fused_h2d(da + o, pattern, 2 * (maxa - o < chunk ? maxa - o : chunk));
    for (size_t o = 0; o < maxb; o += chunk)
        agoq_fused_h2d(db + o, pattern, 2 * (maxb - o < chunk ? maxb - o : chunk));
    for (size_t o = 0; o < maxa; o += chunk) /* finite fp32 start for wgrad's accumulation */
        agoq_fused_h2d((uint16_t *)dout + o, pattern, 2 * (maxa - o < chunk ? maxa - o : chunk));
    free(pattern);
    agoq_lt *lt = NULL;
    CHECK(agoq_lt_create(ws, 32u << 20, &lt) == 0);
    static const char *ops[3] = {"fwd", "dgrad", "wgrad"};
    printf("# op layer M N K median_ms TFLOP/s   (cuBLASLt bf16 in, fp32 compute; wgrad fp32 out accumulate)\n");
    for (int mi = 0; mi < 2; mi++)
        for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
            for (int op = 0; op < 3; op++) {
                const int M = mi ? 16384 : 4096, N = layers[l].n, K = layers[l].k;
                float ms = 0;
                /* operands: fwd (X = da [M, K], W = db [N, K]); dgrad (dY = da, W = db); wgrad (dY = da, X = db) */
                agoq_fused_dsync();
                CHECK(agoq_lt_time(lt, op, M, N, K, da, db, dout, 3, 10, &ms, NULL) == 0);
                printf("lt %-5s %-3s M=%5d N=%5d K=%5d  %8.3f ms  %6.1f TFLOP/s\n", ops[op], layers[l].name, M, N, K,
                       (double)ms, 2.0 * M * N * K / (ms * 1e-3) / 1e12);
            }
    fflush(stdout);
    agoq_lt_destroy(lt);
    agoq_fused_dfree(da), agoq_fused_dfree(db), agoq_fused_dfree(dout), agoq_fused_dfree(ws);
}
