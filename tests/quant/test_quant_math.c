/* Host-side proofs for the logic the CUDA kernels rely on (kernels/quant/quant_device.cuh):
 *  - the arithmetic encoders agoq_fp4_encode_rne / agoq_fp8_encode_rne and the integer
 *    agoq_fp4_encode_int (quant_fast.h, what the kernels use) equal the reference's
 *    table search (agoq_table_pos) over a strided sweep of all float bit patterns, every
 *    midpoint and its neighbours, the specials and the denormals;
 *  - the round-to-nearest LUT of every table (tab_lut.h) equals the same search;
 *  - the decoders equal the reference's value tables;
 *  - a group of 8 codes packed LSB-first into one word is exactly the `bits` bytes at byte
 *    offset g*bits of the codes plane that agoq_put_code writes;
 *  - the warp-segment mapping (G = B/8 lanes per block, floor(32/G) blocks per warp) visits
 *    every group of every block exactly once, for every block size 8..256 and tail length;
 *  - the canonical zero point: asymmetric blocks of signed zeros store +0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/quant/formats.h"
#include "kernels/quant/quant_fast.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"
#include "kernels/quant/quant_tile_geom.h"
#include "kernels/quant/tab_lut.h"
#include "tests/test.h"

/* The reference's encode of a scaled value y for a table format, round to nearest. */
static uint32_t table_encode(agoq_format f, float y) {
    const agoq_code_table *t = agoq_table(f);
    return t->sorted_code[agoq_table_pos(t->sorted, t->mid, t->sorted_code, t->nsorted, y, -1.0f)];
}

/* AGOQ_FMT_COUNT stands for the integer fp4 encoder of quant_fast.h (the kernels' one), the
 * next for its fast-path variant (the tile kernels'; compared on its contract |y| < 7 only). */
#define FP4_INT AGOQ_FMT_COUNT
#define FP4_FINITE (AGOQ_FMT_COUNT + 1)
#define FP4_PACK8 (AGOQ_FMT_COUNT + 2)
/* y's code through agoq_fp4_pack8_finite: y in lane j = bits % 8 of 8, the others alternately
 * -y and 0.5 (each nibble checked against its own value), 0xff when a nibble is wrong */
static uint32_t pack8_code(float y) {
    const int j = (int)(agoq_f32_bits(y) % 8u);
    float v[8];
    for (int i = 0; i < 8; i++) v[i] = i == j ? y : (i % 2 ? -y : 0.5f);
    const uint32_t packed = agoq_fp4_pack8_finite(v);
    for (int i = 0; i < 8; i++)
        if (((packed >> (4 * i)) & 15u) != agoq_fp4_encode_finite(v[i])) return 0xffu;
    return (packed >> (4 * j)) & 15u;
}
static uint32_t fast_encode(int f, float y) {
    if (f == FP4_PACK8) return pack8_code(y);
    if (f == FP4_INT) return agoq_fp4_encode_int(y);
    if (f == FP4_FINITE) return agoq_fp4_encode_finite(y);
    if (f == AGOQ_FMT_FP4_E2M1) return agoq_fp4_encode_rne(y);
    return agoq_fp8_encode_rne(y, f == AGOQ_FMT_FP8_E5M2);
}
static agoq_format table_of(int f) { return f >= FP4_INT ? AGOQ_FMT_FP4_E2M1 : (agoq_format)f; }

/* Compares both encoders on y; counts and reports the first mismatches. */
static size_t compare_one(int f, float y, size_t *bad) {
    if ((f == FP4_FINITE || f == FP4_PACK8) && !(fabsf(y) < 7.0f)) return 1; /* outside its contract (finite, |y| < 7) */
    uint32_t want = table_encode(table_of(f), y), got = fast_encode(f, y);
    if (want != got && (*bad)++ < 5)
        fprintf(stderr, "    %s%s: y = %a (0x%08x): table code 0x%02x, fast code 0x%02x\n", agoq_formats[table_of(f)].name,
                f == FP4_INT ? " (integer encoder)" : f == FP4_FINITE ? " (finite encoder)" : f == FP4_PACK8 ? " (pack8)" : "", y,
                agoq_f32_bits(y), want, got);
    return 1;
}

