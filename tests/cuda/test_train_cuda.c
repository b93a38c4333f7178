/* The cuda training path end to end against the cpu path (make test-cuda; needs a GPU).
 *
 * One step, same weights and batch, every activation policy: the loss within 1e-5 relative,
 * the gradients within a relative L2 bound per policy. Why they differ at all: cuBLAS and the
 * row kernels sum in another order than the CPU (1e-7..1e-6 relative per op); bf16 and block
 * quantization then amplify that where a value sits near a rounding boundary: it lands on the
 * other side and moves by a whole bf16 ulp or FP4/FP8 step. Bounds, measured by emulation on
 * the CPU (relative noise of 3e-7 sqrt(K) on every GEMM output, 6 seeds, this shape; worst
 * case): fp32 4.6e-6, bf16 5.3e-5, agoq 4.3e-4, uniform4 4.0e-4, coat 2.3e-4. The bounds below
 * sit ~10-20x above those and below each policy's own gradient error against exact storage
 * (bf16 ~2e-3, coat ~2e-2, FP4 ~0.1: docs/train.md), so a store that quantized nothing, or the
 * wrong tensor, fails: fp32 1e-4, bf16 5e-4, coat 3e-3, agoq and uniform4 1e-2.
 *
 * Training: 12 optimizer steps of the cuda trainer for every all-reduce reduce the held-out
 * loss by more than 1 nat (as tests/test_train.c asks of the CPU) and end within 2e-3 of the
 * cpu trainer's held-out loss (emulated difference ~1e-5: the AdamW step itself is bit-exact,
 * test_train_cuda_ops.c). And `agoq train --backend cuda` writes meta.gpu. */
#include "tests/cuda/test_train_cuda_util.h"
#include "train/corpus.h"
#include "train/model.h"
#include "train/trainer.h"

static train_cfg step_cfg(agoq_backend b) {
    /* d_ff 352 and T 64 are not whole FP4 blocks of 128: the ragged rowq path runs too */
    train_cfg c = {.vocab = 256, .seq_len = 64, .n_layer = 2, .n_head = 4, .d_model = 128, .d_ff = 352,
                   .batch = 2, .rope_base = 10000.0f, .norm_eps = 1e-5f, .backend = b};
    return c;
}

TEST(cuda_train_step_matches_cpu_every_policy) {
    static const struct { const char *name; double tol; } pol[] = {
        {"fp32", 1e-4}, {"bf16", 5e-4}, {"agoq", 1e-2}, {"uniform4", 1e-2}, {"coat", 3e-3}};
    uint8_t text[8192];
    agoq_rng r = {21};
    int tok[128], tgt[128];
    train_grammar_text(7, text, sizeof text);
    train_cfg c0 = step_cfg(AGOQ_BACKEND_CPU), c1 = step_cfg(AGOQ_BACKEND_CUDA);
    train_sample_batch(text, sizeof text, c0.batch, c0.seq_len, &r, tok, tgt);
    int ok = 1;
    for (size_t i = 0; i < sizeof pol / sizeof pol[0]; i++) {
        train_act_policy p;
        CHECK(train_act_policy_by_name(pol[i].name, 128, &p) == 0);
        train_model m[2];
        CHECK(train_model_init(&m[0], &c0, &p) == 0 && train_model_init(&m[1], &c1, &p) == 0);
        double loss[2];
        float *g[2], *w[2];
        for (int k = 0; k < 2; k++) {
            train_model_init_weights(&m[k], 8);
            loss[k] = train_step_grads(&m[k], tok, tgt);
            g[k] = malloc(m[k].grads.total * sizeof(float));
            w[k] = malloc(m[k].params.total * sizeof(float));
            train_model_download(&m[k], &m[k].grads, g[k]);
            train_model_download(&m[k], &m[k].params, w[k]);
        }
        const size_t n = m[0].grads.total;
        const double lrel = fabs(loss[1] - loss[0]) / loss[0];
        printf("    %-9s loss cpu %.7f cuda %.7f (rel %.1e)\n", pol[i].name, loss[0], loss[1], lrel);
        for (int t = 0; t < P_COUNT; t++) { /* per tensor, for diagnosis */
            size_t off = (size_t)(m[0].grads.t[t] - m[0].grads.mem);
            printf("      %-4s rel L2 %.3e\n", train_param_names[t], tt_rel_l2(g[0] + off, g[1] + off, m[0].grads.size[t]));
        }
        char what[64];
        snprintf(what, sizeof what, "%s gradients, cuda vs cpu", pol[i].name);
        ok &= agoq_validate_floats("initial weights", w[0], w[1], m[0].params.total) == 0;
        ok &= tt_close_enough(what, g[0], g[1], n, pol[i].tol);
        ok &= lrel <= 1e-5;
        for (int k = 0; k < 2; k++) {
            free(g[k]), free(w[k]);
            train_model_free(&m[k]);
        }
    }
    CHECK(ok);
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

TEST(cuda_train_steps_reduce_loss_and_track_cpu) {
    train_corpus corpus;
    CHECK(train_corpus_grammar(&corpus, 1, 64 << 10, 8 << 10) == 0);
    static const char *const acts[] = {"bf16", "agoq", "uniform4", "coat", "agoq"};
    static const train_grad_mode grads[] = {GRAD_FP32, GRAD_AGOQ8, GRAD_FP8LM, GRAD_FP32, GRAD_FP8LM};
    int ok = 1;
    for (int i = 0; i < 5; i++) {
        double h0[2], h1[2], rerr[2];
        for (int k = 0; k < 2; k++) {
            train_run_cfg rc = run_cfg(acts[i], grads[i], k ? AGOQ_BACKEND_CUDA : AGOQ_BACKEND_CPU);
            train_trainer t;
            CHECK(train_trainer_init(&t, &rc, &corpus) == 0);
            h0[k] = train_trainer_eval(&t);
            for (long s = 0; s < rc.steps; s++) train_trainer_step(&t, NULL);
            h1[k] = train_trainer_eval(&t);
            rerr[k] = agoq_norm_l2(&t.reduce_err);
            train_trainer_free(&t);
        }
        printf("    %-8s + %-5s held-out cpu %.5f -> %.5f, cuda %.5f -> %.5f; all-reduce rel L2 cpu %.4f cuda %.4f\n",
               acts[i], train_grad_mode_names[grads[i]], h0[0], h1[0], h0[1], h1[1], rerr[0], rerr[1]);
        ok &= h1[1] < h0[1] - 1.0 && fabs(h1[1] - h1[0]) <= 2e-3 && fabs(h0[1] - h0[0]) <= 1e-5 * h0[0];
        ok &= grads[i] == GRAD_FP32 ? rerr[1] == 0.0 : (rerr[1] > 1e-4 && rerr[1] < 0.2);
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
}
