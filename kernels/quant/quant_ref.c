/* Plain-C reference quantizers; see quant_ref.h. Built with -ffp-contract=off, no fast-math. */
#include "kernels/quant/quant_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant/quant_math.h"

static void store_scale(const agoq_qconfig *c, uint8_t *dst, float v) {
    if (c->scale == AGOQ_SCALE_BF16) {
        uint16_t h = agoq_f32_to_bf16(v);
        memcpy(dst, &h, 2);
    } else {
        memcpy(dst, &v, 4);
    }
}

static float to_scale_dtype(const agoq_qconfig *c, float v) {
    return c->scale == AGOQ_SCALE_BF16 ? agoq_round_bf16(v) : v;
}

void agoq_block_params_ref(const agoq_qconfig *c, const float *x, int len, float *scale, float *zero) {
    const agoq_format_traits *t = &agoq_formats[c->fmt];
    float amax = 0.0f, lo = INFINITY, hi = -INFINITY;
    if (t->kind == AGOQ_CODE_INT_ASYM) {
        for (int i = 0; i < len; i++)
            if (agoq_isfinite(x[i])) {
                lo = fminf(lo, x[i]);
                hi = fmaxf(hi, x[i]);
            }
    } else {
        for (int i = 0; i < len; i++)
            if (agoq_isfinite(x[i])) amax = fmaxf(amax, fabsf(x[i]));
    }
    if (t->kind == AGOQ_CODE_INT_ASYM) {
        if (lo > hi) lo = hi = 0.0f; /* no finite element */
        /* fminf/fmaxf may return either zero of (+0, -0): +0.0f makes both canonical so the
         * stored zero point does not depend on the reduction order (the CUDA kernels do the same) */
        lo = lo + 0.0f;
        hi = hi + 0.0f;
        *scale = agoq_block_scale(hi - lo, t->qmax, c->scale == AGOQ_SCALE_BF16);
        *zero = to_scale_dtype(c, lo);
    } else {
        *scale = agoq_block_scale(amax, t->qmax, c->scale == AGOQ_SCALE_BF16);
        *zero = 0.0f;
    }
}

void agoq_quantize_block_ref(const agoq_qconfig *c, const float *x, int len, size_t base, uint8_t *codes,
                             uint8_t *scale, uint8_t *zero) {
    const agoq_format_traits *t = &agoq_formats[c->fmt];
    const int bits = t->bits, sr = c->rounding == AGOQ_ROUND_STOCHASTIC;
    float s, m;
    agoq_block_params_ref(c, x, len, &s, &m);
    const float inv = agoq_inv_scale(s);
    memset(codes, 0, agoq_block_code_bytes(c));
    store_scale(c, scale, s);
    if (t->kind == AGOQ_CODE_INT_ASYM) store_scale(c, zero, m);
    const agoq_code_table *tab = agoq_table(c->fmt);
    /* one loop per code kind: the dispatch stays out of the per-element path */
    if (t->kind == AGOQ_CODE_INT_SYM) {
        for (int i = 0; i < len; i++)
            agoq_put_code(codes, i, bits, agoq_encode_int_sym(x[i], inv, bits, sr ? agoq_u01(c->seed, base + (size_t)i) : -1.0f));
    } else if (t->kind == AGOQ_CODE_INT_ASYM) {
        for (int i = 0; i < len; i++)
            agoq_put_code(codes, i, bits, agoq_encode_int_asym(x[i], inv, m, bits, sr ? agoq_u01(c->seed, base + (size_t)i) : -1.0f));
    } else {
        for (int i = 0; i < len; i++) {
            float u = sr ? agoq_u01(c->seed, base + (size_t)i) : -1.0f;
            int p = agoq_table_pos(tab->sorted, tab->mid, tab->sorted_code, tab->nsorted, x[i] * inv, u);
            agoq_put_code(codes, i, bits, tab->sorted_code[p]);
        }
    }
}

float agoq_decode_ref(const agoq_qconfig *c, uint32_t code, float scale, float zero) {
    const agoq_format_traits *t = &agoq_formats[c->fmt];
    switch (t->kind) {
    case AGOQ_CODE_INT_SYM: return agoq_decode_int_sym(code, t->bits, scale);
    case AGOQ_CODE_INT_ASYM: return agoq_decode_int_asym(code, scale, zero);
    default: return agoq_table(c->fmt)->value[code] * scale;
    }
}

void agoq_quantize_ref(const agoq_qconfig *c, const float *x, size_t n, agoq_qtensor *q) {
    const size_t B = (size_t)c->block, nb = agoq_nblocks(c, n), cb = agoq_block_code_bytes(c);
    const size_t sb = agoq_scale_elem_bytes(c);
    for (size_t b = 0; b < nb; b++) {
        size_t off = b * B, len = n - off < B ? n - off : B;
        agoq_quantize_block_ref(c, x + off, (int)len, off, q->codes + b * cb, q->scales + b * sb,
                                q->zeros ? q->zeros + b * sb : NULL);
    }
    q->n = n;
}

void agoq_quantize_bf16_ref(const agoq_qconfig *c, const uint16_t *x, size_t n, agoq_qtensor *q) {
    const size_t B = (size_t)c->block, nb = agoq_nblocks(c, n), cb = agoq_block_code_bytes(c);
    const size_t sb = agoq_scale_elem_bytes(c);
    float *tmp = malloc(B * sizeof(float));
    for (size_t b = 0; b < nb; b++) {
        size_t off = b * B, len = n - off < B ? n - off : B;
        for (size_t i = 0; i < len; i++) tmp[i] = agoq_bf16_to_f32(x[off + i]);
        agoq_quantize_block_ref(c, tmp, (int)len, off, q->codes + b * cb, q->scales + b * sb,
                                q->zeros ? q->zeros + b * sb : NULL);
    }
    free(tmp);
    q->n = n;
}

/* Shared decode loop; out_bf16 selects the output dtype. */
static void dequant(const agoq_qconfig *c, const agoq_qtensor *q, float *yf, uint16_t *yh) {
    const size_t B = (size_t)c->block, nb = agoq_nblocks(c, q->n), cb = agoq_block_code_bytes(c);
    const int bits = agoq_formats[c->fmt].bits;
    for (size_t b = 0; b < nb; b++) {
        size_t off = b * B, len = q->n - off < B ? q->n - off : B;
        float s = agoq_qtensor_scale(c, q, b), m = agoq_qtensor_zero(c, q, b);
        const uint8_t *blk = q->codes + b * cb;
        for (size_t i = 0; i < len; i++) {
            float v = agoq_decode_ref(c, agoq_get_code(blk, (int)i, bits), s, m);
            if (yh) yh[off + i] = agoq_f32_to_bf16(v);
            else yf[off + i] = v;
        }
    }
}

void agoq_dequantize_ref(const agoq_qconfig *c, const agoq_qtensor *q, float *y) { dequant(c, q, y, NULL); }
void agoq_dequantize_bf16_ref(const agoq_qconfig *c, const agoq_qtensor *q, uint16_t *y) { dequant(c, q, NULL, y); }

void agoq_fake_quant_ref(const agoq_qconfig *c, const float *x, size_t n, float *y) {
    agoq_qtensor q;
    if (agoq_qtensor_alloc(&q, c, n) != 0) abort();
    agoq_quantize_ref(c, x, n, &q);
    agoq_dequantize_ref(c, &q, y);
    agoq_qtensor_free(&q);
}
