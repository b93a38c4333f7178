/* CUDA quantize / dequantize vs the C reference, bit for bit (make test-cuda; needs a GPU):
 * every format x block sizes {8..1024, powers of two and not} x fp32/bf16 scales x nearest/
 * stochastic rounding, fp32 and bf16 inputs and outputs, on edge-case data (NaN, +-Inf,
 * denormals, signed zeros, constant / zero / all-NaN blocks), every odd size 1..1023, sizes
 * that make the grid-stride loops turn, unaligned pointers (scalar-load paths) and bad
 * arguments. Quantize is checked on poisoned planes, so every code, scale and zero byte
 * (tail padding included) must be written. Dequantize reads reference-quantized planes. */
#include <stdlib.h>
#include <string.h>

#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_ref.h"
#include "tests/cuda/quant/test_quant_util.h"
#include "tests/test.h"

/* Dequantize (fp32 and bf16 output) of the host planes ref (ref->n elements) uploaded into the
 * device planes view, vs the reference; y_off shifts the device output by that many elements.
 * Returns mismatches. */
static size_t check_dequant(const agoq_qconfig *c, const char *label, const agoq_qtensor *ref, agoq_cuda_qtensor *view,
                            size_t y_off) {
    const size_t n = ref->n;
    size_t bad = 0;
    float *yref = (float *)malloc((n + 1) * 4), *y = (float *)malloc((n + 1) * 4);
    uint16_t *yhref = (uint16_t *)malloc((n + 1) * 2), *yh = (uint16_t *)malloc((n + 1) * 2);
    float *dy = (float *)agoq_cuda_malloc((n + y_off) * 4 + 16);
    uint16_t *dyh = (uint16_t *)agoq_cuda_malloc((n + y_off) * 2 + 16);
    agoq_cuda_qtensor_upload(c, ref, view);
    agoq_dequantize_ref(c, ref, yref);
    agoq_dequantize_bf16_ref(c, ref, yhref);
    if (agoq_cuda_dequantize_f32(c, view, dy + y_off, NULL) || agoq_cuda_dequantize_bf16(c, view, dyh + y_off, NULL))
        bad++;
    agoq_cuda_d2h(y, dy + y_off, n * 4);
    agoq_cuda_d2h(yh, dyh + y_off, n * 2);
    char what[512];
    snprintf(what, sizeof what, "%s n=%zu dequant_f32", label, n);
    bad += tq_cmp_f32(what, yref, y, n);
    snprintf(what, sizeof what, "%s n=%zu dequant_bf16", label, n);
    bad += tq_cmp_bf16(what, yhref, yh, n);
    agoq_cuda_free(dy);
    agoq_cuda_free(dyh);
    free(yref);
    free(y);
    free(yhref);
    free(yh);
    return bad;
}

/* One config at size n: quantize (fp32 and bf16 input) and dequantize (fp32 and bf16 output)
 * on the device vs the reference. x_off / y_off shift the device input / output by that many
 * elements, codes_off the codes plane by bytes (misaligned paths). Returns mismatches. */
