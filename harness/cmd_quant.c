/* agoq quant: quantization error and CPU throughput of every format over sizes, block sizes,
 * scale dtypes, rounding modes and input distributions (experiment kind "quant").
 * Error is the same on every backend (the CUDA kernels are bit-exact with these references);
 * throughput here is the single-threaded C reference (`agoq kernels` measures the GPU).
 *
 * config keys: formats [names|"all"], blocks [n] (default: each format's own), scales
 * ["fp32","bf16"], roundings ["nearest","stochastic"], distributions [rng.h names],
 * min_bytes, max_bytes, factor (fp32 input bytes), iters (timed repeats, median). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cmdline.h"
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"
#include "harness/metrics.h"
#include "harness/qspec.h"
#include "harness/rng.h"
#include "kernels/quant_ref.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int fmts[AGOQ_FMT_COUNT];
    size_t nfmt;
    double *blocks;
    size_t nblocks;
    int scales[2], rounds[2], dists[AGOQ_DIST_COUNT];
    size_t nscale, nround, ndist;
    cli_sweep sweep;
    long iters;
} quant_plan;

static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, quant_plan *p) {
    static const char *const keys[] = {"formats", "blocks", "scales", "roundings", "distributions", "min_bytes",
                                       "max_bytes", "factor", "iters", "warmup", "seed", NULL};
    jconf c = ctx->where;
    double mn, mx;
    memset(p, 0, sizeof *p);
    if (jconf_only(c, cfg, keys) || agoq_qspec_formats(c, cfg, "formats", p->fmts, &p->nfmt) ||
        jconf_nums(c, cfg, "blocks", 0, 8, 65536, &p->blocks, &p->nblocks) ||
        agoq_jconf_names(c, cfg, "scales", agoq_scale_by_name, p->scales, &p->nscale, 2, AGOQ_SCALE_FP32, "fp32, bf16") ||
        agoq_jconf_names(c, cfg, "roundings", agoq_rounding_by_name, p->rounds, &p->nround, 2, AGOQ_ROUND_NEAREST,
                    "nearest, stochastic") ||
        agoq_jconf_names(c, cfg, "distributions", agoq_dist_by_name, p->dists, &p->ndist, AGOQ_DIST_COUNT, -1,
                    "normal, uniform, outliers, heavy, constant, zeros") ||
        jconf_num(c, cfg, "min_bytes", 0, 4, 1e12, 1 << 20, &mn) || jconf_num(c, cfg, "max_bytes", 0, 4, 1e12, 16 << 20, &mx) ||
        jconf_num(c, cfg, "factor", 0, 1, 1e6, 4, &p->sweep.factor) || jconf_long(c, cfg, "iters", 0, 1, 1000, 3, &p->iters))
        return -1;
    for (size_t i = 0; i < p->nblocks; i++)
        if ((long)p->blocks[i] % 8 || p->blocks[i] != (double)(long)p->blocks[i]) {
            agoq_error("%s: key 'config.blocks[%zu]': %g is not a multiple of 8", c.file, i, p->blocks[i]);
            return -1;
        }
    p->sweep.min_bytes = (size_t)mn;
    p->sweep.max_bytes = (size_t)mx;
    return cli_sweep_check(c.file, &p->sweep);
}

static double median_ms(double *t, long n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return 1e3 * t[n / 2];
}

int agoq_exp_quant(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    quant_plan p;
    if (parse_plan(ctx, cfg, &p)) return -1;
    if (ctx->check_only) {
        free(p.blocks);
        return 0;
    }
    size_t nsize = cli_sweep_count(&p.sweep), nblk = p.nblocks ? p.nblocks : 1;
    size_t total = nsize * p.nfmt * nblk * p.nscale * p.nround * p.ndist, done = 0;
    size_t maxn = cli_sweep_bytes(&p.sweep, nsize - 1, 4) / 4;
    float *x = malloc(maxn * sizeof(float)), *y = malloc(maxn * sizeof(float));
    double *times = malloc((size_t)p.iters * 2 * sizeof(double));
    if (!x || !y || !times) {
        agoq_error("quant: out of memory for %zu elements", maxn);
        return -1;
    }
    printf("# %-10s %5s %4s %5s %10s %-8s %10s %7s %9s %10s %10s %8s %8s\n", "format", "block", "scl", "round", "n",
           "dist", "bits/elem", "snr_db", "nmse", "max_abs", "max_rel", "q_GB/s", "dq_GB/s");
    double t0 = agoq_now_s();
    for (size_t si = 0; si < nsize; si++) {
        size_t n = cli_sweep_bytes(&p.sweep, si, 4) / 4;
        for (size_t di = 0; di < p.ndist; di++) {
            agoq_fill((agoq_dist)p.dists[di], x, n, ctx->seed + 1000 * (uint64_t)p.dists[di]);
            for (size_t fi = 0; fi < p.nfmt; fi++)
                for (size_t bi = 0; bi < nblk; bi++)
                    for (size_t ci = 0; ci < p.nscale; ci++)
                        for (size_t ri = 0; ri < p.nround; ri++) {
                            agoq_qconfig q = agoq_qconfig_default((agoq_format)p.fmts[fi]);
                            if (p.nblocks) q.block = (int)p.blocks[bi];
                            q.scale = (agoq_scale_type)p.scales[ci];
                            q.rounding = (agoq_rounding)p.rounds[ri];
                            q.seed = ctx->seed;
                            agoq_qtensor qt;
                            if (agoq_qtensor_alloc(&qt, &q, n)) return -1;
                            for (long it = 0; it < p.iters; it++) {
                                double a = agoq_now_s();
                                agoq_quantize_ref(&q, x, n, &qt);
                                double b = agoq_now_s();
                                agoq_dequantize_ref(&q, &qt, y);
                                times[it] = b - a;
                                times[p.iters + it] = agoq_now_s() - b;
                            }
                            double qms = median_ms(times, p.iters), dqms = median_ms(times + p.iters, p.iters);
                            agoq_error_stats e = agoq_compare(x, y, n);
                            double moved = 4.0 * (double)n + (double)agoq_qtensor_bytes(&q, n);
                            const agoq_format_traits *t = &agoq_formats[q.fmt];
                            cJSON *r = results_add_record(res);
                            cJSON_AddStringToObject(r, "format", t->name);
                            cJSON_AddNumberToObject(r, "bits", t->bits);
                            cJSON_AddNumberToObject(r, "block", q.block);
                            cJSON_AddStringToObject(r, "scale", agoq_scale_name(q.scale));
                            cJSON_AddStringToObject(r, "rounding", agoq_rounding_name(q.rounding));
                            cJSON_AddStringToObject(r, "dist", agoq_dist_names[p.dists[di]]);
                            cJSON_AddNumberToObject(r, "n", (double)n);
                            cJSON_AddNumberToObject(r, "bytes_in", 4.0 * (double)n);
                            cJSON_AddNumberToObject(r, "bytes_quantized", (double)agoq_qtensor_bytes(&q, n));
                            results_num(r, "bits_per_element", agoq_bits_per_element(&q, n));
                            results_error_stats(r, &e);
                            results_num(r, "quant_ms", qms);
                            results_num(r, "dequant_ms", dqms);
                            results_num(r, "quant_gbps", moved / (qms * 1e6));
                            results_num(r, "dequant_gbps", moved / (dqms * 1e6));
                            cJSON_AddStringToObject(r, "throughput_device", "cpu-1-thread");
                            printf("  %-10s %5d %4s %5.5s %10zu %-8s %10.4f %7.2f %9.3g %10.4g %10.4g %8.3f %8.3f\n",
                                   t->name, q.block, agoq_scale_name(q.scale), agoq_rounding_name(q.rounding), n,
                                   agoq_dist_names[p.dists[di]], agoq_bits_per_element(&q, n), e.snr_db, e.nmse,
                                   e.max_abs, e.max_rel, moved / (qms * 1e6), moved / (dqms * 1e6));
                            agoq_qtensor_free(&qt);
                            agoq_progress(ctx->quiet, "quant", ++done, total, t0);
                        }
        }
    }
    free(x);
    free(y);
    free(times);
    free(p.blocks);
    return 0;
}

static void help(void) {
    printf("usage: agoq quant [options]\n"
           "Quantize + dequantize every format over a size sweep and input distributions; report\n"
           "bits/element (scales included), MSE, SNR, max abs/rel error, cosine and CPU GB/s.\n"
           "  --formats a,b,...     formats (default all; agoq list names them)\n"
           "  --blocks 32,64,...    block sizes (default: each format's own)\n"
           "  --scales fp32,bf16    scale dtypes (default fp32)\n"
           "  --rounding nearest,stochastic (default nearest)\n"
           "  --dist normal,uniform,outliers,heavy,constant,zeros (default all)\n"
           "defaults: -b 1M -e 16M -f 4 -n 3\n" AGOQ_COMMON_HELP);
}

int cmd_quant(int argc, char **argv) {
    enum { O_FORMATS = AGOQ_OPT_FIRST_PRIVATE, O_BLOCKS, O_SCALES, O_ROUND, O_DIST };
    static const struct option longopts[] = {AGOQ_COMMON_LONGOPTS,
                                             {"formats", required_argument, 0, O_FORMATS},
                                             {"blocks", required_argument, 0, O_BLOCKS},
                                             {"scales", required_argument, 0, O_SCALES},
                                             {"rounding", required_argument, 0, O_ROUND},
                                             {"dist", required_argument, 0, O_DIST},
                                             {0, 0, 0, 0}};
    agoq_common_opts o;
    agoq_common_init(&o, "quant");
    cJSON *cfg = cJSON_CreateObject();
    int c;
    while ((c = getopt_long(argc, argv, AGOQ_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
        int r = agoq_common_opt(&o, c, optarg);
        if (r < 0) { cJSON_Delete(cfg); return 2; }
        if (r > 0) continue;
        switch (c) {
        case O_FORMATS: cJSON_AddItemToObject(cfg, "formats", agoq_csv_strings(optarg)); break;
        case O_SCALES: cJSON_AddItemToObject(cfg, "scales", agoq_csv_strings(optarg)); break;
        case O_ROUND: cJSON_AddItemToObject(cfg, "roundings", agoq_csv_strings(optarg)); break;
        case O_DIST: cJSON_AddItemToObject(cfg, "distributions", agoq_csv_strings(optarg)); break;
        case O_BLOCKS: {
            cJSON *a = agoq_csv_numbers(optarg);
            if (!a) {
                agoq_error("quant: bad value '%s' for --blocks (expect e.g. 32,64,128)", optarg);
                cJSON_Delete(cfg);
                return 2;
            }
            cJSON_AddItemToObject(cfg, "blocks", a);
            break;
        }
        default: cJSON_Delete(cfg); return agoq_cmd_usage_error("quant");
        }
    }
    if (o.help) { help(); cJSON_Delete(cfg); return 0; }
    if (optind < argc) {
        agoq_error("quant: unexpected argument '%s'", argv[optind]);
        cJSON_Delete(cfg);
        return 2;
    }
    static const char *const tsv[] = {"format", "bits", "block", "scale", "rounding", "dist", "n",
                                      "bits_per_element", "snr_db", "nmse", "max_abs", "max_rel", "quant_gbps"};
    return agoq_cmd_execute(&o, "quant", cfg, tsv, sizeof tsv / sizeof tsv[0], argc, argv);
}
