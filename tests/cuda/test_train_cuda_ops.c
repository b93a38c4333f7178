/* Every op of the cuda training backend (train/ops_cuda.cu, layers_cuda.cu, dp_cuda.cu)
 * against the cpu backend, the reference, on the same host inputs (make test-cuda; needs a GPU).
 *   bit for bit: ops that evaluate the CPU's expressions in the CPU's order: SwiGLU forward and
 *     backward (fused_math.h), RoPE (one angle table), add, embedding forward and backward
 *     (token order kept), the bf16 and block-quantized activation stores (agoq_round_bf16;
 *     agoq_cuda_quantize_f32 + dequantize on the rowq layout, ragged rows included), AdamW,
 *     scale, the fp32 mean and the agoq8 / fp8lm all-reduces (the collectives' algorithms);
 *   relative L2 <= 1e-5: ops whose sums run in another order (cuBLAS GEMM, RMSNorm's row sums,
 *     attention, cross-entropy). fp32 sums of K <= 160 terms in a different order differ by
 *     about sqrt(K) ulp, a few 1e-7 relative; an indexing or transposition bug is O(1). */
#include "kernels/quant/formats.h"
#include "kernels/quant/quant_math.h"
#include "tests/cuda/test_train_cuda_util.h"
#include "train/dp.h"

/* Runs `body` once per backend k (d = p.d[k]) and leaves each output in out[k] (host). */
#define BOTH(k, d) for (int k = 0; k < 2; k++) for (train_dev *d = p.d[k]; d; d = NULL)

TEST(cuda_train_op_matmul_every_transpose) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { M = 96, K = 160, N = 72 };
    float *a = tt_normal(M * K, 1, 1.0f), *b = tt_normal(K * N, 2, 1.0f), *c0 = tt_normal(M * N, 3, 1.0f), *out[2];
    int ok = 1;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int acc = 0; acc < 2; acc++) {
                BOTH(k, d) {
                    float *da = tt_up(d, a, sizeof(float) * M * K), *db = tt_up(d, b, sizeof(float) * K * N);
                    float *dc = tt_up(d, c0, sizeof(float) * M * N);
                    d->ops->matmul(d, dc, da, ta, db, tb, M, K, N, acc);
                    out[k] = tt_down_free(d, dc, M * N);
                    d->ops->release(d, da);
                    d->ops->release(d, db);
                }
                char what[64];
                snprintf(what, sizeof what, "matmul trans_a %d trans_b %d accumulate %d", ta, tb, acc);
                ok &= tt_close_enough(what, out[0], out[1], M * N, 1e-5);
                free(out[0]);
                free(out[1]);
            }
    free(a), free(b), free(c0);
    tt_close(&p);
    CHECK(ok);
}

TEST(cuda_train_op_rmsnorm) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { R = 37, C = 160 };
    float *x = tt_normal(R * C, 4, 2.0f), *w = tt_normal(C, 5, 0.1f), *dy = tt_normal(R * C, 6, 1.0f);
    float *dw0 = tt_normal(C, 7, 0.1f), *y[2], *dx[2], *dw[2];
    for (int j = 0; j < C; j++) w[j] += 1.0f;
    BOTH(k, d) {
        float *dX = tt_up(d, x, sizeof(float) * R * C), *dW = tt_up(d, w, sizeof(float) * C);
        float *dDY = tt_up(d, dy, sizeof(float) * R * C), *dDW = tt_up(d, dw0, sizeof(float) * C);
        float *dY = d->ops->alloc(d, sizeof(float) * R * C), *dDX = d->ops->alloc(d, sizeof(float) * R * C);
        d->ops->rmsnorm_fwd(d, dY, dX, dW, R, C, 1e-5f);
        d->ops->rmsnorm_bwd(d, dDX, dDW, dDY, dX, dW, R, C, 1e-5f);
        y[k] = tt_down_free(d, dY, R * C);
        dx[k] = tt_down_free(d, dDX, R * C);
        dw[k] = tt_down_free(d, dDW, C);
        d->ops->release(d, dX), d->ops->release(d, dW), d->ops->release(d, dDY);
    }
    int ok = tt_close_enough("rmsnorm forward y", y[0], y[1], R * C, 1e-5) &
             tt_close_enough("rmsnorm backward dx", dx[0], dx[1], R * C, 1e-5) &
             tt_close_enough("rmsnorm backward dw (+= on a nonzero dw)", dw[0], dw[1], C, 1e-5);
    for (int k = 0; k < 2; k++) free(y[k]), free(dx[k]), free(dw[k]);
    free(x), free(w), free(dy), free(dw0);
    tt_close(&p);
    CHECK(ok);
}

