/* agoq step: a measured training step of a stack of LLaMA decoder layers on one GPU (the step
 * engine, step/step.h), policies side by side (experiment kind "step"). Every record is a real
 * forward + backward + optimizer step ("source": "measured": CUDA-event times, the arena's
 * exact high-water mark), or with "dry": true the step's exact allocation plan without a GPU
 * ("source": "simulated": every allocation of the real step, no kernel, no timing).
 *
 * config keys (defaults in brackets; a list key takes one value or an array, one point each):
 *   model ["llama2-7b"]  card name(s) (models/<name>.json); list: one point per model
 *   layers [4]       decoder layers in the stack (this stage's, or fewer)
 *   tp [1]           tensor-parallel degree (list): per-rank shapes; communication omitted
 *   pp [1] stage [0] pipeline stages and which one (list: one point per stage): 1F1B holds
 *                    min(pp - stage, micro_batches)
 *                    micro-batches in flight
 *   seq [4096]       tokens per sequence (list: one point per value)
 *   micro_batch [1]  sequences per micro-batch     micro_batches [1]  gradient accumulation (list)
 *   rope_base [10000] norm_eps [1e-5]   (model cards carry no RoPE base: LLaMA-3 wants 500000)
 *   reps [5] warmup [2]   timed steps, untimed steps before them
 *   seed [the experiment seed]  weights, stage inputs and output gradients
 *   gemm ["auto"]    forward GEMM sites whose output is stored quantized (out_proj, fc2, fc1):
 *                    "cublaslt" (the consumer quantizes), "fused" (gemm_wg's epilogue writes the
 *                    copy; falls back per site where it cannot), "auto" (both timed at setup on
 *                    the GPU, the faster kept); step/gemm_site.c
 *   dump [none]      directory: after each measured run, a probe step (fresh weights, no
 *                    optimizer) is written there for validation/hf_step.py (step/dump.c)
 *   grad_error [false]  also the gradient error of every run against bf16 store-all on the same
 *                    weights and data (grad_errors per layer and parameter; measured runs only)
 *   dry [false]      the allocation plan only (no GPU): records "source": "simulated", no timing
 *   budget_gb [0 = none]  device memory budget, checked against each run's dry-run need
 *                    (cuDNN's workspace, known only on the GPU, comes on top)
 *   fit ["error"]    a run over the budget: "error" (names the smallest need at that point,
 *                    nothing runs) or "record" (a record with "fits": false, the sweep goes on)
 *   runs [["bf16", "recompute", "agoq"]]  each a preset name: bf16 (store-all), recompute (bf16 +
 *                    Megatron full recomputation of every layer), selective (bf16 +
 *                    recompute_attn_core), coat, agoq, int8, int4, agoq_balanced; or an object
 *                    {"name", "policy": memory-model policy (default: the preset of that name),
 *                     "recompute_layers": k | -1 (all) | "min_fit" (fewest layers whose measured
 *                     need, the arena high-water mark with cuDNN's workspace in it, fits budget_gb: the dry runs pick the first k
 *                     to try, measuring raises it), "selective": bool,
 *                     "store": {ROLE: STORE} with ROLE norm_in, qkv_in, attention, ffn1_in,
 *                     fc1_out, ffn2_in and STORE native, recompute, <format>[/<block>],
 *                     "grad": "fp32" | <format>[/<block>], "moments": "fp32" | <format>[/<block>],
 *                     "fused_optimizer": bool [true] (quantized moments in one AdamW pass when
 *                     the formats allow, kernels/optim/adamw_q.h; false: the chunked passes)}
 * Records: one per (model, tp, seq, run); fields in docs/step.md. Ratios against the runs named
 * "bf16" and "recompute" at the same point when the sweep has them. */
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "runners/cmdline.h"
#include "core/common.h"
#include "kernels/quant/qspec.h"
#include "runners/step_cfg.h"
#if AGOQ_HAVE_CUDA
#include "kernels/attn/attn.h"
#endif

#define DRY_NOTE                                                                                                      \
    "dry run: the exact allocation plan of the real step (every arena allocation, no kernel, no GPU); cuDNN's "    \
    "attention workspace is not included (known only on a GPU); no timing"

