/* agoq_udiv (kernels/fused/fused_udiv.h): the multiply-high division of the fused kernels' unit
 * index against C's '/' for every divisor up to 2^16 at the dividends where an error would show
 * (multiples of d and their neighbours, the largest allowed dividend), for large and power-of-two
 * divisors, and at random dividends (fixed seed). */
#include <stdint.h>

#include "core/rng.h"
#include "kernels/fused/fused_udiv.h"
#include "tests/test.h"

static int udiv_bad(uint32_t d, uint32_t n) {
    return n < AGOQ_UDIV_NMAX && agoq_udiv_q(agoq_udiv_make(d), n) != n / d;
}

TEST(fused_udiv_small_divisors_at_multiples) {
    int bad = 0;
    const uint32_t top = AGOQ_UDIV_NMAX - 1;
    for (uint32_t d = 1; d <= 65536 && bad < 5; d++) {
        const uint32_t k = top / d; /* the last multiple of d below 2^31 and its neighbours */
        const uint32_t n[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, k * d - 1, k * d, top, top - 1, top - d};
        for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) bad += udiv_bad(d, n[i]);
    }
    CHECK(bad == 0);
}

TEST(fused_udiv_large_and_power_of_two_divisors) {
    int bad = 0;
    for (uint32_t l = 0; l < 32; l++) {
        const uint32_t p = (uint32_t)1 << l, d[] = {p, p - 1 ? p - 1 : 1, p + 1, p | (p >> 1)};
        for (unsigned j = 0; j < 4; j++) {
            const uint32_t n[] = {0, d[j] - 1, d[j], AGOQ_UDIV_NMAX - 1, AGOQ_UDIV_NMAX - 1 - d[j] % 7};
            for (unsigned i = 0; i < 5; i++) bad += udiv_bad(d[j], n[i]);
        }
    }
    CHECK(bad == 0);
    CHECK(agoq_udiv_q(agoq_udiv_make(6), 2147483647u) == 357913941u);
    CHECK(agoq_udiv_q(agoq_udiv_make(1), 2147483647u) == 2147483647u);
}

TEST(fused_udiv_random) {
    agoq_rng r = {17};
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        const uint64_t z = agoq_rng_next(&r);
        const uint32_t d = ((uint32_t)z >> ((z >> 32) % 32)) | 1u;
        const uint32_t n = (uint32_t)(agoq_rng_next(&r) >> 33);
        bad += udiv_bad(d, n) + (d < UINT32_MAX ? udiv_bad(d + 1, n) : 0);
    }
    CHECK(bad == 0);
}
