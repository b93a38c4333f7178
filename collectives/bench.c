/* Experiment kind "collectives": time and error of every collective algorithm over sizes and
 * rank counts, nccl-tests style, and (mode "accumulate") the error of 8-bit micro-batch
 * gradient accumulation over 1..64 micro-batches. CLI: runners/collectives.c.
 *
 * config keys (all optional):
 *   mode            "collective" (default) | "accumulate"
 *   algos           [fp32, bf16, agoq, qgz, ring_q, fp8lm] (default all)
 *   ops             ["allreduce", "reduce_scatter"] (default allreduce)
 *   formats         wire formats for the quantized algorithms; each algorithm runs the ones it
 *                   accepts (fp8lm: fp8_*), default its own (agoq/ring_q int8, qgz int4, fp8lm e4m3)
 *   block, scale    block size (default the format's) and scale dtype "fp32" | "bf16"
 *   sums            ["fp32", "bf16"]: local sum precision of agoq/qgz/ring_q (default fp32)
 *   ranks           rank counts (default: cpu 8; cuda every visible GPU, or the MPI world)
 *   ranks_per_node  qgz hierarchy (default min(8, ranks); must divide ranks)
 *   min_bytes, max_bytes, factor   per-rank fp32 bytes (default 32K..1M, x32)
 *   iters, warmup   timed repeats (median, min, max) after warm-up runs (default 5, 1)
 *   dist            input distribution (rng.h names, default normal); rank r uses seed + r
 *   check           error against the fp32 reference (default true; sizes <= check_max_bytes)
 *   phases          one more run with a sync + clock between phases (default true)
 *   keep_going      write the results even when a correctness check failed (default false)
 *   microbatches    accumulate mode: micro-batch counts (default 1, 2, 4, ..., 64)
 * Every record says "timing": "cpu-simulated" (CPU time of the whole simulation, all ranks in
 * one thread) or "gpu" (wall time around the collective after a device sync). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bench.h"
#include "collectives/driver.h"
#include "core/cli.h"
#include "core/common.h"
#include "core/metrics.h"
#include "kernels/quant/qspec.h"
#include "core/rng.h"
#include "kernels/quant/quant_math.h"

typedef struct {
    int accumulate;
    int algos[AGOQ_ALGO_COUNT], ops[2], fmts[AGOQ_FMT_COUNT], sums[2];
    size_t nalgo, nop, nfmt, nsum;
    long block, rpn;
    int scale, dist, check, phases, keep_going;
    double *ranks, *micro, check_max_bytes;
    size_t nranks, nmicro;
    cli_sweep sweep;
    long iters, warmup;
} coll_plan;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int sum_by_name(const char *s) { return s && !strcmp(s, "fp32") ? AGOQ_SUM_FP32 : s && !strcmp(s, "bf16") ? AGOQ_SUM_BF16 : -1; }

const char *const agoq_coll_keys[] = {"mode", "algos", "ops", "formats", "block", "scale", "sums", "ranks",
                                       "ranks_per_node", "min_bytes", "max_bytes", "factor", "iters", "warmup",
                                       "dist", "check", "check_max_bytes", "phases", "keep_going", "microbatches",
                                       "seed", NULL};

static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, coll_plan *p) {
    const char *const *keys = agoq_coll_keys;
    jconf c = ctx->where;
    const char *mode, *scale, *dist;
    memset(p, 0, sizeof *p);
    if (jconf_only(c, cfg, keys) || jconf_str(c, cfg, "mode", 0, "collective", &mode) ||
        agoq_jconf_names(c, cfg, "algos", agoq_coll_algo_by_name, p->algos, &p->nalgo, AGOQ_ALGO_COUNT, -1,
                    agoq_coll_algo_names()) ||
        agoq_jconf_names(c, cfg, "ops", agoq_coll_op_by_name, p->ops, &p->nop, 2, AGOQ_COLL_ALLREDUCE,
                    "allreduce, reduce_scatter") ||
        agoq_jconf_names(c, cfg, "formats", agoq_format_by_name, p->fmts, &p->nfmt, AGOQ_FMT_COUNT, AGOQ_FMT_COUNT,
                    agoq_format_names()) ||
        agoq_jconf_names(c, cfg, "sums", sum_by_name, p->sums, &p->nsum, 2, AGOQ_SUM_FP32, "fp32, bf16") ||
        jconf_long(c, cfg, "block", 0, 0, 65536, 0, &p->block) || jconf_str(c, cfg, "scale", 0, "fp32", &scale) ||
        jconf_nums(c, cfg, "ranks", 0, 1, 4096, &p->ranks, &p->nranks) ||
        jconf_long(c, cfg, "ranks_per_node", 0, 0, 4096, 0, &p->rpn) ||
        jconf_sweep(c, cfg, 1, 1e13, (cli_sweep){32 << 10, 1 << 20, 32}, &p->sweep) ||
        jconf_long(c, cfg, "iters", 0, 1, 100000, 5, &p->iters) || jconf_long(c, cfg, "warmup", 0, 0, 100000, 1, &p->warmup) ||
        jconf_str(c, cfg, "dist", 0, "normal", &dist) || jconf_bool(c, cfg, "check", 0, 1, &p->check) ||
        jconf_num(c, cfg, "check_max_bytes", 0, 0, 1e13, 256.0 * (1 << 20), &p->check_max_bytes) ||
        jconf_bool(c, cfg, "phases", 0, 1, &p->phases) || jconf_bool(c, cfg, "keep_going", 0, 0, &p->keep_going) ||
        jconf_nums(c, cfg, "microbatches", 0, 1, 4096, &p->micro, &p->nmicro))
        return -1;
    if (p->nfmt == 1 && p->fmts[0] == AGOQ_FMT_COUNT) p->nfmt = 0; /* default: each algorithm's own */
    if (strcmp(mode, "collective") && strcmp(mode, "accumulate")) {
        agoq_error("%s: key '%s.mode': unknown value '%s' (valid: collective, accumulate)", c.file, c.prefix, mode);
        return -1;
    }
    p->accumulate = !strcmp(mode, "accumulate");
    if ((p->scale = agoq_scale_by_name(scale)) < 0 || (p->dist = agoq_dist_by_name(dist)) < 0) {
        agoq_error("%s: key '%s.%s': unknown value '%s'", c.file, c.prefix, p->scale < 0 ? "scale" : "dist",
                   p->scale < 0 ? scale : dist);
        return -1;
    }
    if (p->block && p->block % 8) {
        agoq_error("%s: key '%s.block': %ld is not a multiple of 8 in [8, 65536]", c.file, c.prefix, p->block);
        return -1;
    }
    for (size_t i = 0; i < p->nranks; i++)
        if (p->ranks[i] != (double)(long)p->ranks[i]) {
            agoq_error("%s: key '%s.ranks[%zu]': %g is not an integer", c.file, c.prefix, i, p->ranks[i]);
            return -1;
        }
    size_t mn = p->sweep.min_bytes, mx = p->sweep.max_bytes;
    if (mn < 4 || mx < 4) {
        agoq_error("%s: key '%s.%s': size %g bytes is smaller than one fp32 element", c.file, c.prefix,
                   mn < 4 ? "min_bytes" : "max_bytes", (double)(mn < 4 ? mn : mx));
        return -1;
    }
    return cli_sweep_check(c.file, &p->sweep);
}