/* 0 when a real step can run here (a GPU and cuDNN's flash attention); else -1 and why. */
static int step_ready(char *why, size_t len, char *what, size_t wlen) {
    char r[256];
    if (agoq_cuda_devices(r, sizeof r) <= 0) {
        snprintf(why, len, "no GPU: %s", r);
        return -1;
    }
#if AGOQ_HAVE_CUDA
    if (agoq_attn_available(r, sizeof r)) {
        snprintf(why, len, "cuDNN flash attention unavailable: %s", r);
        return -1;
    }
    agoq_gpu_info gi;
    if (agoq_gpu_query(0, &gi)) gi.name[0] = '\0';
    snprintf(what, wlen, "GPU %s, cuDNN %ld", gi.name, agoq_attn_cudnn_version());
#endif
    return 0;
}

/* One (model, tp, seq, run) of the sweep. */
typedef struct {
    step_axes a;          /* model, tp, seq, stage, micro-batches */
    size_t ri;
    long k;               /* fully recomputed layers the run uses (-1: all) */
    int fits;             /* 1 without a budget */
    double need;          /* the dry run's arena need, bytes */
    agoq_step_result dry; /* the dry run at k */
    long k_dry;           /* min_fit: the k the dry runs chose (measuring may raise it) */
} step_point;

/* Dry run of one run at k layers; the engine's one-line error into why. */
static int dry_run(const step_exp *x, const step_point *p, long k, agoq_step_result *res, char *why, size_t len) {
    agoq_step_config *c = malloc(sizeof *c);
    if (!c) return snprintf(why, len, "out of host memory"), -1;
    step_exp_config(x, &p->a, &x->runs[p->ri], k, 1, c);
    c->dry = 1;
    agoq_error_capture(why, len);
    int rc = agoq_step_run(c, res);
    agoq_error_capture(NULL, 0);
    free(c);
    return rc;
}

static void point_label(const step_exp *x, const step_point *p, char *buf, size_t len) {
    int n = snprintf(buf, len, "run '%s', %s, tp %ld, seq %ld", x->runs[p->ri].name, x->cards[p->a.ci].name, p->a.tp,
                     p->a.seq);
    if (n > 0 && (size_t)n < len && (x->nstage > 1 || x->nmb > 1))
        snprintf(buf + n, len - (size_t)n, ", stage %ld, %ld micro-batches", p->a.stage, p->a.micro_batches);
}

/* The dry runs of every point (and min_fit's search): checks the whole sweep before anything
 * is measured. Fills pts[n_runs per point]. 0 or -1 after one line naming the key. */
static int plan_point(const agoq_run_ctx *ctx, const step_exp *x, step_point *pts) {
    jconf c = ctx->where;
    char why[512], lab[160];
    const double budget = x->budget_gb * 1e9;
    { /* the layout alone (tp, pp, stage, layers, seq against the card), as bf16 store-all */
        agoq_step_config *cfg = malloc(sizeof *cfg);
        step_run_spec bf;
        memset(&bf, 0, sizeof bf);
        agoq_policy_by_name("bf16", &bf.pol);
        bf.pol.grad.kind = AGOQ_STORE_FP32;
        if (!cfg) return agoq_error("step: out of host memory"), -1;
        step_exp_config(x, &pts[0].a, &bf, 0, 1, cfg);
        agoq_error_capture(why, sizeof why);
        int rc = agoq_step_config_fix(cfg);
        agoq_error_capture(NULL, 0);
        free(cfg);
        if (rc) {
            agoq_error("%s: key '%s' (%s, tp %ld, seq %ld, stage %ld): %s", c.file, c.prefix,
                       x->cards[pts[0].a.ci].name, pts[0].a.tp, pts[0].a.seq, pts[0].a.stage, why);
            return -1;
        }
    }
    size_t smallest = 0;
    for (size_t ri = 0; ri < x->nruns; ri++) {
        step_point *p = &pts[ri];
        const step_run_spec *r = &x->runs[ri];
        long k = r->min_fit ? 0 : r->recompute_layers, last = r->min_fit ? x->layers : k;
        for (;; k++) {
            agoq_step_result_free(&p->dry);
            if (dry_run(x, p, k, &p->dry, why, sizeof why)) {
                point_label(x, p, lab, sizeof lab);
                agoq_error("%s: key '%s.runs[%zu]' (%s): %s", c.file, c.prefix, ri, lab, why);
                return -1;
            }
            p->k = p->k_dry = k;
            p->need = p->dry.peak_bytes;
            p->fits = budget <= 0 || p->need <= budget;
            if (p->fits || k >= last) break;
        }
        if (p->need < pts[smallest].need) smallest = ri;
    }
    for (size_t ri = 0; ri < x->nruns && !x->fit_record; ri++)
        if (!pts[ri].fits) {
            char best[160];
            point_label(x, &pts[ri], lab, sizeof lab);
            point_label(x, &pts[smallest], best, sizeof best);
            agoq_error("%s: key '%s.budget_gb': %s needs %.3f GB, over the budget of %g GB; the smallest need at this "
                       "point is %.3f GB (%s)%s",
                       c.file, c.prefix, lab, pts[ri].need / 1e9, x->budget_gb, pts[smallest].need / 1e9, best,
                       pts[smallest].fits ? "" : ": no run fits");
            return -1;
        }
    return 0;
}

