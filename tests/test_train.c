/* The training path: backward pass against finite differences, recompute == store when
 * nothing is quantized (bit-exact), loss decreasing over a few steps, the AGoQ policy's
 * gradients within a derived bound of the bf16 policy's, the three gradient all-reduces, the
 * corpus generator, and the `train` experiment's bad-input handling. CPU only, a few seconds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/rng.h"
#include "kernels/grad8/grad8.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"
#include "runners/experiment.h"
#include "tests/test.h"
#include "train/corpus.h"
#include "train/dp.h"
#include "train/engine.h"
#include "core/backend.h"
#include "train/model.h"
#include "train/ops.h"
#include "train/trainer.h"

static train_cfg tiny_cfg(void) {
    train_cfg c = {.vocab = 256, .seq_len = 8, .n_layer = 2, .n_head = 2, .d_model = 16, .d_ff = 24,
                   .batch = 2, .rope_base = 10000.0f, .norm_eps = 1e-5f};
    return c;
}

static void tiny_batch(const train_cfg *c, uint64_t seed, int *tok, int *tgt) {
    uint8_t text[4096];
    agoq_rng r = {seed};
    train_grammar_text(7, text, sizeof text);
    train_sample_batch(text, sizeof text, c->batch, c->seq_len, &r, tok, tgt);
}

static train_act_policy policy(const char *name) {
    train_act_policy p;
    train_act_policy_by_name(name, 128, &p);
    return p;
}

/* Finite differences per tensor along two directions: the gradient's own (d = g/|g|: the
 * central difference must give |g|, which catches wrong magnitudes and any error component
 * orthogonal to the true gradient) and a random one. The loss is a mean of fp32 per-token
 * losses summed in double, noise ~1e-7 relative; each tensor is moved by e = 0.2% of its norm,
 * so roundoff and the O(e^2) truncation stay below ~1e-3 relative (measured). Tolerance 1% of
 * the larger of |<g,d>| and 1e-3 |g|: a backward bug is an O(1) relative error. */
TEST(train_backward_matches_finite_differences) {
    train_cfg c = tiny_cfg();
    train_act_policy p = policy("fp32");
    train_model m;
    CHECK(train_model_init(&m, &c, &p) == 0);
    train_model_init_weights(&m, 3);
    /* weights 5x the init scale and non-trivial gains: gradients well above the loss noise */
    for (int t = 0; t < P_COUNT; t++)
        for (size_t i = 0; i < m.params.size[t]; i++) {
            int is_norm = t == P_LN1 || t == P_LN2 || t == P_LNF;
            m.params.t[t][i] = is_norm ? 1.0f + 0.1f * (float)((i * 7) % 5) : 5.0f * m.params.t[t][i];
        }
    int tok[16], tgt[16];
    tiny_batch(&c, 11, tok, tgt);
    train_step_grads(&m, tok, tgt);
    float *g = malloc(m.params.total * sizeof(float)), *w0 = malloc(m.params.total * sizeof(float));
    memcpy(g, m.grads.mem, m.params.total * sizeof(float));
    memcpy(w0, m.params.mem, m.params.total * sizeof(float));
    agoq_rng r = {99};
    for (int t = 0; t < P_COUNT; t++) {
        size_t n = m.params.size[t], off = (size_t)(m.params.t[t] - m.params.mem);
        float *d = malloc(n * sizeof(float));
        double gn = 0, wn = 0;
        for (size_t i = 0; i < n; i++) gn += (double)g[off + i] * g[off + i], wn += (double)w0[off + i] * w0[off + i];
        gn = sqrt(gn), wn = sqrt(wn);
        const double eps = 0.002 * wn;
        for (int dir = 0; dir < 2; dir++) {
            double nd = 0, gd = 0;
            for (size_t i = 0; i < n; i++) {
                d[i] = dir == 0 ? g[off + i] : (float)agoq_rng_normal(&r);
                nd += (double)d[i] * d[i];
            }
            for (size_t i = 0; i < n; i++) d[i] = (float)(d[i] / sqrt(nd));
            for (size_t i = 0; i < n; i++) gd += (double)g[off + i] * d[i];
            for (size_t i = 0; i < n; i++) m.params.t[t][i] = w0[off + i] + (float)(eps * d[i]);
            double lp = train_forward(&m, tok, tgt);
            for (size_t i = 0; i < n; i++) m.params.t[t][i] = w0[off + i] - (float)(eps * d[i]);
            double lm = train_forward(&m, tok, tgt);
            memcpy(m.params.t[t], w0 + off, n * sizeof(float));
            double fd = (lp - lm) / (2 * eps), tol = 0.01 * fmax(fabs(gd), 1e-3 * gn);
            printf("    %-4s %s <g,d> %+.6e  fd %+.6e  rel %.2e\n", train_param_names[t], dir ? "rand" : "grad", gd, fd,
                   fabs(fd - gd) / fabs(gd));
            CHECK_MSG(fabs(fd - gd) <= tol, "tensor %s: <g,d> = %g, finite difference %g", train_param_names[t], gd, fd);
        }
        free(d);
    }
    free(g);
    free(w0);
    train_model_free(&m);
}