/* The (algorithm, op, format, sum) points of the plan, validated for N ranks. */
static size_t plan_configs(const coll_plan *p, int N, agoq_coll_config *out, size_t max) {
    size_t k = 0;
    for (size_t a = 0; a < p->nalgo; a++)
        for (size_t o = 0; o < p->nop; o++) {
            const agoq_coll_algo algo = (agoq_coll_algo)p->algos[a];
            const int quant = agoq_coll_algos[algo].quantized, summed = quant && algo != AGOQ_ALGO_FP8LM;
            size_t nf = quant && p->nfmt ? p->nfmt : 1, ns = summed ? p->nsum : 1;
            for (size_t f = 0; f < nf; f++)
                for (size_t s = 0; s < ns && k < max; s++) {
                    agoq_coll_config c = agoq_coll_config_default(algo, (agoq_coll_op)p->ops[o]);
                    if (quant && p->nfmt) c.q = agoq_qconfig_default((agoq_format)p->fmts[f]);
                    if (quant && p->block) c.q.block = (int)p->block;
                    c.q.scale = (agoq_scale_type)p->scale;
                    c.sum = (agoq_sum_precision)p->sums[s];
                    if (algo == AGOQ_ALGO_QGZ) c.ranks_per_node = p->rpn ? (int)p->rpn : (N % 8 == 0 ? 8 : N);
                    if (algo == AGOQ_ALGO_FP8LM && !AGOQ_FMT_IS_FP8(c.q.fmt)) continue;
                    out[k++] = c;
                }
        }
    return k;
}