static size_t check_config(const agoq_qconfig *c, const float *x, size_t n, size_t x_off, size_t y_off,
                           size_t codes_off) {
    char label[256];
    tq_label(c, label, sizeof label);
    size_t bad = 0;
    agoq_qtensor ref, got;
    if (agoq_qtensor_alloc(&ref, c, n) || agoq_qtensor_alloc(&got, c, n)) return 1;
    uint16_t *xh = tq_to_bf16(x, n);
    float *dx = (float *)agoq_cuda_malloc((n + x_off) * 4 + 16);
    uint16_t *dxh = (uint16_t *)agoq_cuda_malloc((n + x_off) * 2 + 16);
    agoq_cuda_h2d(dx + x_off, x, n * 4);
    agoq_cuda_h2d(dxh + x_off, xh, n * 2);
    agoq_cuda_qtensor dq, view;
    agoq_cuda_qtensor_alloc(&dq, c, n + 8 * (size_t)c->block); /* room for the codes offset */
    view = dq;
    view.codes += codes_off;
    view.n = n;

    for (int in_bf16 = 0; in_bf16 < 2; in_bf16++) {
        tq_poison(c, &view);
        if (in_bf16) agoq_quantize_bf16_ref(c, xh, n, &ref);
        else agoq_quantize_ref(c, x, n, &ref);
        int rc = in_bf16 ? agoq_cuda_quantize_bf16(c, dxh + x_off, n, &view, NULL)
                         : agoq_cuda_quantize_f32(c, dx + x_off, n, &view, NULL);
        agoq_cuda_sync(NULL);
        if (rc) return 1;
        agoq_cuda_qtensor_download(c, &view, &got);
        char what[512];
        snprintf(what, sizeof what, "%s n=%zu quant_%s", label, n, in_bf16 ? "bf16" : "f32");
        bad += tq_cmp_qtensor(what, c, &ref, &got);
    }

    /* dequantize the reference planes (of the bf16-input quantization, still in ref) */
    bad += check_dequant(c, label, &ref, &view, y_off);

    agoq_cuda_free(dx);
    agoq_cuda_free(dxh);
    agoq_cuda_qtensor_free(&dq);
    agoq_qtensor_free(&ref);
    agoq_qtensor_free(&got);
    free(xh);
    return bad;
}

static agoq_qconfig make_cfg(int fmt, int block, int bf16_scale, int stochastic) {
    agoq_qconfig c = agoq_qconfig_default((agoq_format)fmt);
    c.block = block;
    c.scale = bf16_scale ? AGOQ_SCALE_BF16 : AGOQ_SCALE_FP32;
    c.rounding = stochastic ? AGOQ_ROUND_STOCHASTIC : AGOQ_ROUND_NEAREST;
    c.seed = 0x1234u + (uint64_t)fmt;
    return c;
}

TEST(cuda_quant_every_format_block_scale_rounding) {
    static const int blocks[] = {8, 32, 40, 64, 96, 128, 200, 256, 264, 512, 1024};
    size_t configs = 0, bad = 0;
    for (int f = 0; f < AGOQ_FMT_COUNT; f++)
        for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++)
            for (int sc = 0; sc < 2; sc++)
                for (int sr = 0; sr < 2; sr++) {
                    agoq_qconfig c = make_cfg(f, blocks[bi], sc, sr);
                    size_t n = 9 * (size_t)blocks[bi] + 5; /* 9 block patterns, a partial tail */
                    float *x = tq_torture(n, c.block, 77 + (uint64_t)configs);
                    bad += check_config(&c, x, n, 0, 0, 0);
                    free(x);
                    configs++;
                }
    CHECK_MSG(bad == 0, "%zu mismatches over %zu configs", bad, configs);
    CHECK(configs == (size_t)AGOQ_FMT_COUNT * 11 * 4);
}

TEST(cuda_quant_every_odd_size_to_1023) {
    /* representative configs: each encoder, the segment and warp kernels, non-power-of-two G */
    const agoq_qconfig cs[] = {make_cfg(AGOQ_FMT_FP4_E2M1, 128, 0, 0), make_cfg(AGOQ_FMT_INT5, 64, 1, 0),
                               make_cfg(AGOQ_FMT_INT3_ASYM, 40, 0, 1), make_cfg(AGOQ_FMT_NF4, 64, 1, 1),
                               make_cfg(AGOQ_FMT_DYN8, 256, 0, 0), make_cfg(AGOQ_FMT_FP8_E4M3, 32, 0, 1),
                               make_cfg(AGOQ_FMT_FP8_E5M2, 512, 1, 0), make_cfg(AGOQ_FMT_INT8, 8, 0, 0)};
    size_t bad = 0;
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        float *x = tq_torture(1023, cs[k].block, 5 + k);
        for (size_t n = 1; n <= 1023 && bad == 0; n += (n == 1 ? 1 : 2)) bad += check_config(&cs[k], x, n, 0, 0, 0);
        free(x);
    }
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