TEST(cuda_train_op_rope_swiglu_add_bit_exact) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { B = 2, T = 37, C = 64, NH = 4, F = 100, NQ = B * T * 3 * C };
    float *qkv = tt_normal(NQ, 8, 1.0f), *gu = tt_normal(B * T * 2 * F, 9, 2.0f), *ds = tt_normal(B * T * F, 10, 1.0f);
    float *r1[2], *r2[2], *s[2], *dgu[2], *sum[2];
    BOTH(k, d) {
        float *dq = tt_up(d, qkv, sizeof(float) * NQ), *dq2 = tt_up(d, qkv, sizeof(float) * NQ);
        d->ops->rope(d, dq, B, T, C, NH, 10000.0f, 0);
        d->ops->rope(d, dq2, B, T, C, NH, 10000.0f, 1);
        float *dgu_in = tt_up(d, gu, sizeof(float) * B * T * 2 * F), *dds = tt_up(d, ds, sizeof(float) * B * T * F);
        float *ds_out = d->ops->alloc(d, sizeof(float) * B * T * F), *ddgu = d->ops->alloc(d, sizeof(float) * B * T * 2 * F);
        d->ops->swiglu_fwd(d, ds_out, dgu_in, B * T, F);
        d->ops->swiglu_bwd(d, ddgu, dds, dgu_in, B * T, F);
        d->ops->add(d, dds, dds, ds_out, (size_t)B * T * F); /* in place: dst == a */
        r1[k] = tt_down_free(d, dq, NQ);
        r2[k] = tt_down_free(d, dq2, NQ);
        s[k] = tt_down_free(d, ds_out, B * T * F);
        dgu[k] = tt_down_free(d, ddgu, B * T * 2 * F);
        sum[k] = tt_down_free(d, dds, B * T * F);
        d->ops->release(d, dgu_in);
    }
    CHECK(agoq_validate_floats("rope forward", r1[0], r1[1], NQ) == 0);
    CHECK(agoq_validate_floats("rope inverse", r2[0], r2[1], NQ) == 0);
    CHECK(agoq_validate_floats("swiglu forward", s[0], s[1], B * T * F) == 0);
    CHECK(agoq_validate_floats("swiglu backward", dgu[0], dgu[1], B * T * 2 * F) == 0);
    CHECK(agoq_validate_floats("add in place", sum[0], sum[1], B * T * F) == 0);
    for (int k = 0; k < 2; k++) free(r1[k]), free(r2[k]), free(s[k]), free(dgu[k]), free(sum[k]);
    free(qkv), free(gu), free(ds);
    tt_close(&p);
}

/* Odd T (37) and a head size of 16: the permutations and the causal mask at every offset. */
TEST(cuda_train_op_attention) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { B = 2, T = 37, C = 64, NH = 4, NQ = B * T * 3 * C, NA = B * NH * T * T };
    float *qkv = tt_normal(NQ, 11, 1.5f), *dy = tt_normal(B * T * C, 12, 1.0f), *y[2], *att[2], *dqkv[2];
    BOTH(k, d) {
        float *dq = tt_up(d, qkv, sizeof(float) * NQ), *dY = d->ops->alloc(d, sizeof(float) * B * T * C);
        float *dA = d->ops->alloc(d, sizeof(float) * NA);
        d->ops->attention_fwd(d, dY, dA, dq, B, T, C, NH);
        y[k] = tt_down_free(d, dY, B * T * C);
        att[k] = tt_down_free(d, dA, NA);
        d->ops->release(d, dq);
    }
    BOTH(k, d) { /* backward from the same saved tensors: the CPU's probabilities */
        float *dq = tt_up(d, qkv, sizeof(float) * NQ), *dA = tt_up(d, att[0], sizeof(float) * NA);
        float *dDY = tt_up(d, dy, sizeof(float) * B * T * C), *dD = d->ops->alloc(d, sizeof(float) * NQ);
        d->ops->attention_bwd(d, dD, dDY, dq, dA, B, T, C, NH);
        dqkv[k] = tt_down_free(d, dD, NQ);
        d->ops->release(d, dq), d->ops->release(d, dA), d->ops->release(d, dDY);
    }
    size_t above = 0; /* the causal mask: exact zeros above the diagonal */
    for (size_t r = 0; r < (size_t)B * NH * T; r++)
        for (int j = (int)(r % T) + 1; j < T; j++) above += att[1][r * T + (size_t)j] != 0.0f;
    int ok = tt_close_enough("attention forward y", y[0], y[1], B * T * C, 1e-5) &
             tt_close_enough("attention forward probabilities", att[0], att[1], NA, 1e-5) &
             tt_close_enough("attention backward dqkv", dqkv[0], dqkv[1], NQ, 1e-5);
    for (int k = 0; k < 2; k++) free(y[k]), free(att[k]), free(dqkv[k]);
    free(qkv), free(dy);
    tt_close(&p);
    CHECK(ok && above == 0);
}

