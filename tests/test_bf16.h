/* Host bf16 test inputs shared by the CPU and GPU tests (attention, fused kernels, GEMMs): seeded
 * N(0, 1) arrays and their magnitudes. Every array is malloc'd; the caller frees it. */
#ifndef AGOQ_TEST_BF16_H
#define AGOQ_TEST_BF16_H
#include <stdint.h>
#include <stdlib.h>

#include "core/rng.h"
#include "kernels/quant/quant_math.h"

/* n N(0, 1) draws (agoq_fill, seed), each rounded to the nearest bf16 (ties to even). */
static inline uint16_t *rand_bf16(size_t n, uint64_t seed) {
    float *f = malloc(n * sizeof(float));
    uint16_t *h = malloc(n * sizeof(uint16_t));
    agoq_fill(AGOQ_DIST_NORMAL, f, n, seed);
    for (size_t i = 0; i < n; i++) h[i] = agoq_f32_to_bf16(f[i]);
    free(f);
    return h;
}
/* |x| elementwise (the sign bit cleared): the magnitudes the error bounds are scaled by. */
static inline uint16_t *abs_bf16(const uint16_t *x, size_t n) {
    uint16_t *y = malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) y[i] = x[i] & 0x7fffu;
    return y;
}
#endif