TEST(cuda_quant_large_sizes_turn_the_grid_stride_loops) {
    /* > 8 CTAs x 256 threads x 132 SMs groups of 8, with a tail */
    const size_t n = ((size_t)3 << 21) + 13;
    const agoq_qconfig cs[] = {make_cfg(AGOQ_FMT_FP4_E2M1, 128, 0, 0), make_cfg(AGOQ_FMT_DYN8, 256, 1, 1),
                               make_cfg(AGOQ_FMT_INT4_ASYM, 2048, 0, 0)};
    size_t bad = 0;
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        float *x = tq_torture(n, cs[k].block, 99 + k);
        bad += check_config(&cs[k], x, n, 0, 0, 0);
        free(x);
    }
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

TEST(cuda_quant_resident_grid_loops_over_tiles) {
    /* The tile kernels' grid-stride loops (each warp over several tiles), which the default launch
     * (one tile per warp) never turns: resident grids forced, sizes above what 132 SMs keep
     * resident (8 CTAs x 8 warps x 2048 bf16 elements = 17.3M), with a tail. */
    const size_t n = ((size_t)3 << 23) + 7 * 128 + 5;
    const agoq_qconfig cs[] = {make_cfg(AGOQ_FMT_INT8, 128, 0, 0), make_cfg(AGOQ_FMT_FP4_E2M1, 128, 0, 0),
                               make_cfg(AGOQ_FMT_INT4_ASYM, 64, 1, 0), make_cfg(AGOQ_FMT_FP8_E4M3, 128, 0, 0),
                               make_cfg(AGOQ_FMT_NF4, 64, 0, 0)};
    agoq_cuda_grid_force(1);
    size_t bad = 0;
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        float *x = tq_torture(n, cs[k].block, 77 + k);
        bad += check_config(&cs[k], x, n, 0, 0, 0);
        free(x);
    }
    agoq_cuda_grid_force(-1);
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

/* The device encoders (hardware fp8 conversion, integer fp4 and int codes) on every 997th
 * float bit pattern and every table midpoint +-1 ulp: blocks of 32 led by qmax, so s = 1 and
 * the codes are the encoders' outputs on the raw values; |y| > qmax is left out (it would
 * change the scale), NaN and +-Inf stay in (they do not). */
TEST(cuda_quant_encoders_on_bit_pattern_sweep) {
    static const int fmts[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_FP8_E5M2, AGOQ_FMT_INT8, AGOQ_FMT_INT4,
                               AGOQ_FMT_NF4, AGOQ_FMT_DYN8};
    size_t bad = 0;
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        const agoq_format f = (agoq_format)fmts[k];
        const float qmax = agoq_formats[f].qmax;
        const size_t cap = (size_t)1 << 23;
        float *x = (float *)malloc(cap * sizeof(float));
        size_t n = 0;
        const agoq_code_table *t = agoq_table(f);
        for (uint64_t u = 0; u <= 0xffffffffull && n + 64 < cap; u += 997) {
            if (n % 32 == 0) x[n++] = qmax;
            float y = agoq_bits_f32((uint32_t)u);
            if (!agoq_isfinite(y) || fabsf(y) <= qmax) x[n++] = y;
        }
        for (int i = 0; t && i + 1 < t->nsorted && n + 64 < cap; i++) {
            const float m = t->mid[i], probes[3] = {m, nextafterf(m, INFINITY), nextafterf(m, -INFINITY)};
            for (int j = 0; j < 3; j++) {
                if (n % 32 == 0) x[n++] = qmax;
                x[n++] = probes[j];
            }
        }
        for (int sr = 0; sr < 2; sr++) {
            agoq_qconfig c = make_cfg(f, 32, 0, sr);
            bad += check_config(&c, x, n, 0, 0, 0);
        }
        free(x);
    }
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

