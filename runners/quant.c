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

#include "runners/cmdline.h"
#include "core/common.h"
#include "runners/experiment.h"
#include "core/metrics.h"
#include "kernels/quant/qspec.h"
#include "core/rng.h"
#include "kernels/quant/quant_ref.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    agoq_qgrid grid; /* formats x blocks x scales x roundings */
    int dists[AGOQ_DIST_COUNT];
    size_t ndist;
    cli_sweep sweep;
    long iters;
} quant_plan;

static const char *const quant_keys[] = {"formats", "blocks", "scales", "roundings", "distributions", "min_bytes",
                                         "max_bytes", "factor", "iters", "warmup", "seed", NULL};

static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, quant_plan *p) {
    const char *const *keys = quant_keys;
    jconf c = ctx->where;
    memset(p, 0, sizeof *p);
    if (jconf_only(c, cfg, keys) || agoq_qgrid_parse(c, cfg, NULL, 0, &p->grid) ||
        agoq_jconf_names(c, cfg, "distributions", agoq_dist_by_name, p->dists, &p->ndist, AGOQ_DIST_COUNT, -1,
                    "normal, uniform, outliers, heavy, constant, zeros") ||
        jconf_sweep(c, cfg, 4, 1e12, (cli_sweep){1 << 20, 16 << 20, 4}, &p->sweep) || jconf_long(c, cfg, "iters", 0, 1, 1000, 3, &p->iters))
        return -1;
    return cli_sweep_check(c.file, &p->sweep);
}

static double median_ms(double *t, long n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return 1e3 * t[n / 2];
}

int agoq_exp_quant(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    quant_plan p;
    if (parse_plan(ctx, cfg, &p)) {
        agoq_qgrid_free(&p.grid);
        return -1;
    }
    if (ctx->check_only) {
        agoq_qgrid_free(&p.grid);
        return 0;
    }
    size_t nsize = cli_sweep_count(&p.sweep), nq = agoq_qgrid_count(&p.grid, 1);
    size_t total = nsize * nq * p.ndist, done = 0;
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
            for (size_t qi = 0; qi < nq; qi++) {
                agoq_qconfig q = agoq_qgrid_at(&p.grid, qi, ctx->seed);
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
    agoq_qgrid_free(&p.grid);
    return 0;
}

static const agoq_flag quant_flags[] = {
    {.name = "formats", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "formats", .arg = "a,b,...", .help = "formats (default all; agoq list names them)"},
    {.name = "blocks", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "blocks", .arg = "32,64,...", .help = "block sizes (default: each format's own)", .value = "32,64,128"},
    {.name = "scales", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "scales", .arg = "fp32,bf16", .help = "scale dtypes (default fp32)"},
    {.name = "rounding", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "roundings", .arg = "nearest,stochastic", .help = "rounding modes (default nearest)"},
    {.name = "dist", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "distributions", .arg = "a,b,...", .help = "input distributions: normal, uniform, outliers, heavy, constant, zeros (default all)"},
    {0}};

static const char *const quant_tsv[] = {"format", "bits", "block", "scale", "rounding", "dist", "n",
                                        "bits_per_element", "snr_db", "nmse", "max_abs", "max_rel", "quant_gbps"};

const agoq_runner agoq_runner_quant = {
    .kind = "quant",
    .what = "error and CPU throughput of every format over sizes and input distributions",
    .about = "Quantize + dequantize every format over a size sweep and input distributions; report\n"
             "bits/element (scales included), MSE, SNR, max abs/rel error, cosine and CPU GB/s.",
    .keys = quant_keys,
    .flags = quant_flags,
    .notes = "defaults: -b 1M -e 16M -f 4 -n 3",
    .run = agoq_exp_quant,
    .tsv = quant_tsv,
    .ntsv = sizeof quant_tsv / sizeof quant_tsv[0],
    .host_only = 1,
};
