/* agoq kernels: GPU throughput of the quantization, 8-bit gradient and fused kernels against
 * the device-to-device copy bandwidth measured in the same run (experiment kind "kernels").
 * The cases are the registered table of kernels/bench/bench_cases.h; each point is timed with
 * CUDA events after warm-up, with an L2 scrub before every rep, and reported as min / median
 * / max; GB/s counts bytes read + written (each case's formula is in its file) and copy_ratio
 * divides it by the copy's GB/s (2 x bytes / time) at the same size. Before timing, each
 * case's check compares one launch with the C reference bit for bit (first size only).
 *
 * config keys: cases [case names or groups; default all], formats [names; default fp4_e2m1,
 * int4, nf4, int8, fp8_e4m3, dyn8], blocks [n] (default: each format's own), scales
 * ["fp32","bf16"], roundings ["nearest","stochastic"], min_bytes, max_bytes, factor (logical
 * fp32 bytes: n = bytes / 4 elements), iters, warmup, cols (row length of row-wise cases),
 * nchunks (inputs of grad_reduce), check (bool), arena (bool, default true: every case's
 * buffers and the copy reference's are carved from one allocation made at the start and reset
 * before each case, so no case runs on memory another case just freed; kernels/quant/quant_rt.cu
 * gives the measurement behind it; false or --no-arena: cudaMalloc / cudaFree per case), peer
 * (path of the JSON written by validation/torch_kernels.py in the same device call: each record whose (case, format, block,
 * bytes) the peer also timed gets torch_ms, the peer's median (the fastest of its compilation
 * modes there, named in torch_mode), and vs_torch = torch_ms / our median_ms: > 1 means ours
 * is faster).
 * Run: agoq kernels -b 1M -e 4G -f 4   (needs a GPU; results/h200/kernels.json by convention) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/cmdline.h"
#include "core/common.h"
#include "core/results.h"
#include "runners/experiment.h"
#include "kernels/quant/qspec.h"
#if AGOQ_HAVE_CUDA
#include "kernels/bench/bench_cases.h"
#include "kernels/quant/quant_cuda.h"
#endif

typedef struct {
    agoq_qgrid grid;    /* formats x blocks x scales x roundings */
    const char **cases; /* selection; NULL = all */
    size_t ncases;
    cli_sweep sweep;
    long iters, warmup, cols, nchunks;
    int check, arena; /* arena: the buffers of every case from one allocation (quant_rt.cu says why) */
    cJSON *peer; /* the torch.compile peer's records (validation/torch_kernels.py), or NULL */
} kplan;

static const agoq_format kDefaultFormats[] = {AGOQ_FMT_FP4_E2M1, AGOQ_FMT_INT4, AGOQ_FMT_NF4,
                                              AGOQ_FMT_INT8, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8};

static const char *const kernels_keys[] = {"cases", "formats", "blocks", "scales", "roundings", "min_bytes",
                                           "max_bytes", "factor", "iters", "warmup", "cols", "nchunks", "check",
                                           "arena", "seed", "peer", NULL};

/* Loads the peer file named by the config's "peer" (schema agoq-torch-peer/1) into p->peer. */
static int load_peer(jconf c, const cJSON *cfg, kplan *p) {
    const char *path = NULL;
    if (jconf_str(c, cfg, "peer", 0, NULL, &path)) return -1;
    if (!path) return 0;
    p->peer = agoq_read_json(path);
    if (!p->peer) return -1;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(p->peer, "schema");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "agoq-torch-peer/1") ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(p->peer, "records"))) {
        agoq_error("%s: key '%s.peer': %s is not a torch peer file (schema agoq-torch-peer/1 with records)", c.file,
                   c.prefix, path);
        return -1;
    }
    return 0;
}


