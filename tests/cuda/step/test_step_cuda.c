/* The step engine on a GPU (make test-cuda): a probe step of a small LLaMA stack (2 layers,
 * hidden 256, 2 query heads and 1 KV head of 128 (GQA), FFN 512, 2 sequences of 128 tokens,
 * 2 micro-batches) against an fp32 CPU reference of the same layers, and every policy against
 * bf16 store-all.
 *
 * Bounds (relative L2 error ||got - ref|| / ||ref|| per tensor):
 *  - store-all vs the fp32 reference: the engine rounds every stored tensor to bf16 (relative
 *    error <= 2^-9 each, ~8 roundings on a forward path and ~8 on a backward path, roughly
 *    independent) and sums in fp32: sqrt(16) * 2^-9 ~ 0.008 per layer, ~0.011 over 2 layers.
 *    Bound 0.03 for gradients and 0.02 for the stack output (one forward path).
 *  - recomputation changes no math: the same kernels see the same bf16 values, so the
 *    gradients equal store-all's up to the run-to-run spread of store-all itself (measured by
 *    running it twice: cuDNN's backward may accumulate dK/dV in another order): bound
 *    2 * spread + 1e-6.
 *  - quantized policies: the stored tensor's relative quantization noise q propagates linearly
 *    into the gradients it feeds, through at most ~3 stored inputs: rel error <= ~sqrt(3) q.
 *    q from the formats' SNR on normal data (README: FP4 E2M1/128 19.3 dB -> 0.108, FP8 E4M3
 *    31.8 dB -> 0.026, INT8 43.8 dB -> 0.0065): bounds agoq 0.3, int4 0.4 (attention too),
 *    coat 0.08, int8 0.03. A policy that quantized nothing would sit at the spread, so each
 *    also has a floor: its error must exceed 10x the spread (it really stored packed data).
 *  - gemm = fused vs cublaslt (AGoQ, step/gemm_site.c): the same plan (saved bytes per role
 *    equal) and the same math except the GEMM that produces out_proj / fc2 / fc1 outputs.
 *    Stack output: each of those GEMMs' outputs differs from cuBLASLt's by at most one bf16
 *    rounding (<= 2^-7 relative per element: the fp32 sums differ in order only, tests/cuda/
 *    gemm), 5 such GEMMs on the 2-layer path (out_proj x 2, fc1 x 2, fc2 of layer 0), added
 *    without assuming independence: 5 * 2^-7 ~ 0.04. Gradients: a bf16 difference |d| <= 2^-7 |x|
 *    can flip an FP4 E2M1 code only within |d| of a rounding boundary; the step there is >= 1/4
 *    of the value, so at most 2^-5 of the elements flip, each by one step (~sqrt(12) times the
 *    rms quantization error q = 0.108): the stored tensor moves by <= sqrt(2^-5) sqrt(12) q ~
 *    0.066, doubled for block scales moved by a changed block maximum, through <= 3 stored
 *    inputs per gradient: sqrt(3) * 0.13 ~ 0.23, plus twice store-all's run-to-run spread. The
 *    fused copy itself is bit-exact with agoq_rowq_quantize_ref of the GEMM's own output
 *    (tests/cuda/gemm/test_gemm_wg_cuda.c); here it is also checked equal, byte for byte, to
 *    the copy the consumer kernel (RMSNorm / SwiGLU forward) would have written of the same
 *    output, FC1's [T, 2F] copy against SwiGLU's [2T, F] view. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/metrics.h"
#include "kernels/gemm/gemm_wg.h"
#include "step/step.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/test.h"
#include "train/layers.h"

/* The probe stack's shape: hidden, FFN, query heads, KV heads, head_dim, seq. The main shape is
 * GQA at head_dim 128; the others are the trainer's shapes (tests/cuda/test_train_cuda.c: MHA,
 * head_dim 32 and 64, an FFN that is no whole number of 128-blocks, 64-token sequences), so a
 * shape-dependent engine bug shows here, apart from the trainer's embedding and head. */
