/* agoq bitalloc: per-stage, per-layer-type activation storage under a per-GPU memory budget
 * (experiment kind "bitalloc"; models/bitalloc.h). Computed from the memory model: results carry
 * meta.source "simulated".
 *
 * config keys:
 *   model (required unless units), policy (base, default "agoq": its recomputed roles stay
 *   recomputed), the layout keys of agoq_layout_parse (tp, pp, dp, zero, seq, micro_batch, vpp,
 *   schedule, sp, num_microbatches, recompute_layers, impl, ...),
 *   budget_gb (default: the base policy's peak stage, so no stage may exceed today's worst),
 *   candidates ["native", "fp8_e4m3/128", "int8/128", "fp4_e2m1/128"] (storage specs),
 *   quant_results "results/cpu/quant_error.json" (measured NMSE per format; without it the built-in
 *   proxy), proxy_dist ("normal"), sensitivity {norm, gemm, actfn, attention},
 *   pin [layer types kept at the base policy's storage] (default ["attention"], as the paper),
 *   method "exact"|"greedy", max_exact (1e6), compare_greedy (also run greedy and report it),
 *   units {"base_bits": 4, "bits": [4, 5, 6, 7, 8]}: the paper's DBCA-PP in activation units
 *   (stage memory N_i * bits): its rounding against the exact widest-that-fits; no model needed.
 * Infeasible budget: one line naming the smallest budget that fits, exit 1, nothing written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/cmdline.h"
#include "core/common.h"
#include "runners/experiment.h"
#include "kernels/quant/qspec.h"
#include "models/bitalloc.h"

typedef struct {
    agoq_model_card model;
    agoq_mem_setup ms;
    agoq_bitalloc_problem pr;
    int has_model, has_budget, compare_greedy, has_units, base_bits;
    int bits[16];
    size_t nbits;
    char proxy[600];
} ba_plan;

static int parse_candidates(jconf c, const cJSON *cfg, ba_plan *p) {
    const char **names;
    size_t n;
    if (jconf_strs(c, cfg, "candidates", 0, &names, &n)) return -1;
    if (n == 0) return 0; /* defaults from agoq_bitalloc_default */
    int rc = 0;
    if (n > AGOQ_BITALLOC_MAX_CAND) {
        agoq_error("%s: key '%s.candidates': at most %d candidates", c.file, c.prefix, AGOQ_BITALLOC_MAX_CAND);
        rc = -1;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        agoq_candidate *cd = &p->pr.cand[i];
        if (agoq_store_parse(names[i], &cd->st) || cd->st.kind == AGOQ_STORE_RECOMPUTE) {
            agoq_error("%s: key '%s.candidates[%zu]': bad storage '%s' (native, fp32 or <format>[/<block>]; formats: %s)",
                       c.file, c.prefix, i, names[i], agoq_format_names());
            rc = -1;
            break;
        }
        cd->err = agoq_proxy_builtin(&cd->st);
        snprintf(cd->label, sizeof cd->label, "%s", names[i]);
    }
    p->pr.ncand = n;
    free(names);
    return rc;
}

static int parse_units(jconf c, const cJSON *cfg, ba_plan *p) {
    static const char *const keys[] = {"base_bits", "bits", NULL};
    const cJSON *u;
    char buf[128];
    if (jconf_obj(c, cfg, "units", 0, &u)) return -1;
    if (!u) return 0;
    jconf cu = jconf_child(c, "units", buf, sizeof buf);
    long base;
    double *bits;
    if (jconf_only(cu, u, keys) || jconf_long(cu, u, "base_bits", 0, 2, 16, 4, &base) ||
        jconf_nums(cu, u, "bits", 1, 2, 16, &bits, &p->nbits))
        return -1;
    int rc = 0;
    for (size_t i = 0; i < p->nbits; i++) {
        if (bits[i] != floor(bits[i]) || i >= 16) {
            agoq_error("%s: key '%s.bits[%zu]': expected an integer number of bits (at most 16 values)", c.file, buf, i);
            rc = -1;
            break;
        }
        p->bits[i] = (int)bits[i];
    }
    free(bits);
    p->has_units = 1;
    p->base_bits = (int)base;
    return rc;
}

