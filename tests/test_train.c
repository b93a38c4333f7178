/* The training path: backward pass against finite differences, recompute == store when
 * nothing is quantized (bit-exact), loss decreasing over a few steps, the AGoQ policy's
 * gradients within a derived bound of the bf16 policy's, the three gradient all-reduces, the
 * corpus generator, and the `train` experiment's bad-input handling. CPU only, a few seconds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/metrics.h"
#include "harness/rng.h"
#include "kernels/quant_math.h"
#include "kernels/quant_ref.h"
#include "tests/test.h"
#include "train/corpus.h"
#include "train/dp.h"
#include "train/model.h"
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
    train_model_sync(&m);
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
            train_model_sync(&m);
            double lp = train_forward(&m, tok, tgt);
            for (size_t i = 0; i < n; i++) m.params.t[t][i] = w0[off + i] - (float)(eps * d[i]);
            train_model_sync(&m);
            double lm = train_forward(&m, tok, tgt);
            memcpy(m.params.t[t], w0 + off, n * sizeof(float));
            double fd = (lp - lm) / (2 * eps), tol = 0.01 * fmax(fabs(gd), 1e-3 * gn);
            printf("    %-4s %s <g,d> %+.6e  fd %+.6e  rel %.2e\n", train_param_names[t], dir ? "rand" : "grad", gd, fd,
                   fabs(fd - gd) / fabs(gd));
            CHECK_MSG(fabs(fd - gd) <= tol, "tensor %s: <g,d> = %g, finite difference %g", train_param_names[t], gd, fd);
        }
        free(d);
    }
    train_model_sync(&m);
    free(g);
    free(w0);
    train_model_free(&m);
}
