/* Host <-> device bf16 helpers shared by the fused-kernel and GEMM GPU tests. */
#ifndef AGOQ_TEST_FUSED_UTIL_H
#define AGOQ_TEST_FUSED_UTIL_H
#include <stdint.h>
#include <stdlib.h>

#include "core/rng.h"
#include "kernels/fused/fused.h"
#include "kernels/quant/quant_math.h"

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
/* Host bf16 array of n N(0, 1) draws (agoq_fill, seed), rounded to nearest even. */
static inline uint16_t *rand_bf16(size_t n, uint64_t seed) {
    float *f = malloc(n * sizeof(float));
    uint16_t *h = malloc(n * 2);
    agoq_fill(AGOQ_DIST_NORMAL, f, n, seed);
    for (size_t i = 0; i < n; i++) h[i] = agoq_f32_to_bf16(f[i]);
    free(f);
    return h;
}
#endif
