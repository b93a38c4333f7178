/* The trainer's GPU path (the step engine's model, train/engine.h) against the CPU fp32
 * reference model (make test-cuda; needs a GPU and cuDNN).
 *
 * One micro-batch, same weights and tokens: the engine in bf16 with bf16 store-all against the
 * CPU in fp32 with exact storage. Bounds, derived: the engine rounds the weights and every op's
 * output to bf16 (unit roundoff u = 2^-8; a uniform rounding error has RMS u / sqrt(3) = 2.3e-3
 * relative) and accumulates in fp32. A gradient tensor sits behind k ~ 20 such roundings on its
 * way through forward and backward at 2 layers (weights, norm outputs, GEMM outputs, attention,
 * SwiGLU, residual sums, dlogits, each dgrad); independent errors add in quadrature:
 * sqrt(20) * 2.3e-3 = 0.010 relative L2 for the whole gradient. Bound 0.03 (3x; the step
 * engine's own store-all test against fp32 measured 6.1e-3 with the same derivation). The loss
 * comes from bf16 logits: its error is at most about u times the logits' spread, far below
 * u * loss; bound: relative 2^-8.
 * MEASURED on the H200 (commit 002ab9a, results/h200/logs/test_train_engine_s3.log): 4.7-4.8e-3
 * at every shape below, losses within 3e-4. Before that commit the engine's host-to-device
 * copies did not wait for their DMA (the engine's stream is non-blocking) and this test failed
 * at random (0.07-0.6): the shapes below stay as its diagnostic.
 * Quantized policies: the engine's gradient error against its own bf16 store-all must be of the
 * CPU's magnitude for the same policy against fp32 storage (FP4 / FP8 rounding dominates both):
 * within [0.3x, 2x] of it plus 0.03 (the bf16 term above; 0.3x because the engine's flash
 * attention keeps its output as an attention tensor, bf16, where the CPU model stores the
 * out-projection input as the policy says), so a store that quantized nothing, or the wrong
 * tensor, fails. uniform4 (attention quantized) needs head_dim a multiple of the block on the
 * engine and is not run at these shapes.
 *
 * Training: 12 optimizer steps of the engine-backed trainer reduce the held-out loss by more
 * than 1 nat (as tests/test_train.c asks of the CPU) and end within 0.1 nat of the CPU
 * trainer's (bf16 vs fp32: the per-step gradient differs by ~1e-2 relative, AdamW's normalized
 * steps carry that into the weights; 12 steps that move the loss by ~3 nats move it ~1-3% apart).
 * The engine's agoq8 and fp8lm all-reduces run on the collectives' cuda-local backend (GPU 0),
 * the CPU model's on the cpu one (the allreduce_backend each trainer reports).
 * And `agoq train --backend cuda` writes meta.gpu, and final records whose allreduce_backend is
 * cuda-local for the quantized all-reduces. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/rng.h"
#include "tests/test.h"
#include "train/corpus.h"
#include "train/engine.h"
#include "train/model.h"
#include "train/trainer.h"

/* The shape of the one-step checks; g_shape picks n_head (head_dim 128 / n_head) and d_ff. */
typedef struct {
    int n_head, d_ff;
} step_shape;
static step_shape g_shape = {4, 352};

static train_cfg step_cfg(agoq_backend b) {
    /* d_ff 352 and T 64 are not whole FP4 blocks of 128: the ragged rowq path runs too */
    train_cfg c = {.vocab = 256, .seq_len = 64, .n_layer = 2, .n_head = g_shape.n_head, .d_model = 128,
                   .d_ff = g_shape.d_ff, .batch = 2, .rope_base = 10000.0f, .norm_eps = 1e-5f, .backend = b};
    return c;
}

static double rel_l2(const float *ref, const float *got, size_t n) {
    agoq_error_stats e = agoq_compare(ref, got, n);
    return e.nonfinite ? INFINITY : agoq_norm_l2(&e);
}

/* CPU gradients (flat P_* layout) of one micro-batch under policy name, weights of seed 8. */
static double cpu_grads(const char *name, const int *tok, const int *tgt, float *g) {
    train_cfg c = step_cfg(AGOQ_BACKEND_CPU);
    train_act_policy p;
    train_model m;
    if (train_act_policy_by_name(name, 128, &p) || train_model_init(&m, &c, &p)) return NAN;
    train_model_init_weights(&m, 8);
    double loss = train_step_grads(&m, tok, tgt);
    train_model_download(&m, &m.grads, g);
    train_model_free(&m);
    return loss;
}

