/* CPU tests of the attention reference (kernels/attn/attn_ref.c): hand-computed cases (one
 * token attends only to itself: o = v0; zero queries give uniform weights: o_i = mean(v_0..v_i),
 * lse_i = log(i + 1); a two-key softmax with weights 1/(1+e), e/(1+e)), causality (changing a
 * later token leaves earlier outputs bit-identical), and the backward against central finite
 * differences of L = sum(dout . o) on a tiny causal GQA shape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/attn/attn.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"
#include "tests/test_bf16.h"

static agoq_attn_desc mkdesc(int b, int s, int heads, int kv, int d, float scale) {
    agoq_attn_desc a = {.b = b, .s = s, .heads = heads, .kv_heads = kv, .head_dim = d,
                        .q_row = (int64_t)heads * d, .kv_row = (int64_t)kv * d, .o_row = (int64_t)heads * d,
                        .scale = scale, .causal = 1};
    return a;
}

TEST(attn_ref_single_token_returns_v0) {
    agoq_attn_desc d = mkdesc(1, 1, 2, 1, 8, 0.35f);
    uint16_t *q = rand_bf16(16, 1), *k = rand_bf16(8, 2), *v = rand_bf16(8, 3);
    float o[16], lse[2];
    agoq_attn_ref_fwd(&d, q, k, v, o, lse);
    for (int h = 0; h < 2; h++) {
        double dot = 0.0;
        for (int c = 0; c < 8; c++) {
            CHECK(o[h * 8 + c] == agoq_bf16_to_f32(v[c])); /* P = 1 exactly */
            dot += (double)agoq_bf16_to_f32(q[h * 8 + c]) * agoq_bf16_to_f32(k[c]);
        }
        CHECK_NEAR(lse[h], 0.35 * dot, 1e-6 * (1 + fabs(0.35 * dot)));
    }
    free(q); free(k); free(v);
}

TEST(attn_ref_zero_queries_average_the_visible_values) {
    const int S = 5, D = 4;
    agoq_attn_desc d = mkdesc(2, S, 2, 2, D, 0.5f);
    const size_t n = (size_t)2 * S * 2 * D;
    uint16_t *q = calloc(n, 2), *k = rand_bf16(n, 4), *v = rand_bf16(n, 5);
    float *o = malloc(n * sizeof(float)), lse[2 * 2 * S];
    agoq_attn_ref_fwd(&d, q, k, v, o, lse);
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < S; i++) {
                CHECK_NEAR(lse[(b * 2 + h) * S + i], log(i + 1.0), 1e-6);
                for (int c = 0; c < D; c++) {
                    double mean = 0.0;
                    for (int j = 0; j <= i; j++) mean += agoq_bf16_to_f32(v[((size_t)b * S + j) * 2 * D + h * D + c]);
                    CHECK_NEAR(o[((size_t)b * S + i) * 2 * D + h * D + c], mean / (i + 1), 1e-6);
                }
            }
    free(q); free(k); free(v); free(o);
}

TEST(attn_ref_two_keys_hand_computed) {
    /* s = 2, d = 2, scale 1: token 1 sees k0 = (0,0) and k1 = (1,0) with q1 = (1,0): scores 0, 1. */
    agoq_attn_desc d = mkdesc(1, 2, 1, 1, 2, 1.0f);
    const float one = 1.0f, two = 2.0f, three = 3.0f;
    uint16_t q[4] = {0, 0, agoq_f32_to_bf16(one), 0}, k[4] = {0, 0, agoq_f32_to_bf16(one), 0};
    uint16_t v[4] = {agoq_f32_to_bf16(one), agoq_f32_to_bf16(two), agoq_f32_to_bf16(three), 0};
    float o[4], lse[2];
    agoq_attn_ref_fwd(&d, q, k, v, o, lse);
    const double e = exp(1.0), p0 = 1 / (1 + e), p1 = e / (1 + e);
    CHECK_NEAR(lse[0], 0.0, 0);
    CHECK_NEAR(lse[1], log(1 + e), 1e-6);
    CHECK_NEAR(o[0], 1.0, 0);
    CHECK_NEAR(o[1], 2.0, 0);
    CHECK_NEAR(o[2], p0 * 1 + p1 * 3, 1e-6);
    CHECK_NEAR(o[3], p0 * 2 + p1 * 0, 1e-6);
}