static int parse_sens(jconf c, const cJSON *cfg, agoq_bitalloc_problem *pr) {
    static const char *const keys[] = {"norm", "gemm", "actfn", "attention", NULL};
    const cJSON *o;
    char buf[128];
    if (jconf_obj(c, cfg, "sensitivity", 0, &o)) return -1;
    if (!o) return 0;
    jconf cs = jconf_child(c, "sensitivity", buf, sizeof buf);
    if (jconf_only(cs, o, keys)) return -1;
    for (int t = 0; t < AGOQ_LTYPE_COUNT; t++)
        if (jconf_num(cs, o, agoq_layer_type_name((agoq_layer_type)t), 0, 0, 1e6, pr->sens[t], &pr->sens[t])) return -1;
    return 0;
}

static int parse_pin(jconf c, const cJSON *cfg, agoq_bitalloc_problem *pr) {
    const char **names;
    size_t n;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "pin");
    if (!v) return 0;
    memset(pr->pinned, 0, sizeof pr->pinned);
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0) return 0; /* nothing pinned */
    if (jconf_strs(c, cfg, "pin", 1, &names, &n)) return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int t = -1;
        for (int k = 0; k < AGOQ_LTYPE_COUNT; k++)
            if (strcmp(names[i], agoq_layer_type_name((agoq_layer_type)k)) == 0) t = k;
        if (t < 0) {
            agoq_error("%s: key '%s.pin[%zu]': unknown layer type '%s' (valid: norm, gemm, actfn, attention)", c.file,
                       c.prefix, i, names[i]);
            rc = -1;
        } else {
            pr->pinned[t] = 1;
        }
    }
    free(names);
    return rc;
}

static const char *const bitalloc_keys[] = {"model", "policy", "budget_gb", "candidates", "quant_results",
                                            "proxy_dist", "sensitivity", "pin", "method", "max_exact",
                                            "compare_greedy", "units", "seed", NULL};

static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, ba_plan *p) {
    const char *model, *policy, *qres, *dist, *method;
    jconf c = ctx->where;
    double budget;
    memset(p, 0, sizeof *p);
    agoq_bitalloc_default(&p->pr);
    if (jconf_only2(c, cfg, bitalloc_keys, agoq_layout_keys) || parse_units(c, cfg, p) ||
        jconf_str(c, cfg, "model", !p->has_units, NULL, &model) || jconf_str(c, cfg, "policy", 0, "agoq", &policy) ||
        jconf_num(c, cfg, "budget_gb", 0, 1e-9, 1e6, 0, &budget) || parse_candidates(c, cfg, p) ||
        jconf_str(c, cfg, "quant_results", 0, NULL, &qres) || jconf_str(c, cfg, "proxy_dist", 0, "normal", &dist) ||
        parse_sens(c, cfg, &p->pr) || parse_pin(c, cfg, &p->pr) || jconf_str(c, cfg, "method", 0, "exact", &method) ||
        jconf_num(c, cfg, "max_exact", 0, 1, 1e9, 1e6, &p->pr.max_exact) ||
        jconf_bool(c, cfg, "compare_greedy", 0, 0, &p->compare_greedy))
        return -1;
    if (strcmp(method, "exact") && strcmp(method, "greedy")) {
        agoq_error("%s: key '%s.method': unknown method '%s' (valid: exact, greedy)", c.file, c.prefix, method);
        return -1;
    }
    p->pr.method = strcmp(method, "greedy") ? AGOQ_ALLOC_EXACT : AGOQ_ALLOC_GREEDY;
    p->has_model = model != NULL;
    agoq_error_context("%s: key '%s.model': ", c.file, c.prefix);
    int bad = model && agoq_model_load(model, &p->model);
    agoq_error_context(NULL);
    if (bad) return -1;
    agoq_mem_setup_default(&p->ms, &p->model);
    if (agoq_layout_parse(c, cfg, &p->ms, 0)) return -1;
    if (agoq_policy_by_name(policy, &p->ms.pol)) {
        agoq_error("%s: key '%s.policy': unknown policy '%s' (valid: %s)", c.file, c.prefix, policy, agoq_policy_names());
        return -1;
    }
    if (p->has_model && agoq_mem_setup_check(&p->ms)) return -1;
    p->has_budget = cJSON_GetObjectItemCaseSensitive(cfg, "budget_gb") != NULL;
    if (!p->has_model && p->has_budget) { /* units mode: the budget is N_0 * base_bits units, not GB */
        agoq_error("%s: key '%s.budget_gb': applies only with 'model' (the units mode's budget is N_0 x units.base_bits)",
                   c.file, c.prefix);
        return -1;
    }
    p->pr.budget_bytes = budget * 1e9;
    if (qres) {
        if (agoq_proxy_measured(qres, dist, p->pr.cand, p->pr.ncand)) return -1;
        snprintf(p->proxy, sizeof p->proxy, "measured nmse (%s, dist %s)", qres, dist);
    } else {
        snprintf(p->proxy, sizeof p->proxy, "builtin (no quant_results given)");
    }
    return 0;
}