static const int kFast[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_FP8_E5M2, FP4_INT, FP4_FINITE, FP4_PACK8};

TEST(fast_fp4_fp8_encoders_equal_table_search_on_bit_sweep) {
    for (size_t k = 0; k < sizeof kFast / sizeof kFast[0]; k++) {
        size_t bad = 0, tried = 0;
        /* every 997th bit pattern (prime stride: all exponents, mantissas, both signs) */
        for (uint64_t u = 0; u <= 0xffffffffull; u += 997) tried += compare_one(kFast[k], agoq_bits_f32((uint32_t)u), &bad);
        /* every denormal pattern up to 2^16 and the ones below FLT_MIN, dense */
        for (uint32_t u = 0; u < 0x10000u; u++) {
            tried += compare_one(kFast[k], agoq_bits_f32(u), &bad);
            tried += compare_one(kFast[k], agoq_bits_f32(u | 0x80000000u), &bad);
        }
        CHECK_MSG(bad == 0, "%s (%d): %zu of %zu sweep values differ", agoq_formats[table_of(kFast[k])].name, kFast[k], bad, tried);
        CHECK(tried > 4000000);
    }
}

TEST(fast_fp4_fp8_encoders_equal_table_search_at_every_midpoint) {
    for (size_t k = 0; k < sizeof kFast / sizeof kFast[0]; k++) {
        const agoq_code_table *t = agoq_table(table_of(kFast[k]));
        size_t bad = 0;
        for (int i = 0; i + 1 < t->nsorted; i++) {
            const float m = t->mid[i];
            /* the tie itself, 1 and 2 ulp either side, and the table values */
            const float probes[] = {m, nextafterf(m, INFINITY), nextafterf(m, -INFINITY),
                                    nextafterf(nextafterf(m, INFINITY), INFINITY),
                                    nextafterf(nextafterf(m, -INFINITY), -INFINITY), t->sorted[i], t->sorted[i + 1]};
            for (size_t j = 0; j < sizeof probes / sizeof probes[0]; j++) compare_one(kFast[k], probes[j], &bad);
        }
        const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e30f, -1e30f, 3.4028235e38f,
                                  1.4e-45f, -1.4e-45f, 1.17549435e-38f, 448.0f, 464.0f, 465.0f, 57344.0f, 61439.0f,
                                  61440.0f, 6.0f, 7.0f, 262144.0f, 262143.98f};
        for (size_t j = 0; j < sizeof specials / sizeof specials[0]; j++) compare_one(kFast[k], specials[j], &bad);
        CHECK_MSG(bad == 0, "%s (%d): %zu midpoint/special values differ", agoq_formats[table_of(kFast[k])].name, kFast[k], bad);
    }
}

/* The round-to-nearest LUT of every table format (tab_lut.h; NF4 and dyn8 encode with it on
 * the GPU) against the reference's search: the strided sweep, dense denormals, every midpoint
 * with 3 ulp either side, the specials (NaN excluded: the callers map it to 0 first). */
