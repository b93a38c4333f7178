/* Device pieces of issue 15's q7 option (AGOQ_TILE_OPT_Q7, fixed since the eleventh session) for the tile quantizers'
 * packed bf16 fast path (quant_tile.cuh, agoq_tile_view_bf16p); the FP4 encoder itself is host
 * and device code in quant_q7.h. */
#ifndef AGOQ_QUANT_Q7_CUH
#define AGOQ_QUANT_Q7_CUH
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/quant/quant_q7.h"

/* Running absmax of a packed pair: max.NaN.xorsign.abs.bf16x2, one instruction (the q6 range
 * takes two: the mask of the signs and max.u16x2). Per half: max(|m|, |w|), exact (the values
 * are bf16), with the xor of the signs (the caller masks them off once at the end), NaN when
 * either is a NaN, +Inf when either is +-Inf and none a NaN: the absmax, +Inf or a NaN exactly
 * when the q6 range gives one (the careful path takes the latter two). */
__device__ __forceinline__ uint32_t agoq_bf16x2_absmax_xs(uint32_t m, uint32_t w) {
    uint32_t r;
    asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(m), "r"(w));
    return r;
}
#endif
