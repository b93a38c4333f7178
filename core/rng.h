/* Deterministic random inputs: the same seed gives the same tensor on every machine.
 * Generator: splitmix64 (the state is a counter, so fills are reproducible per index). */
#ifndef AGOQ_RNG_H
#define AGOQ_RNG_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct { uint64_t s; } agoq_rng;
static inline uint64_t agoq_rng_next(agoq_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double agoq_rng_u01(agoq_rng *r) { return (double)(agoq_rng_next(r) >> 11) * 0x1.0p-53; }
double agoq_rng_normal(agoq_rng *r); /* N(0, 1), Box-Muller */

/* Input distributions of `agoq quant` and the tests. */
typedef enum {
    AGOQ_DIST_NORMAL,   /* N(0, 1) */
    AGOQ_DIST_UNIFORM,  /* U(-1, 1) */
    AGOQ_DIST_OUTLIERS, /* N(0, 1) with 0.1% of elements scaled by 100 (activation outliers) */
    AGOQ_DIST_HEAVY,    /* Student-t with 3 degrees of freedom (heavy tails, e.g. gradients) */
    AGOQ_DIST_CONSTANT, /* every element 0.37 */
    AGOQ_DIST_ZEROS,
    AGOQ_DIST_COUNT
} agoq_dist;
extern const char *const agoq_dist_names[AGOQ_DIST_COUNT];
int agoq_dist_by_name(const char *name); /* -1 when unknown */
void agoq_fill(agoq_dist d, float *x, size_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