static int run_units(const ba_plan *p, agoq_results *res) {
    int paper[AGOQ_MAX_STAGES], exact[AGOQ_MAX_STAGES];
    const agoq_parallel *par = &p->ms.par;
    double budget = agoq_dbca_units(par, p->base_bits, p->bits, p->nbits, paper, exact);
    printf("# DBCA-PP in activation units: pp %ld, vpp %ld, %ld micro-batches, budget N_0 * %d = %g units\n", par->pp,
           par->vpp, par->num_microbatches, p->base_bits, budget);
    printf("# %5s %8s %10s %11s %10s %10s %11s\n", "stage", "inflight", "paper_bits", "paper_units", "over", "exact_bits",
           "exact_units");
    for (int i = 0; i < par->pp; i++) {
        double n = (double)agoq_inflight_microbatches(par, i);
        cJSON *r = results_add_record(res);
        cJSON_AddStringToObject(r, "mode", "units");
        const struct { const char *k; double v; } f[] = {
            {"stage", i}, {"inflight", n}, {"budget_units", budget}, {"paper_bits", paper[i]},
            {"paper_units", n * paper[i]}, {"paper_over_units", n * paper[i] - budget},
            {"exact_bits", exact[i] < 0 ? NAN : exact[i]}, {"exact_units", exact[i] < 0 ? NAN : n * exact[i]}};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) results_num(r, f[k].k, f[k].v);
        printf("  %5d %8.0f %10d %11.0f %+10.0f %10d %11.0f\n", i, n, paper[i], n * paper[i], n * paper[i] - budget,
               exact[i], exact[i] < 0 ? NAN : n * exact[i]);
    }
    return 0;
}