static void add_str(cJSON *o, const char *k, const char *v) { cJSON_AddStringToObject(o, k, v); }

/* Fields every record has: what ran. */
static cJSON *record_head(agoq_results *res, const step_exp *x, const step_point *p, const char *source) {
    const step_run_spec *r = &x->runs[p->ri];
    cJSON *o = results_add_record(res);
    add_str(o, "name", r->name);
    add_str(o, "policy", agoq_policy_name(r->pol.id));
    add_str(o, "model", x->cards[p->a.ci].name);
    add_str(o, "source", source);
    const struct { const char *k; double v; } f[] = {
        {"tp", (double)p->a.tp}, {"pp", (double)x->pp}, {"stage", (double)p->a.stage}, {"layers", (double)x->layers},
        {"seq", (double)p->a.seq}, {"micro_batch", (double)x->micro_batch}, {"micro_batches", (double)p->a.micro_batches},
        {"recomputed_layers", (double)(p->k < 0 || p->k > x->layers ? x->layers : p->k)}, {"needed_bytes", p->need},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) results_num(o, f[i].k, f[i].v);
    cJSON_AddBoolToObject(o, "selective", r->selective);
    add_str(o, "comm", "omitted");
    if (x->budget_gb > 0) {
        results_num(o, "budget_bytes", x->budget_gb * 1e9);
        cJSON_AddBoolToObject(o, "fits", p->fits);
    }
    return o;
}

/* Stores, saved bytes per role (engine and model), the at-peak breakdown, the model's total. */
static void record_memory(cJSON *o, const step_exp *x, const step_point *p, const agoq_step_result *r) {
    agoq_step_config *c = malloc(sizeof *c);
    agoq_layer_entry *e = malloc(AGOQ_INVENTORY_MAX * sizeof *e);
    int n = -1;
    if (c && e) {
        step_exp_config(x, &p->a, &x->runs[p->ri], p->k, 1, c);
        if (agoq_step_config_fix(c) == 0) n = agoq_layer_entries(&c->ms, c->stage, e);
    }
    cJSON *stores = cJSON_AddObjectToObject(o, "stores"), *sb = cJSON_AddObjectToObject(o, "saved_by_role"),
          *mb = cJSON_AddObjectToObject(o, "model_saved_by_role");
    char buf[48];
    for (int i = 0; i < n; i++) {
        const char *role = agoq_role_name(e[i].t.role);
        if (e[i].t.alias_of < 0 && !cJSON_GetObjectItemCaseSensitive(stores, role))
            add_str(stores, role, agoq_store_label(&e[i].store, buf, sizeof buf));
        if (!cJSON_GetObjectItemCaseSensitive(sb, role)) {
            results_num(sb, role, r->saved_by_role[e[i].t.role]);
            results_num(mb, role, r->model_saved_by_role[e[i].t.role]);
        }
    }
    add_str(o, "grad", agoq_store_label(&x->runs[p->ri].pol.grad, buf, sizeof buf));
    add_str(o, "moments", agoq_store_label(&x->runs[p->ri].pol.moments, buf, sizeof buf));
    add_str(o, "optimizer", r->optimizer_fused ? "fused: decode g, m, v + AdamW + requantize, one kernel (adamw_q.h)"
                            : x->runs[p->ri].pol.moments.kind == AGOQ_STORE_QUANT
                                ? "chunked: dequantize -> fp32 AdamW -> requantize"
                                : "fp32 moments: one AdamW kernel");
    step_gemm_record(o, x->gemm, r->gemm_sites, x->dry);
    add_str(o, "attention", "cudnn fused sdpa (backend graph API)");
    add_str(o, "arena", r->arena_ends == 2 ? "two ends: transients from the bottom, the rest from the top"
                                            : "one end: first fit from the bottom");
    free(c);
    free(e);
    results_num(o, "inflight", r->model.inflight);
    results_num(o, "peak_bytes", r->peak_bytes);
    results_num(o, "peak_live_bytes", r->peak_live_bytes);
    results_num(o, "arena_bytes", r->arena_bytes);
    for (int k = 0; k < AGOQ_MEM_CLASS_COUNT; k++) {
        char key[32];
        snprintf(key, sizeof key, "%s_bytes", agoq_mem_class_name((agoq_mem_class)k));
        results_num(o, key, r->at_peak[k]);
    }
    results_num(o, "saved_activation_bytes", r->saved_activation_bytes);
    cJSON_AddItemToObject(o, "memory_model", agoq_mem_breakdown_json(&r->model));
    results_num(o, "model_total_bytes", r->model.total_bytes);
    results_num(o, "peak_vs_model", r->model.total_bytes > 0 ? r->peak_bytes / r->model.total_bytes : NAN);
    results_num(o, "fwd_flops", r->fwd_flops);
    results_num(o, "bwd_flops", r->bwd_flops);
}

