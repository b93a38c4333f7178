/* Host <-> device bf16 helpers shared by the fused-kernel and GEMM GPU tests (and, from
 * tests/test_bf16.h, their seeded inputs). */
#ifndef AGOQ_TEST_FUSED_UTIL_H
#define AGOQ_TEST_FUSED_UTIL_H
#include <stdint.h>
#include <stdlib.h>

#include "kernels/fused/fused.h"
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
#endif