TEST(attn_ref_is_causal) {
    const int S = 6, D = 4;
    agoq_attn_desc d = mkdesc(1, S, 2, 1, D, 0.5f);
    uint16_t *q = rand_bf16(S * 2 * D, 6), *k = rand_bf16(S * D, 7), *v = rand_bf16(S * D, 8);
    float o1[S * 2 * D], o2[S * 2 * D];
    agoq_attn_ref_fwd(&d, q, k, v, o1, NULL);
    for (int c = 0; c < D; c++) { /* change the last token's k and v */
        k[(S - 1) * D + c] ^= 0x4000;
        v[(S - 1) * D + c] ^= 0x4000;
    }
    agoq_attn_ref_fwd(&d, q, k, v, o2, NULL);
    CHECK(memcmp(o1, o2, (S - 1) * 2 * D * sizeof(float)) == 0);
    CHECK(memcmp(o1 + (S - 1) * 2 * D, o2 + (S - 1) * 2 * D, 2 * D * sizeof(float)) != 0);
    free(q); free(k); free(v);
}

/* L = sum dout . o, in double from the reference's fp32 outputs. */
static double loss(const agoq_attn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                   const uint16_t *dout, size_t no) {
    float *o = malloc(no * sizeof(float));
    agoq_attn_ref_fwd(d, q, k, v, o, NULL);
    double l = 0.0;
    for (size_t i = 0; i < no; i++) l += (double)agoq_bf16_to_f32(dout[i]) * o[i];
    free(o);
    return l;
}

/* Central difference over every element of x (bf16): x +- 1/64 rounded to bf16, divided by the
 * actual difference. Truncation error ~ h^2 |L'''| / 6 ~ 1e-5 here, fp32 rounding of o / (2h)
 * ~ 1e-5: bound |fd - grad| <= 2e-3 + 1e-2 |grad|. Returns the number of violations. */
static int fd_check(const char *name, const agoq_attn_desc *d, uint16_t *q, uint16_t *k, uint16_t *v,
                    const uint16_t *dout, size_t no, uint16_t *x, size_t nx, const float *grad) {
    int bad = 0;
    for (size_t i = 0; i < nx; i++) {
        const uint16_t keep = x[i];
        const float xf = agoq_bf16_to_f32(keep);
        const uint16_t xp = agoq_f32_to_bf16(xf + 0.015625f), xm = agoq_f32_to_bf16(xf - 0.015625f);
        x[i] = xp;
        const double lp = loss(d, q, k, v, dout, no);
        x[i] = xm;
        const double lm = loss(d, q, k, v, dout, no);
        x[i] = keep;
        const double fd = (lp - lm) / ((double)agoq_bf16_to_f32(xp) - agoq_bf16_to_f32(xm));
        if (!(fabs(fd - grad[i]) <= 2e-3 + 1e-2 * fabs(grad[i])) && bad++ < 5)
            fprintf(stderr, "    d%s[%zu]: finite difference %.6g, backward %.6g\n", name, i, fd, grad[i]);
    }
    return bad;
}

TEST(attn_ref_backward_matches_finite_differences) {
    const int B = 1, S = 4, H = 2, KV = 1, D = 4;
    agoq_attn_desc d = mkdesc(B, S, H, KV, D, 0.5f);
    const size_t nq = (size_t)B * S * H * D, nk = (size_t)B * S * KV * D;
    uint16_t *q = rand_bf16(nq, 11), *k = rand_bf16(nk, 12), *v = rand_bf16(nk, 13), *dout = rand_bf16(nq, 14);
    float *dq = malloc(nq * sizeof(float)), *dk = malloc(nk * sizeof(float)), *dv = malloc(nk * sizeof(float));
    agoq_attn_ref_bwd(&d, q, k, v, dout, dq, dk, dv);
    CHECK(fd_check("q", &d, q, k, v, dout, nq, q, nq, dq) == 0);
    CHECK(fd_check("k", &d, q, k, v, dout, nq, k, nk, dk) == 0);
    CHECK(fd_check("v", &d, q, k, v, dout, nq, v, nk, dv) == 0);
    /* The first key of the causal sequence gets gradient from every query; the last only from itself. */
    double s0 = 0.0;
    for (int c = 0; c < D; c++) s0 += fabs(dv[c]);
    CHECK(s0 > 0.0);
    free(q); free(k); free(v); free(dout); free(dq); free(dk); free(dv);
}