/* Data for the tile kernels (quant_tile.cuh): finite block patterns (wide, tiny, denormal,
 * zero, constant, exact ties of every encoder, near FLT_MAX) so the fast path runs on most
 * tiles, and a NaN and an Inf only in every third 2048-element region, so the careful path runs
 * beside it in the same launch. */
static float *tile_data(size_t n, int block, uint64_t seed) {
    float *x = (float *)malloc(n * sizeof(float));
    agoq_fill(AGOQ_DIST_NORMAL, x, n, seed);
    agoq_rng r = {seed ^ 0x9e3779b9u};
    for (size_t i = 0; i < n; i++) {
        const size_t b = i / (size_t)block;
        switch (b % 8) {
        case 1: x[i] *= 1e30f; break;
        case 2: x[i] *= 1e-30f; break;
        case 3: x[i] = (i & 1) ? -0.0f : 0.0f; break;
        case 4: x[i] = 0.37f; break;
        case 5: x[i] = agoq_bits_f32((uint32_t)(agoq_rng_next(&r) & 0x807fffffu)); break;
        case 6: x[i] = 0.25f * (float)((int)(agoq_rng_next(&r) % 49) - 24); break; /* absmax 6: ties of fp4 and ints */
        case 7: x[i] = (i & 1) ? 3.0e38f : ((i % 3) ? -3.0e38f : -1.0e38f); break; /* the asym range overflows */
        default: break;
        }
    }
    for (size_t t = 2; t * 2048 < n; t += 3) {
        x[t * 2048 + (seed % 1000)] = NAN;
        if (t * 2048 + 1500 < n) x[t * 2048 + 1500] = INFINITY;
    }
    return x;
}

/* The fast-path configs of formats fmts x blocks, both scale types, round to nearest: several
 * whole tiles (1024 fp32 / 2048 bf16 elements) and a tail of whole and partial blocks, each
 * against the reference. Returns the mismatches; *configs counts the configs (and seeds them). */
static size_t check_tile_configs(const int *fmts, size_t nf, const int *blocks, size_t nb, uint64_t seed0,
                                 size_t *configs) {
    size_t bad = 0;
    for (size_t f = 0; f < nf; f++)
        for (size_t bi = 0; bi < nb; bi++)
            for (int sc = 0; sc < 2; sc++) {
                agoq_qconfig c = make_cfg(fmts[f], blocks[bi], sc, 0);
                const size_t n = 7 * 2048 + 3 * (size_t)blocks[bi] + 5;
                float *x = tile_data(n, c.block, seed0 + *configs);
                bad += check_config(&c, x, n, 0, 0, 0);
                free(x);
                (*configs)++;
            }
    return bad;
}

TEST(cuda_quant_tile_kernels_every_eligible_config) {
    /* the fast-path configs: blocks 32..256, 4- and 8-bit codes (and int2) */
    static const int fmts[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT4,      AGOQ_FMT_INT8,      AGOQ_FMT_INT4_ASYM,
                               AGOQ_FMT_INT8_ASYM, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_FP8_E5M2, AGOQ_FMT_NF4,
                               AGOQ_FMT_DYN8,      AGOQ_FMT_INT2};
    static const int blocks[] = {32, 64, 128, 256};
    size_t configs = 0;
    const size_t bad = check_tile_configs(fmts, sizeof fmts / sizeof fmts[0], blocks, 4, 31, &configs);
    CHECK_MSG(bad == 0, "%zu mismatches over %zu configs", bad, configs);
}

/* AGOQ_LD_NC_MIB=0 (quant_ldst.cuh agoq_ld_nc; twenty-sixth session): the tile sources' fp32 and
 * bf16 input through ld.global.nc at every size (the default takes .cs below 512 MiB of input,
 * which every other test here is), every fast-path format, blocks 32 and 256, both scale types,
 * against the reference bit for bit: a cache operator moves no value. */
