/* agoq kernels: GPU throughput of the quantization, 8-bit gradient and fused kernels against
 * the device-to-device copy bandwidth measured in the same run (experiment kind "kernels").
 * The cases are the registered table of kernels/bench_cases.h; each point is timed with
 * CUDA events after warm-up, with an L2 scrub before every rep, and reported as min / median
 * / max; GB/s counts bytes read + written (each case's formula is in its file) and copy_ratio
 * divides it by the copy's GB/s (2 x bytes / time) at the same size. Before timing, each
 * case's check compares one launch with the C reference bit for bit (first size only).
 *
 * config keys: cases [case names or groups; default all], formats [names; default fp4_e2m1,
 * int4, nf4, int8, fp8_e4m3, dyn8], blocks [n] (default: each format's own), scales
 * ["fp32","bf16"], roundings ["nearest","stochastic"], min_bytes, max_bytes, factor (logical
 * fp32 bytes: n = bytes / 4 elements), iters, warmup, cols (row length of row-wise cases),
 * nchunks (inputs of grad_reduce), check (bool).
 * Run: agoq kernels -b 1M -e 4G -f 4   (needs a GPU; results/h200/kernels.json by convention) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cmdline.h"
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"
#include "harness/qspec.h"
#if AGOQ_HAVE_CUDA
#include "kernels/bench_cases.h"
#endif

typedef struct {
    int fmts[AGOQ_FMT_COUNT];
    size_t nfmt;
    double *blocks;
    size_t nblocks;
    int scales[2], rounds[2];
    size_t nscale, nround;
    const char **cases; /* selection; NULL = all */
    size_t ncases;
    cli_sweep sweep;
    long iters, warmup, cols, nchunks;
    int check;
} kplan;

static const agoq_format kDefaultFormats[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT4, AGOQ_FMT_NF4,
                                              AGOQ_FMT_INT8, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8};

static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, kplan *p) {
    static const char *const keys[] = {"cases", "formats", "blocks", "scales", "roundings", "min_bytes", "max_bytes",
                                       "factor", "iters", "warmup", "cols", "nchunks", "check", "seed", NULL};
    jconf c = ctx->where;
    double mn, mx;
    memset(p, 0, sizeof *p);
    if (jconf_only(c, cfg, keys) || jconf_strs(c, cfg, "cases", 0, &p->cases, &p->ncases) ||
        jconf_nums(c, cfg, "blocks", 0, 8, 65536, &p->blocks, &p->nblocks) ||
        agoq_jconf_names(c, cfg, "scales", agoq_scale_by_name, p->scales, &p->nscale, 2, AGOQ_SCALE_FP32, "fp32, bf16") ||
        agoq_jconf_names(c, cfg, "roundings", agoq_rounding_by_name, p->rounds, &p->nround, 2, AGOQ_ROUND_NEAREST, "nearest, stochastic") ||
        jconf_num(c, cfg, "min_bytes", 0, 64, 1e12, 1 << 20, &mn) ||
        jconf_num(c, cfg, "max_bytes", 0, 64, 1e12, 4.0 * (1 << 30), &mx) ||
        jconf_num(c, cfg, "factor", 0, 1, 1e6, 4, &p->sweep.factor) ||
        jconf_long(c, cfg, "iters", 0, 1, 100000, 20, &p->iters) ||
        jconf_long(c, cfg, "warmup", 0, 0, 100000, 5, &p->warmup) ||
        jconf_long(c, cfg, "cols", 0, 8, 1 << 20, 4096, &p->cols) ||
        jconf_long(c, cfg, "nchunks", 0, 1, 64, 8, &p->nchunks) || jconf_bool(c, cfg, "check", 0, 1, &p->check))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(cfg, "formats")) {
        if (agoq_qspec_formats(c, cfg, "formats", p->fmts, &p->nfmt)) return -1;
    } else {
        p->nfmt = sizeof kDefaultFormats / sizeof kDefaultFormats[0];
        for (size_t i = 0; i < p->nfmt; i++) p->fmts[i] = kDefaultFormats[i];
    }
    for (size_t i = 0; i < p->nblocks; i++)
        if ((long)p->blocks[i] % 8 || p->blocks[i] != (double)(long)p->blocks[i]) {
            agoq_error("%s: key '%s.blocks[%zu]': %g is not a multiple of 8", c.file, c.prefix, i, p->blocks[i]);
            return -1;
        }
    p->sweep.min_bytes = (size_t)mn;
    p->sweep.max_bytes = (size_t)mx;
    return cli_sweep_check(c.file, &p->sweep);
}

