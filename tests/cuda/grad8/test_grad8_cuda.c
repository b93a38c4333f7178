/* CUDA 8-bit gradient kernels vs grad8_ref.c, bit for bit (make test-cuda; needs a GPU):
 * micro-batch accumulation (fp32 and bf16 new gradient, in place) and the reduce core
 * (N = 1..64 chunks, fp32 and bf16 summation, sum_out, in place into one of the inputs)
 * for the gradient formats int8, fp8_e4m3 and dyn8 plus a 4-bit and an asymmetric format,
 * blocks of the segment and the warp kernels, both roundings, odd sizes, edge-case data, and
 * the AGOQ_RED_PF and AGOQ_RED_LD variants of the reduce core. */
#include <stdlib.h>
#include <string.h>

#include "kernels/grad8/grad8.h"
#include "kernels/grad8/grad8_cuda.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_ref.h"
#include "tests/cuda/quant/test_quant_util.h"
#include "tests/test.h"

static const int kFormats[] = {AGOQ_FMT_INT8, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8, AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT5_ASYM};
static const int kBlocks[] = {32, 128, 256, 520};

static agoq_qconfig cfg(int fmt, int block, int bf16_scale, int stochastic) {
    agoq_qconfig c = agoq_qconfig_default((agoq_format)fmt);
    c.block = block;
    c.scale = bf16_scale ? AGOQ_SCALE_BF16 : AGOQ_SCALE_FP32;
    c.rounding = stochastic ? AGOQ_ROUND_STOCHASTIC : AGOQ_ROUND_NEAREST;
    c.seed = 99;
    return c;
}

/* Host qtensor = reference quantization of seeded data (the stored / received gradients). */
static void ref_tensor(const agoq_qconfig *c, size_t n, uint64_t seed, agoq_qtensor *q) {
    float *x = (float *)malloc((n ? n : 1) * 4);
    agoq_fill(AGOQ_DIST_HEAVY, x, n, seed);
    agoq_qtensor_alloc(q, c, n);
    agoq_quantize_ref(c, x, n, q);
    free(x);
}

static size_t check_accumulate(const agoq_qconfig *c, size_t n, int g_bf16, uint64_t seed) {
    char label[256], l0[96];
    snprintf(label, sizeof label, "accumulate %s n=%zu g=%s", tq_label(c, l0, sizeof l0), n, g_bf16 ? "bf16" : "f32");
    agoq_qtensor acc, got;
    ref_tensor(c, n, seed, &acc);
    agoq_qtensor_alloc(&got, c, n);
    float *g = tq_torture(n, c->block, seed + 1);
    for (size_t i = 0; i < n; i++) /* keep most of the gradient finite: specials stay in a few blocks */
        if (!agoq_isfinite(g[i]) && (i / (size_t)c->block) % 9 < 5) g[i] = 0.5f;
    uint16_t *gh = tq_to_bf16(g, n);
    agoq_cuda_qtensor d;
    agoq_cuda_qtensor_alloc(&d, c, n);
    agoq_cuda_qtensor_upload(c, &acc, &d);
    void *dg = agoq_cuda_malloc(n * 4 + 16);
    agoq_cuda_h2d(dg, g_bf16 ? (const void *)gh : (const void *)g, n * (g_bf16 ? 2 : 4));
    int rc = agoq_cuda_grad_accumulate(c, &d, g_bf16 ? NULL : (const float *)dg, g_bf16 ? (const uint16_t *)dg : NULL, NULL);
    agoq_cuda_sync(NULL);
    agoq_grad_accumulate_ref(c, &acc, g_bf16 ? NULL : g, g_bf16 ? gh : NULL, n);
    agoq_cuda_qtensor_download(c, &d, &got);
    size_t bad = rc ? 1 : tq_cmp_qtensor(label, c, &acc, &got);
    agoq_cuda_free(dg);
    agoq_cuda_qtensor_free(&d);
    agoq_qtensor_free(&acc);
    agoq_qtensor_free(&got);
    free(g);
    free(gh);
    return bad;
}

