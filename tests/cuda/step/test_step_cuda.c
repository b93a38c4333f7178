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
 *    also has a floor: its error must exceed 10x the spread (it really stored packed data). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "step/step.h"
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