static uint64_t rank_seed(uint64_t seed, int r) { return seed * 1000003ull + 7919ull * (uint64_t)(r + 1); }


/* The lowest SNR a correct implementation reaches on finite inputs (a sanity bound, not the
 * accuracy claim: fp32 differs from the double reference only by summation rounding). */
static double min_snr_db(const agoq_coll_config *c) { return c->algo == AGOQ_ALGO_FP32 ? 80.0 : c->algo == AGOQ_ALGO_BF16 ? 20.0 : 0.0; }

/* Device-to-device copy of n fp32 elements on local rank 0 (median ms): the bandwidth the
 * local phases are compared with, measured in the same run. */
static double measure_copy_ms(agoq_comm *c, size_t n, long iters) {
    void *a = c->ops->alloc(c, 0, n * sizeof(float)), *b = c->ops->alloc(c, 0, n * sizeof(float));
    double *t = malloc((size_t)iters * sizeof *t);
    if (!t) abort();
    c->ops->copy(c, 0, b, a, n * sizeof(float)); /* warm-up */
    for (long it = 0; it < iters; it++) {
        c->ops->sync(c);
        double t0 = agoq_now_s();
        c->ops->copy(c, 0, b, a, n * sizeof(float));
        c->ops->sync(c);
        t[it] = agoq_now_s() - t0;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double ms = 1e3 * t[iters / 2];
    free(t);
    c->ops->release(c, 0, a);
    c->ops->release(c, 0, b);
    return ms;
}

/* The local sum precision, for the algorithms that have a local sum ("-" for NCCL's own). */
static const char *sum_label(const agoq_coll_config *c) {
    int summed = c->algo == AGOQ_ALGO_AGOQ || c->algo == AGOQ_ALGO_QGZ || c->algo == AGOQ_ALGO_RING_Q;
    return !summed ? "-" : c->sum == AGOQ_SUM_BF16 ? "bf16" : "fp32";
}

typedef struct {
    agoq_comm *comm;
    float **host_x;  /* [nlocal] inputs, n each */
    float *ref;      /* fp32 reference sum (n), NULL when not checked */
    size_t n;
    int failed;
} coll_point;

static int run_point(const agoq_run_ctx *ctx, const coll_plan *p, const agoq_coll_config *cfg, coll_point *pt,
                     agoq_results *res) {
    agoq_comm *c = pt->comm;
    const int N = c->nranks, ar = cfg->op == AGOQ_COLL_ALLREDUCE, gpu = strcmp(c->backend, "cpu") != 0;
    if (agoq_coll_config_check(cfg, N)) return -1;
    const size_t n = pt->n, shard = agoq_coll_shard_count(cfg, N, n), total = shard * (size_t)N;
    const size_t out_count = ar ? total : shard;
    float **in = calloc((size_t)c->nlocal, sizeof *in), **out = calloc((size_t)c->nlocal, sizeof *out);
    double *t = malloc((size_t)p->iters * sizeof *t);
    if (!in || !out || !t) abort();
    for (int lr = 0; lr < c->nlocal; lr++) {
        in[lr] = c->ops->alloc(c, lr, total * sizeof(float));
        out[lr] = c->ops->alloc(c, lr, out_count * sizeof(float));
        c->ops->upload(c, lr, in[lr], pt->host_x[lr], n * sizeof(float));
    }
    agoq_coll_run run = {.comm = c, .cfg = cfg, .shard = shard, .in = in, .out = out};
    int rc = 0;
    for (long it = 0; it < p->warmup + p->iters && rc == 0; it++) {
        c->ops->sync(c);
        double t0 = agoq_now_s();
        rc = agoq_coll_execute(&run);
        c->ops->sync(c);
        if (it >= p->warmup) t[it - p->warmup] = agoq_now_s() - t0;
    }
    double phase_ms[AGOQ_PH_COUNT] = {0};
    if (rc == 0 && p->phases) {
        run.time_phases = 1;
        rc = agoq_coll_execute(&run);
        for (int ph = 0; ph < AGOQ_PH_COUNT; ph++) phase_ms[ph] = 1e3 * run.phase_s[ph];
    }
    if (rc == 0) {
        qsort(t, (size_t)p->iters, sizeof *t, cmp_double);
        const double ms = 1e3 * t[p->iters / 2], bytes = 4.0 * (double)n, algbw = bytes / (ms * 1e6);
        const double busf = ar ? 2.0 * (N - 1) / N : (double)(N - 1) / N;
        agoq_coll_info info = agoq_coll_describe(cfg, N, shard);
        cJSON *rec = results_add_record(res);
        const int quant = agoq_coll_algos[cfg->algo].quantized;
        cJSON_AddStringToObject(rec, "mode", "collective");
        cJSON_AddStringToObject(rec, "algo", agoq_coll_algos[cfg->algo].name);
        cJSON_AddStringToObject(rec, "op", agoq_coll_op_name(cfg->op));
        cJSON_AddStringToObject(rec, "format", quant ? agoq_formats[cfg->q.fmt].name : agoq_coll_algos[cfg->algo].name);
        cJSON_AddNumberToObject(rec, "block", quant && cfg->algo != AGOQ_ALGO_FP8LM ? cfg->q.block : 0);
        cJSON_AddStringToObject(rec, "scale", quant ? agoq_scale_name(cfg->q.scale) : "none");
        cJSON_AddStringToObject(rec, "sum", sum_label(cfg));
        cJSON_AddNumberToObject(rec, "ranks", N);
        cJSON_AddNumberToObject(rec, "ranks_per_node", cfg->algo == AGOQ_ALGO_QGZ ? cfg->ranks_per_node : N);
        cJSON_AddNumberToObject(rec, "n", (double)n);
        cJSON_AddNumberToObject(rec, "bytes", bytes);
        cJSON_AddNumberToObject(rec, "shard", (double)shard);
        cJSON_AddStringToObject(rec, "timing", gpu ? "gpu" : "cpu-simulated");
        cJSON_AddStringToObject(rec, "backend", c->backend);
        results_num(rec, "time_ms", ms);
        results_num(rec, "time_min_ms", 1e3 * t[0]);
        results_num(rec, "time_max_ms", 1e3 * t[p->iters - 1]);
        results_num(rec, "algbw_GBps", algbw);
        results_num(rec, "busbw_GBps", algbw * busf);
        results_num(rec, "wire_bytes", info.wire_bytes);
        results_num(rec, "wire_bits_per_element", 8.0 * info.wire_bytes / ((ar ? 2.0 : 1.0) * (N - 1) * (double)shard));
        cJSON_AddNumberToObject(rec, "quantizations", info.quantizations);
        for (int ph = 0; ph < AGOQ_PH_COUNT && p->phases; ph++) {
            char k[32];
            snprintf(k, sizeof k, "%s_ms", agoq_coll_phase_names[ph]);
            results_num(rec, k, phase_ms[ph]);
        }
        if (p->phases && cfg->algo == AGOQ_ALGO_AGOQ) {
            /* bytes one rank moves per local phase: quantize reads the fp32 input and writes N
             * packed chunks; dequant-sum-requant reads N chunks and writes one. The cpu
             * simulation runs every rank in one thread, so its bytes count all of them. */
            const double qbytes = (double)agoq_packed(&cfg->q, shard).bytes, ranks_here = gpu ? 1 : c->nlocal;
            const double copy_ms = measure_copy_ms(c, n, p->iters);
            const double q_gbps = ranks_here * (4.0 * (double)total + N * qbytes) / (phase_ms[AGOQ_PH_QUANT] * 1e6);
            const double r_gbps = ranks_here * ((N + 1) * qbytes) / (phase_ms[AGOQ_PH_REDUCE] * 1e6);
            const double copy_gbps = 2.0 * bytes / (copy_ms * 1e6); /* read + write */
            results_num(rec, "copy_ms", copy_ms);
            results_num(rec, "copy_GBps", copy_gbps);
            results_num(rec, "quant_GBps", q_gbps);
            results_num(rec, "reduce_GBps", r_gbps);
            results_num(rec, "quant_vs_copy", q_gbps / copy_gbps);
            results_num(rec, "reduce_vs_copy", r_gbps / copy_gbps);
        }
        double snr = NAN;
        if (pt->ref) {
            /* the result as one vector: rank 0's all-reduce output, or every local shard */
            float *got = calloc(n, sizeof *got);
            size_t lo = ar ? 0 : (size_t)c->rank0 * shard, hi = ar ? n : lo + (size_t)c->nlocal * shard;
            if (hi > n) hi = n;
            int agree = 1;
            if (!got) abort();
            if (ar) {
                c->ops->download(c, 0, got, out[0], n * sizeof(float));
                float *other = malloc(n * sizeof *other);
                for (int lr = 1; lr < c->nlocal && other; lr++) {
                    c->ops->download(c, lr, other, out[lr], n * sizeof(float));
                    agree &= memcmp(other, got, n * sizeof(float)) == 0;
                }
                free(other);
            } else {
                for (int lr = 0; lr < c->nlocal; lr++) {
                    size_t a = (size_t)(c->rank0 + lr) * shard, b = a + shard < n ? a + shard : n;
                    if (a < n) c->ops->download(c, lr, got + a, out[lr], (b - a) * sizeof(float));
                }
            }
            agoq_error_stats e = agoq_compare(pt->ref + lo, got + lo, hi > lo ? hi - lo : 0);
            results_error_stats(rec, &e);
            cJSON_AddBoolToObject(rec, "ranks_agree", agree);
            cJSON_AddStringToObject(rec, "error_scope", c->nlocal == N ? "all ranks" : "this process's ranks");
            snr = e.snr_db;
            int ok = agree && e.nonfinite == 0 && !(e.snr_db < min_snr_db(cfg));
            cJSON_AddBoolToObject(rec, "check_ok", ok);
            if (!ok) {
                agoq_error("collectives: check failed: %s %s, %d ranks, %zu elements: snr %.2f dB (min %.0f), "
                           "%zu non-finite, ranks %s", agoq_coll_algos[cfg->algo].name, agoq_coll_op_name(cfg->op), N, n,
                           e.snr_db, min_snr_db(cfg), e.nonfinite, agree ? "agree" : "disagree");
                pt->failed = 1;
            }
            free(got);
        }
        printf("  %-6s %-14s %-8s %4s %5d %10zu %10.4f %9.3f %9.3f %11.0f %2d %8.2f %8.2f %8.3f\n",
               agoq_coll_algos[cfg->algo].name, agoq_coll_op_name(cfg->op),
               quant ? agoq_formats[cfg->q.fmt].name : "-", sum_label(cfg), N,
               (size_t)bytes, ms, algbw, algbw * busf, info.wire_bytes, info.quantizations, snr, phase_ms[AGOQ_PH_QUANT],
               phase_ms[AGOQ_PH_REDUCE]);
    }
    agoq_coll_run_release(&run);
    for (int lr = 0; lr < c->nlocal; lr++) {
        c->ops->release(c, lr, in[lr]);
        c->ops->release(c, lr, out[lr]);
    }
    free(in);
    free(out);
    free(t);
    return rc;
}

/* Inputs of this process's ranks and, when checked, the fp32 reference (double sum over all N
 * ranks, regenerated here so that every process can check its part). */
static int make_inputs(const agoq_run_ctx *ctx, const coll_plan *p, coll_point *pt) {
    agoq_comm *c = pt->comm;
    const size_t n = pt->n;
    pt->host_x = calloc((size_t)c->nlocal, sizeof *pt->host_x);
    if (!pt->host_x) abort();
    for (int lr = 0; lr < c->nlocal; lr++) {
        if (!(pt->host_x[lr] = malloc(n * sizeof(float)))) return -1;
        agoq_fill((agoq_dist)p->dist, pt->host_x[lr], n, rank_seed(ctx->seed, c->rank0 + lr));
    }
    pt->ref = NULL;
    if (!p->check || 4.0 * (double)n > p->check_max_bytes) return 0;
    double *acc = calloc(n, sizeof *acc);
    float *tmp = malloc(n * sizeof *tmp);
    pt->ref = malloc(n * sizeof *pt->ref);
    if (!acc || !tmp || !pt->ref) return -1;
    for (int r = 0; r < c->nranks; r++) {
        int lr = r - c->rank0;
        const float *x = lr >= 0 && lr < c->nlocal ? pt->host_x[lr] : tmp;
        if (x == tmp) agoq_fill((agoq_dist)p->dist, tmp, n, rank_seed(ctx->seed, r));
        for (size_t i = 0; i < n; i++) acc[i] += x[i];
    }
    for (size_t i = 0; i < n; i++) pt->ref[i] = (float)acc[i];
    free(acc);
    free(tmp);
    return 0;
}

static void free_inputs(coll_point *pt) {
    for (int lr = 0; pt->host_x && lr < pt->comm->nlocal; lr++) free(pt->host_x[lr]);
    free(pt->host_x);
    free(pt->ref);
    pt->host_x = NULL;
    pt->ref = NULL;
}

static agoq_comm *open_comm(const agoq_run_ctx *ctx, int N) {
    if (ctx->backend == AGOQ_BACKEND_CPU) return agoq_comm_cpu_create(N);
#if AGOQ_HAVE_CUDA
    return agoq_comm_nccl_create(N);
#else
    agoq_error("collectives: backend '%s' needs a CUDA build", agoq_backend_name(ctx->backend));
    return NULL;
#endif
}

static void close_comm(agoq_comm *c) {
#if AGOQ_HAVE_CUDA
    if (strcmp(c->backend, "cpu") != 0) {
        agoq_comm_nccl_destroy(c);
        return;
    }
#endif
    agoq_comm_cpu_destroy(c);
}

static int run_collectives(const agoq_run_ctx *ctx, const coll_plan *p, agoq_results *res) {
    double dflt = (double)(ctx->backend == AGOQ_BACKEND_CPU ? 8 : agoq_coll_default_ranks());
    const double *ranks = p->nranks ? p->ranks : &dflt;
    size_t nr = p->nranks ? p->nranks : 1, nsize = cli_sweep_count(&p->sweep), done = 0;
    agoq_coll_config cfgs[64];
    int failed = 0;
    /* validate every point for every rank count before measuring anything */
    for (size_t ri = 0; ri < nr; ri++) {
        size_t k = plan_configs(p, (int)ranks[ri], cfgs, 64);
        if (k == 0) {
            agoq_error("%s: key '%s.formats': no selected algorithm accepts these formats", ctx->where.file,
                       ctx->where.prefix);
            return -1;
        }
        for (size_t i = 0; i < k; i++)
            if (agoq_coll_config_check(&cfgs[i], (int)ranks[ri])) return -1;
    }
    printf("# collectives: backend %s, %zu rank count(s) from %d, %zu size(s) %zu..%zu bytes per rank, "
           "%ld timed + %ld warm-up runs, check %s, timing %s\n", agoq_backend_name(ctx->backend), nr, (int)ranks[0],
           nsize, p->sweep.min_bytes, p->sweep.max_bytes, p->iters, p->warmup, p->check ? "on" : "off",
           ctx->backend == AGOQ_BACKEND_CPU ? "cpu-simulated (all ranks in one thread)" : "gpu");
    printf("# %-6s %-14s %-8s %4s %5s %10s %10s %9s %9s %11s %2s %8s %8s %8s\n", "algo", "op", "format", "sum",
           "ranks", "bytes", "time_ms", "algbw", "busbw", "wire_bytes", "q", "snr_db", "quant_ms", "reduce_ms");
    double t0 = agoq_now_s();
    for (size_t ri = 0; ri < nr; ri++) {
        const int N = (int)ranks[ri];
        size_t k = plan_configs(p, N, cfgs, 64);
        agoq_comm *c = open_comm(ctx, N);
        if (!c) return -1;
        for (size_t si = 0; si < nsize; si++) {
            coll_point pt = {.comm = c, .n = cli_sweep_bytes(&p->sweep, si, 4) / 4};
            if (make_inputs(ctx, p, &pt)) {
                agoq_error("collectives: out of host memory for %zu elements x %d ranks", pt.n, c->nlocal);
                free_inputs(&pt);
                close_comm(c);
                return -1;
            }
            for (size_t i = 0; i < k; i++) {
                if (run_point(ctx, p, &cfgs[i], &pt, res)) {
                    free_inputs(&pt);
                    close_comm(c);
                    return -1;
                }
                agoq_progress(ctx->quiet, "collectives", ++done, nr * nsize * k, t0);
            }
            failed |= pt.failed;
            free_inputs(&pt);
        }
        close_comm(c);
    }
    if (failed && !p->keep_going) {
        agoq_error("collectives: correctness checks failed (see above); nothing written (keep_going writes anyway)");
        return -1;
    }
    return 0;
}

/* Micro-batch accumulation: m gradients of n elements summed in 8 bits (dequantize, add,
 * requantize per micro-batch) and, for comparison, in bf16, against the fp32 reference. */
static int run_accumulate(const agoq_run_ctx *ctx, const coll_plan *p, agoq_results *res) {
    static const double dflt_micro[] = {1, 2, 4, 8, 16, 32, 64};
    const double *micro = p->nmicro ? p->micro : dflt_micro;
    size_t nm = p->nmicro ? p->nmicro : sizeof dflt_micro / sizeof dflt_micro[0], nsize = cli_sweep_count(&p->sweep);
    int dfmt[] = {AGOQ_FMT_INT8, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8};
    const int *fmts = p->nfmt ? p->fmts : dfmt;
    size_t nf = p->nfmt ? p->nfmt : 3;
    printf("# %-9s %10s %6s %8s %10s %8s %10s\n", "format", "n", "micro", "snr_db", "max_rel", "bf16_snr", "time_ms");
    for (size_t si = 0; si < nsize; si++) {
        size_t n = cli_sweep_bytes(&p->sweep, si, 4) / 4;
        for (size_t mi = 0; mi < nm; mi++) {
            int m = (int)micro[mi];
            float **g = calloc((size_t)m, sizeof *g), *ref = malloc(n * 4), *got = malloc(n * 4), *b16 = malloc(n * 4);
            double *acc = calloc(n, sizeof *acc);
            if (!g || !ref || !got || !b16 || !acc) return -1;
            for (size_t i = 0; i < n; i++) b16[i] = 0.0f;
            for (int k = 0; k < m; k++) {
                if (!(g[k] = malloc(n * 4))) return -1;
                agoq_fill((agoq_dist)p->dist, g[k], n, rank_seed(ctx->seed, k));
                for (size_t i = 0; i < n; i++) {
                    acc[i] += g[k][i];
                    b16[i] = agoq_round_bf16(b16[i] + g[k][i]);
                }
            }
            for (size_t i = 0; i < n; i++) ref[i] = (float)acc[i];
            agoq_error_stats eb = agoq_compare(ref, b16, n);
            for (size_t fi = 0; fi < nf; fi++) {
                agoq_qconfig q = agoq_qconfig_default((agoq_format)fmts[fi]);
                if (p->block) q.block = (int)p->block;
                q.scale = (agoq_scale_type)p->scale;
                double t0 = agoq_now_s();
                if (agoq_accumulate_quantized(&q, (const float *const *)g, m, n, got)) return -1;
                double ms = 1e3 * (agoq_now_s() - t0);
                agoq_error_stats e = agoq_compare(ref, got, n);
                cJSON *rec = results_add_record(res);
                cJSON_AddStringToObject(rec, "mode", "accumulate");
                cJSON_AddStringToObject(rec, "format", agoq_formats[q.fmt].name);
                cJSON_AddNumberToObject(rec, "block", q.block);
                cJSON_AddNumberToObject(rec, "n", (double)n);
                cJSON_AddNumberToObject(rec, "microbatches", m);
                results_error_stats(rec, &e);
                results_num(rec, "bf16_accum_snr_db", eb.snr_db);
                results_num(rec, "bf16_accum_nmse", eb.nmse);
                results_num(rec, "time_ms", ms);
                cJSON_AddStringToObject(rec, "timing", "cpu-reference");
                printf("  %-9s %10zu %6d %8.2f %10.4g %8.2f %10.3f\n", agoq_formats[q.fmt].name, n, m, e.snr_db,
                       e.max_rel, eb.snr_db, ms);
            }
            for (int k = 0; k < m; k++) free(g[k]);
            free(g);
            free(ref);
            free(got);
            free(b16);
            free(acc);
        }
    }
    return 0;
}

int agoq_exp_collectives(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res) {
    coll_plan p;
    int rc = parse_plan(ctx, config, &p);
    if (rc == 0 && !ctx->check_only) rc = p.accumulate ? run_accumulate(ctx, &p, res) : run_collectives(ctx, &p, res);
    if (rc == 0 && ctx->backend == AGOQ_BACKEND_CUDA && !p.accumulate && !ctx->check_only) {
        agoq_gpu_info gi;
        if (agoq_gpu_query(0, &gi) == 0) results_set_gpu(res, agoq_gpu_json(&gi));
    }
    free(p.ranks);
    free(p.micro);
    return rc;
}
