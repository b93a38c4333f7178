/* CPU tests of the step-engine references: agoq_linear_ref (blaslt_ref.c) on hand-computed
 * matrices, agoq_rope_ref (identity at position 0, a hand-computed rotation, the GQA layout,
 * rotation then inverse), agoq_adamw_ref (first and second step in closed form) and
 * agoq_sumsq_ref. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/blaslt/blaslt.h"
#include "kernels/optim/adamw.h"
#include "kernels/quant/quant_math.h"
#include "kernels/rope/rope.h"
#include "tests/test.h"

static void to_bf16(const float *f, uint16_t *h, size_t n) {
    for (size_t i = 0; i < n; i++) h[i] = agoq_f32_to_bf16(f[i]);
}

/* X [2,3], W [2,3], dY [2,2]: small integers, exact in bf16 and fp32. */
TEST(linear_ref_hand_computed) {
    const float xf[6] = {1, 2, 3, 4, 5, 6}, wf[6] = {1, 0, -1, 2, 1, 0}, dyf[4] = {1, 2, 3, 4};
    uint16_t x[6], w[6], dy[4];
    to_bf16(xf, x, 6), to_bf16(wf, w, 6), to_bf16(dyf, dy, 4);
    float out[6];
    /* fwd Y = X W^T = [[-2, 4], [-2, 13]]; + R */
    const float fwd[4] = {-2, 4, -2, 13}, r[4] = {0.5f, 0, 0, -1};
    agoq_linear_ref(AGOQ_LT_FWD, 2, 2, 3, x, w, NULL, out);
    for (int i = 0; i < 4; i++) CHECK_NEAR(out[i], fwd[i], 0);
    agoq_linear_ref(AGOQ_LT_FWD, 2, 2, 3, x, w, r, out);
    for (int i = 0; i < 4; i++) CHECK_NEAR(out[i], fwd[i] + r[i], 0);
    /* dgrad dX = dY W = [[5, 2, -1], [11, 4, -3]] */
    const float dx[6] = {5, 2, -1, 11, 4, -3};
    agoq_linear_ref(AGOQ_LT_DGRAD, 2, 2, 3, dy, w, NULL, out);
    for (int i = 0; i < 6; i++) CHECK_NEAR(out[i], dx[i], 0);
    /* wgrad dW = dY^T X = [[13, 17, 21], [18, 24, 30]]; accumulate in place onto ones */
    const float dw[6] = {13, 17, 21, 18, 24, 30};
    for (int i = 0; i < 6; i++) out[i] = 1.0f;
    agoq_linear_ref(AGOQ_LT_WGRAD, 2, 2, 3, dy, x, out, out);
    for (int i = 0; i < 6; i++) CHECK_NEAR(out[i], dw[i] + 1.0f, 0);
}

/* dW = dY^T X is fwd of (dY^T, X^T): same products in the same order, so bit-identical. */
TEST(linear_ref_wgrad_is_fwd_of_transposes) {
    enum { M = 7, N = 5, K = 3 };
    float f[M * N + M * K];
    agoq_fill(AGOQ_DIST_NORMAL, f, M * N + M * K, 42);
    uint16_t dy[M * N], x[M * K], dyt[N * M], xt[K * M];
    to_bf16(f, dy, M * N), to_bf16(f + M * N, x, M * K);
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) dyt[n * M + m] = dy[m * N + n];
        for (int k = 0; k < K; k++) xt[k * M + m] = x[m * K + k];
    }
    float a[N * K], b[N * K];
    agoq_linear_ref(AGOQ_LT_WGRAD, M, N, K, dy, x, NULL, a);
    agoq_linear_ref(AGOQ_LT_FWD, N, K, M, dyt, xt, NULL, b);
    CHECK(agoq_validate_floats("wgrad vs fwd", b, a, N * K) == 0);
}

/* seq 1: every token at position 0, theta 0, cos 1, sin 0: bit-identical in both directions. */
TEST(rope_ref_position0_is_identity) {
    enum { T = 5, H = 2, KV = 1, D = 8, ROW = (H + 2 * KV) * D };
    float f[T * ROW];
    agoq_fill(AGOQ_DIST_NORMAL, f, T * ROW, 3);
    uint16_t x[T * ROW], y[T * ROW];
    to_bf16(f, x, T * ROW);
    memcpy(y, x, sizeof x);
    agoq_rope_ref(y, T, 1, H, KV, D, 10000.0f, 0);
    CHECK(agoq_validate_bytes("rope pos 0", (const uint8_t *)x, (const uint8_t *)y, sizeof x) == 0);
    agoq_rope_ref(y, T, 1, H, KV, D, 10000.0f, 1);
    CHECK(agoq_validate_bytes("rope^-1 pos 0", (const uint8_t *)x, (const uint8_t *)y, sizeof x) == 0);
}

/* head_dim 2 (one pair, inv_freq 1), position 1: (1, 0) -> (cos 1, sin 1), (0, 1) -> (-sin 1, cos 1);
 * heads 1, kv_heads 1: q and k rotate, v (the third head) does not. */