static void plan_free(kplan *p) {
    free(p->blocks);
    free(p->cases);
}

#if AGOQ_HAVE_CUDA
static int selected(const kplan *p, const agoq_bench_case *k) {
    if (!p->ncases) return 1;
    for (size_t i = 0; i < p->ncases; i++)
        if (!strcmp(p->cases[i], k->name) || !strcmp(p->cases[i], k->group)) return 1;
    return 0;
}

static int check_case_names(jconf c, const kplan *p) {
    for (size_t i = 0; i < p->ncases; i++) {
        int found = 0;
        for (int k = 0; k < agoq_bench_case_count(); k++) {
            const agoq_bench_case *bc = agoq_bench_case_at(k);
            found |= !strcmp(p->cases[i], bc->name) || !strcmp(p->cases[i], bc->group);
        }
        if (!found) {
            char valid[2048] = "";
            size_t len = 0;
            for (int k = 0; k < agoq_bench_case_count() && len < sizeof valid; k++)
                len += (size_t)snprintf(valid + len, sizeof valid - len, "%s%s", k ? ", " : "", agoq_bench_case_at(k)->name);
            agoq_error("%s: key '%s.cases[%zu]': unknown case '%s' (valid: %s, or a group: quant, grad8, ...)", c.file,
                       c.prefix, i, p->cases[i], valid);
            return -1;
        }
    }
    return 0;
}

static void add_record(agoq_results *res, const agoq_bench_case *k, const agoq_bench_args *a, size_t bytes,
                       const agoq_bench_timing *t, const agoq_bench_timing *copy, const char *check) {
    const double moved = k->bytes_moved(a), copy_gbps = 2.0 * (double)bytes / (copy->median_ms * 1e6);
    const double gbps = moved / (t->median_ms * 1e6);
    cJSON *r = results_add_record(res);
    cJSON_AddStringToObject(r, "case", k->name);
    cJSON_AddStringToObject(r, "group", k->group);
    cJSON_AddStringToObject(r, "format", agoq_formats[a->qc.fmt].name);
    cJSON_AddNumberToObject(r, "bits", agoq_formats[a->qc.fmt].bits);
    cJSON_AddNumberToObject(r, "block", a->qc.block);
    cJSON_AddStringToObject(r, "scale", agoq_scale_name(a->qc.scale));
    cJSON_AddStringToObject(r, "rounding", agoq_rounding_name(a->qc.rounding));
    cJSON_AddNumberToObject(r, "n", (double)a->n);
    cJSON_AddNumberToObject(r, "bytes", (double)bytes);
    cJSON_AddNumberToObject(r, "bytes_moved", moved);
    results_num(r, "min_ms", t->min_ms);
    results_num(r, "median_ms", t->median_ms);
    results_num(r, "max_ms", t->max_ms);
    cJSON_AddNumberToObject(r, "iters", t->iters);
    results_num(r, "gbps", gbps);
    results_num(r, "gbps_best", moved / (t->min_ms * 1e6));
    results_num(r, "copy_gbps", copy_gbps);
    results_num(r, "copy_ratio", gbps / copy_gbps);
    cJSON_AddStringToObject(r, "check", check);
    char mib[32];
    printf("  %-22s %-9s %5d %4s %5.5s %10s %10.2f %10.2f %10.2f %9.1f %9.1f %6.3f %s\n", k->name,
           agoq_formats[a->qc.fmt].name, a->qc.block, agoq_scale_name(a->qc.scale), agoq_rounding_name(a->qc.rounding),
           cli_fmt_bytes(bytes, mib, sizeof mib), 1e3 * t->median_ms, 1e3 * t->min_ms, 1e3 * t->max_ms, gbps,
           copy_gbps, gbps / copy_gbps, check);
    fflush(stdout);
}

