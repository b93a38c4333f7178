/* Host proofs for issue 15's q7 FP4 encoder (kernels/quant/quant_q7.h, the code the tile
 * quantizers run with AGOQ_Q7=1 on packed bf16 tiles):
 *  - agoq_q7_fp4_mag_word equals the reference's encoder on every float in [0, 7) (its
 *    contract: the fast path's |y| <= 6 / (1 - 2^-9));
 *  - agoq_prmt's host model of prmt.b32 (byte select, sign replication);
 *  - agoq_q7_fp4_pack_bf16 equals the reference (table search of x * inv) nibble by nibble for
 *    every finite bf16 x (|x| <= the absmax), both signs, under the scales of absmax values of
 *    every bf16 mantissa in [1, 2) and four mantissas in binades from below the FLT_MIN floor
 *    of the scale to the top, fp32 and bf16 scales, each x in a random nibble with random
 *    neighbours (the block's +-absmax among them). */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/quant/formats.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_q7.h"
#include "tests/test.h"

/* The reference's code of a scaled value y (quant_ref.c: the table search). */
static uint32_t ref_fp4(float y) {
    const agoq_code_table *t = agoq_table(AGOQ_FMT_FP4_E2M1);
    return t->sorted_code[agoq_table_pos(t->sorted, t->mid, t->sorted_code, t->nsorted, y, -1.0f)];
}

TEST(q7_fp4_magnitude_equals_reference_on_every_float_below_7) {
    /* agoq_fp4_encode_rne is the reference's search (test_quant_math.c proves it on every
     * midpoint and a bit sweep); the table search itself on every 61st pattern and the ties */
    size_t bad = 0, tried = 0;
    const uint32_t end = agoq_f32_bits(7.0f);
    for (uint32_t u = 0; u < end; u++, tried++) {
        const float a = agoq_bits_f32(u);
        const uint32_t w = agoq_q7_fp4_mag_word(a), want = agoq_fp4_encode_rne(a);
        if (((w & 0xffu) != want || (w >> 8) != (agoq_f32_bits(AGOQ_Q7_MAGIC) >> 8)) && bad++ < 5)
            fprintf(stderr, "    a = %a: q7 word 0x%08x, reference code %u\n", a, w, want);
        if (u % 61 == 0 && want != ref_fp4(a)) bad++;
    }
    const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0.0f};
    for (size_t i = 0; i < sizeof ties / sizeof ties[0]; i++)
        for (int d = -2; d <= 2; d++) {
            const float a = agoq_bits_f32(agoq_f32_bits(ties[i]) + (uint32_t)d);
            if (a < 0.0f || !(a < 7.0f)) continue;
            bad += (agoq_q7_fp4_mag_word(a) & 0xffu) != ref_fp4(a);
        }
    CHECK_MSG(bad == 0 && tried == end, "%zu of %zu values differ", bad, tried);
}

TEST(q7_prmt_host_model) {
    const uint32_t x = 0x80017f02u, y = 0xff4080c3u;
    CHECK(agoq_prmt(x, y, 0x3210u) == x && agoq_prmt(x, y, 0x7654u) == y);
    CHECK(agoq_prmt(x, y, 0x0040u) == 0x0202c302u);
    CHECK(agoq_prmt(x, y, 0x5410u) == 0x80c37f02u);
    CHECK(agoq_prmt(x, y, 0xfbd9u) == 0xffffff00u); /* signs of x.b1 = 0x7f, y.b1 = 0x80, x.b3 = 0x80, y.b3 = 0xff */
    CHECK(agoq_prmt(x, y, 0x8e9cu) == 0x000000ffu); /* signs of y.b0 = 0xc3, x.b1, y.b2 = 0x40, x.b0 */
}

/* The fast path of one vector: the 8 bf16 of w against the reference per nibble; 0 or the
 * mismatches (the first few printed). */
static size_t check_vec(const uint32_t w[4], float inv) {
    const uint32_t got = agoq_q7_fp4_pack_bf16(w, inv);
    size_t bad = 0;
    for (int j = 0; j < 8; j++) {
        const uint16_t h = (uint16_t)(w[j / 2] >> (16 * (j % 2)));
        const float x = agoq_bf16_to_f32(h), y = x * inv;
        const uint32_t want = ref_fp4(y), nib = (got >> (4 * j)) & 15u;
        if (!(fabsf(y) < 7.0f)) return 1000000; /* outside the contract: the bound is wrong */
        if (nib != want && bad++ < 3) fprintf(stderr, "    x = %a (0x%04x), inv = %a: q7 0x%x, reference 0x%x\n", x, h, inv, nib, want);
    }
    return bad;
}

TEST(q7_fp4_pack_bf16_equals_reference_on_every_bf16) {
    agoq_rng r = {715};
    const int exps[] = {-136, -133, -130, -128, -127, -126, -125, -124, -3, -1, 0, 1, 2, 7, 120, 125, 126, 127};
    size_t bad = 0, vecs = 0;
    static uint16_t ok[65536]; /* the finite bf16 of the block: |x| <= absmax */
    for (size_t ei = 0; ei < sizeof exps / sizeof exps[0]; ei++)
        for (int mi = 0; mi < 128; mi++) { /* every bf16 mantissa in [1, 2), four in the other binades */
            const int mant = exps[ei] == 0 ? mi : (mi < 4 ? (int[]){0, 1, 63, 127}[mi] : -1);
            if (mant < 0) break;
            for (int bf16 = 0; bf16 < 2; bf16++) {
                const float amax = ldexpf(agoq_bf16_to_f32((uint16_t)(0x3f80u | (uint32_t)mant)), exps[ei]);
                if (amax == 0.0f || agoq_round_bf16(amax) != amax) continue; /* the absmax of bf16 data is a bf16 */
                const float s = agoq_block_scale(amax, 6.0f, bf16), inv = agoq_inv_scale(s);
                if (!agoq_isfinite(s) || !(s > 0.0f)) continue; /* the careful path */
                size_t nok = 0;
                for (uint32_t h = 0; h < 65536; h++) {
                    const float x = agoq_bf16_to_f32((uint16_t)h);
                    if (agoq_isfinite(x) && fabsf(x) <= amax) ok[nok++] = (uint16_t)h;
                }
                /* every allowed x once, in a random position, the other 7 drawn from the allowed set */
                for (size_t i = 0; i < nok; i++) {
                    uint16_t e[8];
                    for (int j = 0; j < 8; j++) e[j] = ok[agoq_rng_next(&r) % nok];
                    e[i % 8] = ok[i];
                    if (i % 8 == 3) e[(i + 1) % 8] = (uint16_t)(agoq_f32_to_bf16(amax) | ((i & 16) ? 0x8000u : 0u)); /* +-absmax */
                    uint32_t w[4];
                    for (int k = 0; k < 4; k++) w[k] = (uint32_t)e[2 * k] | (uint32_t)e[2 * k + 1] << 16;
                    bad += check_vec(w, inv);
                    vecs++;
                }
            }
        }
    CHECK_MSG(bad == 0 && vecs > 5000000, "%zu mismatches over %zu vectors", bad, vecs);
}