TEST(cuda_quant_tile_kernels_nc_loads) {
    static const int fmts[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT4, AGOQ_FMT_INT8,      AGOQ_FMT_INT4_ASYM, AGOQ_FMT_INT8_ASYM,
                               AGOQ_FMT_FP8_E4M3, AGOQ_FMT_NF4,  AGOQ_FMT_DYN8};
    static const int blocks[] = {32, 256};
    size_t configs = 0;
    setenv("AGOQ_LD_NC_MIB", "0", 1);
    const size_t bad = check_tile_configs(fmts, sizeof fmts / sizeof fmts[0], blocks, 2, 71, &configs);
    unsetenv("AGOQ_LD_NC_MIB");
    CHECK_MSG(bad == 0, "%zu mismatches over %zu configs", bad, configs);
}

/* The dequantizer's two kernels (quant.cu's tile kernel and the flat kernel of quant_flat.cuh,
 * AGOQ_DEQ_VAR 0 / 1): each, every format with a tile path, blocks 32..256, fp32 and bf16 scales
 * and outputs, sizes that are not a multiple of the tile, against the reference bit for bit;
 * then, per kernel, a resident grid over more tiles than it keeps resident (each warp of the
 * tile kernel loops) and a codes plane only 8-byte aligned. */
TEST(cuda_quant_dequant_tile_variants) {
    static const int fmts[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT4,      AGOQ_FMT_INT8,      AGOQ_FMT_INT4_ASYM,
                               AGOQ_FMT_INT8_ASYM, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_FP8_E5M2, AGOQ_FMT_NF4,
                               AGOQ_FMT_DYN8,      AGOQ_FMT_INT2};
    static const int blocks[] = {32, 64, 128, 256};
    const int nvar = agoq_cuda_deq_variant_count();
    CHECK(nvar > 1 && agoq_cuda_deq_variant_name(0) && agoq_cuda_deq_variant_name(nvar) == NULL);
    size_t bad = 0, runs = 0;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        for (size_t bi = 0; bi < 4; bi++)
            for (int sc = 0; sc < 2; sc++) {
                const agoq_qconfig c = make_cfg(fmts[f], blocks[bi], sc, 0);
                const size_t n = 7 * 2048 + 3 * (size_t)blocks[bi] + 5;
                float *x = tile_data(n, c.block, 131 + runs);
                agoq_qtensor ref;
                if (agoq_qtensor_alloc(&ref, &c, n)) bad++;
                agoq_quantize_ref(&c, x, n, &ref);
                agoq_cuda_qtensor dq, view;
                agoq_cuda_qtensor_alloc(&dq, &c, n + 64);
                for (int codes_off = 0; codes_off <= 8; codes_off += 8) {
                    view = dq;
                    view.codes += codes_off;
                    view.n = n;
                    for (int v = 0; v < nvar; v++) {
                        char label[256], what[320];
                        tq_label(&c, label, sizeof label);
                        snprintf(what, sizeof what, "%s deq_var=%d(%s) codes+%d", label, v, agoq_cuda_deq_variant_name(v),
                                 codes_off);
                        agoq_cuda_deq_variant_force(v);
                        bad += check_dequant(&c, what, &ref, &view, 0);
                        runs++;
                    }
                }
                agoq_cuda_qtensor_free(&dq);
                agoq_qtensor_free(&ref);
                free(x);
            }
    /* resident grids: > 8 CTAs x 8 warps x 132 SMs tiles of 2048 bf16 elements, with a tail */
    const size_t n = ((size_t)3 << 23) + 7 * 128 + 5;
    const agoq_qconfig cs[] = {make_cfg(AGOQ_FMT_INT8, 128, 0, 0), make_cfg(AGOQ_FMT_INT4_ASYM, 64, 1, 0)};
    agoq_cuda_grid_force(1);
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        float *x = tile_data(n, cs[k].block, 7 + k);
        agoq_qtensor ref;
        if (agoq_qtensor_alloc(&ref, &cs[k], n)) bad++;
        agoq_quantize_ref(&cs[k], x, n, &ref);
        agoq_cuda_qtensor dq;
        agoq_cuda_qtensor_alloc(&dq, &cs[k], n);
        for (int v = 0; v < nvar; v++) {
            char label[256], what[320];
            tq_label(&cs[k], label, sizeof label);
            snprintf(what, sizeof what, "%s resident deq_var=%d(%s)", label, v, agoq_cuda_deq_variant_name(v));
            agoq_cuda_deq_variant_force(v);
            bad += check_dequant(&cs[k], what, &ref, &dq, 0);
            runs++;
        }
        agoq_cuda_qtensor_free(&dq);
        agoq_qtensor_free(&ref);
        free(x);
    }
    agoq_cuda_grid_force(-1);
    agoq_cuda_deq_variant_force(-1);
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
    CHECK(runs == (size_t)(10 * 4 * 2 * 2 + 2) * (size_t)nvar);
}