/* Engine gradients, mapped to the CPU layout. */
static double engine_grads(const char *name, const int *tok, const int *tgt, float *g) {
    train_cfg c = step_cfg(AGOQ_BACKEND_CUDA);
    train_act_policy p;
    agoq_lm *lm;
    if (train_act_policy_by_name(name, 128, &p) || train_engine_open(&c, &p, 8, &lm)) return NAN;
    const size_t nt = agoq_lm_tensor_count(lm);
    float **eng = calloc(nt, sizeof *eng);
    double loss = NAN;
    for (size_t i = 0; i < nt; i++) eng[i] = malloc(agoq_lm_tensor_elems(lm, i) * sizeof(float));
    if (agoq_lm_grads(lm, tok, tgt, &loss, eng) == 0) train_engine_to_cpu(&c, lm, eng, g);
    for (size_t i = 0; i < nt; i++) free(eng[i]);
    free(eng);
    agoq_lm_close(lm);
    return loss;
}

/* CPU fp32 and engine bf16 gradients of one micro-batch at shape sh into ref / eng (n
 * elements, the CPU layout); prints the losses and the relative L2 per tensor; returns the whole
 * gradient's relative L2. */
static double bf16_vs_fp32(step_shape sh, const int *tok, const int *tgt, float *ref, float *eng, double *l_ref,
                           double *l_eng) {
    g_shape = sh;
    train_cfg c = step_cfg(AGOQ_BACKEND_CPU);
    size_t size[P_COUNT], n = 0;
    train_param_sizes(&c, size);
    for (int t = 0; t < P_COUNT; t++) n += size[t];
    *l_ref = cpu_grads("fp32", tok, tgt, ref);
    *l_eng = engine_grads("bf16", tok, tgt, eng);
    const double e = rel_l2(ref, eng, n);
    printf("    head_dim %d, d_ff %d: loss cpu fp32 %.6f engine bf16 %.6f; gradient rel L2 %.3e (bound 0.03)\n",
           128 / sh.n_head, sh.d_ff, *l_ref, *l_eng, e);
    size_t off = 0;
    for (int t = 0; t < P_COUNT; off += size[t], t++)
        printf("      %-4s rel L2 %.3e\n", train_param_names[t], rel_l2(ref + off, eng + off, size[t]));
    return e;
}

TEST(cuda_train_engine_step_matches_cpu_fp32) {
    uint8_t text[8192];
    agoq_rng r = {21};
    int tok[128], tgt[128];
    train_grammar_text(7, text, sizeof text);
    {
        const train_cfg c0 = step_cfg(AGOQ_BACKEND_CPU); /* batch and seq_len: the same at every shape */
        train_sample_batch(text, sizeof text, c0.batch, c0.seq_len, &r, tok, tgt);
    }
    /* Diagnostic of the open bf16 mismatch: the same check at head_dim 64 and at d_ff 384 (a
     * multiple of 128) beside the main shape (head_dim 32, d_ff 352, last: the quantized checks
     * below use its gradients), all printed per tensor before any check, so one GPU run says
     * which dimension it follows; each shape is checked against the same bound. */
    static const step_shape shapes[] = {{1, 384}, {2, 352}, {4, 384}, {4, 352}};
    const size_t ns = sizeof shapes / sizeof shapes[0];
    size_t nmax = 0;
    for (size_t k = 0; k < ns; k++) {
        g_shape = shapes[k];
        train_cfg ck = step_cfg(AGOQ_BACKEND_CPU);
        size_t size[P_COUNT], nk = 0;
        train_param_sizes(&ck, size);
        for (int t = 0; t < P_COUNT; t++) nk += size[t];
        nmax = nk > nmax ? nk : nmax;
    }
    float *ref = malloc(nmax * 4), *cpu_q = malloc(nmax * 4), *eng_bf = malloc(nmax * 4), *eng_q = malloc(nmax * 4);
    double err[4], l_ref = 0, l_eng = 0;
    for (size_t k = 0; k < ns; k++) err[k] = bf16_vs_fp32(shapes[k], tok, tgt, ref, eng_bf, &l_ref, &l_eng);
    for (size_t k = 0; k + 1 < ns; k++)
        CHECK_MSG(err[k] <= 0.03, "head_dim %d, d_ff %d: gradient rel L2 %.3e over 0.03", 128 / shapes[k].n_head,
                  shapes[k].d_ff, err[k]);
    CHECK(fabs(l_eng - l_ref) <= l_ref / 256.0);
    CHECK(err[ns - 1] <= 0.03);
    train_cfg c = step_cfg(AGOQ_BACKEND_CPU); /* the main shape, g_shape = shapes[ns - 1] */
    size_t size[P_COUNT], n = 0;
    train_param_sizes(&c, size);
    for (int t = 0; t < P_COUNT; t++) n += size[t];
    static const char *const quant[] = {"agoq", "coat"}; /* uniform4: head_dim 32 is not a whole FP4 block */
    for (size_t i = 0; i < sizeof quant / sizeof quant[0]; i++) {
        cpu_grads(quant[i], tok, tgt, cpu_q);
        engine_grads(quant[i], tok, tgt, eng_q);
        const double ec = rel_l2(ref, cpu_q, n), ee = rel_l2(eng_bf, eng_q, n);
        printf("    %-8s gradient error: cpu vs fp32 %.3e, engine vs engine bf16 %.3e\n", quant[i], ec, ee);
        CHECK(ee >= 0.3 * ec && ee <= 2.0 * ec + 0.03);
    }
    free(ref), free(cpu_q), free(eng_bf), free(eng_q);
}

