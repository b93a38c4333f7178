/* Device pieces of issue 15's q8 option (AGOQ_TILE_OPT_Q8, AGOQ_Q8=1) for the tile quantizers
 * (quant_tile.cuh, which includes this after the CTA LUT agoq_tile_lut_smem and
 * agoq_tile_pack_low it uses); the address arithmetic is host and device code in quant_q8.h. */
#ifndef AGOQ_QUANT_Q8_CUH
#define AGOQ_QUANT_Q8_CUH
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_device.cuh"
#include "kernels/quant/quant_q8.h"

/* q8's staging (AGOQ_TILE_OPT_Q8; CTAs of AGOQ_QUANT_THREADS): every load of the table and the
 * LUT issued before the first store (the loop above waits one L2 round trip per 256 entries: the
 * generic source may alias the shared copy), then the table (agoq_dev_load_table's copy, for the
 * careful path) and the LUT stores: the 8-byte entries, or with LUT32 (AGOQ_TILE_OPT_LUT32,
 * dyn8's default since the twelfth session, AGOQ_Q8_LUT32) the 32-bit ones of tab_lut32.h in the
 * 11 KB array. All threads; then
 * __syncthreads(). */
template <bool LUT32 = false>
__device__ __forceinline__ void agoq_tile_stage_q8(agoq_smem_table *tab, const agoq_cuda_qparams &p) {
    constexpr int kPer = (AGOQ_TAB_LUT_MAX + AGOQ_QUANT_THREADS - 1) / AGOQ_QUANT_THREADS;
    const uint2 *__restrict__ g = (const uint2 *)p.table->lut.e;
    const int ne = 2 * p.tab_nb;
    uint2 r[kPer];
#pragma unroll
    for (int k = 0; k < kPer; k++) {
        const int i = (int)threadIdx.x + k * AGOQ_QUANT_THREADS;
        if (i < ne) r[k] = __ldg(g + i);
    }
    agoq_dev_load_table(tab, p.table);
    const uint32_t m = (1u << p.tab_shift) - 1u;
#pragma unroll
    for (int k = 0; k < kPer; k++) {
        const int i = (int)threadIdx.x + k * AGOQ_QUANT_THREADS;
        if (i >= ne) continue;
        if constexpr (LUT32) agoq_tile_lut32_smem()[i] = agoq_tab_lut32_entry(r[k].x, r[k].y, m);
        else agoq_tile_lut_smem()[i] = r[k];
    }
}
/* q8 (AGOQ_TILE_OPT_Q8, quant_q8.h): N table positions of v * inv by the CTA's LUT at a 32-bit
 * shared address (agoq_q8_lut_index as an address: one select of the sign's half, one shift,
 * one LEA), packed by agoq_tile_pack_low. LUT32: one 32-bit load per code instead of an 8-byte
 * one (about half the bank conflicts, tab_lut32.h) and one add a code (agoq_tab_lut32_sum;
 * 8-bit codes packed from its top byte, 4 at a time).
 * Contract: the fast path, ident, agoq_q8_lut_ok. */
template <int BITS, int N, bool LUT32 = false>
__device__ __forceinline__ uint64_t agoq_tile_q8_table(const agoq_cuda_qparams &p, const float (&v)[N], float inv) {
    constexpr int kEs = LUT32 ? 2 : 3;
    constexpr bool kTop = LUT32 && BITS == 8 && N % 4 == 0; /* the codes packed from the sums' top bytes */
    uint32_t lut; /* only the array this variant reads is referenced (each is a kernel's static shared memory) */
    if constexpr (LUT32) lut = (uint32_t)__cvta_generic_to_shared(agoq_tile_lut32_smem());
    else lut = (uint32_t)__cvta_generic_to_shared(agoq_tile_lut_smem());
    uint32_t pos0, neg0, w[N];
    agoq_q8_lut_bases(lut, p.tab_base, p.tab_nb, kEs, &pos0, &neg0);
    const uint32_t m = (1u << p.tab_shift) - 1u; /* LUT32: the key mask */
#pragma unroll
    for (int j = 0; j < N; j++) {
        const float y = v[j] * inv;
        const uint32_t a = agoq_q8_lut_addr(pos0, neg0, p.tab_shift, p.tab_lo, y, kEs);
        if constexpr (LUT32) {
            uint32_t e;
            asm("ld.shared.u32 %0, [%1];" : "=r"(e) : "r"(a));
            w[j] = kTop ? agoq_tab_lut32_sum(e, y, m) : agoq_tab_lut32_pos(e, y, m);
        } else {
            uint32_t thr, pos;
            asm("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(thr), "=r"(pos) : "r"(a));
            w[j] = agoq_tab_lut_pos(thr, pos, y);
        }
    }
    return agoq_tile_pack_low<BITS, N, kTop ? 3 : 0>(w);
}
#endif