static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, kplan *p) {
    const char *const *keys = kernels_keys;
    jconf c = ctx->where;
    memset(p, 0, sizeof *p);
    if (jconf_only(c, cfg, keys) || jconf_strs(c, cfg, "cases", 0, &p->cases, &p->ncases) ||
        agoq_qgrid_parse(c, cfg, kDefaultFormats, sizeof kDefaultFormats / sizeof kDefaultFormats[0], &p->grid) ||
        jconf_sweep(c, cfg, 64, 1e12, (cli_sweep){1 << 20, (size_t)4 << 30, 4}, &p->sweep) ||
        jconf_long(c, cfg, "iters", 0, 1, 100000, 20, &p->iters) ||
        jconf_long(c, cfg, "warmup", 0, 0, 100000, 5, &p->warmup) ||
        jconf_long(c, cfg, "cols", 0, 8, 1 << 20, 4096, &p->cols) ||
        jconf_long(c, cfg, "nchunks", 0, 1, 64, 8, &p->nchunks) || jconf_bool(c, cfg, "check", 0, 1, &p->check) ||
        jconf_bool(c, cfg, "arena", 0, 1, &p->arena) ||
        load_peer(c, cfg, p))
        return -1;
    return cli_sweep_check(c.file, &p->sweep);
}

static void plan_free(kplan *p) {
    agoq_qgrid_free(&p->grid);
    free(p->cases);
    cJSON_Delete(p->peer);
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

/* The arena of a run (quant_rt.cu): 12 x the largest size of the sweep plus 1 GiB (every case of
 * experiments/kernels.json and kernels_fused.json fit in it on the H200: all their records say
 * "alloc": "arena"), leaving 8 GiB for cuBLASLt, cuDNN and the GEMM cases' own buffers. A case
 * that does not fit takes cudaMalloc for the rest (its records say "alloc": "arena+cudaMalloc"). */
static void open_arena(const kplan *p) {
    const size_t n = cli_sweep_count(&p->sweep), top = cli_sweep_bytes(&p->sweep, n ? n - 1 : 0, 64);
    if (agoq_cuda_arena_open(12 * top + ((size_t)1 << 30), (size_t)8 << 30))
        fprintf(stderr, "agoq: kernels: no benchmark arena (too little free device memory): buffers from cudaMalloc\n");
    else
        printf("# arena: %.1f GiB, every case's buffers and the copy's from it (\"alloc\" in each record)\n",
               (double)agoq_cuda_arena_bytes() / (double)(1u << 30));
}
/* How the buffers of the case just set up were allocated. */
static const char *alloc_kind(void) {
    if (!agoq_cuda_arena_bytes()) return "cudaMalloc";
    return agoq_cuda_arena_fallbacks() ? "arena+cudaMalloc" : "arena";
}

/* The peer's median ms for (case, format, block, bytes): the fastest of its records there (one
 * per compilation mode: the strongest peer), its mode in *mode; -1 when it has no such point. */
static double peer_ms(const cJSON *peer, const char *name, const char *fmt, int block, size_t bytes,
                      const char **mode) {
    const cJSON *r;
    double best = -1.0;
    *mode = "";
    if (!peer) return best;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(peer, "records")) {
        const double ms = results_get_num(r, "median_ms");
        if (strcmp(results_get_str(r, "case"), name) || strcmp(results_get_str(r, "format"), fmt) ||
            results_get_num(r, "block") != block || results_get_num(r, "bytes") != (double)bytes || !(ms > 0) ||
            (best >= 0 && ms >= best))
            continue;
        best = ms;
        *mode = results_get_str(r, "mode");
    }
    return best;
}

static void add_record(agoq_results *res, const kplan *p, const agoq_bench_case *k, const agoq_bench_args *a,
                       size_t bytes, const agoq_bench_timing *t, const agoq_bench_timing *copy, const char *check) {
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
    cJSON_AddStringToObject(r, "alloc", alloc_kind());
    const char *torch_mode;
    const double torch_ms = peer_ms(p->peer, k->name, agoq_formats[a->qc.fmt].name, a->qc.block, bytes, &torch_mode);
    if (torch_ms > 0) {
        results_num(r, "torch_ms", torch_ms);
        results_num(r, "vs_torch", torch_ms / t->median_ms);
        if (*torch_mode) cJSON_AddStringToObject(r, "torch_mode", torch_mode);
    }
    char mib[32], vs[32] = "";
    if (torch_ms > 0) snprintf(vs, sizeof vs, " torch %.2fx", torch_ms / t->median_ms);
    printf("  %-22s %-9s %5d %4s %5.5s %10s %10.2f %10.2f %10.2f %9.1f %9.1f %6.3f %s%s\n", k->name,
           agoq_formats[a->qc.fmt].name, a->qc.block, agoq_scale_name(a->qc.scale), agoq_rounding_name(a->qc.rounding),
           cli_fmt_bytes(bytes, mib, sizeof mib), 1e3 * t->median_ms, 1e3 * t->min_ms, 1e3 * t->max_ms, gbps,
           copy_gbps, gbps / copy_gbps, check, vs);
    fflush(stdout);
}