/* One case at one size over formats x blocks x scales x roundings (or once). -1 on a failed check. */
static int run_case(const agoq_run_ctx *ctx, const kplan *p, const agoq_bench_case *k, size_t bytes, int first_size,
                    const agoq_bench_timing *copy, void *stream, agoq_results *res) {
    const size_t nf = k->uses_format ? p->nfmt : 1, nb = p->nblocks ? p->nblocks : 1;
    for (size_t fi = 0; fi < nf; fi++)
        for (size_t bi = 0; bi < nb; bi++)
            for (size_t si = 0; si < p->nscale; si++)
                for (size_t ri = 0; ri < p->nround; ri++) {
                    agoq_bench_args a = {bytes / 4, agoq_qconfig_default((agoq_format)p->fmts[fi]), (int)p->cols,
                                         (int)p->nchunks, ctx->seed, stream};
                    if (p->nblocks) a.qc.block = (int)p->blocks[bi];
                    a.qc.scale = (agoq_scale_type)p->scales[si];
                    a.qc.rounding = (agoq_rounding)p->rounds[ri];
                    a.qc.seed = ctx->seed;
                    if (k->supports && !k->supports(&a.qc)) continue;
                    void *st = NULL;
                    if (k->setup(&a, &st)) continue;
                    const char *check = "skipped";
                    if (p->check && k->check && first_size && a.n <= ((size_t)16 << 20)) {
                        if (k->check(st, &a)) {
                            agoq_error("kernels: case %s, format %s, block %d: result differs from the C reference",
                                       k->name, agoq_formats[a.qc.fmt].name, a.qc.block);
                            k->teardown(st);
                            return -1;
                        }
                        check = "pass";
                    }
                    agoq_bench_timing t;
                    agoq_bench_time_case(k, st, &a, (int)p->warmup, (int)p->iters, &t);
                    k->teardown(st);
                    add_record(res, k, &a, bytes, &t, copy, check);
                }
    return 0;
}

static int run_gpu(const agoq_run_ctx *ctx, const kplan *p, agoq_results *res) {
    if (check_case_names(ctx->where, p)) return -1;
    agoq_gpu_info gi;
    if (agoq_gpu_query(0, &gi) == 0) results_set_gpu(res, agoq_gpu_json(&gi));
    void *stream = NULL;
    if (agoq_bench_init(&stream)) return -1;
    printf("# kernels on %s: bytes = logical fp32 input bytes (n = bytes/4), times in us, GB/s = bytes moved / median\n",
           gi.name);
    printf("# %-22s %-9s %5s %4s %5s %10s %10s %10s %10s %9s %9s %6s %s\n", "case", "format", "block", "scl", "round",
           "bytes", "med_us", "min_us", "max_us", "GB/s", "copyGB/s", "ratio", "check");
    const size_t nsize = cli_sweep_count(&p->sweep);
    double t0 = agoq_now_s();
    int rc = 0;
    for (size_t si = 0; si < nsize && rc == 0; si++) {
        const size_t bytes = cli_sweep_bytes(&p->sweep, si, 64);
        agoq_bench_timing copy;
        agoq_bench_time_copy(bytes, stream, (int)p->warmup, (int)p->iters, &copy);
        cJSON *r = results_add_record(res);
        cJSON_AddStringToObject(r, "case", "copy_d2d");
        cJSON_AddStringToObject(r, "group", "reference");
        cJSON_AddNumberToObject(r, "bytes", (double)bytes);
        cJSON_AddNumberToObject(r, "bytes_moved", 2.0 * (double)bytes);
        results_num(r, "min_ms", copy.min_ms);
        results_num(r, "median_ms", copy.median_ms);
        results_num(r, "max_ms", copy.max_ms);
        results_num(r, "gbps", 2.0 * (double)bytes / (copy.median_ms * 1e6));
        results_num(r, "copy_ratio", 1.0);
        for (int k = 0; k < agoq_bench_case_count() && rc == 0; k++) {
            const agoq_bench_case *bc = agoq_bench_case_at(k);
            if (selected(p, bc)) rc = run_case(ctx, p, bc, bytes, si == 0, &copy, stream, res);
        }
        agoq_progress(ctx->quiet, "kernels", si + 1, nsize, t0);
    }
    agoq_bench_shutdown();
    return rc;
}
#endif

int agoq_exp_kernels(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    kplan p;
    if (parse_plan(ctx, cfg, &p)) {
        plan_free(&p);
        return -1;
    }
    int rc = -1;
    if (ctx->check_only) {
        rc = 0;
    } else if (ctx->backend != AGOQ_BACKEND_CUDA) {
        agoq_error("kernels: needs the cuda backend (a GPU and a CUDA=1 build); backend is %s",
                   agoq_backend_name(ctx->backend));
    } else {
#if AGOQ_HAVE_CUDA
        rc = run_gpu(ctx, &p, res);
#endif
    }
    plan_free(&p);
    return rc;
}

