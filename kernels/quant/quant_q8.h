/* Issue 15 (q8, AGOQ_Q8; on by default per encoder, quant_opts.cu): the table encoder of the tile quantizers' packed bf16
 * fast path (AGOQ_TILE_OPT_Q8, quant_tile.cuh), host and device (AGOQ_HD), so that
 * tests/quant/test_quant_q8.c proves on the host the index the kernels compute.
 *
 * Why dyn8 from bf16 stalled at 0.74 of copy: its fast path read the 22 KB LUT through
 * agoq_smem_table::lut, a generic pointer: per element a 64-bit index multiply and add and a
 * generic load (plus the pointer's own shared load per vector), the sign select as shift / and
 * / sub / add, the |y| clamp at both ends, and the codes or-ed into a 64-bit word; ~20 PTX
 * instructions an element, at a budget of ~21 lane-instructions an element for the H200's
 * bandwidth (4 x 32 lanes per cycle and SM over ~6 bf16 elements per cycle and SM). q8: the
 * CTA's own LUT copy at a 32-bit shared address, the half of the sign picked by one select of
 * two uniform bases, no upper clamp (below), the codes packed by byte permutes.
 *
 * The upper clamp: the fast path's |y| (x * (1 / s), s = absmax or bf16(absmax), qmax 1) is
 * below AGOQ_Q8_YMAX (tab_lut.h: |y| < 1 / (1 - 2^-8); tests/quant/test_quant_math.c proves
 * the bound). When bucket(AGOQ_Q8_YMAX) <= bucket(hi), every |y| in [hi, AGOQ_Q8_YMAX] is in
 * hi's bucket, so dropping min(., hi) changes no index: agoq_q8_lut_ok, checked by the
 * launcher (quant_launch.cuh), which runs the old path when it fails. The bound is that of
 * absmax tables with qmax 1 (NF4, dyn8: the tables whose code is the position); the launcher
 * checks qmax too. dyn8 passes (hi = 1, shift 17); NF4 (hi = 0.875) does not, and keeps its grid. */
#ifndef AGOQ_QUANT_Q8_H
#define AGOQ_QUANT_Q8_H
#include "kernels/quant/quant_math.h"

#define AGOQ_Q8_YMAX 1.0040f /* above 256 / 255, the fast path's |y| bound */

/* 1 when the LUT (shift, hi: tab_lut.h) needs no upper clamp for |y| <= AGOQ_Q8_YMAX. */
AGOQ_HD int agoq_q8_lut_ok(int shift, float hi) {
    return (agoq_f32_bits(AGOQ_Q8_YMAX) >> shift) <= (agoq_f32_bits(hi) >> shift);
}
/* The byte address of y's LUT entry (y not NaN, |y| <= AGOQ_Q8_YMAX, agoq_q8_lut_ok), entries of
 * 2^es bytes from lut (es = 3: the 8-byte {thr, pos} entries; es = 2: the 32-bit entries of
 * tab_lut32.h, AGOQ_Q8_LUT32): lut + 2^es agoq_tab_lut_index(..) (mod 2^32) computed as
 * (sign ? neg0 : pos0) + (bucket << es), pos0 = lut - 2^es base, neg0 = pos0 + 2^es nb
 * (agoq_q8_lut_bases): the sign's half by one bit select (LOP3), the bucket without the upper clamp. */
AGOQ_HD void agoq_q8_lut_bases(uint32_t lut, int base, int nb, int es, uint32_t *pos0, uint32_t *neg0) {
    *pos0 = lut - ((uint32_t)base << es);
    *neg0 = *pos0 + ((uint32_t)nb << es);
}
AGOQ_HD uint32_t agoq_q8_lut_addr(uint32_t pos0, uint32_t neg0, int shift, float lo, float y, int es) {
    const uint32_t bucket = agoq_f32_bits(fmaxf(fabsf(y), lo)) >> shift;
    const uint32_t neg = (uint32_t)((int32_t)agoq_f32_bits(y) >> 31);
#ifdef __CUDA_ARCH__
    uint32_t half; /* (neg0 & neg) | (pos0 & ~neg) */
    asm("lop3.b32 %0, %1, %2, %3, 0xe4;" : "=r"(half) : "r"(neg0), "r"(pos0), "r"(neg));
#else
    const uint32_t half = (neg0 & neg) | (pos0 & ~neg);
#endif
    return half + (bucket << es);
}
#endif
