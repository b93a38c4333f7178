/* GPU tests of kernels/optim/adamw.cu: the fused AdamW step against agoq_adamw_ref over three
 * steps (odd n, with and without the bf16 working copy), and the sum of squares against
 * agoq_sumsq_ref. Bounds: the kernel runs the reference's fp32 operations in its order
 * (--fmad=false, IEEE div/sqrt, the same host bias corrections), so p, m, v are expected
 * bit-identical; the test allows 2 fp32 ulps (the header's "few ulps") and w one bf16 ulp (a p
 * that differs by an ulp may round the other way), and prints the largest difference seen.
 * Sum of squares: double accumulation, one rounding to fp32: |got - ref| <= 2^-23 |ref|;
 * two calls give the same bits (fixed grid and order). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/optim/adamw.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"

/* Distance in fp32 ulps (ordered integer representation). */
static long long f32_ulps(float a, float b) {
    int32_t ia = (int32_t)agoq_f32_bits(a), ib = (int32_t)agoq_f32_bits(b);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    return llabs((long long)ia - (long long)ib);
}

static long long max_ulps(const float *a, const float *b, size_t n) {
    long long w = 0;
    for (size_t i = 0; i < n; i++) {
        const long long u = f32_ulps(a[i], b[i]);
        if (u > w) w = u;
    }
    return w;
}

TEST(cuda_adamw_matches_reference) {
    const size_t n = 1000003;
    float *p = malloc(n * 4), *g = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4), *tmp = malloc(n * 4);
    uint16_t *w = malloc(n * 2), *wg = malloc(n * 2);
    agoq_fill(AGOQ_DIST_NORMAL, p, n, 1);
    agoq_fill(AGOQ_DIST_NORMAL, m, n, 3);
    agoq_fill(AGOQ_DIST_NORMAL, v, n, 4);
    for (size_t i = 0; i < n; i++) m[i] *= 1e-3f, v[i] = v[i] * v[i] * 1e-6f, p[i] *= 0.02f;
    float *dp = agoq_fused_dmalloc(n * 4), *dg = agoq_fused_dmalloc(n * 4), *dm = agoq_fused_dmalloc(n * 4),
          *dv = agoq_fused_dmalloc(n * 4);
    uint16_t *dw = agoq_fused_dmalloc(n * 2);
    agoq_fused_h2d(dp, p, n * 4), agoq_fused_h2d(dm, m, n * 4), agoq_fused_h2d(dv, v, n * 4);
    agoq_adamw_hp hp = {.lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                        .grad_scale = 0.125f, .step = 0};
    long long up = 0, um = 0, uv = 0, uw = 0;
    for (int step = 1; step <= 3; step++) {
        hp.step = step;
        agoq_fill(step == 2 ? AGOQ_DIST_HEAVY : AGOQ_DIST_NORMAL, g, n, 100 + step);
        if (step == 3) g[0] = 0.0f, g[1] = 1e-30f, g[2] = -1e30f; /* zero, tiny, huge */
        agoq_fused_h2d(dg, g, n * 4);
        const int with_w = step != 2; /* step 2: no working copy */
        agoq_adamw_ref(&hp, p, g, m, v, with_w ? w : NULL, n);
        CHECK(agoq_adamw_cuda(&hp, dp, dg, dm, dv, with_w ? dw : NULL, n, NULL) == 0);
        agoq_fused_dsync();
        agoq_fused_d2h(tmp, dp, n * 4);
        long long u = max_ulps(p, tmp, n);
        up = u > up ? u : up;
        agoq_fused_d2h(tmp, dm, n * 4);
        u = max_ulps(m, tmp, n);
        um = u > um ? u : um;
        agoq_fused_d2h(tmp, dv, n * 4);
        u = max_ulps(v, tmp, n);
        uv = u > uv ? u : uv;
        if (with_w) {
            agoq_fused_d2h(wg, dw, n * 2);
            for (size_t i = 0; i < n; i++) {
                const long long d = llabs((long long)(int16_t)w[i] - (long long)(int16_t)wg[i]);
                uw = d > uw ? d : uw;
            }
        }
    }
    fprintf(stderr, "    max difference over 3 steps: p %lld, m %lld, v %lld fp32 ulps; w %lld bf16 ulps\n", up, um, uv,
            uw);
    CHECK(up <= 2 && um <= 2 && uv <= 2 && uw <= 1);
    hp.step = 0;
    CHECK(agoq_adamw_cuda(&hp, dp, dg, dm, dv, dw, n, NULL) == -1); /* step is 1-based */
    agoq_fused_dfree(dp), agoq_fused_dfree(dg), agoq_fused_dfree(dm), agoq_fused_dfree(dv), agoq_fused_dfree(dw);
    free(p), free(g), free(m), free(v), free(tmp), free(w), free(wg);
}

TEST(cuda_sumsq_matches_reference) {
    static const size_t sizes[] = {0, 1, 255, 257, 100003, 10000019};
    const size_t nmax = 10000019;
    float *x = malloc(nmax * 4);
    agoq_fill(AGOQ_DIST_HEAVY, x, nmax, 5);
    float *dx = agoq_fused_dmalloc(nmax * 4), *dout = agoq_fused_dmalloc(8);
    agoq_fused_h2d(dx, x, nmax * 4);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s];
        float got[2];
        CHECK(agoq_sumsq_cuda(dx, n, dout, NULL) == 0);
        CHECK(agoq_sumsq_cuda(dx, n, dout + 1, NULL) == 0);
        agoq_fused_dsync();
        agoq_fused_d2h(got, dout, 8);
        const double ref = agoq_sumsq_ref(x, n);
        CHECK_MSG(fabs((double)got[0] - ref) <= 0x1p-23 * ref, "n %zu: got %.9g ref %.9g", n, (double)got[0], ref);
        CHECK_MSG(agoq_f32_bits(got[0]) == agoq_f32_bits(got[1]), "n %zu: two calls differ", n);
    }
    CHECK(agoq_sumsq_cuda(dx, 4, NULL, NULL) == -1);
    agoq_fused_dfree(dx), agoq_fused_dfree(dout);
    free(x);
}