typedef struct {
    int h, F, a, kv, d, s;
} stack_shape;
static const stack_shape k_main = {256, 512, 2, 1, 128, 128};
static stack_shape g_sh = {256, 512, 2, 1, 128, 128};

static agoq_model_card tiny_card(void) {
    agoq_model_card m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny-%dx%d", g_sh.a, g_sh.d);
    snprintf(m.family, sizeof m.family, "llama");
    m.layer = AGOQ_LAYER_LLAMA;
    m.hidden = g_sh.h;
    m.ffn = g_sh.F;
    m.heads = g_sh.a;
    m.kv_heads = g_sh.kv;
    m.head_dim = g_sh.d;
    m.layers = 2;
    m.vocab = 1024;
    m.max_seq = 4096;
    m.norm_weights = 1;
    return m;
}

static agoq_model_card g_card;

static void tiny_cfg(agoq_step_config *c, const char *policy) {
    g_card = tiny_card();
    agoq_step_config_default(c, &g_card);
    agoq_policy_by_name(policy, &c->ms.pol);
    if (c->ms.pol.grad.kind == AGOQ_STORE_NATIVE) c->ms.pol.grad.kind = AGOQ_STORE_FP32;
    c->layers = 2;
    c->ms.par.seq = g_sh.s;
    c->ms.par.micro_batch = 2;
    c->ms.par.num_microbatches = 2;
    c->quiet = 1;
}

static float bf(uint16_t v) {
    union { uint32_t u; float f; } x = {(uint32_t)v << 16};
    return x.f;
}

/* ---- fp32 reference of the stack (train/layers.h for GEMMs, RMSNorm, SwiGLU) ---- */
typedef struct {
    int T, s, h, a, kv, d, F, QKVN, AD;
    float eps, base;
} shp;

/* rotate-half RoPE on the q and k heads of qkv [T, QKVN]; inverse rotates back */
static void rope(const shp *p, float *qkv, int inverse) {
    for (int t = 0; t < p->T; t++)
        for (int hd = 0; hd < p->a + p->kv; hd++) {
            float *x = qkv + (size_t)t * p->QKVN + (size_t)hd * p->d;
            for (int i = 0; i < p->d / 2; i++) {
                double th = (double)(t % p->s) * pow(p->base, -2.0 * i / p->d) * (inverse ? -1 : 1);
                float c = (float)cos(th), sn = (float)sin(th), x1 = x[i], x2 = x[i + p->d / 2];
                x[i] = x1 * c - x2 * sn;
                x[i + p->d / 2] = x2 * c + x1 * sn;
            }
        }
}

/* causal GQA attention; P [a, T, T] probabilities (zero outside the sequence's causal window) */
static void attn_fwd(const shp *p, const float *qkv, float *P, float *o) {
    const double sc = 1.0 / sqrt(p->d);
    const int g = p->a / p->kv;
    for (int hd = 0; hd < p->a; hd++)
        for (int t = 0; t < p->T; t++) {
            const float *q = qkv + (size_t)t * p->QKVN + (size_t)hd * p->d;
            float *pr = P + ((size_t)hd * p->T + t) * p->T;
            const int t0 = t / p->s * p->s;
            double mx = -1e300, sum = 0;
            for (int j = t0; j <= t; j++) {
                const float *k = qkv + (size_t)j * p->QKVN + p->AD + (size_t)(hd / g) * p->d;
                double sdot = 0;
                for (int i = 0; i < p->d; i++) sdot += (double)q[i] * k[i];
                pr[j] = (float)(sdot * sc);
                mx = pr[j] > mx ? pr[j] : mx;
            }
            for (int j = t0; j <= t; j++) sum += exp(pr[j] - mx);
            for (int j = 0; j < p->T; j++) pr[j] = j >= t0 && j <= t ? (float)(exp(pr[j] - mx) / sum) : 0.0f;
            for (int i = 0; i < p->d; i++) {
                double acc = 0;
                for (int j = t0; j <= t; j++)
                    acc += (double)pr[j] * qkv[(size_t)j * p->QKVN + p->AD + (size_t)(p->kv + hd / g) * p->d + i];
                o[(size_t)t * p->AD + (size_t)hd * p->d + i] = (float)acc;
            }
        }
}

