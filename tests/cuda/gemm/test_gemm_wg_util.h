/* Shared by the Hopper GEMM's GPU tests (test_gemm_wg_cuda.c, test_gemm_wg_sk_cuda.c). */
#ifndef AGOQ_TEST_GEMM_WG_UTIL_H
#define AGOQ_TEST_GEMM_WG_UTIL_H
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/gemm_wg.h"
#include "tests/cuda/fused/test_fused_util.h"

/* One run of g with the environment knob `knob` = value (NULL: unset; unset again after) into a
 * C prefilled with NaN (0xffff: an entry the kernel does not write is caught), downloaded;
 * *fails += a launch error. */
static inline uint16_t *wg_run_knob(const agoq_wg_args *g, const char *knob, const char *value, int *fails) {
    const size_t n = (size_t)g->m * (size_t)g->n;
    uint16_t *nan = malloc(n * 2);
    memset(nan, 0xff, n * 2);
    agoq_fused_h2d(g->c, nan, n * 2);
    free(nan);
    if (value) setenv(knob, value, 1);
    else unsetenv(knob);
    *fails += agoq_wg_gemm(g, NULL) != 0;
    agoq_fused_dsync();
    unsetenv(knob);
    return down16(g->c, n);
}
#endif