/* More tokens than one shared-memory tile (2048), heavy repeats: the order of additions. */
TEST(cuda_train_op_embedding_bit_exact) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { V = 256, BT = 2500, C = 40 };
    int tok[BT];
    agoq_rng r = {13};
    for (int i = 0; i < BT; i++) {
        uint64_t u = agoq_rng_next(&r);
        tok[i] = (int)(u % 8 == 0 ? (u >> 8) % V : (u >> 8) % 4);
    }
    float *wte = tt_normal(V * C, 14, 1.0f), *dout = tt_normal(BT * C, 15, 1.0f), *dw0 = tt_normal(V * C, 16, 0.1f);
    float *out[2], *dw[2];
    BOTH(k, d) {
        int *dt = tt_up(d, tok, sizeof tok);
        float *dW = tt_up(d, wte, sizeof(float) * V * C), *dO = d->ops->alloc(d, sizeof(float) * BT * C);
        float *dG = tt_up(d, dout, sizeof(float) * BT * C), *dDW = tt_up(d, dw0, sizeof(float) * V * C);
        d->ops->embed_fwd(d, dO, dW, dt, BT, C);
        d->ops->embed_bwd(d, dDW, dG, dt, BT, C, V);
        out[k] = tt_down_free(d, dO, BT * C);
        dw[k] = tt_down_free(d, dDW, V * C);
        d->ops->release(d, dt), d->ops->release(d, dW), d->ops->release(d, dG);
    }
    CHECK(agoq_validate_floats("embedding forward", out[0], out[1], BT * C) == 0);
    CHECK(agoq_validate_floats("embedding backward", dw[0], dw[1], V * C) == 0);
    for (int k = 0; k < 2; k++) free(out[k]), free(dw[k]);
    free(wte), free(dout), free(dw0);
    tt_close(&p);
}

TEST(cuda_train_op_cross_entropy) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { R = 50, V = 256 };
    int tgt[R];
    for (int i = 0; i < R; i++) tgt[i] = (i * 37 + 11) % V;
    float *logits = tt_normal(R * V, 17, 3.0f), *dl[2];
    double loss[2], loss_only[2];
    BOTH(k, d) {
        int *dt = tt_up(d, tgt, sizeof tgt);
        float *dL = tt_up(d, logits, sizeof(float) * R * V);
        loss_only[k] = d->ops->cross_entropy(d, NULL, dL, dt, R, V, 1.0f / R);
        loss[k] = d->ops->cross_entropy(d, dL, dL, dt, R, V, 1.0f / R); /* in place, as the model calls it */
        dl[k] = tt_down_free(d, dL, R * V);
        d->ops->release(d, dt);
    }
    printf("    cross-entropy loss cpu %.9f cuda %.9f\n", loss[0], loss[1]);
    int ok = tt_close_enough("cross-entropy dlogits (in place)", dl[0], dl[1], R * V, 1e-5);
    free(dl[0]), free(dl[1]), free(logits);
    tt_close(&p);
    CHECK(ok && loss[1] == loss_only[1]);
    CHECK(fabs(loss[1] - loss[0]) <= 1e-6 * fabs(loss[0]));
}

/* bf16 storage: agoq_round_bf16 on ties, specials and random values. */
TEST(cuda_train_op_bf16_store_bit_exact) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { N = 4096 };
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f80c000u,
                                       0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7fa00001u,
                                       0x00000001u, 0x807fffffu, 0x00400000u, 0x7f7f8000u};
    float *x = tt_normal(N, 18, 10.0f), *got[2];
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[i] = agoq_bits_f32(special[i]);
    agoq_store bf16 = {AGOQ_STORE_NATIVE, {0}};
    BOTH(k, d) {
        float *dx = tt_up(d, x, sizeof(float) * N);
        d->ops->act_store(d, &bf16, dx, 64, N / 64, dx); /* in place, as the model stores */
        got[k] = tt_down_free(d, dx, N);
    }
    float want[N];
    for (int i = 0; i < N; i++) want[i] = agoq_round_bf16(x[i]);
    CHECK(agoq_validate_floats("bf16 store cpu", want, got[0], N) == 0);
    CHECK(agoq_validate_floats("bf16 store cuda", want, got[1], N) == 0);
    free(x), free(got[0]), free(got[1]);
    tt_close(&p);
}