static void attn_bwd(const shp *p, const float *qkv, const float *P, const float *dO, float *dqkv) {
    const double sc = 1.0 / sqrt(p->d);
    const int g = p->a / p->kv;
    memset(dqkv, 0, (size_t)p->T * p->QKVN * sizeof *dqkv);
    double *dp = malloc((size_t)p->T * sizeof *dp);
    for (int hd = 0; hd < p->a; hd++)
        for (int t = 0; t < p->T; t++) {
            const float *pr = P + ((size_t)hd * p->T + t) * p->T;
            const float *dot = dO + (size_t)t * p->AD + (size_t)hd * p->d;
            const int t0 = t / p->s * p->s;
            double rowdot = 0;
            for (int j = t0; j <= t; j++) {
                const float *v = qkv + (size_t)j * p->QKVN + p->AD + (size_t)(p->kv + hd / g) * p->d;
                double s = 0;
                for (int i = 0; i < p->d; i++) s += (double)dot[i] * v[i];
                dp[j] = s;
                rowdot += s * pr[j];
                float *dv = dqkv + (size_t)j * p->QKVN + p->AD + (size_t)(p->kv + hd / g) * p->d;
                for (int i = 0; i < p->d; i++) dv[i] += (float)(pr[j] * dot[i]);
            }
            float *dq = dqkv + (size_t)t * p->QKVN + (size_t)hd * p->d;
            const float *q = qkv + (size_t)t * p->QKVN + (size_t)hd * p->d;
            for (int j = t0; j <= t; j++) {
                const double ds = pr[j] * (dp[j] - rowdot) * sc;
                const float *k = qkv + (size_t)j * p->QKVN + p->AD + (size_t)(hd / g) * p->d;
                float *dk = dqkv + (size_t)j * p->QKVN + p->AD + (size_t)(hd / g) * p->d;
                for (int i = 0; i < p->d; i++) {
                    dq[i] += (float)(ds * k[i]);
                    dk[i] += (float)(ds * q[i]);
                }
            }
        }
    free(dp);
}

/* Y[M,N] (+)= X[M,K] W[N,K]^T ; dX = dY W ; dW += dY^T X (through tr_matmul and transposes) */
static void lin_fwd(float *Y, const float *X, const float *W, int M, int N, int K, float *tmp) {
    tr_transpose(tmp, W, N, K);
    tr_matmul(Y, X, tmp, M, K, N, 0);
}
static void lin_wgrad(float *dW, const float *dY, const float *X, int M, int N, int K, float *tmp) {
    tr_transpose(tmp, dY, M, N);
    tr_matmul(dW, tmp, X, N, M, K, 1);
}

typedef struct {
    float *x, *y1, *qkv, *P, *o, *x2, *y2, *hh, *a;
} lsave;

static float *fz(size_t n) { return calloc(n, sizeof(float)); }