/* With exact (fp32) storage, recomputing the norm outputs and the FC2 input in backward runs
 * the forward's own functions on the forward's own inputs: gradients must match bit for bit. */
TEST(train_recompute_equals_store_without_quantization) {
    train_cfg c = tiny_cfg();
    train_act_policy store = policy("fp32"), recompute = policy("fp32");
    recompute.store[AGOQ_ROLE_QKV_IN].kind = AGOQ_STORE_RECOMPUTE;
    recompute.store[AGOQ_ROLE_FFN1_IN].kind = AGOQ_STORE_RECOMPUTE;
    recompute.store[AGOQ_ROLE_FFN2_IN].kind = AGOQ_STORE_RECOMPUTE;
    train_model a, b;
    CHECK(train_model_init(&a, &c, &store) == 0 && train_model_init(&b, &c, &recompute) == 0);
    train_model_init_weights(&a, 5);
    train_model_init_weights(&b, 5);
    int tok[16], tgt[16];
    tiny_batch(&c, 3, tok, tgt);
    double la = train_step_grads(&a, tok, tgt), lb = train_step_grads(&b, tok, tgt);
    CHECK(la == lb);
    CHECK(agoq_validate_floats("grads", a.grads.mem, b.grads.mem, a.grads.total) == 0);
    CHECK(b.act_bytes_per_layer < a.act_bytes_per_layer); /* recomputed slots are not stored */
    train_model_free(&a);
    train_model_free(&b);
}

static train_run_cfg tiny_run(const char *act, train_grad_mode grad) {
    train_run_cfg r = {.model = tiny_cfg(), .grad = grad, .ranks = 2, .steps = 12, .warmup = 2, .lr = 1e-2f,
                       .min_lr_frac = 0.1f, .weight_decay = 0.0f, .grad_clip = 1.0f, .beta1 = 0.9f, .beta2 = 0.95f,
                       .eval_windows = 8, .seed = 1};
    r.model.seq_len = 16;
    r.grad_q = agoq_qconfig_default(AGOQ_FMT_INT8);
    r.grad_q.block = 256;
    r.act = policy(act);
    return r;
}

/* A few steps on the grammar corpus: the initial held-out loss is ~ln 256 (uniform over bytes
 * at small init), and 12 AdamW steps at lr 1e-2 learn the byte frequencies at least (the
 * unigram entropy of the corpus is ~3 nats: a drop of more than 1 nat is required). Every
 * policy pair is exercised, the quantized ones included. */
TEST(train_loss_decreases_for_every_policy) {
    train_corpus corpus;
    CHECK(train_corpus_grammar(&corpus, 1, 64 << 10, 8 << 10) == 0);
    const char *acts[] = {"bf16", "agoq", "uniform4", "coat"};
    const train_grad_mode grads[] = {GRAD_FP32, GRAD_AGOQ8, GRAD_FP8LM};
    for (int i = 0; i < 4; i++) {
        train_run_cfg rc = tiny_run(acts[i], grads[i % 3]);
        train_trainer t;
        CHECK(train_trainer_init(&t, &rc, &corpus) == 0);
        double l0 = train_trainer_eval(&t), first = 0, last = 0;
        for (long s = 0; s < rc.steps; s++) {
            double l = train_trainer_step(&t, NULL);
            if (s == 0) first = l;
            last = l;
        }
        double l1 = train_trainer_eval(&t), rerr = agoq_norm_l2(&t.reduce_err);
        printf("    %-8s + %-5s held-out %.4f -> %.4f, train %.4f -> %.4f, all-reduce rel L2 %.4f\n", acts[i],
               train_grad_mode_names[grads[i % 3]], l0, l1, first, last, rerr);
        train_trainer_free(&t);
        /* the all-reduce's measured error: none for fp32, a few percent for the 8-bit ones */
        CHECK_MSG(grads[i % 3] == GRAD_FP32 ? rerr == 0.0 : (rerr > 1e-4 && rerr < 0.2), "all-reduce error %g", rerr);
        CHECK_NEAR(l0, log(256.0), 0.05);
        CHECK_MSG(l1 < l0 - 1.0 && last < first - 1.0, "%s: loss did not drop by 1 nat", acts[i]);
    }
    train_corpus_free(&corpus);
}

