/* Shared pieces of the CUDA quantization tests (test_quant_cuda.c, test_grad8_cuda.c):
 * the edge-case input generator, config labels and plane-by-plane comparison against the
 * CPU reference. Header-only (static) so each test file stays self-contained. */
#ifndef AGOQ_TEST_QUANT_UTIL_H
#define AGOQ_TEST_QUANT_UTIL_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant/qspec.h"
#include "core/rng.h"
#include "kernels/quant/formats.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"

/* N(0,1) data with, per element, ~1/16 chance of a special (NaN, +-Inf, a denormal, -0, 0,
 * a 1e30 or 1e-30 multiple) and whole blocks that are all zero (mixed signs), constant,
 * all denormal, all NaN, or all +-Inf. Magnitudes stay <= 1e37 so that max - min and the
 * scales stay finite (an infinite scale would decode 0 * inf = NaN, whose payload the
 * platforms do not agree on). */
static float *tq_torture(size_t n, int block, uint64_t seed) {
    float *x = (float *)malloc((n ? n : 1) * sizeof(float));
    agoq_fill(AGOQ_DIST_NORMAL, x, n, seed);
    agoq_rng r = {seed ^ 0x5bd1e995u};
    for (size_t i = 0; i < n; i++) {
        uint64_t k = agoq_rng_next(&r);
        switch (k % 48) {
        case 0: x[i] = NAN; break;
        case 1: x[i] = INFINITY; break;
        case 2: x[i] = -INFINITY; break;
        case 3: x[i] = agoq_bits_f32((uint32_t)(k >> 8) & 0x807fffffu); break; /* denormal, either sign */
        case 4: x[i] = -0.0f; break;
        case 5: x[i] = 0.0f; break;
        case 6: x[i] *= 1e30f; break;
        case 7: x[i] *= 1e-30f; break;
        default: break;
        }
    }
    const size_t nb = (n + (size_t)block - 1) / (size_t)block;
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * (size_t)block, hi = lo + (size_t)block < n ? lo + (size_t)block : n;
        int kind = (int)(b % 9);
        for (size_t i = lo; i < hi && kind >= 2 && kind <= 6; i++) {
            switch (kind) {
            case 2: x[i] = (i & 1) ? -0.0f : 0.0f; break;
            case 3: x[i] = 0.37f; break;
            case 4: x[i] = agoq_bits_f32((uint32_t)(agoq_rng_next(&r) & 0x807fffffu)); break;
            case 5: x[i] = NAN; break;
            case 6: x[i] = (i & 1) ? INFINITY : -INFINITY; break;
            }
        }
    }
    return x;
}

static const char *tq_label(const agoq_qconfig *c, char *buf, size_t len) {
    snprintf(buf, len, "%s/B%d/%s/%s", agoq_formats[c->fmt].name, c->block, agoq_scale_name(c->scale),
             agoq_rounding_name(c->rounding));
    return buf;
}

/* Bit-exact float comparison where any NaN equals any NaN (payloads are unspecified). */
static inline size_t tq_cmp_f32(const char *what, const float *ref, const float *got, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&ref[i], &got[i], 4) == 0 || (isnan(ref[i]) && isnan(got[i]))) continue;
        if (bad++ < 5) fprintf(stderr, "    mismatch %s[%zu]: ref %.9g (0x%08x) got %.9g (0x%08x)\n", what, i, ref[i],
                               agoq_f32_bits(ref[i]), got[i], agoq_f32_bits(got[i]));
    }
    if (bad) fprintf(stderr, "    %s: %zu of %zu floats differ\n", what, bad, n);
    return bad;
}
static inline size_t tq_cmp_bf16(const char *what, const uint16_t *ref, const uint16_t *got, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int both_nan = (ref[i] & 0x7fffu) > 0x7f80u && (got[i] & 0x7fffu) > 0x7f80u;
        if (ref[i] == got[i] || both_nan) continue;
        if (bad++ < 5) fprintf(stderr, "    mismatch %s[%zu]: ref 0x%04x got 0x%04x\n", what, i, ref[i], got[i]);
    }
    if (bad) fprintf(stderr, "    %s: %zu of %zu bf16 differ\n", what, bad, n);
    return bad;
}
/* Codes (every byte of the blocks, padding included), scales and zeros. */
static inline size_t tq_cmp_qtensor(const char *label, const agoq_qconfig *c, const agoq_qtensor *ref, const agoq_qtensor *got) {
    char what[640];
    size_t bad = 0;
    snprintf(what, sizeof what, "%s codes", label);
    bad += agoq_validate_bytes(what, ref->codes, got->codes, agoq_codes_bytes(c, ref->n));
    snprintf(what, sizeof what, "%s scales", label);
    bad += agoq_validate_bytes(what, ref->scales, got->scales, agoq_scales_bytes(c, ref->n));
    if (agoq_has_zeros(c)) {
        snprintf(what, sizeof what, "%s zeros", label);
        bad += agoq_validate_bytes(what, ref->zeros, got->zeros, agoq_zeros_bytes(c, ref->n));
    }
    return bad;
}

static uint16_t *tq_to_bf16(const float *x, size_t n) {
    uint16_t *h = (uint16_t *)malloc((n ? n : 1) * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) h[i] = agoq_f32_to_bf16(x[i]);
    return h;
}

/* Fills a device qtensor's planes with garbage so that tests see every byte being written. */
static inline void tq_poison(const agoq_qconfig *c, agoq_cuda_qtensor *d) {
    agoq_cuda_memset(d->codes, 0xA5, agoq_codes_bytes(c, d->n), NULL);
    agoq_cuda_memset(d->scales, 0x5A, agoq_scales_bytes(c, d->n), NULL);
    if (d->zeros) agoq_cuda_memset(d->zeros, 0x3C, agoq_zeros_bytes(c, d->n), NULL);
    agoq_cuda_sync(NULL);
}
#endif