/* nin chunks; in_place: the output is chunk `nin - 1`'s planes. */
static size_t check_reduce(const agoq_qconfig *c, size_t n, int nin, agoq_sum_precision prec, int in_place) {
    char label[320], l0[96];
    snprintf(label, sizeof label, "reduce %s n=%zu N=%d %s%s", tq_label(c, l0, sizeof l0), n, nin,
             prec == AGOQ_SUM_BF16 ? "bf16-sum" : "fp32-sum", in_place ? " in-place" : "");
    agoq_qtensor hin[AGOQ_CUDA_MAX_CHUNKS], want, got;
    const agoq_qtensor *hptr[AGOQ_CUDA_MAX_CHUNKS];
    agoq_cuda_qtensor din[AGOQ_CUDA_MAX_CHUNKS], dout;
    for (int r = 0; r < nin; r++) {
        ref_tensor(c, n, 1000 + (uint64_t)r, &hin[r]);
        hptr[r] = &hin[r];
        agoq_cuda_qtensor_alloc(&din[r], c, n);
        agoq_cuda_qtensor_upload(c, &hin[r], &din[r]);
    }
    agoq_qtensor_alloc(&want, c, n);
    agoq_qtensor_alloc(&got, c, n);
    float *sum_ref = (float *)malloc((n + 1) * 4), *sum = (float *)malloc((n + 1) * 4);
    float *dsum = (float *)agoq_cuda_malloc(n * 4 + 16);
    if (in_place) dout = din[nin - 1];
    else {
        agoq_cuda_qtensor_alloc(&dout, c, n);
        tq_poison(c, &dout);
    }
    agoq_grad_reduce_ref(c, hptr, nin, n, prec, &want, sum_ref);
    int rc = agoq_cuda_grad_reduce(c, din, nin, prec, &dout, dsum, NULL);
    agoq_cuda_sync(NULL);
    agoq_cuda_qtensor_download(c, &dout, &got);
    agoq_cuda_d2h(sum, dsum, n * 4);
    size_t bad = rc ? 1 : tq_cmp_qtensor(label, c, &want, &got);
    strncat(label, " sum", sizeof label - strlen(label) - 1);
    bad += tq_cmp_f32(label, sum_ref, sum, n);
    for (int r = 0; r < nin; r++) {
        agoq_cuda_qtensor_free(&din[r]);
        agoq_qtensor_free(&hin[r]);
    }
    if (!in_place) agoq_cuda_qtensor_free(&dout);
    agoq_cuda_free(dsum);
    agoq_qtensor_free(&want);
    agoq_qtensor_free(&got);
    free(sum_ref);
    free(sum);
    return bad;
}

TEST(cuda_grad_accumulate_matches_reference) {
    size_t bad = 0, runs = 0;
    for (size_t f = 0; f < sizeof kFormats / sizeof kFormats[0]; f++)
        for (size_t b = 0; b < sizeof kBlocks / sizeof kBlocks[0]; b++)
            for (int sc = 0; sc < 2; sc++)
                for (int sr = 0; sr < 2; sr++)
                    for (int gb = 0; gb < 2; gb++) {
                        agoq_qconfig c = cfg(kFormats[f], kBlocks[b], sc, sr);
                        bad += check_accumulate(&c, 9 * (size_t)kBlocks[b] + 3, gb, 10 + runs);
                        runs++;
                    }
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
}