/* AGoQ's gradients against the bf16 policy's, same weights and batch. Bound, derived: every
 * weight gradient is bilinear in (stored activation, upstream gradient) and AGoQ perturbs each
 * stored tensor by its FP4 error, relative L2 size delta = sqrt(NMSE of FP4 E2M1 block 128),
 * measured here on N(0,1) (about 0.11); RMSNorm is scale-invariant and SiLU 1.1-Lipschitz, so
 * the recomputation adds no gain > 1, and errors of independent blocks add in quadrature. So
 * relative L2(g_agoq - g_bf16) <= delta (and cosine >= 1 - delta^2 / 2). The uniform-4-bit
 * policy also quantizes q, k, v and the probabilities and must land further away than AGoQ. */
TEST(train_agoq_gradients_within_fp4_bound_of_bf16) {
    enum { NQ = 1 << 16 };
    float *x = malloc(NQ * sizeof(float)), *y = malloc(NQ * sizeof(float));
    agoq_fill(AGOQ_DIST_NORMAL, x, NQ, 17);
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
    q.block = 128;
    agoq_fake_quant_ref(&q, x, NQ, y);
    agoq_error_stats qe = agoq_compare(x, y, NQ);
    double delta = agoq_norm_l2(&qe);
    free(x);
    free(y);
    train_cfg c = {.vocab = 256, .seq_len = 32, .n_layer = 2, .n_head = 4, .d_model = 128, .d_ff = 256,
                   .batch = 2, .rope_base = 10000.0f, .norm_eps = 1e-5f};
    const char *names[] = {"bf16", "agoq", "uniform4", "coat"};
    train_model m[4];
    int tok[64], tgt[64];
    tiny_batch(&c, 21, tok, tgt);
    for (int i = 0; i < 4; i++) {
        train_act_policy p = policy(names[i]);
        CHECK(train_model_init(&m[i], &c, &p) == 0);
        train_model_init_weights(&m[i], 8);
        train_step_grads(&m[i], tok, tgt);
    }
    double err[4];
    for (int i = 1; i < 4; i++) {
        agoq_error_stats e = agoq_compare(m[0].grads.mem, m[i].grads.mem, m[0].grads.total);
        err[i] = agoq_norm_l2(&e);
        printf("    %-8s vs bf16: rel L2 %.4f cosine %.6f (fp4 delta %.4f)\n", names[i], err[i], e.cosine, delta);
        if (i == 1) CHECK(err[1] <= delta && e.cosine >= 1.0 - delta * delta / 2);
    }
    CHECK(err[2] > err[1]);
    for (int i = 0; i < 4; i++) train_model_free(&m[i]);
}

/* The exact mean above the threading threshold (OpenMP in dp.c): every element summed in rank
 * order by one thread, so the result equals a plain serial loop bit for bit. */
TEST(train_mean_fp32_threaded_is_the_serial_mean) {
    enum { R = 3, N = 200003 };
    float *buf = malloc((size_t)(R + 2) * N * sizeof(float));
    CHECK(buf != NULL);
    const float *g[R];
    for (int k = 0; k < R; k++) {
        agoq_fill(AGOQ_DIST_HEAVY, buf + (size_t)k * N, N, 40 + (uint64_t)k);
        g[k] = buf + (size_t)k * N;
    }
    float *mean = buf + (size_t)R * N, *want = buf + (size_t)(R + 1) * N;
    train_mean_fp32(g, R, N, mean);
    size_t bad = 0;
    for (size_t i = 0; i < N; i++) {
        float acc = g[0][i];
        for (int k = 1; k < R; k++) acc += g[k][i];
        want[i] = acc * (1.0f / (float)R);
        bad += memcmp(&want[i], &mean[i], sizeof(float)) != 0;
    }
    CHECK_MSG(bad == 0, "%zu of %d elements differ", bad, N);
    free(buf);
}