static void record_time(cJSON *o, const agoq_step_result *r) {
    const struct { const char *k; double v; } f[] = {
        {"step_ms_min", r->step_ms_min},   {"step_ms", r->step_ms_median},     {"step_ms_max", r->step_ms_max},
        {"tokens_per_s", r->tokens_per_s}, {"model_tflops", r->model_tflops}, {"hw_tflops", r->hw_tflops},
        {"mfu", r->mfu},                   {"peak_tflops", r->peak_tflops},    {"cuda_used_bytes", r->cuda_used_bytes},
        {"cuda_context_bytes", r->cuda_context_bytes}, {"attn_workspace_bytes", r->attn_workspace_bytes},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) results_num(o, f[i].k, f[i].v);
    add_str(o, "gpu", r->gpu_name);
    /* one extra profiled step: event pairs around every op (their sum is a little above step_ms) */
    cJSON *ms = cJSON_AddObjectToObject(o, "op_ms"), *calls = cJSON_AddObjectToObject(o, "op_calls");
    for (int k = 0; agoq_step_op_name(k); k++) {
        results_num(ms, agoq_step_op_name(k), r->op_ms[k]);
        results_num(calls, agoq_step_op_name(k), r->op_calls[k]);
    }
    cJSON_AddBoolToObject(o, "op_profile_complete", r->profiled);
    if (!r->grad_errs) return;
    cJSON *a = cJSON_AddArrayToObject(o, "grad_errors");
    for (size_t i = 0; i < r->ngrad_errs; i++) {
        const agoq_step_grad_err *g = &r->grad_errs[i];
        cJSON *e = cJSON_CreateObject();
        results_num(e, "layer", g->layer);
        add_str(e, "param", agoq_param_name(g->kind));
        results_num(e, "snr_db", g->snr_db);
        results_num(e, "rel_err", g->rel_err);
        results_num(e, "max_abs_err", g->max_abs_err);
        results_num(e, "ref_rel_spread", g->ref_rel_spread);
        results_num(e, "ref_max_abs_spread", g->ref_max_abs_spread);
        cJSON_AddItemToArray(a, e);
    }
    /* one-number summaries over every parameter tensor (the figures and TSVs plot these) */
    double mx = 0, sum = 0, snr = INFINITY, spread = 0;
    for (size_t i = 0; i < r->ngrad_errs; i++) {
        const agoq_step_grad_err *g = &r->grad_errs[i];
        mx = fmax(mx, g->rel_err);
        sum += g->rel_err;
        snr = fmin(snr, g->snr_db);
        spread = fmax(spread, g->ref_rel_spread);
    }
    results_num(o, "grad_rel_err_max", mx);
    results_num(o, "grad_rel_err_mean", r->ngrad_errs ? sum / (double)r->ngrad_errs : NAN);
    results_num(o, "grad_snr_db_min", snr);
    results_num(o, "grad_ref_spread_max", spread);
}

static double num(const cJSON *o, const char *k) { return results_get_num(o, k); }