TEST(cuda_grad_accumulate_odd_sizes) {
    const agoq_qconfig cs[] = {cfg(AGOQ_FMT_INT8, 256, 0, 0), cfg(AGOQ_FMT_FP8_E4M3, 128, 1, 1), cfg(AGOQ_FMT_DYN8, 256, 0, 1)};
    size_t bad = 0;
    for (size_t k = 0; k < 3; k++)
        for (size_t n = 1; n <= 1023 && !bad; n += 34) bad += check_accumulate(&cs[k], n, (int)(n & 1), n);
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

TEST(cuda_grad_reduce_matches_reference) {
    static const int nins[] = {1, 3, 8, 11}; /* 11: a full and a partial batch of the tile kernel's 8 */
    size_t bad = 0, runs = 0;
    for (size_t f = 0; f < sizeof kFormats / sizeof kFormats[0]; f++)
        for (size_t b = 0; b < sizeof kBlocks / sizeof kBlocks[0]; b++)
            for (size_t k = 0; k < sizeof nins / sizeof nins[0]; k++)
                for (int prec = 0; prec < 2; prec++) {
                    agoq_qconfig c = cfg(kFormats[f], kBlocks[b], (int)(runs & 1), (int)((runs >> 1) & 1));
                    bad += check_reduce(&c, 7 * (size_t)kBlocks[b] + 5, nins[k], (agoq_sum_precision)prec, 0);
                    runs++;
                }
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
}

TEST(cuda_grad_reduce_in_place_many_chunks_odd_sizes) {
    size_t bad = 0;
    agoq_qconfig c = cfg(AGOQ_FMT_INT8, 256, 0, 0), d = cfg(AGOQ_FMT_DYN8, 256, 1, 1);
    bad += check_reduce(&c, 4099, AGOQ_CUDA_MAX_CHUNKS, AGOQ_SUM_FP32, 0);
    bad += check_reduce(&c, 4099, 8, AGOQ_SUM_FP32, 1);
    bad += check_reduce(&d, 3 * 520 + 1, 4, AGOQ_SUM_BF16, 1);
    for (size_t n = 1; n <= 1023 && !bad; n += 62) bad += check_reduce(&d, n, 2, AGOQ_SUM_FP32, 0);
    CHECK_MSG(bad == 0, "%zu mismatches", bad);
}

TEST(cuda_grad_int8_asym_tile_options) {
    /* int8_asym through the tile kernels (several whole tiles; the magic-add encoder, fixed since
     * the eleventh session), both scale types, accumulate and reduce */
    static const int blocks[] = {32, 128, 256};
    size_t bad = 0, runs = 0;
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        for (int sc = 0; sc < 2; sc++) {
            agoq_qconfig c = cfg(AGOQ_FMT_INT8_ASYM, blocks[b], sc, 0);
            const size_t n = 5 * 2048 + 3 * (size_t)blocks[b] + 5;
            for (int gb = 0; gb < 2; gb++, runs++) bad += check_accumulate(&c, n, gb, 70 + runs);
            for (int prec = 0; prec < 2; prec++, runs++) bad += check_reduce(&c, n, 5, (agoq_sum_precision)prec, prec);
        }
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
}

/* Every value 0..vmax of the mask knob `knob` against the reference, formats fmts: several whole
 * tiles plus a tail, blocks 32-256, both scale types, fp32 and bf16 sums, sum_out, in place,
 * chunk counts around the batches of 4 and 8. Returns the mismatches; *runs counts the runs. */
static size_t check_knob_masks(const char *knob, int vmax, const int *fmts, size_t nf, size_t *runs) {
    static const int blocks[] = {32, 64, 128, 256};
    static const int nins[] = {1, 5, 8, 11};
    size_t bad = 0;
    for (int m = 0; m <= vmax; m++) {
        char v[4];
        snprintf(v, sizeof v, "%d", m);
        setenv(knob, v, 1);
        for (size_t f = 0; f < nf; f++)
            for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
                for (int sc = 0; sc < 2; sc++) {
                    agoq_qconfig c = cfg(fmts[f], blocks[b], sc, 0);
                    const size_t n = 5 * 2048 + 3 * (size_t)blocks[b] + 5;
                    for (int gb = 0; gb < 2; gb++, (*runs)++) bad += check_accumulate(&c, n, gb, 90 + (unsigned)*runs);
                    for (size_t k = 0; k < sizeof nins / sizeof nins[0]; k++, (*runs)++)
                        bad += check_reduce(&c, n, nins[k], (agoq_sum_precision)(*runs & 1), (int)(k == 2));
                }
    }
    unsetenv(knob);
    return bad;
}

TEST(cuda_grad_reduce_prefetch_variants) {
    /* AGOQ_RED_PF (grad8.cu), every mask 0..7: the reduce core's L2 prefetch of the next batch of
     * chunks (int8_asym; the others in batches of 4; at 3 or 4 CTAs per SM), every 8-bit decoder kind */
    static const int fmts[] = {AGOQ_FMT_INT8, AGOQ_FMT_INT8_ASYM, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8};
    size_t runs = 0;
    const size_t bad = check_knob_masks("AGOQ_RED_PF", 7, fmts, sizeof fmts / sizeof fmts[0], &runs);
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
}

TEST(cuda_grad_reduce_load_variants) {
    /* AGOQ_RED_LD (grad8.cu), every value 0..2: int8_asym's reduce core through load_tile_b (direct
     * scale loads) in batches of 3 or 4 chunks, under AGOQ_RED_PF 5 (the default: prefetching at 4
     * CTAs per SM), 2 (int8_asym without prefetch) and 7; int8 alongside (unaffected) */
    static const int fmts[] = {AGOQ_FMT_INT8_ASYM, AGOQ_FMT_INT8};
    static const char *const pfs[] = {"5", "2", "7"};
    size_t runs = 0, bad = 0;
    for (size_t k = 0; k < sizeof pfs / sizeof pfs[0]; k++) {
        setenv("AGOQ_RED_PF", pfs[k], 1);
        bad += check_knob_masks("AGOQ_RED_LD", 2, fmts, sizeof fmts / sizeof fmts[0], &runs);
    }
    unsetenv("AGOQ_RED_PF");
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
}

TEST(cuda_grad_dyn8_lut32_variants) {
    /* AGOQ_G8_LUT32 0 and 1 (twenty-second session): dyn8's accumulation and reduce core
     * encoding through q8's 32-bit LUT (agoq_tab_lut32_sum) against the reference, bit for bit */
    static const int fmts[] = {AGOQ_FMT_DYN8};
    size_t runs = 0;
    const size_t bad = check_knob_masks("AGOQ_G8_LUT32", 1, fmts, 1, &runs);
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
}

TEST(cuda_grad_accumulate_nc_loads) {
    /* AGOQ_LD_NC_MIB 0 and 1 (quant_ldst.cuh agoq_ld_nc; twenty-sixth session): the accumulation's
     * new gradient through ld.global.nc (0: every size) or .cs (1: these inputs are under 1 MiB),
     * against the reference bit for bit (the reduce core alongside, unaffected) */
    static const int fmts[] = {AGOQ_FMT_INT8, AGOQ_FMT_INT8_ASYM, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8};
    size_t runs = 0;
    const size_t bad = check_knob_masks("AGOQ_LD_NC_MIB", 1, fmts, sizeof fmts / sizeof fmts[0], &runs);
    CHECK_MSG(bad == 0, "%zu mismatches over %zu runs", bad, runs);
}

TEST(cuda_grad_rejects_bad_arguments) {
    agoq_qconfig c = cfg(AGOQ_FMT_INT8, 256, 0, 0);
    agoq_cuda_qtensor a, b;
    CHECK(agoq_cuda_qtensor_alloc(&a, &c, 512) == 0 && agoq_cuda_qtensor_alloc(&b, &c, 256) == 0);
    agoq_cuda_qtensor in[2] = {a, b};
    CHECK(agoq_cuda_grad_reduce(&c, in, 2, AGOQ_SUM_FP32, &a, NULL, NULL) == -1); /* sizes differ */
    CHECK(agoq_cuda_grad_reduce(&c, in, 0, AGOQ_SUM_FP32, &a, NULL, NULL) == -1);
    CHECK(agoq_cuda_grad_reduce(&c, in, AGOQ_CUDA_MAX_CHUNKS + 1, AGOQ_SUM_FP32, &a, NULL, NULL) == -1);
    CHECK(agoq_cuda_grad_accumulate(&c, &a, NULL, NULL, NULL) == -1);
    agoq_cuda_qtensor_free(&a);
    agoq_cuda_qtensor_free(&b);
}