/* reference gradients g[l*6+k] (+=) and the stack output y for one micro-batch */
static void ref_mb(const shp *p, int L, float **W, const float *x0, const float *dy, float **g, float *yout) {
    const size_t T = (size_t)p->T, h = (size_t)p->h, F = (size_t)p->F;
    float *tmp = fz((size_t)(p->QKVN > 2 * p->F ? p->QKVN : 2 * p->F) * (T > h ? T : h) * 2);
    lsave *S = calloc((size_t)L, sizeof *S);
    float *x = fz(T * h);
    memcpy(x, x0, T * h * sizeof *x);
    for (int l = 0; l < L; l++) {
        float **w = W + l * 6;
        lsave *s = &S[l];
        s->x = x;
        s->y1 = fz(T * h);
        tr_rmsnorm_fwd(s->y1, x, w[0], (int)T, (int)h, p->eps);
        s->qkv = fz(T * p->QKVN);
        lin_fwd(s->qkv, s->y1, w[1], (int)T, p->QKVN, (int)h, tmp);
        rope(p, s->qkv, 0);
        s->P = fz((size_t)p->a * T * T);
        s->o = fz(T * p->AD);
        attn_fwd(p, s->qkv, s->P, s->o);
        s->x2 = fz(T * h);
        lin_fwd(s->x2, s->o, w[2], (int)T, (int)h, p->AD, tmp);
        for (size_t i = 0; i < T * h; i++) s->x2[i] += x[i];
        s->y2 = fz(T * h);
        tr_rmsnorm_fwd(s->y2, s->x2, w[3], (int)T, (int)h, p->eps);
        s->hh = fz(T * 2 * F);
        lin_fwd(s->hh, s->y2, w[4], (int)T, (int)(2 * F), (int)h, tmp);
        s->a = fz(T * F);
        tr_swiglu_fwd(s->a, s->hh, (int)T, (int)F);
        x = fz(T * h);
        lin_fwd(x, s->a, w[5], (int)T, (int)h, (int)F, tmp);
        for (size_t i = 0; i < T * h; i++) x[i] += s->x2[i];
    }
    memcpy(yout, x, T * h * sizeof *x);
    float *d = fz(T * h);
    memcpy(d, dy, T * h * sizeof *d);
    for (int l = L - 1; l >= 0; l--) {
        float **w = W + l * 6, **gl = g + l * 6;
        lsave *s = &S[l];
        float *da = fz(T * F), *dh = fz(T * 2 * F), *dy2 = fz(T * h), *dx2 = fz(T * h), *dO = fz(T * p->AD);
        float *dqkv = fz(T * p->QKVN), *dy1 = fz(T * h), *dx = fz(T * h);
        tr_matmul(da, d, w[5], (int)T, (int)h, (int)F, 0);
        lin_wgrad(gl[5], d, s->a, (int)T, (int)h, (int)F, tmp);
        tr_swiglu_bwd(dh, da, s->hh, (int)T, (int)F);
        lin_wgrad(gl[4], dh, s->y2, (int)T, (int)(2 * F), (int)h, tmp);
        tr_matmul(dy2, dh, w[4], (int)T, (int)(2 * F), (int)h, 0);
        tr_rmsnorm_bwd(dx2, gl[3], dy2, s->x2, w[3], (int)T, (int)h, p->eps);
        for (size_t i = 0; i < T * h; i++) dx2[i] += d[i];
        tr_matmul(dO, dx2, w[2], (int)T, (int)h, p->AD, 0);
        lin_wgrad(gl[2], dx2, s->o, (int)T, (int)h, p->AD, tmp);
        attn_bwd(p, s->qkv, s->P, dO, dqkv);
        rope(p, dqkv, 1);
        lin_wgrad(gl[1], dqkv, s->y1, (int)T, p->QKVN, (int)h, tmp);
        tr_matmul(dy1, dqkv, w[1], (int)T, p->QKVN, (int)h, 0);
        tr_rmsnorm_bwd(dx, gl[0], dy1, s->x, w[0], (int)T, (int)h, p->eps);
        for (size_t i = 0; i < T * h; i++) dx[i] += dx2[i];
        free(da), free(dh), free(dy2), free(dx2), free(dO), free(dqkv), free(dy1), free(d);
        d = dx;
        free(s->x), free(s->y1), free(s->qkv), free(s->P), free(s->o), free(s->x2), free(s->y2), free(s->hh), free(s->a);
    }
    free(d);
    free(x);
    free(S);
    free(tmp);
}

static double rel(const float *ref, const float *got, size_t n) {
    agoq_error_stats s = agoq_compare(ref, got, n);
    return agoq_norm_l2(&s);
}

/* Store-all against the fp32 reference at shape sh: prints the stack output's and every
 * gradient's error; returns 1 when one is over its bound. */