/* fp32: the exact mean. fp8lm on a hand-computed case (R = 2, shared scale s = 2 * 1 / 448):
 * g/s = {224, 0.224} and {112, 0.672} encode to e4m3 {224, 0.21875} and {112, 0.6875}; the
 * sums 336 and 0.90625 are exact ties and round to the even codes 320 and 0.875; mean =
 * sum * s / 2 = {320/448, 0.875/448} instead of {0.75, 0.002}. */
TEST(train_grad_reduce_fp32_and_fp8lm_by_hand) {
    const float g0[2] = {1.0f, 0.001f}, g1[2] = {0.5f, 0.003f};
    const float *g[2] = {g0, g1};
    float mean[2];
    train_reducer r;
    CHECK(train_reducer_init(&r, GRAD_FP32, NULL, 2, 2, "cpu") == 0);
    train_reduce_mean(&r, g, 2, mean);
    CHECK(mean[0] == 0.75f && mean[1] == (0.001f + 0.003f) * 0.5f);
    train_reducer_free(&r);
    CHECK(train_reducer_init(&r, GRAD_FP8LM, NULL, 2, 2, "cpu") == 0);
    train_reduce_mean(&r, g, 2, mean);
    CHECK_NEAR(mean[0], 320.0 / 448.0, 1e-6);
    CHECK_NEAR(mean[1], 0.875 / 448.0, 1e-9);
    train_reducer_free(&r);
}

/* agoq8 against the exact mean: each rank's int8 copy is off by at most half its block step
 * s_r / 2 (s_r = absmax_r / 127) and the requantized sum by half the output step, so
 * |mean - exact| <= (sum_r s_r / 2 + s_out / 2) / R per element (s_out = absmax(sum) / 127). */
TEST(train_grad_reduce_agoq8_within_int8_steps) {
    enum { R = 4, N = 1000, B = 256 };
    float *g[R], exact[N], mean[N];
    for (int k = 0; k < R; k++) {
        g[k] = malloc(N * sizeof(float));
        agoq_fill(AGOQ_DIST_HEAVY, g[k], N, 40 + (uint64_t)k);
    }
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_INT8);
    q.block = B;
    train_reducer r;
    CHECK(train_reducer_init(&r, GRAD_AGOQ8, &q, R, N, "cpu") == 0);
    train_reduce_mean(&r, (const float *const *)g, N, mean);
    size_t bad = 0;
    for (int b0 = 0; b0 < N; b0 += B) {
        int e = b0 + B < N ? b0 + B : N;
        double step_sum = 0, amax_sum = 0;
        for (int k = 0; k < R; k++) {
            double a = 0;
            for (int i = b0; i < e; i++) a = fmax(a, fabs(g[k][i]));
            step_sum += a / 127;
        }
        for (int i = b0; i < e; i++) {
            double s = 0;
            for (int k = 0; k < R; k++) s += g[k][i];
            exact[i] = (float)(s / R);
            amax_sum = fmax(amax_sum, fabs(s));
        }
        double bound = (step_sum / 2 + amax_sum / 127 / 2) / R * (1 + 1e-5);
        for (int i = b0; i < e; i++) bad += fabs(mean[i] - exact[i]) > bound;
    }
    agoq_error_stats st = agoq_compare(exact, mean, N);
    printf("    agoq8 R=%d: rel L2 %.2e vs exact mean, %zu elements over the bound\n", R, agoq_norm_l2(&st), bad);
    CHECK(bad == 0);
    CHECK(agoq_norm_l2(&st) > 0); /* it really quantized */
    train_reducer_free(&r);
    for (int k = 0; k < R; k++) free(g[k]);
}

/* The generated corpus is a pure function of its seed, printable, and pinned to its text. */
TEST(train_grammar_corpus_is_deterministic) {
    uint8_t a[4096], b[4096], c[4096];
    train_grammar_text(1, a, sizeof a);
    train_grammar_text(1, b, sizeof b);
    train_grammar_text(2, c, sizeof c);
    CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(a, c, sizeof a) != 0);
    for (size_t i = 0; i < sizeof a; i++) CHECK(a[i] == '\n' || (a[i] >= 32 && a[i] < 127));
    const char *head = "The dogs under every old tree are old. The small cat near the small cat is green, but the trees";
    CHECK_MSG(memcmp(a, head, strlen(head)) == 0, "corpus text changed: '%.60s'", (const char *)a);
}

