/* GPU tests of the cuDNN flash attention (kernels/attn/attn_cudnn.cu) against the double-math
 * reference (attn_ref.c) at small shapes: GQA 4/2 and MHA 4/4, head_dim 64 and 128, b = 2,
 * s in {64, 128, 192, 257}, plus b = 1, s = 1024, GQA 4/1; causal and not, separate and packed-QKV
 * layouts. Backward runs on cuDNN's own forward o and lse, as the step engine does; whether a
 * second backward reproduces the first bit for bit is reported, not required.
 *
 * Bounds (u = 2^-9, the bf16 unit roundoff; each bf16 rounding costs <= u relative):
 *   o:   |o - ref| <= 2u |ref| + 2u sum_j P_ij |v_j|. cuDNN rounds o (u |o|) and the
 *        probabilities fed to the P V matmul (u sum P|v|); fp32 scores and softmax add ~1e-6
 *        relative; factor 2 margin. sum P|v| is the reference forward run on |v|.
 *   lse: |lse - ref| <= 2^-16 (1 + |ref|): fp32 dot products of length d <= 128 (worst case
 *        d 2^-24 scale sum|q k| ~ 6e-5 for N(0,1) data at d = 128) and fp32 exp/log.
 *   dv:  |dv - ref| <= 2u |ref| + 4u sum_i P_ij |dout_i|: output rounding, bf16 P in the P^T dO
 *        matmul and, with GQA, bf16 per-query-head partials before the head sum; sum P|dout|
 *        is the reference backward's dv on |dout|.
 *   dq, dk: normwise ||d - ref||_2 <= 2^-7 ||ref||_2 and max|d - ref| <= 2^-5 max|ref|. They go
 *        through dS = P (dP - D) with D = rowsum(dout * o) taken from cuDNN's bf16 o (the
 *        reference uses exact o) and dS rounded to bf16 for the matmuls: ~3 roundings of u
 *        per term, amplified by the cancellation in dP - D (a factor of 1-3 for random data).
 * Set AGOQ_ATTN_BENCH=1 to also time LLaMA-2-7B (32/32 heads) and LLaMA-3-8B (32/8) shapes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/attn/attn.h"
#include "kernels/fused/fused.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"
#include "tests/test_bf16.h"

static void *up(const void *h, size_t bytes) {
    void *d = agoq_fused_dmalloc(bytes);
    agoq_fused_h2d(d, h, bytes);
    return d;
}
static void *down(const void *d, size_t bytes) {
    void *h = malloc(bytes);
    agoq_fused_d2h(h, d, bytes);
    return h;
}

typedef struct {
    int b, s, heads, kv, d, causal, packed;
} shape_t;

/* Elementwise check over the (t, head, j) elements of a [tokens, row] tensor with nh heads:
 * |got - ref| <= a |ref| + c mag. Returns violations; *worst = max |err| / tol. */
static size_t check_elem(const char *what, const agoq_attn_desc *d, int nh, int64_t row, const uint16_t *got,
                         const float *ref, const float *mag, double a, double c, double *worst) {
    size_t bad = 0;
    *worst = 0;
    for (int64_t t = 0; t < (int64_t)d->b * d->s; t++)
        for (int64_t i = 0; i < (int64_t)nh * d->head_dim; i++) {
            const int64_t x = t * row + i;
            const double g = agoq_bf16_to_f32(got[x]), tol = a * fabs(ref[x]) + c * mag[x] + 1e-30;
            const double r = fabs(g - ref[x]) / tol;
            if (!(r <= 1.0) && bad++ < 5)
                fprintf(stderr, "    %s[token %lld, %lld]: got %.6g ref %.6g tol %.3g\n", what, (long long)t, (long long)i,
                        g, ref[x], tol);
            if (r > *worst || r != r) *worst = r;
        }
    return bad;
}