static int store_all_vs_reference(stack_shape sh) {
    agoq_step_config c;
    g_sh = sh;
    tiny_cfg(&c, "bf16");
    agoq_step_dump d;
    if (agoq_step_probe(&c, &d) != 0) return 1;
    const int L = 2;
    shp p = {(int)d.tokens, sh.s, sh.h, sh.a, sh.kv, sh.d, sh.F, (sh.a + 2 * sh.kv) * sh.d, sh.a * sh.d,
             c.norm_eps, c.rope_base};
    float *W[12], *G[12];
    for (int i = 0; i < 12; i++) {
        size_t n = (size_t)d.prow[i % 6] * (size_t)d.pcol[i % 6];
        W[i] = fz(n);
        G[i] = fz(n);
        for (size_t j = 0; j < n; j++) W[i][j] = bf(d.weights[i][j]);
    }
    const size_t th = d.tokens * d.hidden;
    float *x = fz(th), *dy = fz(th), *y = fz(th), *yg = fz(th);
    double worst_y = 0;
    for (size_t mb = 0; mb < d.nmb; mb++) {
        for (size_t i = 0; i < th; i++) x[i] = bf(d.x[mb][i]), dy[i] = bf(d.dy[mb][i]), yg[i] = bf(d.y[mb][i]);
        ref_mb(&p, L, W, x, dy, G, y);
        double ry = rel(y, yg, th);
        worst_y = ry > worst_y ? ry : worst_y;
    }
    fprintf(stderr, "    hidden %d ffn %d heads %d/%d head_dim %d seq %d: stack output rel L2 error %.2e (bound 0.02)\n",
            sh.h, sh.F, sh.a, sh.kv, sh.d, sh.s, worst_y);
    int bad = !(worst_y <= 0.02);
    for (int i = 0; i < 12; i++) {
        size_t n = (size_t)d.prow[i % 6] * (size_t)d.pcol[i % 6];
        double r = rel(G[i], d.grads[i], n);
        fprintf(stderr, "      layer %d %-5s grad rel L2 error %.2e (bound 0.03)\n", i / 6, agoq_param_name(i % 6), r);
        bad |= !(r <= 0.03);
        free(W[i]);
        free(G[i]);
    }
    free(x), free(dy), free(y), free(yg);
    agoq_step_dump_free(&d);
    return bad;
}