static int same_point(const cJSON *a, const cJSON *b) {
    return strcmp(cJSON_GetObjectItem(a, "model")->valuestring, cJSON_GetObjectItem(b, "model")->valuestring) == 0 &&
           num(a, "tp") == num(b, "tp") && num(a, "seq") == num(b, "seq") && num(a, "stage") == num(b, "stage") &&
           num(a, "micro_batches") == num(b, "micro_batches");
}

/* The record named `name` at the same point as o, if it ran (fits). */
static const cJSON *reference(const agoq_results *res, const cJSON *o, const char *name) {
    const cJSON *r;
    cJSON_ArrayForEach(r, res->records) {
        if (strcmp(cJSON_GetObjectItem(r, "name")->valuestring, name) || !same_point(r, o)) continue;
        return cJSON_IsFalse(cJSON_GetObjectItem(r, "fits")) ? NULL : r;
    }
    return NULL;
}

static void ratio(cJSON *o, const cJSON *ref, const char *key, const char *field) {
    double a = num(o, field), b = num(ref, field);
    if (isfinite(a) && isfinite(b) && b > 0) results_num(o, key, a / b);
}

/* time/saved/peak ratios against "bf16" and "recompute" at the same point. */
static void add_ratios(agoq_results *res) {
    cJSON *o;
    cJSON_ArrayForEach(o, res->records) {
        if (cJSON_IsFalse(cJSON_GetObjectItem(o, "fits"))) continue;
        const cJSON *bf = reference(res, o, "bf16"), *rc = reference(res, o, "recompute");
        if (bf) {
            ratio(o, bf, "time_vs_bf16", "step_ms");
            ratio(o, bf, "saved_vs_bf16", "saved_activation_bytes");
            ratio(o, bf, "peak_vs_bf16", "peak_bytes");
        }
        if (rc) {
            ratio(o, rc, "time_vs_recompute", "step_ms");
            ratio(o, rc, "peak_vs_recompute", "peak_bytes");
        }
    }
}

static void table_row(const step_exp *x, const step_point *p, const agoq_step_result *r) {
    printf("  %-16s %-13s %-11s %3ld %6ld %3ld %3ld %3ld", x->runs[p->ri].name, agoq_policy_name(x->runs[p->ri].pol.id),
           x->cards[p->a.ci].name, p->a.tp, p->a.seq, p->a.stage, p->a.micro_batches, p->k < 0 ? x->layers : p->k);
    if (!r) printf("  needs %.3f GB: over the budget of %g GB\n", p->need / 1e9, x->budget_gb);
    else if (x->dry) printf(" %9.3f %9.3f %9s %10s %6s\n", r->peak_bytes / 1e9, r->saved_activation_bytes / 1e9, "-", "-", "-");
    else printf(" %9.3f %9.3f %9.2f %10.0f %6.3f\n", r->peak_bytes / 1e9, r->saved_activation_bytes / 1e9,
                r->step_ms_median, r->tokens_per_s, r->mfu);
    fflush(stdout);
}

/* dump: a probe step of the run (same weights, data) written for validation/hf_step.py */
static int dump_point(const step_exp *x, const step_point *p, const agoq_step_config *c) {
    char dir[1024];
    if (mkdir(x->dump, 0755) != 0 && errno != EEXIST)
        return agoq_error("step: cannot create dump directory %s: %s", x->dump, strerror(errno)), -1;
    snprintf(dir, sizeof dir, "%s/%s_%s_s%ld", x->dump, x->cards[p->a.ci].name, x->runs[p->ri].name, p->a.seq);
    agoq_step_dump d;
    if (agoq_step_probe(c, &d)) return -1;
    int rc = agoq_step_dump_write(c, &d, dir);
    agoq_step_dump_free(&d);
    return rc;
}

/* What a measured step needed of the device beyond the CUDA context: the arena's high-water
 * mark (on a GPU the arena also holds cuDNN's attention workspace, which a dry run cannot know). */
static double measured_need(const agoq_step_result *r) { return r->peak_bytes; }

/* One measured run of p. min_fit under a budget is found by measuring: the dry runs pick the
 * first k to try (they miss only cuDNN's workspace), and while the measured need is over the
 * budget the next k runs instead, up to every layer (then the point is recorded as it ran, its
 * need over the budget). 0 or -1 after one line. */