TEST(rope_ref_hand_computed_rotation) {
    uint16_t x[2][6];
    const float row[6] = {1, 0, 0, 1, 1, 0};
    to_bf16(row, x[0], 6), to_bf16(row, x[1], 6);
    agoq_rope_ref(&x[0][0], 2, 2, 1, 1, 2, 10000.0f, 0);
    for (int i = 0; i < 6; i++) CHECK(x[0][i] == agoq_f32_to_bf16(row[i])); /* token 0: position 0 */
    const float c = 0.540302306f, s = 0.841470985f;
    CHECK(x[1][0] == agoq_f32_to_bf16(c) && x[1][1] == agoq_f32_to_bf16(s));  /* q */
    CHECK(x[1][2] == agoq_f32_to_bf16(-s) && x[1][3] == agoq_f32_to_bf16(c)); /* k */
    CHECK(x[1][4] == agoq_f32_to_bf16(1) && x[1][5] == 0);                    /* v untouched */
}

/* bf16 ulp at magnitude x: 2^(e-8) for x in [2^(e-1), 2^e). */
static double bf16_ulp_at(double x) {
    int e;
    frexp(x, &e);
    return ldexp(1.0, e - 8);
}

/* Rotation then inverse returns each pair within 2 bf16 ulps of the pair's norm n: the
 * rotation's outputs are <= n, rounded (<= 0.5 ulp(n) each, 0.71 ulp(n) as a vector, which the
 * inverse rotation keeps), the inverse rounds again (<= 0.5 ulp, 1 ulp if n crosses a binade):
 * <= 1.71 ulp(n) plus fp32 terms ~2^-22 n. Measured per pair, not per component: a component
 * much smaller than its partner carries the partner's rounding. GQA, head_dim 128, positions
 * 0 .. 4095. */
TEST(rope_ref_inverse_restores_input) {
    enum { T = 4096, H = 2, KV = 1, D = 128, ROW = (H + 2 * KV) * D };
    float *f = malloc(sizeof(float) * T * ROW);
    uint16_t *x = malloc(2 * (size_t)T * ROW), *y = malloc(2 * (size_t)T * ROW);
    agoq_fill(AGOQ_DIST_NORMAL, f, (size_t)T * ROW, 9);
    to_bf16(f, x, (size_t)T * ROW);
    memcpy(y, x, 2 * (size_t)T * ROW);
    agoq_rope_ref(y, T, T, H, KV, D, 10000.0f, 0);
    agoq_rope_ref(y, T, T, H, KV, D, 10000.0f, 1);
    double worst = 0.0;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H + 2 * KV; h++)
            for (int i = 0; i < D / 2; i++) {
                const size_t o = (size_t)t * ROW + (size_t)h * D + (size_t)i;
                const double x1 = agoq_bf16_to_f32(x[o]), x2 = agoq_bf16_to_f32(x[o + D / 2]);
                const double n = sqrt(x1 * x1 + x2 * x2);
                if (n == 0.0) continue;
                const double d1 = fabs(x1 - agoq_bf16_to_f32(y[o])), d2 = fabs(x2 - agoq_bf16_to_f32(y[o + D / 2]));
                const double u = fmax(d1, d2) / bf16_ulp_at(n);
                if (u > worst) worst = u;
            }
    free(f), free(x), free(y);
    CHECK_MSG(worst <= 2.0, "rotation then inverse: %.2f bf16 ulps of the pair norm", worst);
}

/* Step 1 from m = v = 0: mhat = g', vhat = g'^2, so p1 = p0 - lr (g'/(|g'| + eps) + wd p0);
 * step 2 with the same g: mhat = g', vhat = g'^2 again (the bias corrections undo the decay). */
TEST(adamw_ref_first_steps_closed_form) {
    const agoq_adamw_hp hp0 = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                               .grad_scale = 0.5f, .step = 1};
    enum { N = 5 };
    const float g[N] = {2.0f, -4.0f, 1e-3f, 0.0f, 100.0f};
    float p[N] = {1.0f, -0.5f, 0.25f, 2.0f, 0.0f}, m[N] = {0}, v[N] = {0};
    uint16_t w[N];
    for (int step = 1; step <= 2; step++) {
        agoq_adamw_hp hp = hp0;
        hp.step = step;
        float p0[N];
        memcpy(p0, p, sizeof p);
        agoq_adamw_ref(&hp, p, g, m, v, w, N);
        for (int i = 0; i < N; i++) {
            const double gs = 0.5 * g[i], dir = gs / (fabs(gs) + 1e-8);
            const double want = p0[i] - 1e-3 * (dir + 0.1 * p0[i]);
            CHECK_MSG(fabs(p[i] - want) <= 1e-6 * (1 + fabs(want)), "step %d i %d: %.9g vs %.9g", step, i, p[i], want);
            CHECK(w[i] == agoq_f32_to_bf16(p[i]));
        }
        CHECK_NEAR(m[0], step == 1 ? 0.1 : 0.1 * 1.9, 1e-6);
        CHECK_NEAR(v[0], step == 1 ? 0.05 : 0.05 * 1.95, 1e-6);
    }
    agoq_adamw_ref(&hp0, p, g, m, v, NULL, N); /* w NULL: no working copy */
}

TEST(sumsq_ref_hand_computed) {
    const float x[4] = {1.0f, -2.0f, 3.0f, 0.5f};
    CHECK_NEAR(agoq_sumsq_ref(x, 4), 14.25, 0);
    CHECK_NEAR(agoq_sumsq_ref(x, 0), 0.0, 0);
}
