/* The tile quantizer's staged tables (quant_tile.cuh, moved out of it unchanged): the
 * round-to-nearest LUT of tab_lut.h in the kernel's shared array (8-byte entries; the 32-bit
 * array of AGOQ_TILE_OPT_LUT32, which the q8 encoder stages itself), the uniform grid (AGOQ_TILE_OPT_GRID) and the code packing the
 * table encoders share. Included by quant_tile.cuh only. */
#ifndef AGOQ_QUANT_TILE_LUT_CUH
#define AGOQ_QUANT_TILE_LUT_CUH
#include "kernels/quant/quant_device.cuh"
#include "kernels/quant/tab_lut32.h"

/* ---- the round-to-nearest LUT of tab_lut.h staged in the tile kernel's own shared array
 * (agoq_tile_lut_smem), read with 32-bit shared addresses (agoq_smem_table::lut is a generic
 * pointer: 64-bit address arithmetic and generic loads per element), for tables whose code is
 * the sorted position (dyn8: no code lookup). Entries are copies and the index is
 * agoq_tab_lut_index: agoq_dev_table_code_rn's codes bit for bit. Sources with kVrep != 0
 * (the 8-bit gradient kernels, grad8.cu) select it; their launchers check ident. ---- */
__device__ __forceinline__ uint2 *agoq_tile_lut_smem() {
    __shared__ uint2 lut[AGOQ_TAB_LUT_MAX];
    return lut;
}
/* LUT32: the same LUT in 32-bit entries (tab_lut32.h: half the shared memory and about half the
 * bank conflicts of the 8-byte entries, two more integer operations per code), built by each
 * CTA from the device table's entries: the q8 table encoder's (AGOQ_TILE_OPT_LUT32, on by
 * default for dyn8, AGOQ_Q8_LUT32; quant_q8.cuh, quant_opts.cu) and, since the twenty-second
 * session's carry form, the gradient kernels' dyn8 encoder (AGOQ_G8_LUT32, quant_launch.cuh; the
 * twelfth session's compare form, AGOQ_G8=4, had lost its A/B). */
__device__ __forceinline__ uint32_t *agoq_tile_lut32_smem() {
    __shared__ uint32_t lut32[AGOQ_TAB_LUT_MAX];
    return lut32;
}
/* All threads of the CTA; then __syncthreads(). B: agoq_dev_stage_words's batch (0: the plain loop). */
template <int B = 12>
__device__ __forceinline__ void agoq_tile_stage_lut(const agoq_cuda_qparams &p) {
    const uint2 *g = (const uint2 *)p.table->lut.e;
    if constexpr (B == 0)
        for (int i = (int)threadIdx.x, ne = 2 * p.tab_nb; i < ne; i += (int)blockDim.x) agoq_tile_lut_smem()[i] = g[i];
    else
        agoq_dev_stage_words<B>(agoq_tile_lut_smem(), g, 2 * p.tab_nb, (int)threadIdx.x, (int)blockDim.x);
}
__device__ __forceinline__ uint32_t agoq_tile_table_pos(const agoq_cuda_qparams &p, float y) {
    const int i = agoq_tab_lut_index(p.tab_shift, p.tab_base, p.tab_nb, p.tab_lo, p.tab_hi, y);
    const uint2 e = agoq_tile_lut_smem()[i];
    return agoq_tab_lut_pos(e.x, e.y, y);
}

/* ---- the uniform grid of tab_lut.h (AGOQ_TILE_OPT_GRID; tables that have one, whose code is
 * the position: NF4), staged in the tile kernel's own 1 KB shared array: the entry index is one
 * FFMA and a mask (agoq_tab_grid_index), no |y| clamp, shift or sign select. Its contract |y| <=
 * AGOQ_TAB_GRID_YMAX holds on the fast path (|y| < 1.004, tab_lut.h). ---- */
__device__ __forceinline__ uint2 *agoq_tile_grid_smem() {
    __shared__ uint2 grid[AGOQ_TAB_GRID_MAX];
    return grid;
}
/* All threads of the CTA; then __syncthreads(). */
__device__ __forceinline__ void agoq_tile_stage_grid(const agoq_cuda_qparams &p) {
    agoq_dev_stage_words<1>(agoq_tile_grid_smem(), (const uint2 *)p.table->grid.e, (int)agoq_tab_grid_mask(p.tab_gk) + 1,
                            (int)threadIdx.x, (int)blockDim.x);
}
__device__ __forceinline__ uint32_t agoq_tile_grid_pos(const agoq_cuda_qparams &p, float y) {
    const uint2 e = agoq_tile_grid_smem()[agoq_tab_grid_index(p.tab_gk, agoq_tab_grid_mask(p.tab_gk), y)];
    return agoq_tab_lut_pos(e.x, e.y, y);
}

/* N codes of BITS in the low bits of the words w (the magic-add encoders: the bits above the
 * code are the magic's), packed LSB first: 8-bit codes by byte permutes (3 per 4 codes); with
 * BYTE = 3 the 8-bit codes are the words' top bytes (agoq_tab_lut32_sum) */
template <int BITS, int N, int BYTE = 0>
__device__ __forceinline__ uint64_t agoq_tile_pack_low(const uint32_t (&w)[N]) {
    static_assert(BYTE == 0 || (BITS == 8 && N % 4 == 0 && BYTE < 4), "a code byte other than the low one: 8-bit codes, 4 at a time");
    uint64_t packed = 0;
    if constexpr (BITS == 8 && N % 4 == 0) {
        constexpr uint32_t kSel = 0x0040u + 0x0011u * BYTE; /* bytes BYTE of a and of b */
#pragma unroll
        for (int q = 0; q < N / 4; q++) {
            const uint32_t lo = __byte_perm(w[4 * q], w[4 * q + 1], kSel), hi = __byte_perm(w[4 * q + 2], w[4 * q + 3], kSel);
            packed |= (uint64_t)__byte_perm(lo, hi, 0x5410u) << (32 * q);
        }
    } else {
#pragma unroll
        for (int j = 0; j < N; j++) packed |= (uint64_t)(w[j] & ((1u << BITS) - 1u)) << (j * BITS);
    }
    return packed;
}
#endif