static int run_bad_train(const char *name, const char *cfg, const char *want) {
    char file[512], out[512], args[2048], msg[8192];
    snprintf(file, sizeof file, "%s/%s.json", agoq_test_tmpdir(), name);
    snprintf(out, sizeof out, "%s/%s.out.json", agoq_test_tmpdir(), name);
    snprintf(msg, sizeof msg, "{\"kind\": \"train\", \"config\": %s}", cfg);
    agoq_test_write(file, msg);
    snprintf(args, sizeof args, "run %s --out %s --backend cpu -q", file, out);
    int rc = agoq_test_run_cli(args, msg, sizeof msg);
    if (rc == 0 || !strstr(msg, want) || !strstr(msg, file) || agoq_test_file_exists(out)) {
        fprintf(stderr, "    %s: rc %d, message: %s\n", name, rc, msg);
        return 0;
    }
    return 1;
}

/* An experiment file whose "backend" cannot run: refused before training, nothing written. */
static int run_bad_train_backend(const char *name, const char *backend, const char *want) {
    char file[512], out[512], args[2048], msg[8192];
    snprintf(file, sizeof file, "%s/%s.json", agoq_test_tmpdir(), name);
    snprintf(out, sizeof out, "%s/%s.out.json", agoq_test_tmpdir(), name);
    snprintf(msg, sizeof msg, "{\"kind\": \"train\", \"backend\": \"%s\", \"config\": {\"steps\": 1}}", backend);
    agoq_test_write(file, msg);
    snprintf(args, sizeof args, "run %s --out %s -q", file, out);
    int rc = agoq_test_run_cli(args, msg, sizeof msg);
    if (rc != 1 || !strstr(msg, want) || agoq_test_file_exists(out)) {
        fprintf(stderr, "    %s: rc %d, message: %s\n", name, rc, msg);
        return 0;
    }
    return 1;
}

TEST(train_bad_config_names_file_and_key) {
    CHECK(run_bad_train("trun", "{\"runs\": [\"agoq+int4\"]}", "key 'config.runs[0]': bad run 'agoq+int4'"));
    CHECK(run_bad_train("tkey", "{\"stpes\": 3}", "unknown key 'config.stpes'"));
    CHECK(run_bad_train("twin", "{\"eval_windows\": 10}", "key 'config.eval_windows': 10 is not a multiple"));
    CHECK(run_bad_train("thead", "{\"d_model\": 30, \"heads\": 4}", "key 'config.heads'"));
    CHECK(run_bad_train("tgfmt", "{\"grad_format\": \"fp4_e2m1\"}", "key 'config.grad_format'"));
    CHECK(run_bad_train("tcorp", "{\"corpus\": \"/nonexistent/text\"}", "/nonexistent/text"));
}

TEST(train_cli_tiny_run_writes_curves) {
    char out[512], args[1024], msg[16384];
    snprintf(out, sizeof out, "%s/train_tiny.json", agoq_test_tmpdir());
    snprintf(args, sizeof args,
             "train --steps 2 --eval-every 1 --layers 1 --d-model 16 --heads 2 --d-ff 16 --seq-len 8 --micro-batch 2 "
             "--runs bf16+fp32,agoq+agoq8 -q -o %s", out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0, "%s", msg);
    CHECK(agoq_test_file_exists(out));
    CHECK(strstr(msg, "agoq+agoq8") && strstr(msg, "# final held-out loss after 2 steps"));
    /* one thread or two: every sum keeps its order, so the curves are identical */
    char msg1[16384], msg2[16384];
    /* large enough that the GEMMs and attention pass layers.c's threading threshold */
    const char *tiny = "train --steps 2 --eval-every 2 --layers 1 --d-model 64 --heads 2 --d-ff 128 --seq-len 32 "
                       "--micro-batch 4 --runs agoq+agoq8 -q";
    const char *saved = getenv("OMP_NUM_THREADS");
    char keep[64];
    snprintf(keep, sizeof keep, "%s", saved ? saved : "");
    setenv("OMP_NUM_THREADS", "1", 1);
    snprintf(args, sizeof args, "%s -o %s/t1.json", tiny, agoq_test_tmpdir());
    int rc1 = agoq_test_run_cli(args, msg1, sizeof msg1);
    setenv("OMP_NUM_THREADS", "2", 1);
    snprintf(args, sizeof args, "%s -o %s/t2.json", tiny, agoq_test_tmpdir());
    int rc2 = agoq_test_run_cli(args, msg2, sizeof msg2);
    if (saved) setenv("OMP_NUM_THREADS", keep, 1);
    else unsetenv("OMP_NUM_THREADS");
    CHECK(rc1 == 0 && rc2 == 0);
    char *t1 = strstr(msg1, "# run"), *t2 = strstr(msg2, "# run");
    CHECK(t1 && t2 && strcmp(t1, t2) == 0 && strstr(msg2, ", 2 threads"));
    CHECK(agoq_test_run_cli("train --steps 0", msg, sizeof msg) == 2);
    CHECK(agoq_test_run_cli("train --help", msg, sizeof msg) == 0 && strstr(msg, "usage: agoq train"));
}