/* One case at one size over formats x blocks x scales x roundings (or once). -1 on a failed check. */
static int run_case(const agoq_run_ctx *ctx, const kplan *p, const agoq_bench_case *k, size_t bytes, int first_size,
                    const agoq_bench_timing *copy, void *stream, agoq_results *res) {
    const size_t nq = agoq_qgrid_count(&p->grid, k->uses_format);
    for (size_t qi = 0; qi < nq; qi++) {
        agoq_bench_args a = {bytes / 4, agoq_qgrid_at(&p->grid, qi, ctx->seed), (int)p->cols,
                             (int)p->nchunks, ctx->seed, stream};
        if (k->supports && !k->supports(&a.qc)) continue;
        void *st = NULL;
        agoq_cuda_arena_reset(); /* every case from the arena's start, whatever the last one did (a failed setup too) */
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
        add_record(res, p, k, &a, bytes, &t, copy, check);
    }
    return 0;
}

/* The GEMM cases come in pairs (kernels/gemm/bench_gemm_wg.cu): "<shape>_wg" against
 * "<shape>_lt" (cuBLASLt), "<shape>_wgq" against "<shape>_ltq" (cuBLASLt + the standalone
 * quantizer) and "<shape>_wgd" against "<shape>_ltd" (the standalone dequantizer + cuBLASLt),
 * same bytes and format. Adds vs_cublas / vs_cublas_quant = their median / ours
 * (> 1: ours is faster) to ours and prints them; "<shape>_wgq" also gets vs_own_quant against
 * "<shape>_wgu" (our GEMM, then the standalone quantizer) where the run has it. */
/* The median of record "<name's first stem characters><suffix>" of this size and format, or -1. */
static double peer_median(const cJSON *recs, const char *name, size_t stem, const char *suffix, double bytes,
                          const char *fmt, char *peer, size_t npeer) {
    snprintf(peer, npeer, "%.*s%s", (int)stem, name, suffix);
    const cJSON *r;
    cJSON_ArrayForEach(r, recs) {
        if (!strcmp(results_get_str(r, "case"), peer) && results_get_num(r, "bytes") == bytes &&
            !strcmp(results_get_str(r, "format"), fmt)) {
            const double m = results_get_num(r, "median_ms");
            return isnan(m) ? -1.0 : m;
        }
    }
    return -1.0;
}
/* Adds key = the peer's median / ours (med) to record r and prints it; 0, or -1 without the peer. */
static int add_ratio(agoq_results *res, cJSON *r, const char *name, size_t stem, const char *suffix, const char *key,
                     double bytes, const char *fmt, double med) {
    char peer[128];
    const double pm = peer_median(res->records, name, stem, suffix, bytes, fmt, peer, sizeof peer);
    if (pm < 0) return -1;
    results_num(r, key, pm / med);
    printf("  %-30s %-9s %s %.3f (%s %.3f ms, ours %.3f ms)\n", name, fmt, key, pm / med, peer, pm, med);
    return 0;
}
static void add_gemm_ratios(agoq_results *res, double bytes) {
    cJSON *r;
    cJSON_ArrayForEach(r, res->records) {
        const char *name = results_get_str(r, "case"), *fmt = results_get_str(r, "format");
        const double med = results_get_num(r, "median_ms");
        if (results_get_num(r, "bytes") != bytes || !*fmt || isnan(med)) continue;
        const size_t len = strlen(name);
        const int quant = len > 4 && !strcmp(name + len - 4, "_wgq"), plain = len > 3 && !strcmp(name + len - 3, "_wg");
        const int deq = len > 4 && !strcmp(name + len - 4, "_wgd");
        if (!quant && !plain && !deq) continue;
        const size_t stem = len - (plain ? 3 : 4);
        if (add_ratio(res, r, name, stem, plain ? "_lt" : deq ? "_ltd" : "_ltq", plain ? "vs_cublas" : "vs_cublas_quant",
                      bytes, fmt, med) == 0 &&
            quant) /* our GEMM + the standalone quantizer */
            add_ratio(res, r, name, stem, "_wgu", "vs_own_quant", bytes, fmt, med);
    }
    fflush(stdout);
}

