/* The Hopper GEMM's shape and epilogue checks (gemm_wg.h), plain C: the step planner
 * (step/gemm_site.c) decides in dry runs, and in builds without CUDA, which GEMM sites the
 * fused kernel could take, with the same rules as the kernel's launcher. */
#include "kernels/gemm/gemm_wg.h"

#include "core/common.h"
#include "kernels/quant/formats.h"

int agoq_wg_check(int m, int n, int k, const agoq_qconfig *eq) {
    AGOQ_REQUIRE(m > 0 && n > 0 && k > 0 && m % 8 == 0 && n % 8 == 0 && k % 8 == 0,
                 "gemm_wg: shape M=%d N=%d K=%d unsupported (need positive multiples of 8)", m, n, k);
    if (!eq) return 0;
    if (agoq_qconfig_check(eq)) return -1;
    AGOQ_REQUIRE(eq->block >= 8 && AGOQ_WG_TILE_N % eq->block == 0 && n % eq->block == 0,
                 "gemm_wg: fused epilogue needs block %d to divide %d and N=%d", eq->block, AGOQ_WG_TILE_N, n);
    return 0;
}
