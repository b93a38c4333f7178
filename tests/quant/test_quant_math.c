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
#include "kernels/quant/tab_lut32.h"
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
 * the GPU), and its 32-bit entries, against the reference's search: the strided sweep, dense denormals, every midpoint
 * with 3 ulp either side, the specials (NaN excluded: the callers map it to 0 first). */
static size_t lut_compare(const agoq_code_table *t, const agoq_tab_lut *lut, float y, size_t *bad) {
    if (agoq_isnan(y)) return 0;
    const uint32_t *e = lut->e[agoq_tab_lut_index(lut->shift, lut->base, lut->nb, lut->lo, lut->hi, y)];
    const uint32_t pos = agoq_tab_lut_pos(e[0], e[1], y);
    /* the 32-bit entries (tab_lut.h, the gradient kernels' CTA copy) give the same position */
    const uint32_t m = (1u << lut->shift) - 1u, pos32 = agoq_tab_lut32_pos(agoq_tab_lut32_entry(e[0], e[1], m), y, m);
    if (pos32 != pos && (*bad)++ < 5) fprintf(stderr, "    y = %a: LUT position %u, 32-bit entry %u\n", y, pos, pos32);
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
     * |y| < qmax + 1/2 (the fast path stays inside: int_sym_magic_encoder_bound_over_every_absmax),
     * and on every half-integer tie */
    for (int bits = 2; bits <= 8; bits++) {
        const float qmax = (float)((1 << (bits - 1)) - 1), lim = qmax + 0.5f; /* the whole contract */
        size_t bad = 0, tried = 0;
        for (uint64_t u = 0; u <= 0xffffffffull; u += 997) {
            const float y = agoq_bits_f32((uint32_t)u);
            if (!(fabsf(y) < lim)) continue;
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

/* ---- issue 15 (q6): the asymmetric magic encoders and the uniform table grid ---- */

/* Positive finite floats to sweep a bound over: every float of [1, 2) (the middle binades are
 * exact power-of-two scalings of it: R, R / qmax, 1 / s and R * inv all stay normal there), every
 * float below 2^-117 (subnormal ranges and scales, the FLT_MIN floor of the scale, 1 / s near
 * 2^126), every float of the top two binades (1 / s subnormal, s rounded to bf16 +Inf) and
 * every 997th pattern between. f(r) returns 0 on failure (the first few are printed). */
static size_t sweep_positive(int (*f)(float r, void *arg), void *arg, size_t *tried) {
    size_t bad = 0;
    for (uint32_t u = 0x3f800000u; u < 0x40000000u; u++, (*tried)++) bad += !f(agoq_bits_f32(u), arg);
    for (uint32_t u = 0; u < 0x05000000u; u++, (*tried)++) bad += !f(agoq_bits_f32(u), arg);
    for (uint32_t u = 0x7e800000u; u < 0x7f800000u; u++, (*tried)++) bad += !f(agoq_bits_f32(u), arg);
    for (uint32_t u = 0x05000000u; u < 0x7e800000u; u += 997, (*tried)++) bad += !f(agoq_bits_f32(u), arg);
    return bad;
}

/* agoq_int_asym_encode_magic's contract on the fp32-scale fast path: the largest scaled value
 * of a block of range R (its maximum x = hi: y = fl(fl(x - lo) inv) <= fl(R inv) by
 * monotonicity) is below qmax + 1/2. arg: bits. */
static int asym_bound_ok(float r, void *arg) {
    const int bits = *(const int *)arg;
    const float qmax = (float)((1 << bits) - 1), s = agoq_block_scale(r, qmax, 0), inv = agoq_inv_scale(s);
    const float y = r * inv;
    if (!agoq_isfinite(s)) return 1; /* the careful path */
    const int ok = y >= 0.0f && y < qmax + 0.5f && y <= qmax * (1.0f + 0x1p-21f);
    static int shown;
    if (!ok && shown++ < 5) fprintf(stderr, "    int%d asym: R = %a: y max = %a\n", bits, r, y);
    return ok;
}
TEST(int_asym_magic_encoder_bound_over_every_range) {
    for (int bits = 4; bits <= 8; bits += 4) {
        size_t tried = 0, bad = sweep_positive(asym_bound_ok, &bits, &tried);
        CHECK_MSG(bad == 0 && tried > 100000000, "int%d asym: %zu of %zu ranges exceed qmax + 1/2", bits, bad, tried);
    }
}

TEST(int_asym_magic_encoders_equal_reference_on_scaled_values) {
    /* as functions of y (x = y, m = 0, inv = 1: the reference's y is y itself): the clamped
     * encoder on every 997th pattern (quiet NaNs, +-Inf included) and the specials, the unclamped one
     * inside its contract [-1/2, qmax + 1/2); both on every half-integer tie +-2 ulp */
    for (int bits = 2; bits <= 8; bits++) {
        const float qmax = (float)((1 << bits) - 1);
        size_t bad = 0, tried = 0;
        for (uint64_t u = 0; u <= 0xffffffffull; u += 997) {
            const float y = agoq_bits_f32((uint32_t)u);
            const uint32_t want = agoq_encode_int_asym(y, 1.0f, 0.0f, bits, -1.0f);
            if (!agoq_isnan(y) || (agoq_f32_bits(y) & 0x400000u)) bad += agoq_int_asym_encode_clamp(y, bits) != want; /* no sNaN */
            if (y >= -0.5f && y < qmax + 0.5f) bad += agoq_int_asym_encode_magic(y, bits) != want, tried++;
        }
        for (float t = -2.5f; t <= qmax + 2.0f; t += 0.5f) {
            float y = t;
            for (int d = 0; d < 2; d++) y = nextafterf(y, -INFINITY);
            for (int d = 0; d < 5; d++, y = nextafterf(y, INFINITY)) {
                const uint32_t want = agoq_encode_int_asym(y, 1.0f, 0.0f, bits, -1.0f);
                bad += agoq_int_asym_encode_clamp(y, bits) != want;
                if (y >= -0.5f && y < qmax + 0.5f) bad += agoq_int_asym_encode_magic(y, bits) != want, tried++;
            }
        }
        const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 3.4028235e38f, -3.4028235e38f,
                                  1.4e-45f, -1.4e-45f, qmax + 0.5f, qmax + 0.49999997f, -0.5f, -0.50000006f};
        for (size_t j = 0; j < sizeof specials / sizeof specials[0]; j++)
            bad += agoq_int_asym_encode_clamp(specials[j], bits) != agoq_encode_int_asym(specials[j], 1.0f, 0.0f, bits, -1.0f);
        CHECK_MSG(bad == 0 && tried > 1000, "int%d asym: %zu values differ (%zu in the magic contract)", bits, bad, tried);
    }
}

/* One block through the reference's parameters and the tile kernel's fast-path encoders
 * (quant_tile.cuh: taken when every element and s are finite; fp32 scales: magic, bf16: clamp).
 * Returns the mismatches; *fast counts the blocks that took the fast path. */
static size_t asym_block_check(agoq_format f, int bf16, const float *x, int len, size_t *fast) {
    agoq_qconfig c = agoq_qconfig_default(f);
    c.block = len;
    c.scale = bf16 ? AGOQ_SCALE_BF16 : AGOQ_SCALE_FP32;
    const int bits = agoq_formats[f].bits;
    float s, m;
    for (int i = 0; i < len; i++)
        if (!agoq_isfinite(x[i])) return 0; /* the range (max.NaN / min.NaN) is not finite */
    agoq_block_params_ref(&c, x, len, &s, &m);
    if (!agoq_isfinite(s)) return 0;
    (*fast)++;
    const float inv = agoq_inv_scale(s);
    size_t bad = 0;
    for (int i = 0; i < len; i++) {
        const float y = (x[i] - m) * inv;
        const uint32_t got = bf16 ? agoq_int_asym_encode_clamp(y, bits) : agoq_int_asym_encode_magic(y, bits);
        const uint32_t want = agoq_encode_int_asym(x[i], inv, m, bits, -1.0f);
        if (!bf16 && !(y >= 0.0f && y < (float)((1 << bits) - 1) + 0.5f)) bad++; /* outside the contract */
        if (got != want && bad++ < 5)
            fprintf(stderr, "    %s %s: x = %a, s = %a, m = %a: code %u, reference %u\n", agoq_formats[f].name,
                    bf16 ? "bf16" : "fp32", x[i], s, m, got, want);
    }
    return bad;
}
TEST(int_asym_magic_encoders_equal_reference_on_blocks) {
    enum { L = 64 };
    agoq_rng r = {2026};
    const agoq_format fmts[] = {AGOQ_FMT_INT4_ASYM, AGOQ_FMT_INT8_ASYM};
    size_t bad = 0, fast = 0, blocks = 0;
    float x[L];
    for (int it = 0; it < 60000; it++) {
        const int kind = it % 12;
        /* a scale and an offset of any magnitude, both signs */
        const float sc = agoq_bits_f32((uint32_t)(agoq_rng_next(&r) % 0x7f000000u));
        const float off = agoq_bits_f32((uint32_t)(agoq_rng_next(&r) & 0xff7fffffu)) * ((it & 16) ? 1.0f : 0.0f);
        for (int i = 0; i < L; i++) {
            const float g = (float)(agoq_rng_u01(&r) * 2.0 - 1.0);
            switch (kind) {
            case 0: x[i] = g * sc; break;                                    /* centred */
            case 1: x[i] = off + g * sc; break;                              /* offset, maybe absorbed */
            case 2: x[i] = off; break;                                       /* constant */
            case 3: x[i] = agoq_bits_f32((uint32_t)(agoq_rng_next(&r) & 0x807fffffu)); break; /* denormals */
            case 4: x[i] = (i & 1) ? 3.4028235e38f : -3.4028235e38f * (float)agoq_rng_u01(&r); break; /* huge */
            case 5: x[i] = -3.3963e38f + g * 1e30f; break;                   /* bf16(lo) = -Inf */
            case 6: x[i] = agoq_round_bf16(off) + g * agoq_round_bf16(off) * 0x1p-10f; break; /* lo near its bf16 */
            case 7: x[i] = (float)(agoq_rng_next(&r) % 16) * sc + off; break; /* exact grid: ties */
            case 8: x[i] = (i % 3 == 0) ? off : off + sc; break;             /* two values */
            case 9: x[i] = g * 1e-38f; break;                                /* the FLT_MIN scale floor */
            case 10: x[i] = (float)(int)(g * 128.0f) * 0.5f; break;          /* half-integer ties at s = 1 */
            default: x[i] = agoq_bits_f32((uint32_t)agoq_rng_next(&r)); break; /* any pattern */
            }
        }
        if (kind == 10) x[0] = -64.0f, x[1] = 63.5f; /* int8: (hi - lo) / 255 = 0.5 */
        for (int fi = 0; fi < 2; fi++)
            for (int b = 0; b < 2; b++, blocks++) bad += asym_block_check(fmts[fi], b, x, L, &fast);
    }
    CHECK_MSG(bad == 0, "%zu mismatches over %zu blocks (%zu on the fast path)", bad, blocks, fast);
    CHECK(fast > blocks / 2);
}

/* The uniform grid (tab_lut.h) against the reference's search, for every table that has one;
 * NF4 must have one. */
static size_t grid_compare(const agoq_code_table *t, const agoq_tab_grid *g, float y, size_t *bad) {
    if (!(fabsf(y) <= AGOQ_TAB_GRID_YMAX)) return 0; /* the contract (NaN out) */
    const uint32_t i = agoq_tab_grid_index(g->k, g->mask, y);
    const uint32_t got = agoq_tab_lut_pos(g->e[i][0], g->e[i][1], y);
    const uint32_t want = (uint32_t)agoq_table_pos(t->sorted, t->mid, t->sorted_code, t->nsorted, y, -1.0f);
    if (want != got && (*bad)++ < 5) fprintf(stderr, "    y = %a (0x%08x): position %u, grid %u\n", y, agoq_f32_bits(y), want, got);
    return 1;
}
TEST(table_grid_equals_table_search) {
    static agoq_tab_grid g;
    int grids = 0;
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        const agoq_code_table *t = agoq_table((agoq_format)f);
        if (!t) continue;
        if (agoq_tab_grid_build(&g, t->sorted, t->mid, t->sorted_code, t->nsorted)) {
            CHECK_MSG(f != AGOQ_FMT_NF4, "NF4 has no grid");
            CHECK(g.k == 0.0f);
            continue;
        }
        grids++;
        CHECK(g.k >= 16.0f && g.mask == agoq_tab_grid_mask(g.k) && g.mask + 1u <= AGOQ_TAB_GRID_MAX && ((g.mask + 1u) & g.mask) == 0);
        CHECK(AGOQ_TAB_GRID_YMAX * g.k + 0.5f < (float)((g.mask + 1u) / 2u)); /* buckets cover the contract */
        size_t bad = 0, tried = 0;
        for (uint64_t u = 0; u <= 0xffffffffull; u += 97) tried += grid_compare(t, &g, agoq_bits_f32((uint32_t)u), &bad);
        for (uint32_t u = 0; u < 0x10000u; u++) { /* dense denormals and around 0 */
            tried += grid_compare(t, &g, agoq_bits_f32(u), &bad);
            tried += grid_compare(t, &g, agoq_bits_f32(u | 0x80000000u), &bad);
        }
        for (int i = 0; i + 1 < t->nsorted; i++) /* every midpoint and table value +-3 ulp */
            for (int d = -3; d <= 3; d++) {
                tried += grid_compare(t, &g, agoq_bits_f32(agoq_f32_bits(t->mid[i]) + (uint32_t)d), &bad);
                tried += grid_compare(t, &g, agoq_bits_f32(agoq_f32_bits(t->sorted[i]) + (uint32_t)d), &bad);
            }
        for (int i = -40; i <= 40; i++) /* every bucket end (i + 1/2) / k +-3 ulp */
            for (int d = -3; d <= 3; d++) {
                const float e = ((float)i + 0.5f) / g.k;
                tried += grid_compare(t, &g, e == 0.0f ? 0.0f : agoq_bits_f32(agoq_f32_bits(e) + (uint32_t)d), &bad);
            }
        const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 1.002f, -1.002f, 1.0625f, -1.0625f, 1.4e-45f, -1.4e-45f};
        for (size_t j = 0; j < sizeof specials / sizeof specials[0]; j++) tried += grid_compare(t, &g, specials[j], &bad);
        CHECK_MSG(bad == 0 && tried > 10000000, "%s: %zu of %zu values differ", agoq_formats[f].name, bad, tried);
        /* any input indexes inside the table (the mask), NaN and +-Inf included */
        const float any[] = {NAN, -NAN, INFINITY, -INFINITY, 3.4028235e38f, -3.4028235e38f, 1e7f, -1e7f, 5.0f};
        for (size_t j = 0; j < sizeof any / sizeof any[0]; j++) CHECK(agoq_tab_grid_index(g.k, g.mask, any[j]) <= g.mask);
    }
    CHECK(grids >= 1);
}