static void add_stage_record(agoq_results *res, const ba_plan *p, const agoq_bitalloc_result *ar,
                             const agoq_bitalloc_result *gr, int i, double paper_rule) {
    cJSON *r = results_add_record(res);
    const agoq_parallel *par = &p->ms.par;
    char line[256];
    size_t k = 0;
    cJSON_AddStringToObject(r, "mode", "model");
    cJSON_AddStringToObject(r, "model", p->model.name);
    cJSON_AddStringToObject(r, "policy", agoq_policy_name(p->ms.pol.id));
    cJSON_AddStringToObject(r, "method", ar->used == AGOQ_ALLOC_EXACT ? "exact" : "greedy");
    cJSON_AddStringToObject(r, "proxy", p->proxy);
    results_num(r, "stage", i);
    results_num(r, "inflight", (double)agoq_inflight_microbatches(par, i));
    results_num(r, "budget_GB", p->pr.budget_bytes / 1e9);
    results_num(r, "total_GB", ar->total_bytes[i] / 1e9);
    results_num(r, "error_proxy", ar->err[i]);
    results_num(r, "paper_rule_GB", paper_rule / 1e9);
    cJSON_AddBoolToObject(r, "paper_rule_fits", paper_rule <= p->pr.budget_bytes);
    for (int t = 0; t < AGOQ_LTYPE_COUNT; t++) {
        char key[32];
        int ch = ar->choice[i][t];
        snprintf(key, sizeof key, "fmt_%s", agoq_layer_type_name((agoq_layer_type)t));
        cJSON_AddStringToObject(r, key, ch < 0 ? "-" : p->pr.cand[ch].label);
        k += (size_t)snprintf(line + k, sizeof line - k, " %-13s", ch < 0 ? "-" : p->pr.cand[ch].label);
    }
    if (gr) {
        results_num(r, "greedy_total_GB", gr->total_bytes[i] / 1e9);
        results_num(r, "greedy_error_proxy", gr->err[i]);
    }
    printf("  %5d %8ld%s %8.3f %9.3g %9.3f %s", i, agoq_inflight_microbatches(par, i), line, ar->total_bytes[i] / 1e9,
           ar->err[i], paper_rule / 1e9, paper_rule <= p->pr.budget_bytes ? "fits" : "OVER");
    if (gr) printf(" %9.3g", gr->err[i]);
    printf("\n");
}

int agoq_exp_bitalloc(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    ba_plan *p = malloc(sizeof *p);
    agoq_bitalloc_result *ar = malloc(sizeof *ar), *gr = malloc(sizeof *gr);
    agoq_mem_setup *w = malloc(sizeof *w);
    int rc = -1;
    if (!p || !ar || !gr || !w || parse_plan(ctx, cfg, p)) goto done;
    if (ctx->check_only) {
        rc = 0;
        goto done;
    }
    results_set_source(res, "simulated");
    if (p->has_units && run_units(p, res)) goto done;
    if (!p->has_model) {
        rc = 0;
        goto done;
    }
    agoq_mem_breakdown bd;
    if (!p->has_budget) { /* the base policy's worst stage */
        if (agoq_memory_peak(&p->ms, NULL, &bd)) goto done;
        p->pr.budget_bytes = bd.total_bytes;
    }
    int s = agoq_bitalloc_solve(&p->ms, &p->pr, ar);
    if (s < 0) goto done;
    if (s > 0) {
        agoq_error("%s: key '%s.budget_gb': %.3f GB does not fit: stage %d needs %.3f GB with the narrowest candidates "
                   "(smallest budget that fits every stage: %.3f GB)", ctx->where.file, ctx->where.prefix,
                   p->pr.budget_bytes / 1e9, ar->stage_min_worst, ar->min_budget_bytes / 1e9, ar->min_budget_bytes / 1e9);
        goto done;
    }
    if (p->compare_greedy) {
        agoq_bitalloc_problem g = p->pr;
        g.method = AGOQ_ALLOC_GREEDY;
        if (agoq_bitalloc_solve(&p->ms, &g, gr) != 0) goto done;
    }
    /* The paper's rounding rule on the same setup: the agoq_balanced policy's own per-stage widths. */
    *w = p->ms;
    agoq_policy_by_name("agoq_balanced", &w->pol);
    printf("# bitalloc %s, base policy %s, tp %ld pp %ld vpp %ld dp %ld zero %d seq %ld: budget %.3f GB, %s search, "
           "error proxy: %s\n", p->model.name, agoq_policy_name(p->ms.pol.id), p->ms.par.tp, p->ms.par.pp, p->ms.par.vpp,
           p->ms.par.dp, p->ms.par.zero, p->ms.par.seq, p->pr.budget_bytes / 1e9,
           ar->used == AGOQ_ALLOC_EXACT ? "exact" : "greedy", p->proxy);
    printf("# %5s %8s %-13s %-13s %-13s %-13s %8s %9s %9s %4s%s\n", "stage", "inflight", "norm", "gemm", "actfn",
           "attention", "total_GB", "err", "paperrule", "", p->compare_greedy ? " greedyerr" : "");
    for (int i = 0; i < p->ms.par.pp; i++) {
        if (agoq_memory_stage(w, i, &bd)) goto done;
        add_stage_record(res, p, ar, p->compare_greedy ? gr : NULL, i, bd.total_bytes);
    }
    rc = 0;
done:
    free(p);
    free(ar);
    free(gr);
    free(w);
    return rc;
}