static int run_gpu(const agoq_run_ctx *ctx, const kplan *p, agoq_results *res) {
    if (check_case_names(ctx->where, p)) return -1;
    agoq_gpu_info gi;
    if (agoq_gpu_query(0, &gi) == 0) results_set_gpu(res, agoq_gpu_json(&gi));
    void *stream = NULL;
    if (agoq_bench_init(&stream)) return -1;
    if (p->arena) open_arena(p);
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
        agoq_cuda_arena_reset();
        agoq_bench_time_copy(bytes, stream, (int)p->warmup, (int)p->iters, &copy);
        cJSON *r = results_add_record(res);
        cJSON_AddStringToObject(r, "case", "copy_d2d");
        cJSON_AddStringToObject(r, "group", "reference");
        cJSON_AddStringToObject(r, "alloc", alloc_kind());
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
        add_gemm_ratios(res, (double)bytes);
        agoq_progress(ctx->quiet, "kernels", si + 1, nsize, t0);
    }
    agoq_cuda_arena_close();
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

static const agoq_flag kernels_flags[] = {
    {.name = "cases", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "cases", .arg = "a,b,...", .help = "case names or groups (quant, grad8, fused; default all)"},
    {.name = "formats", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "formats", .arg = "a,b,...", .help = "formats (default fp4_e2m1,int4,nf4,int8,fp8_e4m3,dyn8)"},
    {.name = "blocks", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "blocks", .arg = "32,64,...", .help = "block sizes (default: each format's own)", .value = "32,64,128"},
    {.name = "scales", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "scales", .arg = "fp32,bf16", .help = "scale dtypes (default fp32)"},
    {.name = "rounding", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "roundings", .arg = "nearest,stochastic", .help = "rounding modes (default nearest)"},
    {.name = "cols", .short_opt = 0, .kind = AGOQ_FLAG_LONG, .key = "cols", .arg = "N", .help = "row length of row-wise cases (default 4096)", .lo = 8, .hi = 1 << 20},
    {.name = "chunks", .short_opt = 0, .kind = AGOQ_FLAG_LONG, .key = "nchunks", .arg = "N", .help = "inputs of grad_reduce (default 8)", .lo = 1, .hi = 64},
    {.name = "no-check", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "check", .arg = NULL, .help = "skip the bit-exact checks", .value = "false"},
    {.name = "no-arena", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "arena", .arg = NULL, .help = "buffers from cudaMalloc / cudaFree per case, not from one arena", .value = "false"},
    {.name = "peer", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "peer", .arg = "FILE", .help = "torch.compile peer times (validation/torch_kernels.py): adds torch_ms, vs_torch"},
    {0}};

static const char *const kernels_tsv[] = {"case", "format", "block", "scale", "rounding", "n", "bytes", "bytes_moved",
                                          "median_ms", "min_ms", "max_ms", "gbps", "copy_gbps", "copy_ratio"};

const agoq_runner agoq_runner_kernels = {
    .kind = "kernels",
    .what = "CUDA quantize/fused kernels vs the copy bandwidth of the same run",
    .about = "Time the CUDA kernels (quantize/dequantize, 8-bit gradient accumulate/reduce, fused cases)\n"
             "over a size sweep; report GB/s (bytes read + written) and the ratio to the device-to-device\n"
             "copy bandwidth measured in the same run. Each case is checked bit-exact at the first size.",
    .keys = kernels_keys,
    .flags = kernels_flags,
    .notes = "defaults: -b 1M -e 4G -f 4 -n 20 -w 5 (sizes are logical fp32 input bytes)",
    .run = agoq_exp_kernels,
    .tsv = kernels_tsv,
    .ntsv = sizeof kernels_tsv / sizeof kernels_tsv[0],
};