/* The grid's contract on the quantizers' fast path: table formats have qmax = 1, so the largest
 * |y| of a block with absmax a is fl(a * (1 / s)), s = agoq_block_scale(a, 1, bf16). arg: bf16. */
static int grid_bound_ok(float a, void *arg) {
    const int bf16 = *(const int *)arg;
    const float s = agoq_block_scale(a, 1.0f, bf16), y = a * agoq_inv_scale(s);
    const int ok = y <= 1.0040f && y <= AGOQ_TAB_GRID_YMAX; /* 1 / (1 - 2^-8): bf16's half ulp */
    static int shown;
    if (!ok && shown++ < 5) fprintf(stderr, "    %s scale: amax = %a: |y| max = %a\n", bf16 ? "bf16" : "fp32", a, y);
    return ok;
}
TEST(table_grid_bound_over_every_absmax) {
    CHECK(agoq_formats[AGOQ_FMT_NF4].qmax == 1.0f && agoq_formats[AGOQ_FMT_DYN8].qmax == 1.0f);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        size_t tried = 0, bad = sweep_positive(grid_bound_ok, &bf16, &tried);
        CHECK_MSG(bad == 0 && tried > 100000000, "%zu of %zu absmax values exceed the grid's contract", bad, tried);
    }
}

/* The packed bf16 tiles' absmax (quant_tile.cuh, agoq_tile_view_bf16p): the unsigned order of
 * bf16 magnitude bits (bits & 0x7fff) is the order of |x| for finite values, +Inf above them
 * all and every NaN above +Inf; every bf16 magnitude, as fp32. */