static int measure_point(const agoq_run_ctx *ctx, const step_exp *x, step_point *p, const char *lab,
                         agoq_step_result *r) {
    const double budget = x->budget_gb * 1e9;
    for (;;) {
        agoq_step_config *c = malloc(sizeof *c);
        if (!c) return agoq_error("step: out of host memory"), -1;
        step_exp_config(x, &p->a, &x->runs[p->ri], p->k, ctx->quiet, c);
        int rc = agoq_step_run(c, r);
        if (!rc && x->dump) rc = dump_point(x, p, c);
        free(c);
        if (rc) {
            agoq_error("%s: %s: the step failed (above)", ctx->where.file, lab);
            agoq_step_result_free(r);
            return -1;
        }
        if (!x->runs[p->ri].min_fit || budget <= 0 || measured_need(r) <= budget || p->k >= x->layers) return 0;
        if (!ctx->quiet)
            fprintf(stderr, "step: %s: measured need %.3f GB over the budget at %ld recomputed layers; trying %ld\n",
                    lab, measured_need(r) / 1e9, p->k, p->k + 1);
        agoq_step_result_free(r);
        memset(r, 0, sizeof *r);
        p->k++;
        /* the record's needed_bytes is the dry plan of the k that runs, not of the k it raised */
        char why[512];
        agoq_step_result_free(&p->dry);
        if (dry_run(x, p, p->k, &p->dry, why, sizeof why))
            return agoq_error("%s: %s: the dry plan at %ld recomputed layers failed: %s", ctx->where.file, lab, p->k, why), -1;
        p->need = p->dry.peak_bytes;
    }
}

/* Runs (or records the dry plan of) every point. */
static int run_points(const agoq_run_ctx *ctx, const step_exp *x, step_point *pts, size_t npts, agoq_results *res) {
    const double t0 = agoq_now_s();
    for (size_t i = 0; i < npts; i++) {
        step_point *p = &pts[i];
        if (!p->fits) {
            record_head(res, x, p, x->dry ? "simulated" : "measured");
            table_row(x, p, NULL);
            continue;
        }
        if (x->dry) {
            cJSON *o = record_head(res, x, p, "simulated");
            add_str(o, "note", DRY_NOTE);
            record_memory(o, x, p, &p->dry);
            table_row(x, p, &p->dry);
            continue;
        }
        char lab[160];
        point_label(x, p, lab, sizeof lab);
        if (!ctx->quiet)
            fprintf(stderr, "step: [%zu/%zu] %s, %ld recomputed layers, %.1f s elapsed\n", i + 1, npts, lab,
                    p->k < 0 ? x->layers : p->k, agoq_now_s() - t0);
        agoq_step_result r;
        memset(&r, 0, sizeof r);
        if (measure_point(ctx, x, p, lab, &r)) return -1;
        const int measured_fit = x->runs[p->ri].min_fit && x->budget_gb > 0;
        /* over the budget even with every layer recomputed: the point does not fit, by measurement
           (its step still ran: the GPU had the memory; the record keeps what it measured) */
        if (measured_fit && measured_need(&r) > x->budget_gb * 1e9) p->fits = 0;
        cJSON *o = record_head(res, x, p, "measured");
        if (measured_fit) {
            add_str(o, "min_fit_by", "measured");
            results_num(o, "recomputed_layers_dry", p->k_dry);
            results_num(o, "measured_need_bytes", measured_need(&r));
            cJSON_AddBoolToObject(o, "fits_measured", measured_need(&r) <= x->budget_gb * 1e9);
        }
        record_memory(o, x, p, &r);
        record_time(o, &r);
        table_row(x, p, &r);
        agoq_step_result_free(&r);
    }
    return 0;
}