static size_t lut_compare(const agoq_code_table *t, const agoq_tab_lut *lut, float y, size_t *bad) {
    if (agoq_isnan(y)) return 0;
    const uint32_t *e = lut->e[agoq_tab_lut_index(lut->shift, lut->base, lut->nb, lut->lo, lut->hi, y)];
    const uint32_t pos = agoq_tab_lut_pos(e[0], e[1], y);
    const uint32_t got = lut->ident ? pos : t->sorted_code[pos];
    const uint32_t want = t->sorted_code[agoq_table_pos(t->sorted, t->mid, t->sorted_code, t->nsorted, y, -1.0f)];
    if (want != got && (*bad)++ < 5)
        fprintf(stderr, "    y = %a (0x%08x): table code 0x%02x, LUT code 0x%02x\n", y, agoq_f32_bits(y), want, got);
    return 1;
}
TEST(table_lut_equals_table_search) {
    static agoq_tab_lut lut;
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        const agoq_code_table *t = agoq_table((agoq_format)f);
        if (!t) continue;
        CHECK_MSG(agoq_tab_lut_build(&lut, t->sorted, t->mid, t->sorted_code, t->nsorted) == 0, "%s: no LUT",
                  agoq_formats[f].name);
        CHECK(2 * lut.nb <= AGOQ_TAB_LUT_MAX);
        CHECK(lut.ident == (f == AGOQ_FMT_NF4 || f == AGOQ_FMT_DYN8)); /* codes = positions: no code lookup */
        size_t bad = 0, tried = 0;
        for (uint64_t u = 0; u <= 0xffffffffull; u += 997) tried += lut_compare(t, &lut, agoq_bits_f32((uint32_t)u), &bad);
        for (uint32_t u = 0; u < 0x10000u; u++) {
            tried += lut_compare(t, &lut, agoq_bits_f32(u), &bad);
            tried += lut_compare(t, &lut, agoq_bits_f32(u | 0x80000000u), &bad);
        }
        for (int i = 0; i + 1 < t->nsorted; i++)
            for (int d = -3; d <= 3; d++) {
                const uint32_t b = agoq_f32_bits(t->mid[i]);
                tried += lut_compare(t, &lut, agoq_bits_f32(b + (uint32_t)d), &bad);
                tried += lut_compare(t, &lut, t->sorted[i], &bad);
            }
        const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e30f, -1e30f, 3.4028235e38f, 1.0f, -1.0f,
                                  1.002f, -1.002f, 1.4e-45f, -1.4e-45f};
        for (size_t j = 0; j < sizeof specials / sizeof specials[0]; j++) tried += lut_compare(t, &lut, specials[j], &bad);
        CHECK_MSG(bad == 0, "%s: %zu of %zu values differ", agoq_formats[f].name, bad, tried);
    }
}

TEST(fast_decoders_equal_value_tables) {
    for (size_t k = 0; k < 3; k++) {
        const agoq_code_table *t = agoq_table(kFast[k]);
        for (int c = 0; c < t->ncodes; c++) {
            float want = t->value[c];
            float got = kFast[k] == AGOQ_FMT_FP4_E2M1 ? agoq_fp4_decode((uint32_t)c)
                                                       : agoq_fp8_decode((uint32_t)c, kFast[k] == AGOQ_FMT_FP8_E5M2);
            CHECK_MSG(memcmp(&want, &got, 4) == 0 || (isnan(want) && isnan(got)), "%s code 0x%02x: %g vs %g",
                      agoq_formats[kFast[k]].name, c, want, got);
        }
    }
    /* hand values: E4M3 0x7e = 448, 0x08 = 2^-6, 0x01 = 2^-9; E5M2 0x7b = 57344 */
    CHECK(agoq_fp8_decode(0x7e, 0) == 448.0f && agoq_fp8_decode(0x08, 0) == 0.015625f);
    CHECK(agoq_fp8_decode(0x01, 0) == 0.001953125f && agoq_fp8_decode(0x7b, 1) == 57344.0f);
    CHECK(agoq_fp4_decode(0xf) == -6.0f && agoq_fp4_decode(0x5) == 3.0f);
}