TEST(cuda_quant_tile_options_each_setting) {
    /* the tile kernels' run-time options (issue 15: q8, pf and q8's 32-bit LUT entries, the
     * tenth session's AGOQ_Q8_LUT32; the q6 / q7 encoders are fixed since the eleventh) in every
     * combination that gives distinct kernels, fp32 and bf16 input and scales, every tile block
     * size, every tile format, also with resident grids where q8 and pf are off (pf forces
     * resident grids itself; their loops over several tiles: the test below) */
    static const int fmts[] = {AGOQ_FMT_INT4_ASYM, AGOQ_FMT_INT8_ASYM, AGOQ_FMT_NF4,      AGOQ_FMT_DYN8,     AGOQ_FMT_FP4_E2M1,
                               AGOQ_FMT_INT4,      AGOQ_FMT_INT8,      AGOQ_FMT_FP8_E4M3, AGOQ_FMT_FP8_E5M2, AGOQ_FMT_INT2};
    static const int blocks[] = {32, 64, 128, 256};
    static const int opt_sets[] = {0,
                                   AGOQ_TILE_OPT_Q8,
                                   AGOQ_TILE_OPT_PF,
                                   AGOQ_TILE_OPT_Q8 | AGOQ_TILE_OPT_PF,
                                   AGOQ_TILE_OPT_Q8 | AGOQ_TILE_OPT_LUT32,
                                   AGOQ_TILE_OPT_Q8 | AGOQ_TILE_OPT_PF | AGOQ_TILE_OPT_LUT32};
    size_t bad = 0, configs = 0;
    for (size_t o = 0; o < sizeof opt_sets / sizeof opt_sets[0]; o++)
        for (int resident = 0; resident < 2; resident++) {
            const int opts = opt_sets[o];
            if (opts && resident) continue;
            agoq_cuda_tile_opts_force(opts);
            agoq_cuda_grid_force(resident);
            for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
                for (size_t bi = 0; bi < 4; bi++)
                    for (int sc = 0; sc < 2; sc++) {
                        agoq_qconfig c = make_cfg(fmts[f], blocks[bi], sc, 0);
                        const size_t n = 9 * 2048 + 3 * (size_t)blocks[bi] + 5;
                        float *x = tile_data(n, c.block, 57 + configs);
                        for (size_t i = 0; i < n; i++) { /* finite ranges whose bf16 zero point or scale is -Inf / +Inf */
                            const size_t blk = i / (size_t)c.block;
                            if (blk % 16 == 9) x[i] = -3.3963e38f + (float)(i % 7) * 1e31f;
                            if (blk % 16 == 11) x[i] = -3.3963e38f; /* constant: s = 0, (x - m) * inv = Inf * 0 */
                        }
                        const size_t b = check_config(&c, x, n, 0, 0, 0);
                        if (b) fprintf(stderr, "    (tile options %d, resident grid %d)\n", opts, resident);
                        bad += b;
                        free(x);
                        configs++;
                    }
        }
    agoq_cuda_tile_opts_force(-1);
    agoq_cuda_grid_force(-1);
    CHECK_MSG(bad == 0, "%zu mismatches over %zu configs", bad, configs);
}

