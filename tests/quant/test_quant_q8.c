/* Host proofs for issue 15's q8 table encoder (kernels/quant/quant_q8.h, the address the tile
 * quantizers compute with AGOQ_Q8=1 on packed bf16 tiles):
 *  - the fast path's bound: AGOQ_Q8_YMAX lies above 256 / 255 (tab_lut.h's |y| bound, proved
 *    over every absmax by test_quant_math.c's table_grid_bound_over_every_absmax);
 *  - dyn8's LUT passes agoq_q8_lut_ok (so the launcher takes the path);
 *  - for every table whose LUT passes it, agoq_q8_lut_addr = lut + 2^es agoq_tab_lut_index on
 *    every float with |y| <= AGOQ_Q8_YMAX from hi / 2 up (every bit pattern, both signs: where
 *    the dropped upper clamp could matter) and a strided sweep below (the lower clamp is the
 *    old one), and the position read there equals the reference's table search, for both entry
 *    sizes: es = 3 (8-byte entries) and es = 2 (the 32-bit entries of AGOQ_Q8_LUT32, read by
 *    agoq_tab_lut32_pos). */
#include <math.h>

#include "kernels/quant/formats.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_q8.h"
#include "kernels/quant/tab_lut.h"
#include "kernels/quant/tab_lut32.h"
#include "tests/test.h"

TEST(q8_ymax_bounds_the_fast_path) {
    CHECK((double)AGOQ_Q8_YMAX > 256.0 / 255.0);
    static agoq_tab_lut lut;
    const agoq_code_table *t = agoq_table(AGOQ_FMT_DYN8);
    CHECK(agoq_tab_lut_build(&lut, t->sorted, t->mid, t->sorted_code, t->nsorted) == 0);
    CHECK(lut.ident && agoq_q8_lut_ok(lut.shift, lut.hi));
}

/* 1 on a mismatch (address or code; the first 5 of bad printed), counting the value tried. es:
 * log2 of the entry size (3: {thr, pos}; 2: the 32-bit entry of tab_lut32.h). */
static int q8_check(const agoq_code_table *t, const agoq_tab_lut *lut, uint32_t pos0, uint32_t neg0, int es, float y,
                    size_t *tried, size_t bad) {
    const uint32_t kLut = 0x1000u; /* any shared address: the arithmetic is modulo 2^32 */
    const int idx = agoq_tab_lut_index(lut->shift, lut->base, lut->nb, lut->lo, lut->hi, y);
    const uint32_t addr = agoq_q8_lut_addr(pos0, neg0, lut->shift, lut->lo, y, es);
    (*tried)++;
    if (addr != kLut + ((uint32_t)idx << es)) {
        if (bad < 5) fprintf(stderr, "    y = %a: q8 address 0x%x, LUT index %d (entries of %d bytes)\n", y, addr, idx, 1 << es);
        return 1;
    }
    const uint32_t *e = lut->e[(addr - kLut) >> es], m = (1u << lut->shift) - 1u;
    const uint32_t pos = es == 3 ? agoq_tab_lut_pos(e[0], e[1], y) : agoq_tab_lut32_pos(agoq_tab_lut32_entry(e[0], e[1], m), y, m);
    const uint32_t want = t->sorted_code[agoq_table_pos(t->sorted, t->mid, t->sorted_code, t->nsorted, y, -1.0f)];
    if ((lut->ident ? pos : t->sorted_code[pos]) != want) {
        if (bad < 5) fprintf(stderr, "    y = %a: q8 position %u, reference code %u (entries of %d bytes)\n", y, pos, want, 1 << es);
        return 1;
    }
    return 0;
}

TEST(q8_lut_address_equals_lut_index_up_to_ymax) {
    static agoq_tab_lut lut;
    int checked = 0, checked_dyn8 = 0;
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        const agoq_code_table *t = agoq_table((agoq_format)f);
        if (!t || agoq_tab_lut_build(&lut, t->sorted, t->mid, t->sorted_code, t->nsorted)) continue;
        if (!agoq_q8_lut_ok(lut.shift, lut.hi)) continue;
        checked++;
        for (int es = 3; es >= 2; es--) {
            uint32_t pos0, neg0;
            agoq_q8_lut_bases(0x1000u, lut.base, lut.nb, es, &pos0, &neg0);
            size_t bad = 0, tried = 0;
            const uint32_t top = agoq_f32_bits(AGOQ_Q8_YMAX), dense = agoq_f32_bits(lut.hi * 0.5f);
            for (uint32_t u = 0; u <= top; u += u < dense ? 331u : 1u)
                for (uint32_t s = 0; s < 2; s++)
                    bad += (size_t)q8_check(t, &lut, pos0, neg0, es, agoq_bits_f32(u | s << 31), &tried, bad);
            for (int i = 0; i + 1 < t->nsorted; i++) /* every midpoint below the bound, 2 ulps either side */
                for (int d = -2; d <= 2; d++) {
                    const float y = agoq_bits_f32(agoq_f32_bits(t->mid[i]) + (uint32_t)d);
                    if (fabsf(y) <= AGOQ_Q8_YMAX) bad += (size_t)q8_check(t, &lut, pos0, neg0, es, y, &tried, bad);
                }
            CHECK_MSG(bad == 0, "%s, %d-byte entries: %zu of %zu values differ", agoq_formats[f].name, 1 << es, bad, tried);
        }
        if (f == AGOQ_FMT_DYN8) checked_dyn8 = 1;
    }
    CHECK(checked >= 1 && checked_dyn8);
}