int agoq_exp_step(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    step_exp *x = malloc(sizeof *x);
    step_point *pts = NULL;
    size_t npts = 0;
    int rc = -1;
    if (!x || step_exp_parse(ctx, cfg, x)) goto done;
    npts = x->ncards * x->ntp * x->nseq * x->nstage * x->nmb * x->nruns;
    pts = calloc(npts, sizeof *pts);
    if (!pts) goto done;
    size_t i = 0;
    for (size_t ci = 0; ci < x->ncards; ci++)
        for (size_t ti = 0; ti < x->ntp; ti++)
            for (size_t si = 0; si < x->nseq; si++)
                for (size_t gi = 0; gi < x->nstage; gi++)
                    for (size_t mi = 0; mi < x->nmb; mi++) {
                        step_axes a = {ci, x->tp[ti], x->seq[si], x->stage[gi], x->micro_batches[mi]};
                        for (size_t ri = 0; ri < x->nruns; ri++) pts[i + ri] = (step_point){.a = a, .ri = ri};
                        if (plan_point(ctx, x, &pts[i])) goto done;
                        i += x->nruns;
                    }
    if (ctx->check_only) { /* every point planned: the config is valid; nothing runs */
        rc = 0;
        goto done;
    }
    char why[512], what[512] = "";
    if (!x->dry && step_ready(why, sizeof why, what, sizeof what)) {
        agoq_error("%s: key '%s.dry': false, but the step cannot run here: %s (\"dry\": true plans it without a GPU)",
                   ctx->where.file, ctx->where.prefix, why);
        goto done;
    }
    if (x->dry) {
        results_set_source(res, "simulated");
    } else {
        agoq_gpu_info gi;
        if (agoq_gpu_query(0, &gi) == 0) results_set_gpu(res, agoq_gpu_json(&gi));
        if (!ctx->quiet) fprintf(stderr, "step: %s; %zu runs\n", what, npts);
    }
    printf("# %-16s %-13s %-11s %3s %6s %3s %3s %3s %9s %9s %9s %10s %6s%s\n", "name", "policy", "model", "tp", "seq",
           "stg", "mb", "rl",
           "peak_GB", "saved_GB", "step_ms", "tokens/s", "mfu", x->dry ? "   (dry: allocation plan, no timing)" : "");
    rc = run_points(ctx, x, pts, npts, res);
    if (rc == 0) add_ratios(res);
done:
    for (size_t j = 0; j < npts; j++) agoq_step_result_free(&pts[j].dry);
    free(pts);
    free(x);
    return rc;
}

/* ---- the subcommand ----------------------------------------------------------------------- */

static int ready(void) {
    char why[512], what[512] = "";
    if (step_ready(why, sizeof why, what, sizeof what)) {
        agoq_error("step --ready: %s", why);
        return 1;
    }
    printf("agoq step --ready: ready: %s\n", what);
    return 0;
}

/* -b/-e/-f: no size sweep here. */
static int no_sweep(cJSON *cfg, const agoq_flag *f, const char *arg, const char *cmd) {
    agoq_error("step: -%c does not apply (sizes come from the model card and --seq)", f->short_opt);
    return -1;
}

#define STEP_INT(name_, sh_, key_, arg_, what_) {.name = name_, .short_opt = sh_, .kind = AGOQ_FLAG_LONG, .key = key_, .arg = arg_, .help = what_, .lo = 0, .hi = 1L << 30}
static const agoq_flag step_flags[] = {
    {.name = "model", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "model", .arg = "NAME[,..]", .help = "model card(s) (default llama2-7b)", .choices = agoq_model_names},
    STEP_INT("layers", 0, "layers", "N", "decoder layers in the stack (4)"),
    {.name = "tp", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "tp", .arg = "N[,..]", .help = "per-rank shapes of tensor parallelism (1)", .value = "4096,16K"},
    STEP_INT("pp", 0, "pp", "N", "pipeline stages (1)"),
    STEP_INT("stage", 0, "stage", "I", "pipeline stage (0)"),
    {.name = "seq", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "seq", .arg = "N[,..]", .help = "tokens per sequence, K suffix allowed (4096)", .value = "4096,16K"},
    STEP_INT("mbs", 0, "micro_batch", "N", "sequences per micro-batch (1)"),
    STEP_INT("microbatches", 0, "micro_batches", "N", "micro-batches per step (1)"),
    {.name = "runs", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "runs", .arg = "a,b", .help = "runs (default bf16,recompute,agoq)", .choices = step_preset_names},
    STEP_INT("reps", 'n', "reps", "N", "timed steps (5)"),
    STEP_INT("warmup", 'w', "warmup", "N", "untimed steps first (2)"),
    {.name = "grad-error", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "grad_error", .arg = NULL, .help = "gradient error of each run vs bf16 store-all (same weights, data)",
     .value = "true"},
    {.name = "dry", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "dry", .arg = NULL, .help = "the allocation plan only, no GPU (records marked simulated)", .value = "true"},
    AGOQ_NUM_FLAG("budget", "budget_gb", "GB", "device budget"),
    {.name = "fit", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "fit", .arg = "error|record", .help = "over the budget: an error, or a \"fits\": false record"},
    {.name = "gemm", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "gemm", .arg = "auto|cublaslt|fused", .help = "GEMM sites with a quantized copy: timed pick, cuBLASLt, fused GEMM (auto)"},
    AGOQ_NUM_FLAG("rope-base", "rope_base", "X", "RoPE base (10000)"),
    AGOQ_NUM_FLAG("norm-eps", "norm_eps", "X", "RMSNorm epsilon (1e-5)"),
    {.name = "ready", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "ready", .arg = NULL, .help = "exit 0 if a GPU and cuDNN are usable here, else say why, exit 1",
     .value = "true"},
    {.name = NULL, .short_opt = 'b', .kind = AGOQ_FLAG_CALL, .key = NULL, .arg = "SIZE", .help = NULL, .parse = no_sweep},
    {.name = NULL, .short_opt = 'e', .kind = AGOQ_FLAG_CALL, .key = NULL, .arg = "SIZE", .help = NULL, .parse = no_sweep},
    {.name = NULL, .short_opt = 'f', .kind = AGOQ_FLAG_CALL, .key = NULL, .arg = "FACTOR", .help = NULL, .parse = no_sweep},
    {0}};