/* Normwise relative error and max error over max |ref| of a [tokens, row] tensor with nh heads. */
static void norm_err(const agoq_attn_desc *d, int nh, int64_t row, const uint16_t *got, const float *ref, double *rel2,
                     double *relmax) {
    double e2 = 0, r2 = 0, emax = 0, rmax = 0;
    for (int64_t t = 0; t < (int64_t)d->b * d->s; t++)
        for (int64_t i = 0; i < (int64_t)nh * d->head_dim; i++) {
            const int64_t x = t * row + i;
            const double e = (double)agoq_bf16_to_f32(got[x]) - ref[x];
            e2 += e * e;
            r2 += (double)ref[x] * ref[x];
            if (!(fabs(e) <= emax)) emax = fabs(e);
            if (fabs(ref[x]) > rmax) rmax = fabs(ref[x]);
        }
    *rel2 = sqrt(e2 / (r2 > 0 ? r2 : 1e-300));
    *relmax = emax / (rmax > 0 ? rmax : 1e-300);
}

/* One shape: returns the number of failed checks (details on stderr). */
static int run_shape(const shape_t *sh, uint64_t seed) {
    const int D = sh->d, H = sh->heads, KV = sh->kv;
    const size_t tok = (size_t)sh->b * sh->s;
    agoq_attn_desc d = {.b = sh->b, .s = sh->s, .heads = H, .kv_heads = KV, .head_dim = D,
                        .scale = 1.0f / sqrtf((float)D), .causal = sh->causal};
    d.o_row = (int64_t)H * D;
    d.q_row = sh->packed ? (int64_t)(H + 2 * KV) * D : (int64_t)H * D;
    d.kv_row = sh->packed ? d.q_row : (int64_t)KV * D;
    /* host inputs: packed [tok, (H + 2KV) D] or three separate arrays */
    const size_t nq = tok * d.q_row, nk = tok * d.kv_row, no = tok * d.o_row, nl = (size_t)sh->b * H * sh->s;
    uint16_t *hq = rand_bf16(nq, seed), *hk = sh->packed ? hq : rand_bf16(nk, seed + 1);
    uint16_t *hv = sh->packed ? hq : rand_bf16(nk, seed + 2), *hdo = rand_bf16(no, seed + 3);
    const size_t koff = sh->packed ? (size_t)H * D : 0, voff = sh->packed ? (size_t)(H + KV) * D : 0;
    /* reference */
    float *o_ref = malloc(no * sizeof(float)), *o_mag = malloc(no * sizeof(float)), *lse_ref = malloc(nl * sizeof(float));
    float *dq_ref = calloc(nq, sizeof(float)), *dk_ref = calloc(nk + voff, sizeof(float)), *dv_ref = calloc(nk + voff, sizeof(float));
    float *dv_mag = calloc(nk + voff, sizeof(float)), *scratch = calloc(nq + nk + voff, sizeof(float));
    agoq_attn_ref_fwd(&d, hq, hk + koff, hv + voff, o_ref, lse_ref);
    uint16_t *av = abs_bf16(hv, sh->packed ? nq : nk), *ado = abs_bf16(hdo, no);
    agoq_attn_ref_fwd(&d, hq, hk + koff, av + voff, o_mag, NULL);
    agoq_attn_ref_bwd(&d, hq, hk + koff, hv + voff, hdo, dq_ref, dk_ref + koff, dv_ref + voff);
    agoq_attn_ref_bwd(&d, hq, hk + koff, hv + voff, ado, scratch, scratch + nq, dv_mag + voff);
    /* device */
    uint16_t *q = up(hq, nq * 2), *k = sh->packed ? q : up(hk, nk * 2), *v = sh->packed ? q : up(hv, nk * 2);
    uint16_t *dout = up(hdo, no * 2), *o = agoq_fused_dmalloc(no * 2), *o2 = agoq_fused_dmalloc(no * 2);
    uint16_t *dq = agoq_fused_dmalloc(nq * 2), *dk = sh->packed ? dq : agoq_fused_dmalloc(nk * 2);
    uint16_t *dv = sh->packed ? dq : agoq_fused_dmalloc(nk * 2);
    float *lse = agoq_fused_dmalloc(nl * sizeof(float));
    agoq_attn *a = NULL;
    int fails = 0;
    if (agoq_attn_create(&d, &a) != 0) {
        fprintf(stderr, "    create failed for b=%d s=%d heads=%d/%d d=%d causal=%d packed=%d\n", sh->b, sh->s, H, KV, D,
                sh->causal, sh->packed);
        fails++;
        goto out;
    }
    const size_t wsb = agoq_attn_workspace_bytes(a);
    void *ws = wsb ? agoq_fused_dmalloc(wsb) : NULL;
    if (agoq_attn_fwd(a, q, k + koff, v + voff, o2, lse, ws, NULL) != 0 ||
        agoq_attn_fwd(a, q, k + koff, v + voff, o, lse, ws, NULL) != 0 ||
        agoq_attn_bwd(a, q, k + koff, v + voff, o, dout, lse, dq, dk + koff, dv + voff, ws, NULL) != 0) {
        fails++;
    } else {
        agoq_fused_dsync();
        uint16_t *go = down(o, no * 2), *go2 = down(o2, no * 2), *gdq = down(dq, nq * 2);
        uint16_t *gdk = sh->packed ? gdq : down(dk, nk * 2), *gdv = sh->packed ? gdq : down(dv, nk * 2);
        float *glse = down(lse, nl * sizeof(float));
        /* informational: does a second backward reproduce the first bit for bit? */
        int det = agoq_attn_bwd(a, q, k + koff, v + voff, o, dout, lse, dq, dk + koff, dv + voff, ws, NULL) == 0;
        if (det) {
            uint16_t *again = down(dq, nq * 2);
            det = memcmp(again, gdq, nq * 2) == 0;
            free(again);
            if (det && !sh->packed) {
                uint16_t *dk2 = down(dk, nk * 2), *dv2 = down(dv, nk * 2);
                det = memcmp(dk2, gdk, nk * 2) == 0 && memcmp(dv2, gdv, nk * 2) == 0;
                free(dk2); free(dv2);
            }
        }
        const double u = 0x1p-9;
        double wo, wdv, wl = 0, dq2, dqm, dk2, dkm;
        /* the plan is re-used with new pointers: same result bit for bit */
        if (memcmp(go, go2, no * 2) != 0) {
            fprintf(stderr, "    forward into a second output buffer differs from the first\n");
            fails++;
        }
        if (check_elem("o", &d, H, d.o_row, go, o_ref, o_mag, 2 * u, 2 * u, &wo)) fails++;
        for (size_t i = 0; i < nl; i++) {
            const double r = fabs((double)glse[i] - lse_ref[i]) / (0x1p-16 * (1 + fabs(lse_ref[i])));
            if (!(r <= 1.0) && wl <= 1.0) fprintf(stderr, "    lse[%zu]: got %.8g ref %.8g\n", i, glse[i], lse_ref[i]);
            if (r > wl || r != r) wl = r;
        }
        if (!(wl <= 1.0)) fails++;
        if (check_elem("dv", &d, KV, d.kv_row, gdv + voff, dv_ref + voff, dv_mag + voff, 2 * u, 4 * u, &wdv)) fails++;
        norm_err(&d, H, d.q_row, gdq, dq_ref, &dq2, &dqm);
        norm_err(&d, KV, d.kv_row, gdk + koff, dk_ref + koff, &dk2, &dkm);
        if (!(dq2 <= 0x1p-7 && dqm <= 0x1p-5 && dk2 <= 0x1p-7 && dkm <= 0x1p-5)) fails++;
        fprintf(stderr,
                "    b=%d s=%d heads=%d/%d d=%d causal=%d packed=%d: err/bound o %.3f lse %.3f dv %.3f; "
                "dq rel2 %.2e relmax %.2e, dk rel2 %.2e relmax %.2e (bounds %.2e, %.2e); bwd rerun %s%s\n",
                sh->b, sh->s, H, KV, D, sh->causal, sh->packed, wo, wl, wdv, dq2, dqm, dk2, dkm, 0x1p-7, 0x1p-5,
                det ? "bit-identical" : "differs", fails ? "  FAIL" : "");
        free(go); free(go2); free(gdq); free(glse);
        if (!sh->packed) { free(gdk); free(gdv); }
    }
    if (ws) agoq_fused_dfree(ws);
out:
    agoq_attn_destroy(a);
    agoq_fused_dfree(q); agoq_fused_dfree(dout); agoq_fused_dfree(o); agoq_fused_dfree(o2);
    agoq_fused_dfree(dq); agoq_fused_dfree(lse);
    if (!sh->packed) { agoq_fused_dfree(k); agoq_fused_dfree(v); agoq_fused_dfree(dk); agoq_fused_dfree(dv); }
    free(hq); free(hdo); free(av); free(ado);
    if (!sh->packed) { free(hk); free(hv); }
    free(o_ref); free(o_mag); free(lse_ref); free(dq_ref); free(dk_ref); free(dv_ref); free(dv_mag); free(scratch);
    return fails;
}

