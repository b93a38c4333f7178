/* The round-to-nearest table LUT of tab_lut.h in 32-bit entries (issue 15: the CTA copy of the
 * q8 table encoder, quant_q8.cuh, AGOQ_TILE_OPT_LUT32). A separate header so that
 * the many users of tab_lut.h do not depend on it. */
#ifndef AGOQ_TAB_LUT32_H
#define AGOQ_TAB_LUT32_H
#include "kernels/quant/tab_lut.h"
/* The LUT in 32-bit entries (issue 15 g8: a warp's 8-byte entry loads took ~6 shared-memory
 * wavefronts on gradient data, 32-bit ones ~3.4): entry = pos << 24 | (2^24 - 1 - key(thr)),
 * where key(x) = (bits(x) ^ (bits(x) sign-extended)) & M, M = 2^shift - 1; key(thr) = M + 1 for
 * a constant bucket (thr = +Inf). For y and thr in one bucket of one sign (every entry but the
 * end buckets, which are constant; NaN excluded) y > thr <=> key(y) > key(thr): the bits above
 * the shift agree, positive floats order as their low bits, negative ones as their low bits'
 * complement (thr is never -0: tab_lut.c). Position <= 255 and key(thr) <= 2^23 fit (shift <=
 * 23). The sum entry + key(y) carries into bit 24 exactly when key(y) > key(thr) (its low 24
 * bits are 2^24 - 1 - key(thr) + key(y), and key(y) <= M < 2^23), so its top byte is the
 * position: one add and no compare or select a code (twenty-second session; the top byte is
 * picked by a byte permute when codes are packed, agoq_tile_pack_low<8, N, 3>). A constant
 * bucket never carries (2^24 - 1 - (M + 1) + M), so position 255 never wraps. So
 * agoq_tab_lut32_pos(agoq_tab_lut32_entry(e), y, M) == agoq_tab_lut_pos(e.thr, e.pos, y) for y
 * of entry e's bucket: tests/quant/test_quant_math.c sweeps it. */
AGOQ_HD uint32_t agoq_tab_lut32_key(uint32_t x_bits, uint32_t m) {
    return (x_bits ^ (uint32_t)((int32_t)x_bits >> 31)) & m;
}
AGOQ_HD uint32_t agoq_tab_lut32_entry(uint32_t thr_bits, uint32_t pos, uint32_t m) {
    return pos << 24 | (0xffffffu - (thr_bits == 0x7f800000u ? m + 1u : agoq_tab_lut32_key(thr_bits, m)));
}
/* entry + key(y): the position in the top byte */
AGOQ_HD uint32_t agoq_tab_lut32_sum(uint32_t entry, float y, uint32_t m) {
    return entry + agoq_tab_lut32_key(agoq_f32_bits(y), m);
}
AGOQ_HD uint32_t agoq_tab_lut32_pos(uint32_t entry, float y, uint32_t m) {
    return agoq_tab_lut32_sum(entry, y, m) >> 24;
}
#endif