/* FP4 / FP8 storage on whole-block and ragged rows (the model's d_ff 352 and T 64 < 128),
 * normal data with outliers and an all-zero row: the real kernels' codes, bit-exact with the
 * row-by-row reference quantizers. */
TEST(cuda_train_op_quant_store_bit_exact) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    static const size_t shapes[][2] = {{7, 128}, {5, 352}, {9, 64}, {3, 1000}, {4, 256}, {1, 8}};
    static const int fmts[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_FP8_E4M3};
    static const int blocks[] = {128, 64};
    int bad = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int fi = 0; fi < 2; fi++)
            for (int bi = 0; bi < 2; bi++) {
                const size_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
                agoq_store st = {AGOQ_STORE_QUANT, agoq_qconfig_default((agoq_format)fmts[fi])};
                st.q.block = blocks[bi];
                float *x = tt_normal(n, 100 + si, 1.0f), *got[2];
                for (size_t i = 0; i < n; i += 97) x[i] *= 20.0f;
                if (rows > 2) memset(x + cols, 0, cols * sizeof(float));
                BOTH(k, d) {
                    float *dx = tt_up(d, x, sizeof(float) * n), *dy = d->ops->alloc(d, sizeof(float) * n);
                    d->ops->act_store(d, &st, dx, rows, cols, dy);
                    d->ops->act_store(d, &st, dx, rows, cols, dx); /* in place */
                    got[k] = tt_down_free(d, dy, n);
                    float *inplace = tt_down_free(d, dx, n);
                    bad += agoq_validate_floats("store in place vs out of place", got[k], inplace, n) != 0;
                    free(inplace);
                }
                char what[96];
                snprintf(what, sizeof what, "%s/%d rows %zu x %zu", agoq_formats[st.q.fmt].name, st.q.block, rows, cols);
                if (agoq_validate_floats(what, got[0], got[1], n)) {
                    fprintf(stderr, "    mismatch in %s\n", what);
                    bad++;
                }
                free(x), free(got[0]), free(got[1]);
            }
    /* ragged rows are padded with zeros: refused where zeros would change the result */
    agoq_store asym = {AGOQ_STORE_QUANT, agoq_qconfig_default(AGOQ_FMT_INT4_ASYM)}, sr = {AGOQ_STORE_QUANT, agoq_qconfig_default(AGOQ_FMT_FP4_E2M1)};
    asym.q.block = sr.q.block = 128;
    sr.q.rounding = AGOQ_ROUND_STOCHASTIC;
    train_dev *g = p.d[1];
    int refused = g->ops->act_store_check(g, &asym, 4, 352) == -1 && g->ops->act_store_check(g, &sr, 4, 352) == -1 &&
                  g->ops->act_store_check(g, &asym, 4, 256) == 0 && g->ops->act_store_check(g, &sr, 4, 256) == 0;
    tt_close(&p);
    CHECK(bad == 0);
    CHECK(refused);
}

TEST(cuda_train_op_optimizer_bit_exact) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    enum { N = 100003 };
    float *w = tt_normal(N, 19, 0.02f), *g = tt_normal(N, 20, 1e-3f), *m = tt_normal(N, 21, 1e-4f);
    float *v = tt_normal(N, 22, 1e-4f), *pw[2], *pm[2], *pv[2], *sc[2];
    for (int i = 0; i < N; i++) v[i] = v[i] * v[i];
    const train_adam_hyper h = {0.9f, 0.95f, 1e-8f, 1.0f - powf(0.9f, 3.0f), 1.0f - powf(0.95f, 3.0f), 3e-3f, 0.1f};
    double ss[2];
    BOTH(k, d) {
        float *dw = tt_up(d, w, sizeof(float) * N), *dg = tt_up(d, g, sizeof(float) * N);
        float *dm = tt_up(d, m, sizeof(float) * N), *dv = tt_up(d, v, sizeof(float) * N);
        d->ops->adam(d, &h, dw, dg, dm, dv, N);
        ss[k] = d->ops->sumsq(d, dg, N);
        d->ops->scale(d, dg, N, 0.37f);
        pw[k] = tt_down_free(d, dw, N), pm[k] = tt_down_free(d, dm, N), pv[k] = tt_down_free(d, dv, N);
        sc[k] = tt_down_free(d, dg, N);
    }
    printf("    sum of squares cpu %.17g cuda %.17g\n", ss[0], ss[1]);
    CHECK(agoq_validate_floats("adam weights", pw[0], pw[1], N) == 0);
    CHECK(agoq_validate_floats("adam first moment", pm[0], pm[1], N) == 0);
    CHECK(agoq_validate_floats("adam second moment", pv[0], pv[1], N) == 0);
    CHECK(agoq_validate_floats("scale", sc[0], sc[1], N) == 0);
    CHECK(fabs(ss[1] - ss[0]) <= 1e-10 * ss[0]); /* double sums of 1e5 terms in two orders: ~1e-14 */
    for (int k = 0; k < 2; k++) free(pw[k]), free(pm[k]), free(pv[k]), free(sc[k]);
    free(w), free(g), free(m), free(v);
    tt_close(&p);
}