TEST(cuda_attn_cudnn_available) {
    char why[160];
    const int rc = agoq_attn_available(why, sizeof why);
    fprintf(stderr, "    cuDNN runtime %ld%s%s\n", agoq_attn_cudnn_version(), rc ? ": " : "", rc ? why : "");
    CHECK_MSG(rc == 0, "attention unavailable: %s", why);
}

TEST(cuda_attn_matches_reference) {
    static const shape_t shapes[] = {
        {2, 64, 4, 2, 64, 1, 0},  {2, 128, 4, 2, 128, 1, 0}, {2, 257, 4, 2, 64, 1, 0}, {2, 257, 4, 2, 128, 1, 0},
        {2, 128, 4, 4, 64, 1, 0}, {2, 128, 4, 2, 64, 0, 0},  {2, 192, 4, 2, 128, 1, 1}, {1, 1024, 4, 1, 128, 1, 1},
    };
    int fails = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) fails += run_shape(&shapes[i], 100 + 10 * i);
    CHECK_MSG(fails == 0, "%d checks failed (see above)", fails);
}

TEST(cuda_attn_rejects_unsupported_shapes) {
    agoq_attn_desc d = {.b = 1, .s = 64, .heads = 4, .kv_heads = 3, .head_dim = 64, .q_row = 256, .kv_row = 192,
                        .o_row = 256, .scale = 0.125f, .causal = 1};
    agoq_attn *a = NULL;
    CHECK(agoq_attn_create(&d, &a) == -1 && a == NULL); /* kv_heads does not divide heads */
    d.kv_heads = 4;
    d.kv_row = 256;
    d.head_dim = 12; /* not a multiple of 8 */
    CHECK(agoq_attn_create(&d, &a) == -1 && a == NULL);
}