TEST(cuda_quant_q8_pf_loops_over_tiles) {
    /* issue 15's q8 / pf (AGOQ_Q8, AGOQ_Q8_PF) where pf's warps loop: above what 132 SMs keep
     * resident at pf's 2 CTAs (2 x 8 warps x 2048 bf16 elements = 4.3M), with a tail; each
     * format under the settings that give it distinct kernels (dyn8: pf with the old and the q8
     * encoder; int4_asym: pf overrides q8's register bound; fp4: q8 does not touch it; nf4: pf
     * with the grid encoder; int8_asym: q8 on the one-shot grid) */
    const size_t n = ((size_t)1 << 23) + 7 * 256 + 5;
    const int base = 0; /* the q6 / q7 encoders are fixed: only q8, pf and LUT32 vary */
    const int pf = base | AGOQ_TILE_OPT_PF, q8pf = pf | AGOQ_TILE_OPT_Q8;
    const struct {
        agoq_qconfig c;
        int opts;
    } runs[] = {{make_cfg(AGOQ_FMT_DYN8, 256, 0, 0), q8pf}, {make_cfg(AGOQ_FMT_DYN8, 256, 1, 0), pf},
                {make_cfg(AGOQ_FMT_INT4_ASYM, 128, 1, 0), q8pf}, {make_cfg(AGOQ_FMT_FP4_E2M1, 128, 0, 0), pf},
                /* the ninth session's defaults: NF4 pf (on the grid), INT8-asym q8 */
                {make_cfg(AGOQ_FMT_NF4, 128, 0, 0), pf}, {make_cfg(AGOQ_FMT_INT8_ASYM, 128, 1, 0), base | AGOQ_TILE_OPT_Q8},
                /* the tenth session's AGOQ_Q8_LUT32: dyn8's q8 with 32-bit LUT entries, with and without pf */
                {make_cfg(AGOQ_FMT_DYN8, 256, 0, 0), q8pf | AGOQ_TILE_OPT_LUT32},
                {make_cfg(AGOQ_FMT_DYN8, 128, 1, 0), base | AGOQ_TILE_OPT_Q8 | AGOQ_TILE_OPT_LUT32}};
    size_t bad = 0;
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        float *x = tile_data(n, runs[k].c.block, 91 + k); /* NaN / Inf in every third tile: most take the fast path */
        agoq_cuda_tile_opts_force(runs[k].opts);
        const size_t b = check_config(&runs[k].c, x, n, 0, 0, 0);
        if (b) fprintf(stderr, "    (tile options %d)\n", runs[k].opts);
        bad += b;
        free(x);
    }
    agoq_cuda_tile_opts_force(-1);
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

TEST(cuda_quant_unaligned_pointers_use_scalar_paths) {
    const agoq_qconfig cs[] = {make_cfg(AGOQ_FMT_INT4, 32, 0, 0), make_cfg(AGOQ_FMT_INT8, 128, 1, 0),
                               make_cfg(AGOQ_FMT_INT2, 64, 0, 1), make_cfg(AGOQ_FMT_INT6_ASYM, 256, 0, 0)};
    size_t bad = 0;
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        float *x = tq_torture(1000, cs[k].block, 3 + k);
        bad += check_config(&cs[k], x, 1000, 1, 3, 1); /* input +4 B, output +12 B, codes +1 B */
        bad += check_config(&cs[k], x, 1000, 2, 1, 2);
        free(x);
    }
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