TEST(group_word_packing_equals_put_code_layout) {
    agoq_rng r = {11};
    for (int bits = 2; bits <= 8; bits++) {
        uint8_t plane[64 * 8];
        memset(plane, 0, sizeof plane);
        uint32_t codes[64];
        for (int i = 0; i < 64; i++) {
            codes[i] = (uint32_t)(agoq_rng_next(&r) & ((1u << bits) - 1u));
            agoq_put_code(plane, i, bits, codes[i]); /* one 64-element block: the reference layout */
        }
        for (int g = 0; g < 8; g++) {
            uint64_t w = 0;
            for (int j = 0; j < 8; j++) w |= (uint64_t)codes[8 * g + j] << (j * bits);
            for (int b = 0; b < bits; b++)
                CHECK_MSG(plane[g * bits + b] == (uint8_t)(w >> (8 * b)), "bits %d group %d byte %d", bits, g, b);
        }
    }
}

TEST(warp_segment_mapping_covers_every_group_once) {
    /* the index arithmetic of agoq_quant_seg_kernel, run on the host for one warp stride */
    static int seen[4096];
    for (int B = 8; B <= 256; B += 8) {
        const int G = B / 8, bpw = 32 / G;
        const size_t lens[] = {1, 7, 8, 9, (size_t)B - 1, (size_t)B, (size_t)B + 1, (size_t)5 * B + 3, 1023};
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const size_t n = lens[li], nblocks = (n + (size_t)B - 1) / (size_t)B;
            const size_t ntasks = (nblocks + (size_t)bpw - 1) / (size_t)bpw, ngroups = nblocks * (size_t)G;
            CHECK(ngroups <= 4096);
            memset(seen, 0, sizeof seen);
            for (size_t task = 0; task < ntasks; task++)
                for (int lane = 0; lane < 32; lane++) {
                    const int seg = lane / G, pos = lane - seg * G;
                    const size_t blk = task * (size_t)bpw + (size_t)seg;
                    if (seg < bpw && blk < nblocks) seen[blk * (size_t)G + (size_t)pos]++;
                }
            for (size_t g = 0; g < ngroups; g++) CHECK_MSG(seen[g] == 1, "B %d n %zu group %zu seen %d", B, n, g, seen[g]);
        }
    }
}

TEST(asym_zero_point_of_signed_zeros_is_plus_zero) {
    const float x[8] = {-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, -0.0f, 0.0f, 0.0f};
    agoq_qconfig c = agoq_qconfig_default(AGOQ_FMT_INT4_ASYM);
    c.block = 8;
    float s = 1, m = 1;
    agoq_block_params_ref(&c, x, 8, &s, &m);
    CHECK(agoq_f32_bits(s) == 0 && agoq_f32_bits(m) == 0);
    const float y[8] = {-0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.5f};
    agoq_block_params_ref(&c, y, 8, &s, &m);
    CHECK(agoq_f32_bits(m) == 0 && s == 0.5f); /* (7.5 - 0) / 15 */
}

TEST(int_sym_magic_encoder_equals_reference_below_qmax_plus_half) {
    /* the tile kernels' symmetric integer encoder, on every 997th pattern inside its contract
     * |y| <= qmax / (1 - 2^-9) (the bf16 scale's worst case), and on every half-integer tie */
    for (int bits = 2; bits <= 8; bits++) {
        const float qmax = (float)((1 << (bits - 1)) - 1), lim = qmax / (1.0f - 1.0f / 512.0f);
        size_t bad = 0, tried = 0;
        for (uint64_t u = 0; u <= 0xffffffffull; u += 997) {
            const float y = agoq_bits_f32((uint32_t)u);
            if (!(fabsf(y) <= lim)) continue;
            tried++;
            if (agoq_int_sym_encode_magic(y, bits) != agoq_encode_int_sym(y, 1.0f, bits, -1.0f)) bad++;
        }
        for (float y = -qmax - 0.5f + 1.0f; y <= qmax; y += 0.5f) {
            const float probes[] = {y, nextafterf(y, INFINITY), nextafterf(y, -INFINITY)};
            for (int j = 0; j < 3; j++) bad += agoq_int_sym_encode_magic(probes[j], bits) !=
                                               agoq_encode_int_sym(probes[j], 1.0f, bits, -1.0f);
        }
        CHECK_MSG(bad == 0 && tried > 1000, "int%d: %zu of %zu values differ", bits, bad, tried);
    }
}

