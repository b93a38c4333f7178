/* CPU tests of the embedding and cross-entropy references (kernels/lm/lm_ref.c): the gather
 * copies rows, the scatter-add sums repeated tokens in order, the cross-entropy of uniform
 * logits is log V with gradient (1/V - [j = y]) dscale, and the loss and gradient of random
 * logits agree with a double-precision softmax (loss within 1e-5 relative, gradient within one
 * bf16 ulp plus 1e-7 absolute: fp32 exp/log against double, then one bf16 rounding). */
#include <math.h>
#include <stdlib.h>

#include "core/rng.h"
#include "kernels/lm/lm.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"

TEST(lm_embed_gather_and_scatter_add) {
    enum { V = 5, H = 3, T = 4 };
    uint16_t wte[V * H], out[T * H], dx[T * H];
    const int tok[T] = {2, 0, 2, 4};
    for (int i = 0; i < V * H; i++) wte[i] = agoq_f32_to_bf16((float)i);
    agoq_embed_fwd_ref(wte, tok, T, H, out);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < H; c++) CHECK(out[t * H + c] == wte[tok[t] * H + c]);
    for (int i = 0; i < T * H; i++) dx[i] = agoq_f32_to_bf16(0.5f * (float)(i + 1));
    float dw[V * H] = {0};
    dw[1] = 1.0f; /* accumulates into what is there */
    agoq_embed_bwd_ref(dx, tok, T, H, V, dw);
    CHECK(dw[2 * H + 0] == 0.5f * 1 + 0.5f * 7); /* token 2 at t = 0 and t = 2 */
    CHECK(dw[0 * H + 1] == 1.0f + 0.5f * 5);    /* token 0 at t = 1: column 1 adds dx[4] */
    CHECK(dw[1 * H + 0] == 0.0f && dw[4 * H + 2] == 0.5f * 12);
}

TEST(lm_xent_uniform_logits) {
    enum { T = 3, V = 8 };
    uint16_t x[T * V], dl[T * V];
    const int y[T] = {0, 3, 7};
    for (int i = 0; i < T * V; i++) x[i] = agoq_f32_to_bf16(1.5f);
    float loss[T];
    agoq_xent_ref(x, y, T, V, 0.5f, loss, dl);
    for (int t = 0; t < T; t++) {
        CHECK_NEAR(loss[t], log(8.0), 1e-6);
        for (int j = 0; j < V; j++) {
            const float want = agoq_round_bf16(((j == y[t] ? -1.0f : 0.0f) + 0.125f) * 0.5f);
            CHECK(agoq_bf16_to_f32(dl[t * V + j]) == want);
        }
    }
}

TEST(lm_xent_matches_double_softmax) {
    enum { T = 16, V = 256 };
    float f[T * V];
    uint16_t x[T * V], dl[T * V];
    int y[T];
    agoq_fill(AGOQ_DIST_NORMAL, f, T * V, 3);
    for (int i = 0; i < T * V; i++) x[i] = agoq_f32_to_bf16(3.0f * f[i]);
    for (int t = 0; t < T; t++) y[t] = (t * 37) % V;
    float loss[T];
    const float ds = 1.0f / T;
    agoq_xent_ref(x, y, T, V, ds, loss, dl);
    for (int t = 0; t < T; t++) {
        double m = -INFINITY, s = 0.0;
        for (int j = 0; j < V; j++) m = fmax(m, agoq_bf16_to_f32(x[t * V + j]));
        for (int j = 0; j < V; j++) s += exp(agoq_bf16_to_f32(x[t * V + j]) - m);
        const double want = log(s) + m - agoq_bf16_to_f32(x[t * V + y[t]]);
        CHECK(fabs(loss[t] - want) <= 1e-5 * want);
        for (int j = 0; j < V; j++) {
            const double g = (exp(agoq_bf16_to_f32(x[t * V + j]) - m) / s - (j == y[t])) * ds;
            CHECK(fabs(agoq_bf16_to_f32(dl[t * V + j]) - g) <= fabs(g) / 128.0 + 1e-7);
        }
    }
}