TEST(cuda_attn_bench) {
    const char *e = getenv("AGOQ_ATTN_BENCH");
    if (!e || !*e || *e == '0') {
        fprintf(stderr, "    skipped (set AGOQ_ATTN_BENCH=1)\n");
        return;
    }
    static const struct { const char *name; int b, s, heads, kv, d; } cases[] = {
        {"llama2-7b", 1, 4096, 32, 32, 128}, {"llama2-7b", 1, 16384, 32, 32, 128},
        {"llama3-8b", 1, 4096, 32, 8, 128},  {"llama3-8b", 1, 16384, 32, 8, 128},
    };
    printf("# cuDNN %ld causal bf16 attention, 20 timed calls each (CUDA events); TFLOP/s from the median\n"
           "# model      b     s  heads kv   d  fwd_med_ms fwd_min_ms fwd_TFLOPs  bwd_med_ms bwd_min_ms bwd_TFLOPs  ws_MiB  create_ms\n",
           agoq_attn_cudnn_version());
    int fails = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agoq_attn_desc d = {.b = cases[i].b, .s = cases[i].s, .heads = cases[i].heads, .kv_heads = cases[i].kv,
                            .head_dim = cases[i].d, .scale = 1.0f / sqrtf((float)cases[i].d), .causal = 1};
        agoq_attn_timing t;
        if (agoq_attn_bench(&d, 20, &t) != 0) {
            fprintf(stderr, "    bench %s s=%d failed\n", cases[i].name, cases[i].s);
            fails++;
            continue;
        }
        printf("%-10s %2d %6d %5d %3d %4d  %10.3f %10.3f %10.1f  %10.3f %10.3f %10.1f  %6.1f  %9.1f\n", cases[i].name,
               d.b, d.s, d.heads, d.kv_heads, d.head_dim, t.fwd_med_ms, t.fwd_min_ms, t.fwd_flop / (t.fwd_med_ms * 1e9),
               t.bwd_med_ms, t.bwd_min_ms, t.bwd_flop / (t.bwd_med_ms * 1e9), t.workspace_bytes / 1048576.0,
               t.create_ms);
        fflush(stdout);
    }
    CHECK_MSG(fails == 0, "%d bench shapes failed", fails);
}