static const agoq_flag bitalloc_flags[] = {
    {.name = "model", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "model", .arg = "NAME", .help = "model card", .choices = agoq_model_names},
    {.name = "policy", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "policy", .arg = "NAME", .help = "base policy (default agoq)"},
    AGOQ_NUM_FLAG("budget", "budget_gb", "GB", "per-GPU budget (default: the base policy's worst stage)"),
    AGOQ_NUM_FLAG("tp", "tp", "N", "tensor-parallel size"),
    AGOQ_NUM_FLAG("pp", "pp", "N", "pipeline stages"),
    AGOQ_NUM_FLAG("vpp", "vpp", "N", "virtual pipeline stages"),
    AGOQ_NUM_FLAG("dp", "dp", "N", "data-parallel replicas"),
    AGOQ_NUM_FLAG("zero", "zero", "N", "ZeRO stage"),
    AGOQ_NUM_FLAG("seq", "seq", "N", "sequence length"),
    AGOQ_NUM_FLAG("mbs", "micro_batch", "N", "micro-batch size"),
    AGOQ_NUM_FLAG("microbatches", "num_microbatches", "N", "micro-batches per step"),
    {.name = "sp", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "sp", .arg = NULL, .help = "sequence parallelism", .value = "true"},
    {.name = "candidates", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "candidates", .arg = "a,b", .help = "storage candidates (default native,fp8_e4m3/128,int8/128,fp4_e2m1/128)"},
    {.name = "quant-results", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "quant_results", .arg = "F", .help = "measured NMSE per format from an `agoq quant` results file"},
    {.name = "greedy", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "method", .arg = NULL, .help = "greedy instead of exact", .value = "\"greedy\""},
    {.name = "compare-greedy", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "compare_greedy", .arg = NULL, .help = "report both exact and greedy", .value = "true"},
    {.name = "units", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "units", .arg = NULL, .help = "the paper's DBCA-PP in activation units (bits 4..8), no model",
     .value = "{\"bits\": [4, 5, 6, 7, 8]}"},
    {0}};

static const char *const bitalloc_tsv[] = {"stage", "inflight", "budget_GB", "total_GB", "error_proxy", "paper_rule_GB",
                                           "fmt_norm", "fmt_gemm", "fmt_actfn", "fmt_attention", "paper_bits",
                                           "exact_bits", "paper_units", "exact_units"};

const agoq_runner agoq_runner_bitalloc = {
    .kind = "bitalloc",
    .what = "per-stage bit widths under a memory budget (exact + greedy)",
    .usage = "--model NAME [options]   |   agoq bitalloc --units [options]",
    .about = "Choose per-stage, per-layer-type activation storage (bf16, fp8, int8, 4-bit, ...) that\n"
             "minimises an error proxy while every pipeline stage fits the budget (exact search per\n"
             "stage, greedy fallback). Computed from the memory model (meta.source \"simulated\").",
    .keys = bitalloc_keys,
    .more_keys = agoq_layout_keys,
    .flags = bitalloc_flags,
    .run = agoq_exp_bitalloc,
    .tsv = bitalloc_tsv,
    .ntsv = sizeof bitalloc_tsv / sizeof bitalloc_tsv[0],
    .host_only = 1,
};
