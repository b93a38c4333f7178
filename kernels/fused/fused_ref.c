/* Reference pieces shared by the fused-op references: row-blocked quantized copies (rowq, see
 * fused.h), the fixed reduction order of the row kernels (fused_math.h) and the dweight
 * partial reduction. Plain C, -ffp-contract=off: the specification the CUDA kernels match. */
#include <stdlib.h>
#include <string.h>

#include "kernels/fused/fused.h"
#include "kernels/fused/fused_math.h"
#include "kernels/quant/quant_ref.h"

void agoq_rowq_quantize_ref(const agoq_qconfig *c, const uint16_t *x, size_t rows, size_t cols, agoq_qtensor *q) {
    const size_t B = (size_t)c->block, nbpr = agoq_rowq_blocks_per_row(c, cols);
    const size_t cb = agoq_block_code_bytes(c), sb = agoq_scale_elem_bytes(c);
    float *tmp = malloc(B * sizeof(float));
    if (!tmp) abort();
    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < nbpr; k++) {
            size_t off = k * B, len = cols - off < B ? cols - off : B, b = r * nbpr + k;
            for (size_t i = 0; i < len; i++) tmp[i] = agoq_bf16_to_f32(x[r * cols + off + i]);
            agoq_quantize_block_ref(c, tmp, (int)len, r * cols + off, q->codes + b * cb, q->scales + b * sb,
                                    q->zeros ? q->zeros + b * sb : NULL);
        }
    free(tmp);
}

void agoq_rowq_dequantize_ref(const agoq_qconfig *c, const agoq_qtensor *q, size_t rows, size_t cols, float *y) {
    const size_t B = (size_t)c->block, nbpr = agoq_rowq_blocks_per_row(c, cols), cb = agoq_block_code_bytes(c);
    const int bits = agoq_formats[c->fmt].bits;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++) {
            size_t b = r * nbpr + j / B;
            float s = agoq_qtensor_scale(c, q, b), m = agoq_qtensor_zero(c, q, b);
            y[r * cols + j] = agoq_decode_ref(c, agoq_get_code(q->codes + b * cb, (int)(j % B), bits), s, m);
        }
}

/* Halving tree inside each warp of 32, then over the warp sums (what shfl_down does). */
static void halve(float *p, int n) {
    for (int w = n / 2; w > 0; w /= 2)
        for (int i = 0; i < w; i++) p[i] = p[i] + p[i + w];
}

float agoq_tree_sum_ref(const float *partials, int nthreads) {
    float p[1024], warp[32];
    int nwarps = nthreads / 32;
    memcpy(p, partials, (size_t)nthreads * sizeof(float));
    for (int w = 0; w < nwarps; w++) {
        halve(p + 32 * w, 32);
        warp[w] = p[32 * w];
    }
    halve(warp, nwarps);
    return warp[0];
}

float agoq_row_dot_ref(const float *a, const float *b, int cols) {
    float part[AGOQ_ROW_THREADS] = {0};
    int ngroups = (cols + AGOQ_GROUP - 1) / AGOQ_GROUP;
    for (int g = 0; g < ngroups; g++) {
        float acc = part[g % AGOQ_ROW_THREADS];
        for (int j = g * AGOQ_GROUP; j < cols && j < (g + 1) * AGOQ_GROUP; j++) acc = acc + a[j] * b[j];
        part[g % AGOQ_ROW_THREADS] = acc;
    }
    return agoq_tree_sum_ref(part, AGOQ_ROW_THREADS);
}

void agoq_dw_reduce_ref(const float *partial, int groups, int cols, float *dw) {
    for (int j = 0; j < cols; j++) {
        float acc = 0.0f;
        for (int g = 0; g < groups; g++) acc = acc + partial[(size_t)g * (size_t)cols + (size_t)j];
        dw[j] = acc;
    }
}