static const char *const step_tsv[] = {"name", "policy", "model", "tp", "seq", "recomputed_layers", "fits",
                                       "peak_bytes", "saved_activation_bytes", "step_ms", "tokens_per_s", "mfu",
                                       "time_vs_bf16", "peak_vs_bf16", "saved_vs_bf16", "time_vs_recompute",
                                       "peak_vs_recompute", "needed_bytes"};

/* Fields of measured runs only (a dry plan has none), under a budget only, or with grad_error. */
static const char *const step_optional[] = {"fits", "budget_bytes", "step_ms", "step_ms_min", "step_ms_max",
                                            "tokens_per_s", "mfu", "hw_tflops", "model_tflops", "time_vs_bf16",
                                            "time_vs_recompute", "peak_vs_bf16", "saved_vs_bf16", "peak_vs_recompute",
                                            "grad_rel_err_max", "grad_rel_err_mean", "grad_snr_db_min",
                                            "grad_ref_spread_max", "gpu", "op_ms", "op_calls", "op_profile_complete",
                                            "cuda_context_bytes", "cuda_used_bytes", "attn_workspace_bytes", NULL};

/* --ready answers and exits instead of running (--check, common to every kind, validates the
 * config only). */
static int step_finish(agoq_cmd *cmd) {
    if (!cJSON_GetObjectItemCaseSensitive(cmd->cfg, "ready")) return -1;
    return ready();
}

const agoq_runner agoq_runner_step = {
    .kind = "step",
    .what = "measured training step of LLaMA layers on one GPU per policy (or its dry plan)",
    .usage = "[options]      (or: agoq run experiments/step_*.json)",
    .about = "A measured training step (forward, backward, AdamW) of a stack of LLaMA decoder layers on\n"
             "one GPU, bf16 with fp32 accumulation, cuBLASLt GEMMs (--gemm: the fused Hopper GEMM where it\n"
             "writes a stored quantized copy) and cuDNN flash attention; activations\n"
             "really stored as each policy says (bf16, FP8, packed k-bit codes + scales, or recomputed) in\n"
             "one arena whose high-water mark is the peak. TP/PP communication is not run (\"comm\": \"omitted\").",
    .keys = step_exp_keys,
    .flags = step_flags,
    .notes = "a run is a preset name or {\"name\", \"policy\", \"recompute_layers\": k|-1|\"min_fit\",\n"
             "\"selective\": bool, \"store\": {ROLE: STORE}, \"grad\": \"fp32\"|FORMAT, \"moments\": \"fp32\"|FORMAT};\n"
             "ROLE: norm_in, qkv_in, attention, ffn1_in, fc1_out, ffn2_in; STORE: native, recompute,\n"
             "<format>[/<block>] (docs/step.md has the records and an example).",
    .run = agoq_exp_step,
    .tsv = step_tsv,
    .ntsv = sizeof step_tsv / sizeof step_tsv[0],
    .optional_fields = step_optional,
    .finish = step_finish,
};