TEST(cuda_quant_rejects_bad_arguments) {
    agoq_qconfig c = make_cfg(AGOQ_FMT_INT4_ASYM, 64, 0, 0);
    agoq_cuda_qtensor q;
    CHECK(agoq_cuda_qtensor_alloc(&q, &c, 256) == 0);
    float *x = (float *)agoq_cuda_malloc(256 * 4);
    agoq_qconfig bad = c;
    bad.block = 12;
    CHECK(agoq_cuda_quantize_f32(&bad, x, 256, &q, NULL) == -1);
    CHECK(agoq_cuda_quantize_f32(&c, NULL, 256, &q, NULL) == -1);
    CHECK(agoq_cuda_quantize_f32(&c, x, 256, NULL, NULL) == -1);
    agoq_cuda_qtensor noz = q;
    noz.zeros = NULL;
    CHECK(agoq_cuda_quantize_f32(&c, x, 256, &noz, NULL) == -1);
    agoq_cuda_qtensor mis = q;
    mis.scales += 2; /* fp32 scales must be 4-byte aligned */
    CHECK(agoq_cuda_dequantize_f32(&c, &mis, x, NULL) == -1);
    CHECK(agoq_cuda_dequantize_bf16(&c, &q, NULL, NULL) == -1);
    CHECK(agoq_cuda_quantize_f32(&c, x, 0, &q, NULL) == 0); /* empty is fine */
    agoq_cuda_free(x);
    agoq_cuda_qtensor_free(&q);
}

/* The benchmark arena (quant_rt.cu): pieces inside it, aligned as cudaMalloc aligns, free a
 * no-op, reset reuses the same addresses, a request past the end goes to cudaMalloc and is
 * counted, and the pieces hold data like any device buffer. */
TEST(cuda_arena_pieces_reset_and_fallback) {
    const size_t MiB = (size_t)1 << 20;
    CHECK(agoq_cuda_arena_open(16 * MiB, 0) == 0);
    CHECK(agoq_cuda_arena_bytes() == 16 * MiB);
    char *a = (char *)agoq_cuda_malloc(100), *b = (char *)agoq_cuda_malloc(3 * MiB), *c = (char *)agoq_cuda_malloc(5);
    CHECK(((uintptr_t)a & 255u) == 0 && ((uintptr_t)b & (2 * MiB - 1)) == 0 && ((uintptr_t)c & 255u) == 0);
    CHECK(b >= a + 100 && c >= b + 3 * MiB);
    CHECK(agoq_cuda_arena_fallbacks() == 0);
    uint32_t h[64], back[64];
    for (int i = 0; i < 64; i++) h[i] = 0x9e3779b9u * (uint32_t)i;
    agoq_cuda_h2d(b + MiB, h, sizeof h);
    agoq_cuda_d2h(back, b + MiB, sizeof back);
    CHECK(memcmp(h, back, sizeof h) == 0);
    agoq_cuda_free(a); /* no-op inside the arena */
    char *big = (char *)agoq_cuda_malloc(32 * MiB); /* does not fit: cudaMalloc */
    CHECK(big != NULL && agoq_cuda_arena_fallbacks() == 1);
    agoq_cuda_h2d(big + 31 * MiB, h, sizeof h);
    agoq_cuda_d2h(back, big + 31 * MiB, sizeof back);
    CHECK(memcmp(h, back, sizeof h) == 0);
    agoq_cuda_free(big);
    agoq_cuda_arena_reset();
    CHECK(agoq_cuda_arena_fallbacks() == 0);
    CHECK((char *)agoq_cuda_malloc(100) == a); /* the same layout after a reset */
    agoq_cuda_arena_close();
    CHECK(agoq_cuda_arena_bytes() == 0);
    CHECK(agoq_cuda_arena_open(16 * MiB, (size_t)1 << 62) == -1); /* nothing left after the reserve */
    char *d = (char *)agoq_cuda_malloc(100); /* closed: plain cudaMalloc */
    CHECK(d != NULL);
    agoq_cuda_free(d);
}