TEST(cuda_step_store_all_matches_fp32_reference) {
    static const stack_shape shapes[] = {{256, 512, 2, 1, 128, 128}, {128, 352, 4, 4, 32, 64}, {128, 384, 2, 2, 64, 64}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        CHECK_MSG(!store_all_vs_reference(shapes[k]), "shape %zu over its bound", k);
    g_sh = k_main;
}

TEST(cuda_step_policies_vs_store_all) {
    static const struct { const char *name; double bound; int recompute; } pol[] = {
        {"recompute", 0, 1}, {"agoq", 0.3, 0}, {"coat", 0.08, 0}, {"int8", 0.03, 0}, {"int4", 0.4, 0}};
    agoq_step_config c;
    agoq_step_dump r1, r2;
    tiny_cfg(&c, "bf16");
    CHECK(agoq_step_probe(&c, &r1) == 0);
    CHECK(agoq_step_probe(&c, &r2) == 0);
    double spread = 0;
    for (size_t i = 0; i < r1.nparams; i++) {
        size_t n = (size_t)r1.prow[i % 6] * (size_t)r1.pcol[i % 6];
        double s = rel(r1.grads[i], r2.grads[i], n);
        spread = s > spread ? s : spread;
    }
    fprintf(stderr, "    store-all run-to-run spread (worst tensor) %.2e\n", spread);
    int bad = 0;
    for (size_t k = 0; k < sizeof pol / sizeof pol[0]; k++) {
        tiny_cfg(&c, pol[k].recompute ? "bf16" : pol[k].name);
        if (pol[k].recompute) c.ms.par.recompute_layers = -1;
        agoq_step_dump g;
        CHECK_MSG(agoq_step_probe(&c, &g) == 0, "%s", pol[k].name);
        double worst = 0, best = 1e9;
        for (size_t i = 0; i < g.nparams; i++) {
            size_t n = (size_t)g.prow[i % 6] * (size_t)g.pcol[i % 6];
            double e = rel(r1.grads[i], g.grads[i], n);
            worst = e > worst ? e : worst;
            best = e < best ? e : best;
        }
        double bound = pol[k].recompute ? 2 * spread + 1e-6 : pol[k].bound;
        int floor_ok = pol[k].recompute || worst > 10 * spread;
        fprintf(stderr, "    %-9s grad rel L2 error vs store-all: worst %.2e best %.2e (bound %.2e)%s\n", pol[k].name,
                worst, best, bound, floor_ok ? "" : " QUANTIZED NOTHING?");
        bad |= !(worst <= bound) || !floor_ok;
        agoq_step_dump_free(&g);
    }
    agoq_step_dump_free(&r1);
    agoq_step_dump_free(&r2);
    CHECK(!bad);
}

/* A timed run of each policy: sane fields, and the arena's accounting equal to the model. */
TEST(cuda_step_run_records_every_policy) {
    const char *pols[] = {"bf16", "agoq", "coat", "int8", "int4", "agoq_balanced"};
    for (size_t k = 0; k < sizeof pols / sizeof pols[0]; k++) {
        agoq_step_config c;
        tiny_cfg(&c, pols[k]);
        c.reps = 2;
        c.warmup = 1;
        agoq_step_result r;
        CHECK_MSG(agoq_step_run(&c, &r) == 0, "%s", pols[k]);
        CHECK(r.step_ms_median > 0 && r.step_ms_min <= r.step_ms_median && r.step_ms_median <= r.step_ms_max);
        CHECK(r.tokens_per_s > 0 && r.peak_bytes <= r.arena_bytes && r.cuda_used_bytes >= r.arena_bytes);
        for (int i = 0; i < AGOQ_ROLE_COUNT; i++) CHECK(r.saved_by_role[i] == r.model_saved_by_role[i]);
        fprintf(stderr, "    %-13s %.2f ms, peak %.1f MB, saved %.2f MB\n", pols[k], r.step_ms_median, r.peak_bytes / 1e6,
                r.saved_activation_bytes / 1e6);
        agoq_step_result_free(&r);
    }
}

/* 1 when the fused GEMM can run here (sm_90); else prints why the gemm tests are skipped. */
static int hopper(void) {
    agoq_gpu_info gi;
    if (agoq_gpu_query(0, &gi) == 0 && gi.cc_major == 9 && gi.cc_minor == 0) return 1;
    fprintf(stderr, "    skipped: the fused GEMM needs sm_90\n");
    return 0;
}

/* gemm = cublaslt vs fused on AGoQ: the same accounting, every site fused, the stack output and
 * the gradients within the bounds above. */
TEST(cuda_step_gemm_fused_vs_cublaslt) {
    if (!hopper()) return;
    agoq_step_config c;
    agoq_step_result r[2];
    for (int f = 0; f < 2; f++) {
        tiny_cfg(&c, "agoq");
        c.gemm = f ? AGOQ_STEP_GEMM_FUSED : AGOQ_STEP_GEMM_CUBLASLT;
        c.reps = 2;
        c.warmup = 1;
        CHECK(agoq_step_run(&c, &r[f]) == 0);
        for (int s = 0; s < AGOQ_GEMM_SITE_COUNT; s++) {
            const agoq_step_gemm_site *g = &r[f].gemm_sites[s];
            CHECK_MSG(g->applies && g->fused == f && !g->fallback[0] && !g->timed, "gemm %d site %s: applies %d fused %d %s", f,
                      agoq_gemm_site_name((agoq_gemm_site)s), g->applies, g->fused, g->fallback);
        }
    }
    for (int i = 0; i < AGOQ_ROLE_COUNT; i++) CHECK(r[0].saved_by_role[i] == r[1].saved_by_role[i]);
    CHECK(r[0].saved_activation_bytes == r[1].saved_activation_bytes);
    /* the fused path allocates a copy's planes before its GEMM (whose inputs are live) instead of
       after: at most one more norm-input copy at the peak (tests/step/test_step_cli.c) */
    fprintf(stderr, "    peak %.0f / %.0f B (cublaslt / fused), live %.0f / %.0f, step %.2f / %.2f ms\n", r[0].peak_bytes,
            r[1].peak_bytes, r[0].peak_live_bytes, r[1].peak_live_bytes, r[0].step_ms_median, r[1].step_ms_median);
    const double copy = r[0].saved_by_role[AGOQ_ROLE_NORM_IN] / 2 + 2 * 512;
    CHECK(r[1].peak_bytes >= r[0].peak_bytes && r[1].peak_bytes - r[0].peak_bytes <= copy);
    CHECK(fabs(r[1].peak_live_bytes - r[0].peak_live_bytes) <= copy);
    agoq_step_result_free(&r[0]);
    agoq_step_result_free(&r[1]);
    /* probes: cublaslt twice (the spread), fused; then with layer 0 fully recomputed (its first
       forward saves nothing, yet its fused FC2 writes layer 1's stored input) both ways */
    agoq_step_dump d[5];
    for (int k = 0; k < 5; k++) {
        tiny_cfg(&c, "agoq");
        c.gemm = k == 2 || k == 4 ? AGOQ_STEP_GEMM_FUSED : AGOQ_STEP_GEMM_CUBLASLT;
        if (k >= 3) c.ms.par.recompute_layers = 1;
        CHECK(agoq_step_probe(&c, &d[k]) == 0);
    }
    double spread = 0, worst = 0, worst_y = 0;
    const size_t th = d[0].tokens * d[0].hidden;
    float *a = malloc(th * sizeof *a), *b = malloc(th * sizeof *b);
    for (size_t mb = 0; mb < d[0].nmb; mb++) {
        for (size_t i = 0; i < th; i++) a[i] = bf(d[0].y[mb][i]), b[i] = bf(d[2].y[mb][i]);
        const double e = rel(a, b, th);
        worst_y = e > worst_y ? e : worst_y;
    }
    free(a), free(b);
    for (size_t i = 0; i < d[0].nparams; i++) {
        const size_t n = (size_t)d[0].prow[i % 6] * (size_t)d[0].pcol[i % 6];
        const double s = rel(d[0].grads[i], d[1].grads[i], n), e = rel(d[0].grads[i], d[2].grads[i], n);
        const double er = rel(d[3].grads[i], d[4].grads[i], n);
        spread = s > spread ? s : spread;
        worst = e > worst ? e : worst;
        worst = er > worst ? er : worst;
        fprintf(stderr, "      layer %zu %-5s grad rel L2 fused vs cublaslt %.2e (layer 0 recomputed: %.2e)\n", i / 6,
                agoq_param_name((agoq_param_kind)(i % 6)), e, er);
    }
    fprintf(stderr, "    stack output rel L2 fused vs cublaslt %.2e (bound 0.04); gradients worst %.2e (bound 0.23 + 2 x spread %.2e)\n",
            worst_y, worst, spread);
    CHECK(worst_y <= 0.04 && worst <= 0.23 + 2 * spread);
    for (int k = 0; k < 5; k++) agoq_step_dump_free(&d[k]);
}

/* gemm = auto: every site the plan quantizes is timed both ways and keeps the faster; a policy
 * that quantizes nothing times nothing. */
TEST(cuda_step_gemm_auto_records_a_choice) {
    if (!hopper()) return;
    static const char *const pols[] = {"agoq", "bf16"};
    for (int k = 0; k < 2; k++) {
        agoq_step_config c;
        tiny_cfg(&c, pols[k]);
        c.gemm = AGOQ_STEP_GEMM_AUTO;
        c.reps = 1;
        c.warmup = 0;
        agoq_step_result r;
        CHECK(agoq_step_run(&c, &r) == 0);
        for (int s = 0; s < AGOQ_GEMM_SITE_COUNT; s++) {
            const agoq_step_gemm_site *g = &r.gemm_sites[s];
            fprintf(stderr, "    %-4s %-8s applies %d timed %d: cublaslt %.4f ms, fused %.4f ms -> %s\n", pols[k],
                    agoq_gemm_site_name((agoq_gemm_site)s), g->applies, g->timed, g->ms_cublaslt, g->ms_fused,
                    g->fused ? "fused" : "cublaslt");
            CHECK(g->applies == (k == 0) && g->timed == g->applies && !g->fallback[0]);
            if (g->timed) CHECK(g->ms_cublaslt > 0 && g->ms_fused > 0 && g->fused == (g->ms_fused < g->ms_cublaslt));
            else CHECK(!g->fused);
        }
        agoq_step_result_free(&r);
    }
}

/* The fused GEMM's copy of its output (FP4 E2M1/128, AGoQ's format) is byte for byte the copy
 * the consumer would write of that output: RMSNorm's of x2 (out_proj, with the residual) and
 * SwiGLU's [2T, F] view of hh (fc1 [T, 2F]); and the reference quantizer's. */
TEST(cuda_step_fused_copy_equals_consumer_copy) {
    if (!hopper()) return;
    const agoq_qconfig qc = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
    agoq_fq fq;
    CHECK(agoq_fq_make(&qc, &fq) == 0);
    static const struct { int M, N, K, swiglu; } sites[] = {{256, 256, 256, 0}, {256, 1024, 256, 1}, {384, 768, 512, 1}};
    for (size_t k = 0; k < sizeof sites / sizeof sites[0]; k++) {
        const int M = sites[k].M, N = sites[k].N, K = sites[k].K, sw = sites[k].swiglu;
        uint16_t *hx = rand_bf16((size_t)M * K, 11 + k), *hw = rand_bf16((size_t)N * K, 12 + k), *hr = rand_bf16((size_t)M * N, 13 + k);
        uint16_t *x = up16(hx, (size_t)M * K), *w = up16(hw, (size_t)N * K), *r = sw ? NULL : up16(hr, (size_t)M * N);
        uint16_t *y = agoq_fused_dmalloc((size_t)M * N * 2), *out = agoq_fused_dmalloc((size_t)M * N * 2), *nw = up16(hr, (size_t)N);
        agoq_dqt g, p;
        CHECK(agoq_dqt_alloc(&qc, M, N, &g) == 0 && agoq_dqt_alloc(&qc, M, N, &p) == 0);
        CHECK(agoq_wg_fwd(M, N, K, x, w, r, y, &fq, g, NULL) == 0);
        CHECK((sw ? agoq_swiglu_fwd_cuda(&fq, y, M, N / 2, out, p, NULL)
                  : agoq_rmsnorm_fwd_cuda(&fq, y, nw, M, N, 1e-5f, out, p, NULL, NULL)) == 0);
        agoq_fused_dsync();
        uint16_t *hy = down16(y, (size_t)M * N);
        const size_t nq = agoq_rowq_alloc_n(&qc, M, N);
        agoq_qtensor want, got, cons;
        CHECK(agoq_qtensor_alloc(&want, &qc, nq) == 0 && agoq_qtensor_alloc(&got, &qc, nq) == 0 &&
              agoq_qtensor_alloc(&cons, &qc, nq) == 0);
        agoq_rowq_quantize_ref(&qc, hy, M, N, &want);
        agoq_dqt_download(&qc, M, N, g, &got);
        agoq_dqt_download(&qc, M, N, p, &cons);
        const size_t cb = agoq_codes_bytes(&qc, nq), sb = agoq_scales_bytes(&qc, nq);
        CHECK_MSG(agoq_validate_bytes("codes", want.codes, got.codes, cb) == 0 &&
                      agoq_validate_bytes("scales", want.scales, got.scales, sb) == 0 &&
                      agoq_validate_bytes("consumer codes", cons.codes, got.codes, cb) == 0 &&
                      agoq_validate_bytes("consumer scales", cons.scales, got.scales, sb) == 0,
                  "M=%d N=%d K=%d %s", M, N, K, sw ? "swiglu [2T, F]" : "rmsnorm");
        agoq_qtensor_free(&want), agoq_qtensor_free(&got), agoq_qtensor_free(&cons);
        agoq_dqt_free(&g), agoq_dqt_free(&p);
        void *dev[] = {x, w, r, y, out, nw};
        for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) agoq_fused_dfree(dev[i]);
        free(hx), free(hw), free(hr), free(hy);
    }
    agoq_fq_free(&fq);
}
