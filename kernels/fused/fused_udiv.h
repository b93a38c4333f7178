/* Division of a kernel's unit index by a launch-uniform divisor without the ~25-instruction
 * integer division sequence nvcc emits for a runtime divisor: one multiply-high, a shift and a
 * select (Granlund-Montgomery, round-up multiplier). For d >= 2, l = ceil(log2 d), p = 31 + l,
 * m = ceil(2^p / d) < 2^32; then n / d = (n m) >> p for every n < 2^31: n m / 2^p = n / d + e with
 * 0 <= e < n / 2^p < 2^-l <= 1 / d, and n / d's fractional part is at most (d - 1) / d, so the
 * floor does not move. d = 1 is the identity. The host makes the constants; the same function
 * divides on the host (tests/fused/test_fused_udiv.c checks it against '/') and on the device. */
#ifndef AGOQ_FUSED_UDIV_H
#define AGOQ_FUSED_UDIV_H
#include <stdint.h>

#include "kernels/quant/quant_math.h"

#define AGOQ_UDIV_NMAX ((uint32_t)1 << 31) /* dividends must be below this */

typedef struct {
    uint32_t d; /* the divisor, >= 1 */
    uint32_t m; /* ceil(2^(31 + l) / d); unused for d = 1 */
    uint32_t s; /* l - 1 = p - 32 for d >= 2 */
} agoq_udiv;

/* The constants for divisor d >= 1 (host side; d = 0 gives the identity's, callers never pass it) */
static inline agoq_udiv agoq_udiv_make(uint32_t d) {
    agoq_udiv v = {d ? d : 1u, 0u, 0u};
    if (v.d < 2) return v;
    uint32_t l = 0;
    while (((uint64_t)1 << l) < v.d) l++;
    v.m = (uint32_t)((((uint64_t)1 << (31 + l)) + v.d - 1) / v.d);
    v.s = l - 1;
    return v;
}

/* n / v.d for n < AGOQ_UDIV_NMAX */
AGOQ_HD uint32_t agoq_udiv_q(agoq_udiv v, uint32_t n) {
    const uint32_t hi = (uint32_t)(((uint64_t)n * v.m) >> 32);
    return v.d == 1 ? n : hi >> v.s;
}
#endif