static train_run_cfg run_cfg(const char *act, train_grad_mode grad, agoq_backend b) {
    train_run_cfg r = {.model = {.vocab = 256, .seq_len = 32, .n_layer = 2, .n_head = 2, .d_model = 64, .d_ff = 96,
                                 .batch = 2, .rope_base = 10000.0f, .norm_eps = 1e-5f, .backend = b},
                       .grad = grad, .ranks = 2, .steps = 12, .warmup = 2, .lr = 1e-2f, .min_lr_frac = 0.1f,
                       .weight_decay = 0.1f, .grad_clip = 1.0f, .beta1 = 0.9f, .beta2 = 0.95f, .eval_windows = 8,
                       .seed = 1};
    r.grad_q = agoq_qconfig_default(AGOQ_FMT_INT8);
    r.grad_q.block = 256;
    train_act_policy_by_name(act, 128, &r.act);
    return r;
}

TEST(cuda_train_engine_steps_reduce_loss_and_track_cpu) {
    train_corpus corpus;
    CHECK(train_corpus_grammar(&corpus, 1, 64 << 10, 8 << 10) == 0);
    static const char *const acts[] = {"bf16", "agoq", "coat", "bf16"};
    static const train_grad_mode grads[] = {GRAD_FP32, GRAD_AGOQ8, GRAD_FP32, GRAD_FP8LM};
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        double h0[2], h1[2], rerr[2];
        const char *ar[2];
        for (int k = 0; k < 2; k++) {
            train_run_cfg rc = run_cfg(acts[i], grads[i], k ? AGOQ_BACKEND_CUDA : AGOQ_BACKEND_CPU);
            train_trainer t;
            CHECK(train_trainer_init(&t, &rc, &corpus) == 0);
            h0[k] = train_trainer_eval(&t);
            for (long s = 0; s < rc.steps; s++) train_trainer_step(&t, NULL);
            h1[k] = train_trainer_eval(&t);
            rerr[k] = agoq_norm_l2(&t.reduce_err);
            ar[k] = t.allreduce_backend;
            train_trainer_free(&t);
        }
        printf("    %-8s + %-5s held-out cpu %.5f -> %.5f, engine %.5f -> %.5f; all-reduce rel L2 cpu %.4f (%s) "
               "engine %.4f (%s)\n",
               acts[i], train_grad_mode_names[grads[i]], h0[0], h1[0], h0[1], h1[1], rerr[0], ar[0], rerr[1], ar[1]);
        ok &= h1[1] < h0[1] - 1.0 && fabs(h1[1] - h1[0]) <= 0.1 && fabs(h0[1] - h0[0]) <= h0[0] / 256.0;
        ok &= grads[i] == GRAD_FP32 ? rerr[1] == 0.0 : (rerr[1] > 1e-4 && rerr[1] < 0.2);
        /* the engine's quantized all-reduces run on the GPU backend, the CPU model's on the host */
        ok &= strcmp(ar[1], grads[i] == GRAD_FP32 ? "host" : "cuda-local") == 0 &&
              strcmp(ar[0], grads[i] == GRAD_FP32 ? "host" : "cpu") == 0;
    }
    train_corpus_free(&corpus);
    CHECK(ok);
}

/* The CLI on the GPU: a results file with meta.backend "cuda" and meta.gpu. AGOQ_BIN names the
 * agoq binary of this build (make test-cuda and tools/device_train_cuda.sh set it). */
TEST(cuda_train_cli_writes_gpu_meta) {
    char out[512], args[1024], msg[16384];
    snprintf(out, sizeof out, "%s/train_cuda.json", agoq_test_tmpdir());
    snprintf(args, sizeof args,
             "train --backend cuda --steps 3 --eval-every 1 --layers 1 --d-model 32 --heads 2 --d-ff 64 --seq-len 16 "
             "--micro-batch 2 --runs bf16+fp32,agoq+agoq8,coat+fp8lm -q -o %s", out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0, "%s (AGOQ_BIN=%s)", msg, agoq_test_bin());
    CHECK(strstr(msg, "backend cuda") && strstr(msg, "# final held-out loss after 3 steps"));
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    static char json[1 << 20];
    size_t len = fread(json, 1, sizeof json - 1, f);
    fclose(f);
    json[len] = '\0';
    CHECK(strstr(json, "\"backend\":\t\"cuda\"") || strstr(json, "\"backend\": \"cuda\""));
    CHECK(strstr(json, "\"gpu\":") && strstr(json, "\"compute_capability\":"));
    /* agoq8 and fp8lm reduced on GPU 0, fp32 exactly on the host */
    CHECK(strstr(json, "\"allreduce_backend\":\t\"cuda-local\"") && strstr(json, "\"allreduce_backend\":\t\"host\""));
}
