/* GPU tests of kernels/lm/lm.cu against the references: the embedding gather and its
 * scatter-add bit for bit (the kernel adds each vocabulary row's tokens in the reference's
 * order), the fused softmax cross-entropy within bounds: CUDA's expf/logf are within 2 fp32 ulps
 * of libm's and the warp sums in another order (V terms: relative error <= V u_fp32), so the
 * loss rows within 1e-5 relative and each bf16 gradient within one bf16 ulp of its value
 * (a rounding boundary may fall between the two fp32 values) plus 1e-9 absolute. Shapes: the
 * trainer's (V = 256, T = 128, h = 128) and an odd one (V = 97, T = 33, h = 24). */
#include <math.h>
#include <stdlib.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/lm/lm.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"

static void *up(const void *h, size_t bytes) {
    void *d = agoq_fused_dmalloc(bytes);
    agoq_fused_h2d(d, h, bytes);
    return d;
}

static int one_shape(int V, int T, int h, uint64_t seed) {
    float *f = malloc((size_t)V * h * 4), *dw0 = malloc((size_t)V * h * 4), *dw1 = malloc((size_t)V * h * 4);
    uint16_t *wte = malloc((size_t)V * h * 2), *x = malloc((size_t)T * h * 2), *xr = malloc((size_t)T * h * 2);
    uint16_t *lg = malloc((size_t)T * V * 2), *dl0 = malloc((size_t)T * V * 2), *dl1 = malloc((size_t)T * V * 2);
    float *loss0 = malloc((size_t)T * 4), *loss1 = malloc((size_t)T * 4);
    int *tok = malloc((size_t)T * sizeof(int)), ok = 1;
    agoq_fill(AGOQ_DIST_NORMAL, f, (size_t)V * h, seed);
    for (size_t i = 0; i < (size_t)V * h; i++) wte[i] = agoq_f32_to_bf16(f[i]), dw0[i] = dw1[i] = 0.25f * f[i];
    for (int t = 0; t < T; t++) tok[t] = (int)((t * 7 + t * t) % V); /* repeats */
    uint16_t *d_wte = up(wte, (size_t)V * h * 2), *d_x = agoq_fused_dmalloc((size_t)T * h * 2);
    int *d_tok = up(tok, (size_t)T * sizeof(int));
    ok &= agoq_embed_fwd_cuda(d_wte, d_tok, T, h, d_x, NULL) == 0;
    agoq_fused_d2h(x, d_x, (size_t)T * h * 2);
    agoq_embed_fwd_ref(wte, tok, T, h, xr);
    ok &= agoq_validate_bytes("embed_fwd", (const uint8_t *)xr, (const uint8_t *)x, (size_t)T * h * 2) == 0;
    float *d_dw = up(dw1, (size_t)V * h * 4);
    ok &= agoq_embed_bwd_cuda(d_x, d_tok, T, h, V, d_dw, NULL) == 0; /* dx = the embedded rows */
    agoq_fused_d2h(dw1, d_dw, (size_t)V * h * 4);
    agoq_embed_bwd_ref(xr, tok, T, h, V, dw0);
    ok &= agoq_validate_floats("embed_bwd", dw0, dw1, (size_t)V * h) == 0;
    /* cross-entropy */
    float *g = malloc((size_t)T * V * 4);
    agoq_fill(AGOQ_DIST_NORMAL, g, (size_t)T * V, seed + 1);
    for (size_t i = 0; i < (size_t)T * V; i++) lg[i] = agoq_f32_to_bf16(4.0f * g[i]);
    uint16_t *d_lg = up(lg, (size_t)T * V * 2), *d_dl = agoq_fused_dmalloc((size_t)T * V * 2);
    float *d_loss = agoq_fused_dmalloc((size_t)T * 4);
    ok &= agoq_xent_cuda(d_lg, d_tok, T, V, 1.0f / T, d_loss, d_dl, NULL) == 0;
    agoq_fused_d2h(dl1, d_dl, (size_t)T * V * 2);
    agoq_fused_d2h(loss1, d_loss, (size_t)T * 4);
    agoq_xent_ref(lg, tok, T, V, 1.0f / T, loss0, dl0);
    size_t bad = 0;
    for (int t = 0; t < T; t++) bad += !(fabsf(loss1[t] - loss0[t]) <= 1e-5f * fabsf(loss0[t]));
    for (size_t i = 0; i < (size_t)T * V; i++) {
        const float a = agoq_bf16_to_f32(dl0[i]), b = agoq_bf16_to_f32(dl1[i]);
        bad += !(fabsf(a - b) <= fmaxf(fabsf(a), fabsf(b)) / 128.0f + 1e-9f);
    }
    printf("    V %d T %d h %d: embedding bit-exact %s, cross-entropy out of bound %zu\n", V, T, h, ok ? "yes" : "NO", bad);
    ok &= bad == 0;
    agoq_fused_dfree(d_wte), agoq_fused_dfree(d_x), agoq_fused_dfree(d_tok), agoq_fused_dfree(d_dw);
    agoq_fused_dfree(d_lg), agoq_fused_dfree(d_dl), agoq_fused_dfree(d_loss);
    free(f), free(dw0), free(dw1), free(wte), free(x), free(xr), free(lg), free(dl0), free(dl1), free(loss0);
    free(loss1), free(tok), free(g);
    return ok;
}

TEST(cuda_lm_embedding_and_xent_match_reference) {
    CHECK(one_shape(256, 128, 128, 5));
    CHECK(one_shape(97, 33, 24, 6));
}
