/* Host <-> device bf16 helpers shared by the fused-kernel and GEMM GPU tests (and, from
 * tests/test_bf16.h, their seeded inputs); the fused tests' special-row inputs and fp32 compare. */
#ifndef AGOQ_TEST_FUSED_UTIL_H
#define AGOQ_TEST_FUSED_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/quant/quant_math.h"
#include "tests/test_bf16.h"

/* Device copy of a host bf16 array, and download into a fresh host array. */
static inline uint16_t *up16(const uint16_t *h, size_t n) {
    uint16_t *d = agoq_fused_dmalloc(n * 2);
    agoq_fused_h2d(d, h, n * 2);
    return d;
}
static inline uint16_t *down16(const uint16_t *d, size_t n) {
    uint16_t *h = malloc(n * 2);
    agoq_fused_d2h(h, d, n * 2);
    return h;
}
/* Seeded N(0, 2^2) bf16 values with special rows: row 1 (if any) all zero; row 2 has NaN,
 * +-Inf and denormals sprinkled in when specials is set. */
static inline uint16_t *make_input(size_t rows, size_t cols, uint64_t seed, int specials) {
    size_t n = rows * cols;
    float *f = malloc(n * sizeof(float));
    uint16_t *h = malloc(n * sizeof(uint16_t));
    agoq_fill(AGOQ_DIST_NORMAL, f, n, seed);
    for (size_t i = 0; i < n; i++) h[i] = agoq_f32_to_bf16(2.0f * f[i]);
    if (specials && rows > 1)
        for (size_t j = 0; j < cols; j++) h[cols + j] = 0;
    if (specials && rows > 2)
        for (size_t j = 0; j < cols; j += 7) {
            static const uint16_t sp[] = {0x7fc0, 0x7f80, 0xff80, 0x0001, 0x8003, 0x0080};
            h[2 * cols + j] = sp[(j / 7) % 6];
        }
    free(f);
    return h;
}

/* fp32 arrays bit for bit, NaN equal to NaN (any payload); prints the first mismatches. */
static inline size_t cmp_f32(const char *what, const float *ref, const float *got, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&ref[i], &got[i], 4) != 0 && !(isnan(ref[i]) && isnan(got[i]))) {
            if (bad++ < 5) fprintf(stderr, "    mismatch %s[%zu]: ref %.9g got %.9g\n", what, i, ref[i], got[i]);
        }
    if (bad) fprintf(stderr, "    %s: %zu of %zu differ\n", what, bad, n);
    return bad;
}
#endif