/* Runs cut by time_limit_s at different steps: the final gap is taken at the last step both the
 * run and the baseline were evaluated (not at their different last steps); synthetic curves. */
static void add_curve(cJSON *recs, const char *run, double seed, double step, double heldout) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "record", "curve");
    cJSON_AddStringToObject(r, "run", run);
    cJSON_AddNumberToObject(r, "seed", seed);
    cJSON_AddNumberToObject(r, "step", step);
    cJSON_AddNumberToObject(r, "heldout_loss", heldout);
    cJSON_AddItemToArray(recs, r);
}

TEST(train_gap_of_truncated_runs_is_taken_at_a_common_step) {
    cJSON *recs = cJSON_CreateArray();
    for (int s = 0; s <= 600; s += 50) add_curve(recs, "base", 1, s, 2.0 - s * 1e-3);    /* base: 0..600 */
    add_curve(recs, "base", 1, 613, 1.3);                                                /* its cut point */
    for (int s = 0; s <= 400; s += 50) add_curve(recs, "fast", 1, s, 2.0 - s * 1e-3 + 0.01);
    add_curve(recs, "fast", 1, 437, 1.5);                                                /* cut earlier */
    add_curve(recs, "fast", 2, 450, 9.0);                                                /* other seed */
    double gap;
    CHECK(agoq_train_gap_at_common_step(recs, "fast", "base", 1, 437, &gap) == 400);
    CHECK(fabs(gap - 0.01) < 1e-12);
    CHECK(agoq_train_gap_at_common_step(recs, "base", "base", 1, 613, &gap) == 613 && gap == 0.0);
    CHECK(agoq_train_gap_at_common_step(recs, "fast", "base", 1, 30, &gap) == 0 && fabs(gap - 0.01) < 1e-12);
    CHECK(agoq_train_gap_at_common_step(recs, "fast", "base", 2, 450, &gap) == -1 && isnan(gap));
    CHECK(agoq_train_gap_at_common_step(recs, "none", "base", 1, 1000, &gap) == -1 && isnan(gap));
    cJSON_Delete(recs);
}

/* class_probe: one record per saved-tensor class, each a real (nonzero, below 1) error. */
TEST(train_class_probe_records_every_class) {
    char file[512], out[512], args[2048], msg[16384];
    snprintf(file, sizeof file, "%s/cprobe.json", agoq_test_tmpdir());
    snprintf(out, sizeof out, "%s/cprobe.out.json", agoq_test_tmpdir());
    agoq_test_write(file, "{\"kind\": \"train\", \"config\": {\"runs\": [\"bf16+fp32\"], \"layers\": 1, \"d_model\": 32,"
                          " \"heads\": 2, \"d_ff\": 64, \"seq_len\": 16, \"micro_batch\": 2, \"steps\": 2,"
                          " \"eval_windows\": 8, \"class_probe\": true}}");
    snprintf(args, sizeof args, "run %s --out %s --backend cpu -q", file, out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0, "%s", msg);
    static const char *const roles[] = {"norm_in", "qkv_in", "attention", "outproj_in", "ffn1_in", "fc1_out", "ffn2_in"};
    for (size_t c = 0; c < sizeof roles / sizeof roles[0]; c++) {
        char want[64];
        snprintf(want, sizeof want, "  %-12s rel_l2 0.", roles[c]);
        CHECK_MSG(strstr(msg, want) != NULL, "no error line for role %s", roles[c]);
    }
    CHECK(strstr(msg, "rel_l2 0.00000 ") == NULL); /* every class really was quantized */
}