TEST(bf16_magnitude_bits_order_like_values) {
    for (uint32_t m = 1; m < 0x8000u; m++) {
        const float prev = agoq_bf16_to_f32((uint16_t)(m - 1)), cur = agoq_bf16_to_f32((uint16_t)m);
        if (m < 0x7f80u) CHECK_MSG(agoq_isfinite(cur) && cur > prev, "0x%04x", m);
        else if (m == 0x7f80u) CHECK(cur == INFINITY && prev < cur);
        else CHECK_MSG(agoq_isnan(cur), "0x%04x", m);
        CHECK(fabsf(agoq_bf16_to_f32((uint16_t)(m | 0x8000u))) == cur || agoq_isnan(cur));
    }
}

/* agoq_int_sym_encode_magic's contract on the tile kernels' fast path (|y| < qmax + 1/2), over
 * every absmax: the largest |y| = fl(amax * (1 / s)), both scale types (bf16: up to qmax (1 +
 * 2^-8), 127.496 for int8). arg: {bits, bf16}. */
static int sym_bound_ok(float a, void *arg) {
    const int bits = ((const int *)arg)[0], bf16 = ((const int *)arg)[1];
    const float qmax = (float)((1 << (bits - 1)) - 1), s = agoq_block_scale(a, qmax, bf16), y = a * agoq_inv_scale(s);
    const int ok = y < qmax + 0.5f;
    static int shown;
    if (!ok && shown++ < 5) fprintf(stderr, "    int%d %s: amax = %a: |y| max = %a\n", bits, bf16 ? "bf16" : "fp32", a, y);
    return ok;
}
TEST(int_sym_magic_encoder_bound_over_every_absmax) {
    for (int bits = 4; bits <= 8; bits += 4)
        for (int bf16 = 0; bf16 < 2; bf16++) {
            int arg[2] = {bits, bf16};
            size_t tried = 0, bad = sweep_positive(sym_bound_ok, arg, &tried);
            CHECK_MSG(bad == 0 && tried > 100000000, "int%d: %zu of %zu absmax values reach qmax + 1/2", bits, bad, tried);
        }
}
