/* Deterministic inputs; see rng.h. */
#include "core/rng.h"

#include <math.h>
#include <string.h>

const char *const agoq_dist_names[AGOQ_DIST_COUNT] = {"normal", "uniform", "outliers", "heavy", "constant", "zeros"};

int agoq_dist_by_name(const char *name) {
    for (int d = 0; d < AGOQ_DIST_COUNT; d++)
        if (name && strcmp(name, agoq_dist_names[d]) == 0) return d;
    return -1;
}

double agoq_rng_normal(agoq_rng *r) {
    double u1 = agoq_rng_u01(r), u2 = agoq_rng_u01(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void agoq_fill(agoq_dist d, float *x, size_t n, uint64_t seed) {
    agoq_rng r = {seed * 0x2545F4914F6CDD1Dull + 1};
    for (size_t i = 0; i < n; i++) {
        switch (d) {
        case AGOQ_DIST_NORMAL: x[i] = (float)agoq_rng_normal(&r); break;
        case AGOQ_DIST_UNIFORM: x[i] = (float)(2.0 * agoq_rng_u01(&r) - 1.0); break;
        case AGOQ_DIST_OUTLIERS: {
            double v = agoq_rng_normal(&r);
            x[i] = (float)(agoq_rng_u01(&r) < 0.001 ? 100.0 * v : v);
            break;
        }
        case AGOQ_DIST_HEAVY: { /* t(3) = Z / sqrt(chi2(3)/3) */
            double z = agoq_rng_normal(&r), c = 0;
            for (int k = 0; k < 3; k++) {
                double g = agoq_rng_normal(&r);
                c += g * g;
            }
            x[i] = (float)(z / sqrt(c / 3.0 + 1e-300));
            break;
        }
        case AGOQ_DIST_CONSTANT: x[i] = 0.37f; break;
        default: x[i] = 0.0f; break;
        }
    }
}