TEST(fp8_neg_zero_clearing_touches_only_0x80_bytes) {
    for (int pos = 0; pos < 8; pos++)
        for (uint32_t b = 0; b < 256; b++) {
            const uint64_t other = 0x81ff7f0180fe0255ull; /* neighbours of every kind */
            const uint64_t w = (other & ~(0xffull << (8 * pos))) | ((uint64_t)b << (8 * pos));
            uint64_t want = 0;
            for (int k = 0; k < 8; k++) {
                const uint64_t byte = (w >> (8 * k)) & 0xff;
                want |= (byte == 0x80 ? 0 : byte) << (8 * k);
            }
            CHECK_MSG(agoq_fp8_clear_neg_zero(w) == want, "pos %d byte 0x%02x: 0x%016llx -> 0x%016llx", pos, b,
                      (unsigned long long)w, (unsigned long long)agoq_fp8_clear_neg_zero(w));
        }
}

/* The tile kernels' transpose reduction (quant_tile.cuh: agoq_tile_reduce), replayed on the
 * host for a whole warp: every lane starts with K ranges tagged (block slot, lane); after the
 * steps each lane's held value must be the union over its segment of the slot that
 * agoq_tile_holder / agoq_tile_held_index say it holds. */
TEST(tile_transpose_reduction_holders) {
    enum { MAXK = 8 };
    for (int lb = 1; lb <= 32; lb *= 2)
        for (int K = 1; K <= MAXK; K *= 2) {
            /* set[lane][value][slot]: bit l = lane l's range of that slot is in the value */
            static uint32_t set[32][MAXK][MAXK], nset[32][MAXK][MAXK];
            memset(set, 0, sizeof set);
            for (int l = 0; l < 32; l++)
                for (int k = 0; k < K; k++) set[l][k][k] |= 1u << l; /* slot k, contributed by lane l */
            int c = K;
            for (int o = lb / 2; o >= 1; o >>= 1) {
                memcpy(nset, set, sizeof set);
                for (int l = 0; l < 32; l++) {
                    const int partner = l ^ o, up = (l & o) != 0;
                    if (c > 1) {
                        const int half = c / 2;
                        for (int i = 0; i < half; i++)
                            for (int w = 0; w < MAXK; w++) {
                                const uint32_t keep = up ? set[l][i + half][w] : set[l][i][w];
                                const uint32_t recv = up ? set[partner][i + half][w] : set[partner][i][w];
                                nset[l][i][w] = keep | recv; /* partner sends what this lane keeps */
                            }
                    } else {
                        for (int w = 0; w < MAXK; w++) nset[l][0][w] = set[l][0][w] | set[partner][0][w];
                    }
                }
                memcpy(set, nset, sizeof set);
                if (c > 1) c /= 2;
            }
            const int H = K > lb ? K / lb : 1;
            for (int l = 0; l < 32; l++) {
                const int seg = l / lb, pos = l % lb;
                for (int k = 0; k < K; k++) {
                    if (agoq_tile_holder(k, K, lb) != pos) continue;
                    const int i = agoq_tile_held_index(k, K, lb);
                    CHECK(i < H);
                    for (int w = 0; w < MAXK; w++) {
                        const uint32_t want = w == k ? (lb == 32 ? 0xffffffffu : ((1u << lb) - 1u) << (seg * lb)) : 0u;
                        CHECK_MSG(set[l][i][w] == want, "LB %d K %d lane %d slot %d: word %d is 0x%08x, want 0x%08x",
                                  lb, K, l, k, w, set[l][i][w], want);
                    }
                }
            }
        }
}