/* The backend interface: the cpu table is complete and selected by default (backend 0). */
TEST(train_ops_table_cpu_is_complete_and_default) {
    train_dev *d = train_dev_open(AGOQ_BACKEND_CPU);
    CHECK(d != NULL && d->kind == AGOQ_BACKEND_CPU && train_ops_complete(d->ops));
    train_ops broken = *d->ops;
    broken.attention_bwd = NULL;
    CHECK(!train_ops_complete(&broken));
    train_dev_close(d);
    train_cfg c = tiny_cfg();
    train_act_policy p = policy("agoq");
    train_model m;
    CHECK(train_model_init(&m, &c, &p) == 0 && m.dev->kind == AGOQ_BACKEND_CPU);
    train_model_free(&m);
}

/* Without a usable GPU (CI, this build with CUDA=0, or no device) the cuda backend is refused
 * with one line naming it, at every entry: the library, `agoq train`, an experiment file; no
 * results file is written. With a GPU, make test-cuda covers the backend. */
TEST(train_cuda_backend_refused_without_gpu) {
    char why[256];
    if (agoq_cuda_devices(why, sizeof why) > 0) SKIP("a GPU is visible: the cuda backend is tested by make test-cuda");
    CHECK(train_dev_open(AGOQ_BACKEND_CUDA) == NULL);
    train_cfg c = tiny_cfg();
    c.backend = AGOQ_BACKEND_CUDA;
    train_act_policy p = policy("bf16");
    train_model m;
    CHECK(train_model_init(&m, &c, &p) == -1);
    char out[512], args[1024], msg[4096];
    snprintf(out, sizeof out, "%s/train_cuda_refused.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "train --backend cuda --steps 1 -q -o %s", out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 1 && strstr(msg, "backend 'cuda'") && !agoq_test_file_exists(out));
    CHECK(run_bad_train_backend("tcuda", "cuda", "backend 'cuda'"));
    CHECK(run_bad_train_backend("tbogus", "tpu", "unknown backend 'tpu'"));
}

/* train/engine.h's layout map is a bijection between the CPU's flat parameters and the step
 * engine's tensors (sizes of step/model.h's order, computed here), and its RoPE permutation
 * sends CPU feature 2i of a q head to engine feature i and 2i + 1 to i + d/2. */
TEST(train_engine_layout_map_is_a_bijection) {
    train_cfg c = tiny_cfg();
    const size_t C = (size_t)c.d_model, F = (size_t)c.d_ff, L = (size_t)c.n_layer, hd = C / (size_t)c.n_head;
    size_t size[P_COUNT], n = 0;
    train_param_sizes(&c, size);
    for (int t = 0; t < P_COUNT; t++) n += size[t];
    const size_t layer[6] = {C, 3 * C * C, C * C, C, 2 * F * C, C * F};
    unsigned char *seen = calloc(n, 1);
    size_t hits = 0, bad = 0;
    for (size_t i = 0; i < 6 * L + 2; i++) {
        const size_t elems = i == 0 ? (size_t)c.vocab * C : i == 6 * L + 1 ? C : layer[(i - 1) % 6];
        for (size_t j = 0; j < elems; j++, hits++) {
            const size_t k = train_engine_cpu_index(&c, i, j);
            bad += k >= n || seen[k]++;
        }
    }
    CHECK(hits == n && bad == 0);
    /* layer 0's qkv: engine row 1 (q head 0, feature 1 < d/2) reads CPU column 2; row d/2 reads
     * column 1; the v rows keep their order (row 2C + 1 reads column 2C + 1) */
    size_t off = size[P_WTE] + size[P_LN1];
    CHECK(train_engine_cpu_index(&c, 2, 1 * C + 0) == off + 0 * 3 * C + 2);
    CHECK(train_engine_cpu_index(&c, 2, (hd / 2) * C + 0) == off + 1);
    CHECK(train_engine_cpu_index(&c, 2, (2 * C + 1) * C + 3) == off + 3 * 3 * C + 2 * C + 1);
    free(seen);
}