static void help(void) {
    printf("usage: agoq kernels [options]\n"
           "Time the CUDA kernels (quantize/dequantize, 8-bit gradient accumulate/reduce, fused cases)\n"
           "over a size sweep; report GB/s (bytes read + written) and the ratio to the device-to-device\n"
           "copy bandwidth measured in the same run. Each case is checked bit-exact at the first size.\n"
           "  --cases a,b,...       case names or groups (quant, grad8, fused; default all)\n"
           "  --formats a,b,...     formats (default fp4_e2m1,int4,nf4,int8,fp8_e4m3,dyn8)\n"
           "  --blocks 32,64,...    block sizes (default: each format's own)\n"
           "  --scales fp32,bf16    scale dtypes (default fp32)\n"
           "  --rounding nearest,stochastic (default nearest)\n"
           "  --cols N              row length of row-wise cases (default 4096)\n"
           "  --chunks N            inputs of grad_reduce (default 8)\n"
           "  --no-check            skip the bit-exact checks\n"
           "defaults: -b 1M -e 4G -f 4 -n 20 -w 5 (sizes are logical fp32 input bytes)\n" AGOQ_COMMON_HELP);
}

int cmd_kernels(int argc, char **argv) {
    enum { O_CASES = AGOQ_OPT_FIRST_PRIVATE, O_FORMATS, O_BLOCKS, O_SCALES, O_ROUND, O_COLS, O_CHUNKS, O_NOCHECK };
    static const struct option longopts[] = {AGOQ_COMMON_LONGOPTS,
                                             {"cases", required_argument, 0, O_CASES},
                                             {"formats", required_argument, 0, O_FORMATS},
                                             {"blocks", required_argument, 0, O_BLOCKS},
                                             {"scales", required_argument, 0, O_SCALES},
                                             {"rounding", required_argument, 0, O_ROUND},
                                             {"cols", required_argument, 0, O_COLS},
                                             {"chunks", required_argument, 0, O_CHUNKS},
                                             {"no-check", no_argument, 0, O_NOCHECK},
                                             {0, 0, 0, 0}};
    agoq_common_opts o;
    agoq_common_init(&o, "kernels");
    cJSON *cfg = cJSON_CreateObject();
    int c;
    long v;
    while ((c = getopt_long(argc, argv, AGOQ_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
        int r = agoq_common_opt(&o, c, optarg);
        if (r < 0) goto usage;
        if (r > 0) continue;
        switch (c) {
        case O_CASES: cJSON_AddItemToObject(cfg, "cases", agoq_csv_strings(optarg)); break;
        case O_FORMATS: cJSON_AddItemToObject(cfg, "formats", agoq_csv_strings(optarg)); break;
        case O_SCALES: cJSON_AddItemToObject(cfg, "scales", agoq_csv_strings(optarg)); break;
        case O_ROUND: cJSON_AddItemToObject(cfg, "roundings", agoq_csv_strings(optarg)); break;
        case O_NOCHECK: cJSON_AddBoolToObject(cfg, "check", 0); break;
        case O_COLS:
        case O_CHUNKS:
            if (cli_long_arg("kernels", c == O_COLS ? "--cols" : "--chunks", optarg, c == O_COLS ? 8 : 1,
                             c == O_COLS ? 1 << 20 : 64, &v))
                goto usage;
            cJSON_AddNumberToObject(cfg, c == O_COLS ? "cols" : "nchunks", (double)v);
            break;
        case O_BLOCKS: {
            cJSON *a = agoq_csv_numbers(optarg);
            if (!a) {
                agoq_error("kernels: bad value '%s' for --blocks (expect e.g. 32,64,128)", optarg);
                goto usage;
            }
            cJSON_AddItemToObject(cfg, "blocks", a);
            break;
        }
        default: cJSON_Delete(cfg); return agoq_cmd_usage_error("kernels");
        }
    }
    if (o.help) {
        help();
        cJSON_Delete(cfg);
        return 0;
    }
    if (optind < argc) {
        agoq_error("kernels: unexpected argument '%s'", argv[optind]);
        goto usage;
    }
    static const char *const tsv[] = {"case", "format", "block", "scale", "rounding", "n", "bytes", "bytes_moved",
                                      "median_ms", "min_ms", "max_ms", "gbps", "copy_gbps", "copy_ratio"};
    return agoq_cmd_execute(&o, "kernels", cfg, tsv, sizeof tsv / sizeof tsv[0], argc, argv);
usage:
    cJSON_Delete(cfg);
    return 2;
}
