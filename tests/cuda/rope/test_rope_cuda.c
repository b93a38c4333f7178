/* GPU tests of kernels/rope/rope.cu against agoq_rope_ref: forward and inverse, MHA (LLaMA-2-7B
 * heads, head_dim 128, positions up to 4095) and GQA / odd-pair shapes; v untouched bit for bit.
 * Bound per element: theta and inv_freq are bit-identical (host powf), the device cosf/sinf are
 * within 2 fp32 ulps of the host's, so the fp32 results differ by <= ~2^-21 (|x1| + |x2|) and
 * the bf16 results by at most one bf16 ulp of the larger of the two (a rounding boundary may
 * fall between them):  |got - ref| <= ulp_bf16(max(|got|, |ref|)) + 2^-20 (|x1| + |x2|). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/quant/quant_math.h"
#include "kernels/rope/rope.h"
#include "tests/cuda/fused/test_fused_util.h"
#include "tests/test.h"

static double bf16_ulp_at(double x) {
    int e;
    frexp(x, &e);
    return x == 0.0 ? 0x1p-133 : ldexp(1.0, e - 8);
}

/* Compares got with ref over rotated heads (bound above) and v heads (bit-exact); x the input. */
static size_t check_rope(const uint16_t *x, const uint16_t *got, const uint16_t *ref, int tokens, int heads, int kv,
                         int d, size_t *ndiff) {
    const int rot = heads + kv, row = (heads + 2 * kv) * d, half = d / 2;
    size_t bad = 0;
    *ndiff = 0;
    for (int t = 0; t < tokens; t++)
        for (int h = 0; h < heads + 2 * kv; h++)
            for (int i = 0; i < d; i++) {
                const size_t o = (size_t)t * row + (size_t)h * d + (size_t)i;
                const double g = agoq_bf16_to_f32(got[o]), r = agoq_bf16_to_f32(ref[o]);
                const size_t base = (size_t)t * row + (size_t)h * d + (size_t)(i % half);
                const double mag = fabs((double)agoq_bf16_to_f32(x[base])) + fabs((double)agoq_bf16_to_f32(x[base + half]));
                const double tol = h < rot ? bf16_ulp_at(fmax(fabs(g), fabs(r))) + 0x1p-20 * mag : 0.0;
                *ndiff += got[o] != ref[o];
                if (!(fabs(g - r) <= tol) && bad++ < 5)
                    fprintf(stderr, "    t %d head %d i %d: got %.8g ref %.8g tol %.3g\n", t, h, i, g, r, tol);
            }
    return bad;
}

TEST(cuda_rope_matches_reference) {
    static const int shapes[][6] = {/* tokens, seq, heads, kv_heads, head_dim; base x1 */
                                    {4096, 4096, 32, 32, 128, 10000},
                                    {300, 100, 8, 2, 64, 10000},
                                    {7, 3, 3, 1, 10, 500000},
                                    {5, 5, 1, 0, 2, 10000}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int T = shapes[s][0], seq = shapes[s][1], H = shapes[s][2], KV = shapes[s][3], D = shapes[s][4];
        const float base = (float)shapes[s][5];
        const size_t n = (size_t)T * (size_t)(H + 2 * KV) * (size_t)D;
        float *f = malloc(n * 4);
        uint16_t *x = malloc(n * 2), *ref = malloc(n * 2);
        agoq_fill(AGOQ_DIST_NORMAL, f, n, 11 + s);
        for (size_t i = 0; i < n; i++) x[i] = agoq_f32_to_bf16(f[i]);
        for (int inverse = 0; inverse <= 1; inverse++) {
            memcpy(ref, x, n * 2);
            agoq_rope_ref(ref, T, seq, H, KV, D, base, inverse);
            uint16_t *dx = up16(x, n);
            CHECK(agoq_rope_cuda(dx, T, seq, H, KV, D, base, inverse, NULL) == 0);
            agoq_fused_dsync();
            uint16_t *got = down16(dx, n);
            size_t ndiff = 0;
            const size_t bad = check_rope(x, got, ref, T, H, KV, D, &ndiff);
            fprintf(stderr, "    T %d seq %d H %d KV %d D %d inverse %d: %zu of %zu differ from the reference, %zu "
                            "beyond the bound\n", T, seq, H, KV, D, inverse, ndiff, n, bad);
            agoq_fused_dfree(dx);
            free(got);
            CHECK(bad == 0);
        }
        free(f), free(x), free(ref);
    }
}

TEST(cuda_rope_rejects_bad_arguments) {
    uint16_t *d = agoq_fused_dmalloc(1024);
    CHECK(agoq_rope_cuda(d, 4, 4, 1, 1, 7, 10000.0f, 0, NULL) == -1);   /* odd head_dim */
    CHECK(agoq_rope_cuda(d, 4, 0, 1, 1, 8, 10000.0f, 0, NULL) == -1);   /* seq 0 */
    CHECK(agoq_rope_cuda(d, 4, 4, 1, 1, 1024, 10000.0f, 0, NULL) == -1); /* head_dim > 512 */
    CHECK(agoq_rope_cuda(NULL, 4, 4, 1, 1, 8, 10000.0f, 0, NULL) == -1);
    CHECK(agoq_rope_cuda(d, 0, 4, 1, 1, 8, 10000.0f, 0, NULL) == 0); /* nothing to do */
    agoq_fused_dfree(d);
}