/* The three all-reduces, R = 1..4 ranks, sizes that do not fill a block or a shard: the device
 * algorithms reproduce the collectives module's simulated ranks bit for bit, for several
 * agoq8 wire formats (stochastic rounding included: the same per-chunk seeds). */
TEST(cuda_train_op_allreduce_bit_exact) {
    tt_pair p;
    CHECK(tt_open(&p) == 0);
    static const size_t sizes[] = {1, 255, 1000, 3 * 256 + 7, 70001};
    typedef struct { train_grad_mode mode; int fmt, block, stochastic; } red_case;
    static const red_case cases[] = {{GRAD_FP32, 0, 0, 0}, {GRAD_AGOQ8, AGOQ_FMT_INT8, 256, 0},
                                     {GRAD_AGOQ8, AGOQ_FMT_INT8, 256, 1}, {GRAD_AGOQ8, AGOQ_FMT_FP8_E4M3, 128, 0},
                                     {GRAD_AGOQ8, AGOQ_FMT_DYN8, 256, 0}, {GRAD_AGOQ8, AGOQ_FMT_INT8_ASYM, 128, 0},
                                     {GRAD_FP8LM, 0, 0, 0}};
    int bad = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int R = 1; R <= 4; R++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                const red_case *c = &cases[ci];
                const size_t n = sizes[si];
                agoq_qconfig q = agoq_qconfig_default(c->mode == GRAD_AGOQ8 ? (agoq_format)c->fmt : AGOQ_FMT_INT8);
                if (c->block) q.block = c->block;
                if (c->stochastic) q.rounding = AGOQ_ROUND_STOCHASTIC, q.seed = 7;
                float *g[4], *mean[2];
                for (int r = 0; r < R; r++) {
                    g[r] = (float *)malloc(n * sizeof(float));
                    agoq_fill(AGOQ_DIST_HEAVY, g[r], n, 200 + (uint64_t)r + 10 * si);
                }
                BOTH(k, d) {
                    float *dg[4];
                    for (int r = 0; r < R; r++) dg[r] = tt_up(d, g[r], n * sizeof(float));
                    float *dm = d->ops->alloc(d, n * sizeof(float));
                    CHECK(d->ops->reduce_init(d, c->mode, &q, R, n) == 0);
                    d->ops->reduce_mean(d, (const float *const *)dg, n, dm);
                    mean[k] = tt_down_free(d, dm, n);
                    for (int r = 0; r < R; r++) d->ops->release(d, dg[r]);
                }
                char what[128];
                snprintf(what, sizeof what, "%s %s/%d%s R=%d n=%zu", train_grad_mode_names[c->mode],
                         agoq_formats[q.fmt].name, q.block, c->stochastic ? " stochastic" : "", R, n);
                if (agoq_validate_floats(what, mean[0], mean[1], n)) {
                    fprintf(stderr, "    mismatch in %s\n", what);
                    bad++;
                }
                free(mean[0]), free(mean[1]);
                for (int r = 0; r < R; r++) free(g[r]);
            }
    float *g3[3], *m3[2]; /* the exact mean the trainer measures the all-reduce against */
    for (int r = 0; r < 3; r++) g3[r] = tt_normal(1001, 300 + (uint64_t)r, 1.0f);
    BOTH(k, d) {
        float *dg[3];
        for (int r = 0; r < 3; r++) dg[r] = tt_up(d, g3[r], 1001 * sizeof(float));
        float *dm = d->ops->alloc(d, 1001 * sizeof(float));
        d->ops->mean_fp32(d, (const float *const *)dg, 3, 1001, dm);
        m3[k] = tt_down_free(d, dm, 1001);
        for (int r = 0; r < 3; r++) d->ops->release(d, dg[r]);
    }
    bad += agoq_validate_floats("mean_fp32", m3[0], m3[1], 1001) != 0;
    free(m3[0]), free(m3[1]);
    for (int r = 0; r < 3; r++) free(g3[r]);
    tt_close(&p);
    CHECK(bad == 0);
}
