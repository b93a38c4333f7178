/* agoq memory: per-GPU memory of a training configuration from the memory model
 * (models/memory.h), swept over models, policies, accountings and layouts (experiment kind
 * "memory"). Computed, not measured: results carry meta.source "simulated".
 *
 * config keys (a list key takes a number or an array of numbers):
 *   models [names] (required); layers: override every card's layer count (Table 14 ran
 *   LLaMA3-8B with 36 and 16 layers)
 *   policies: names (bf16, coat, int8, int4, agoq, agoq_balanced) or objects
 *             {"label": "O", "base": "bf16", "grads": STORE, "moments": STORE} where STORE is
 *             "native", "fp32" or "<format>[/<block>]" (Table 8's O and O+G rows)
 *   accounting "real"|"paper"|[both]   tp, pp, zero, seq, micro_batch: lists (default 1,1,0,2048,1)
 *   gpus: list; dp = gpus / (tp*pp)    dp (when no gpus, default 1)
 *   the other layout keys of agoq_layout_parse (memory.h): vpp, schedule, sp, num_microbatches
 *   (default pp), recompute_layers, recompute_attn_core, bucket_elems, impl
 *   budget_gb (also report the fewest recomputed
 *   layers per stage that fit), roles (per-role units of U = 2bsh/(tp if sp) bytes per layer),
 *   paper {"<policy>": GB, ...} (a reported value to compare with: paper_GB and diff_pct). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/cmdline.h"
#include "core/common.h"
#include "runners/experiment.h"
#include "kernels/quant/qspec.h"
#include "models/memory.h"

#define MAX_LIST 64
#define MAX_POLICIES 8

typedef struct {
    double v[MAX_LIST];
    size_t n;
} num_list;

typedef struct {
    agoq_model_card models[32];
    size_t nmodel;
    struct { char label[32]; agoq_policy pol; } pols[MAX_POLICIES];
    size_t npol;
    agoq_accounting accs[2];
    size_t nacc;
    num_list tp, pp, zero, seq, mbs, gpus;
    agoq_mem_setup layout; /* the non-swept layout keys (agoq_layout_parse) */
    int roles, inventory, has_budget;
    double budget_gb;
    const cJSON *paper;
} mem_plan;

/* A number or a non-empty array of integers in [lo, hi]. */
static int int_list(jconf c, const cJSON *cfg, const char *key, double lo, double hi, double dflt, num_list *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    out->n = 0;
    if (!v) {
        out->v[out->n++] = dflt;
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        long x;
        if (jconf_long(c, cfg, key, 1, (long)lo, (long)hi, 0, &x)) return -1;
        out->v[out->n++] = (double)x;
        return 0;
    }
    double *a;
    size_t n;
    if (jconf_nums(c, cfg, key, 1, lo, hi, &a, &n)) return -1;
    for (size_t i = 0; i < n; i++)
        if (a[i] != floor(a[i]) || i >= MAX_LIST) {
            agoq_error("%s: key '%s.%s[%zu]': expected an integer (at most %d values)", c.file, c.prefix, key, i, MAX_LIST);
            free(a);
            return -1;
        }
    memcpy(out->v, a, n * sizeof *a);
    out->n = n;
    free(a);
    return 0;
}

/* A string or an array of strings, each mapped by by_name (-1 = unknown). */
static int name_list(jconf c, const cJSON *cfg, const char *key, int required, int (*by_name)(const char *),
                     const char *valid, int *out, size_t *n, size_t max) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    const char **names = NULL, *one;
    size_t k = 0;
    *n = 0;
    if (v && cJSON_IsString(v)) {
        if (jconf_str(c, cfg, key, 1, NULL, &one)) return -1;
        names = &one;
        k = 1;
    } else if (jconf_strs(c, cfg, key, required, &names, &k)) {
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < k && rc == 0; i++) {
        int id = by_name(names[i]);
        if (id < 0 || *n >= max) {
            agoq_error("%s: key '%s.%s': unknown or too many values '%s' (valid: %s)", c.file, c.prefix, key,
                       names[i], valid);
            rc = -1;
        } else {
            out[(*n)++] = id;
        }
    }
    if (names != &one) free(names);
    return rc;
}

static int acc_by_name(const char *s) {
    return strcmp(s, "real") == 0 ? AGOQ_ACCOUNT_REAL : strcmp(s, "paper") == 0 ? AGOQ_ACCOUNT_PAPER : -1;
}

static int store_key(jconf c, const cJSON *o, const char *key, agoq_store *st) {
    const char *v;
    if (jconf_str(c, o, key, 0, NULL, &v)) return -1;
    if (v && agoq_store_parse(v, st)) {
        agoq_error("%s: key '%s.%s': bad storage '%s' (native, fp32 or <format>[/<block>]; formats: %s)", c.file,
                   c.prefix, key, v, agoq_format_names());
        return -1;
    }
    return 0;
}

/* One "policies" entry: a name or a {label, base, grads, moments} object. */
static int add_policy(jconf c, const cJSON *e, mem_plan *p) {
    static const char *const keys[] = {"label", "base", "grads", "moments", NULL};
    char buf[128];
    if (p->npol >= MAX_POLICIES) {
        agoq_error("%s: key '%s.policies': at most %d policies", c.file, c.prefix, MAX_POLICIES);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s.policies[%zu]", c.prefix, p->npol);
    jconf ci = {c.file, buf};
    const char *base = cJSON_IsString(e) ? e->valuestring : NULL, *label = NULL;
    if (!base && !cJSON_IsObject(e)) {
        agoq_error("%s: key '%s': expected a policy name or object", c.file, buf);
        return -1;
    }
    if (!base && (jconf_only(ci, e, keys) || jconf_str(ci, e, "base", 1, NULL, &base) ||
                  jconf_str(ci, e, "label", 0, NULL, &label)))
        return -1;
    agoq_policy *pol = &p->pols[p->npol].pol;
    if (agoq_policy_by_name(base, pol)) {
        agoq_error("%s: key '%s': unknown policy '%s' (valid: %s)", c.file, buf, base, agoq_policy_names());
        return -1;
    }
    if (cJSON_IsObject(e) && (store_key(ci, e, "grads", &pol->grad) || store_key(ci, e, "moments", &pol->moments)))
        return -1;
    snprintf(p->pols[p->npol].label, sizeof p->pols[p->npol].label, "%s", label ? label : base);
    p->npol++;
    return 0;
}

/* "policies": a name, or an array of names and {label, base, grads, moments} objects. */
static int parse_policies(jconf c, const cJSON *cfg, mem_plan *p) {
    static const char *const dflt[] = {"bf16", "coat", "agoq"};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "policies"), *e;
    p->npol = 0;
    if (!v) {
        for (size_t i = 0; i < 3; i++) {
            agoq_policy_by_name(dflt[i], &p->pols[i].pol);
            snprintf(p->pols[i].label, sizeof p->pols[i].label, "%s", dflt[i]);
        }
        p->npol = 3;
        return 0;
    }
    if (!cJSON_IsArray(v) && !cJSON_IsString(v)) {
        agoq_error("%s: key '%s.policies': expected a policy name or an array of names and objects", c.file, c.prefix);
        return -1;
    }
    if (cJSON_IsString(v)) return add_policy(c, v, p);
    cJSON_ArrayForEach(e, v)
        if (add_policy(c, e, p)) return -1;
    return 0;
}

static const char *const memory_keys[] = {"models", "layers", "policies", "accounting", "gpus", "budget_gb",
                                          "roles", "inventory", "paper", "seed", NULL};

static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, mem_plan *p) {
    jconf c = ctx->where;
    const char **models;
    int acc[2];
    memset(p, 0, sizeof *p);
    if (jconf_only2(c, cfg, memory_keys, agoq_layout_keys) || jconf_strs(c, cfg, "models", 1, &models, &p->nmodel))
        return -1;
    int rc = 0;
    if (p->nmodel > sizeof p->models / sizeof p->models[0]) {
        agoq_error("%s: key '%s.models': at most %zu models", c.file, c.prefix, sizeof p->models / sizeof p->models[0]);
        rc = -1;
    }
    for (size_t i = 0; i < p->nmodel && rc == 0; i++) {
        agoq_error_context("%s: key '%s.models[%zu]': ", c.file, c.prefix, i);
        if (agoq_model_load(models[i], &p->models[i])) rc = -1;
        agoq_error_context(NULL);
    }
    free(models);
    long layers;
    if (rc || jconf_long(c, cfg, "layers", 0, 0, 4096, 0, &layers)) return -1;
    for (size_t i = 0; i < p->nmodel && layers; i++) p->models[i].layers = layers;
    if (parse_policies(c, cfg, p) || name_list(c, cfg, "accounting", 0, acc_by_name, "real, paper", acc, &p->nacc, 2) ||
        int_list(c, cfg, "tp", 1, 4096, 1, &p->tp) || int_list(c, cfg, "pp", 1, AGOQ_MAX_STAGES, 1, &p->pp) ||
        int_list(c, cfg, "zero", 0, 3, 0, &p->zero) || int_list(c, cfg, "seq", 1, 1 << 24, 2048, &p->seq) ||
        int_list(c, cfg, "micro_batch", 1, 1 << 16, 1, &p->mbs) || int_list(c, cfg, "gpus", 1, 1 << 20, 0, &p->gpus) ||
        jconf_num(c, cfg, "budget_gb", 0, 0, 1e6, 0, &p->budget_gb) || jconf_bool(c, cfg, "roles", 0, 0, &p->roles) ||
        jconf_bool(c, cfg, "inventory", 0, 0, &p->inventory) ||
        jconf_obj(c, cfg, "paper", 0, &p->paper))
        return -1;
    agoq_mem_setup_default(&p->layout, &p->models[0]);
    if (agoq_layout_parse(c, cfg, &p->layout, 1)) return -1;
    p->has_budget = cJSON_GetObjectItemCaseSensitive(cfg, "budget_gb") != NULL;
    if (p->nacc == 0) p->accs[p->nacc++] = AGOQ_ACCOUNT_REAL;
    else for (size_t i = 0; i < p->nacc; i++) p->accs[i] = (agoq_accounting)acc[i];
    if (p->gpus.v[0] == 0) p->gpus.n = 0; /* no "gpus" key: use dp */
    const cJSON *e;
    cJSON_ArrayForEach(e, p->paper) {
        int known = 0;
        for (size_t i = 0; i < p->npol; i++) known |= strcmp(e->string, p->pols[i].label) == 0;
        if (!known || !cJSON_IsNumber(e)) {
            agoq_error("%s: key '%s.paper.%s': expected a policy label of this run mapped to GB", c.file, c.prefix, e->string);
            return -1;
        }
    }
    return 0;
}

/* The layer's saved tensors as stored at `stage`, into the record and as "#" lines. */
static void add_inventory(cJSON *r, const agoq_mem_setup *ms, int stage) {
    agoq_layer_entry e[AGOQ_INVENTORY_MAX];
    int n = agoq_layer_entries(ms, stage, e);
    cJSON *a = cJSON_AddArrayToObject(r, "inventory");
    printf("#   %-26s %-9s %5s %-10s %-9s %-2s %-14s %14s\n", "saved tensor", "shape", "bytes", "role", "block", "tp",
           "stored as", "stored_bytes");
    for (int i = 0; i < n; i++) {
        char shape[48], st[48];
        const agoq_saved_tensor *t = &e[i].t;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "shape", agoq_saved_shape(t, shape, sizeof shape));
        results_num(o, "dtype_bytes", t->dtype_bytes);
        cJSON_AddStringToObject(o, "role", agoq_role_name(t->role));
        cJSON_AddStringToObject(o, "block", agoq_block_name(t->block));
        cJSON_AddBoolToObject(o, "tp_split", agoq_saved_tp_split(t));
        if (t->alias_of >= 0) cJSON_AddStringToObject(o, "shares_storage_with", e[t->alias_of].t.name);
        cJSON_AddStringToObject(o, "stored_as", agoq_store_label(&e[i].store, st, sizeof st));
        results_num(o, "elems", e[i].elems);
        results_num(o, "stored_bytes", e[i].stored_bytes);
        results_num(o, "scale_bytes", e[i].scale_bytes);
        cJSON_AddItemToArray(a, o);
        printf("#   %-26s %-9s %5d %-10s %-9s %-2s %-14s %14.0f%s%s\n", t->name, shape, t->dtype_bytes,
               agoq_role_name(t->role), agoq_block_name(t->block), agoq_saved_tp_split(t) ? "y" : "-", st,
               e[i].stored_bytes, t->alias_of >= 0 ? "  shares " : "", t->alias_of >= 0 ? e[t->alias_of].t.name : "");
    }
}

static const char *acc_name(agoq_accounting a) { return a == AGOQ_ACCOUNT_PAPER ? "paper" : "real"; }

/* One point: fills the record and prints a table row; base_total_bytes is the first policy's
 * total at the same layout (the record's vs_baseline_pct). Returns the total, -1 when invalid. */
static double run_point(const mem_plan *p, const char *label, const agoq_mem_setup *ms, double base_total_bytes,
                        agoq_results *res) {
    agoq_mem_breakdown bd;
    int stage;
    if (agoq_memory_peak(ms, &stage, &bd)) return -1.0;
    const agoq_parallel *par = &ms->par;
    const agoq_model_card *m = ms->model;
    double unit = 2.0 * (double)par->micro_batch * (double)par->seq * (double)m->hidden / (par->sp ? (double)par->tp : 1.0);
    cJSON *r = results_add_record(res);
    cJSON_AddStringToObject(r, "model", m->name);
    cJSON_AddStringToObject(r, "policy", label);
    cJSON_AddStringToObject(r, "base_policy", agoq_policy_name(ms->pol.id));
    cJSON_AddStringToObject(r, "accounting", acc_name(ms->acc));
    results_num(r, "layers", (double)m->layers);
    const struct { const char *k; double v; } f[] = {
        {"gpus", (double)(par->tp * par->pp * par->dp)}, {"tp", (double)par->tp}, {"pp", (double)par->pp},
        {"dp", (double)par->dp}, {"vpp", (double)par->vpp}, {"zero", par->zero}, {"sp", par->sp},
        {"seq", (double)par->seq}, {"micro_batch", (double)par->micro_batch},
        {"num_microbatches", (double)par->num_microbatches}, {"peak_stage", stage},
        {"weights_GB", bd.weights_bytes / 1e9}, {"grads_GB", bd.grads_bytes / 1e9},
        {"optimizer_GB", bd.optimizer_bytes / 1e9}, {"activations_GB", bd.activations_bytes / 1e9},
        {"act_scales_GB", bd.act_scales_bytes / 1e9}, {"comm_GB", bd.comm_bytes / 1e9},
        {"total_GB", bd.total_bytes / 1e9}, {"layer_act_U", bd.layer_act_bytes / unit}, {"unit_bytes", unit},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) results_num(r, f[i].k, f[i].v);
    cJSON_AddStringToObject(r, "baseline_policy", p->pols[0].label);
    results_num(r, "vs_baseline_pct", 100.0 * (bd.total_bytes / (base_total_bytes > 0 ? base_total_bytes : bd.total_bytes) - 1.0));
    cJSON_AddItemToObject(r, "breakdown", agoq_mem_breakdown_json(&bd));
    if (par->pp > 1) {
        cJSON *st = cJSON_AddArrayToObject(r, "stages");
        for (int i = 0; i < par->pp; i++) {
            agoq_mem_breakdown b;
            agoq_memory_stage(ms, i, &b);
            cJSON_AddItemToArray(st, agoq_mem_breakdown_json(&b));
        }
    }
    if (p->roles) {
        double by_role[AGOQ_ROLE_COUNT];
        agoq_layer_act_bytes(ms, stage, by_role, NULL);
        cJSON *u = cJSON_AddObjectToObject(r, "layer_U_by_role");
        for (int i = 0; i < AGOQ_ROLE_COUNT; i++)
            if (by_role[i] > 0 || ms->pol.act[i].kind == AGOQ_STORE_RECOMPUTE) results_num(u, agoq_role_name((agoq_role)i), by_role[i] / unit);
    }
    if (p->inventory) add_inventory(r, ms, stage);
    char rbuf[32] = "-";
    if (p->has_budget) {
        long R;
        int fit = agoq_memory_min_recompute(ms, p->budget_gb * 1e9, &R);
        if (fit < 0) return -1.0;
        results_num(r, "budget_GB", p->budget_gb);
        results_num(r, "min_recompute_layers", fit == 0 ? (double)R : NAN);
        snprintf(rbuf, sizeof rbuf, fit == 0 ? "%ld" : "none", R);
    }
    char pbuf[48] = "";
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(p->paper, label);
    if (ref) {
        results_num(r, "paper_GB", ref->valuedouble);
        results_num(r, "diff_pct", 100.0 * (bd.total_bytes / 1e9 - ref->valuedouble) / ref->valuedouble);
        snprintf(pbuf, sizeof pbuf, " %7.1f %+6.1f%%", ref->valuedouble, 100.0 * (bd.total_bytes / 1e9 - ref->valuedouble) / ref->valuedouble);
    }
    printf("  %-13s %-13s %-5s %5ld %3ld %3ld %4ld %1d %6ld %2d %8.2f %8.2f %8.2f %8.2f %7.3f %6.2f %8.2f %7.3f %5s%s\n",
           m->name, label, acc_name(ms->acc), par->tp * par->pp * par->dp, par->tp, par->pp,
           par->dp, par->zero, par->seq, stage, bd.weights_bytes / 1e9, bd.grads_bytes / 1e9, bd.optimizer_bytes / 1e9,
           bd.activations_bytes / 1e9, bd.act_scales_bytes / 1e9, bd.comm_bytes / 1e9, bd.total_bytes / 1e9,
           bd.layer_act_bytes / unit, rbuf, pbuf);
    return bd.total_bytes;
}

int agoq_exp_memory(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    mem_plan *p = malloc(sizeof *p);
    agoq_mem_setup *ms = malloc(sizeof *ms);
    int rc = -1;
    if (!p || !ms || parse_plan(ctx, cfg, p)) goto done;
    if (ctx->check_only) {
        rc = 0;
        goto done;
    }
    results_set_source(res, "simulated");
    printf("# %-13s %-13s %-5s %5s %3s %3s %4s %1s %6s %2s %8s %8s %8s %8s %7s %6s %8s %7s %5s%s\n", "model", "policy",
           "acct", "gpus", "tp", "pp", "dp", "z", "seq", "st", "weights", "grads", "optim", "acts", "scales", "comm",
           "total_GB", "layer_U", "minR", p->paper ? "  paper    diff" : "");
    size_t ndp = p->gpus.n ? p->gpus.n : 1;
    double base_total = 0; /* the first policy's total at the current layout */
    for (size_t mi = 0; mi < p->nmodel; mi++)
        for (size_t ai = 0; ai < p->nacc; ai++)
            for (size_t ti = 0; ti < p->tp.n; ti++)
                for (size_t pi = 0; pi < p->pp.n; pi++)
                    for (size_t gi = 0; gi < ndp; gi++)
                        for (size_t zi = 0; zi < p->zero.n; zi++)
                            for (size_t si = 0; si < p->seq.n; si++)
                                for (size_t bi = 0; bi < p->mbs.n; bi++)
                                    for (size_t qi = 0; qi < p->npol; qi++) {
                                        *ms = p->layout;
                                        ms->model = &p->models[mi];
                                        agoq_parallel *par = &ms->par;
                                        par->tp = (long)p->tp.v[ti];
                                        par->pp = (long)p->pp.v[pi];
                                        if (p->gpus.n) {
                                            long g = (long)p->gpus.v[gi], tpp = par->tp * par->pp;
                                            if (g % tpp) {
                                                agoq_error("%s: key '%s.gpus': %ld GPUs is not a multiple of tp*pp = %ld",
                                                           ctx->where.file, ctx->where.prefix, g, tpp);
                                                goto done;
                                            }
                                            par->dp = g / tpp;
                                        }
                                        par->zero = (int)p->zero.v[zi];
                                        par->seq = (long)p->seq.v[si];
                                        par->micro_batch = (long)p->mbs.v[bi];
                                        if (!p->layout.par.num_microbatches) par->num_microbatches = par->pp;
                                        ms->acc = p->accs[ai];
                                        ms->pol = p->pols[qi].pol;
                                        double t = run_point(p, p->pols[qi].label, ms, qi ? base_total : 0.0, res);
                                        if (qi == 0) base_total = t;
                                        if (t < 0) goto done; /* the memory model said why, one line */
                                    }
    rc = 0;
done:
    free(p);
    free(ms);
    return rc;
}

static const agoq_flag memory_flags[] = {
    {.name = "model", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "models", .arg = "a,b", .help = "model cards (models/<name>.json)", .choices = agoq_model_names},
    {.name = "policy", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "policies", .arg = "a,b", .help = "policies (default bf16,coat,agoq)", .choices = agoq_policy_names},
    {.name = "accounting", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "accounting", .arg = "real|paper|real,paper", .help = "(default real)"},
    {.name = "tp", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "tp", .arg = "N,..", .help = "tensor-parallel sizes", .value = "1,2,4"},
    {.name = "pp", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "pp", .arg = "N,..", .help = "pipeline stages", .value = "1,2,4"},
    AGOQ_NUM_FLAG("dp", "dp", "N", "data-parallel replicas"),
    {.name = "gpus", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "gpus", .arg = "N,..", .help = "GPU counts (dp = gpus/(tp*pp))", .value = "1,2,4"},
    {.name = "zero", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "zero", .arg = "0..3,..", .help = "ZeRO stages", .value = "1,2,4"},
    {.name = "seq", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "seq", .arg = "N,..", .help = "sequence lengths", .value = "1,2,4"},
    {.name = "mbs", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "micro_batch", .arg = "N,..", .help = "micro-batch sizes", .value = "1,2,4"},
    AGOQ_NUM_FLAG("vpp", "vpp", "N", "virtual pipeline stages (interleaved when > 1)"),
    AGOQ_NUM_FLAG("microbatches", "num_microbatches", "N", "micro-batches per step (default pp)"),
    {.name = "sp", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "sp", .arg = NULL, .help = "sequence parallelism", .value = "true"},
    AGOQ_NUM_FLAG("recompute", "recompute_layers", "N", "fully recompute N layers per stage (-1: all)"),
    {.name = "selective", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "recompute_attn_core", .arg = NULL, .help = "recompute core attention (Megatron selective)",
     .value = "true"},
    {.name = "eager-attn", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "impl.flash_attn", .arg = NULL, .help = "saved tensors of eager (not flash) attention",
     .value = "false"},
    {.name = "eager-norm", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "impl.fused_norm", .arg = NULL, .help = "saved tensors of an unfused RMSNorm", .value = "false"},
    {.name = "gqa-repeat", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "impl.gqa_repeat", .arg = NULL, .help = "K/V repeated to every head before attention",
     .value = "true"},
    AGOQ_NUM_FLAG("budget", "budget_gb", "GB", "also report the fewest recomputed layers per stage that fit"),
    {.name = "roles", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "roles", .arg = NULL, .help = "per-role units U of one layer in the JSON", .value = "true"},
    {.name = "inventory", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "inventory", .arg = NULL, .help = "list every saved tensor of one layer (shape, dtype, role, storage)",
     .value = "true"},
    {0}};

static const char *const memory_tsv[] = {"model", "policy", "accounting", "gpus", "tp", "pp", "dp", "zero", "seq",
                                         "weights_GB", "grads_GB", "optimizer_GB", "activations_GB", "act_scales_GB",
                                         "comm_GB", "total_GB", "layer_act_U"};

const agoq_runner agoq_runner_memory = {
    .kind = "memory",
    .what = "per-GPU memory model: ZeRO stages, parallelism, activation policies",
    .usage = "--model NAME[,NAME...] [options]",
    .about = "Per-GPU memory (weights, grads, optimizer, activations, scales, comm buffers) from the\n"
             "memory model; computed, not measured (meta.source \"simulated\").",
    .keys = memory_keys,
    .more_keys = agoq_layout_keys,
    .flags = memory_flags,
    .run = agoq_exp_memory,
    .tsv = memory_tsv,
    .ntsv = sizeof memory_tsv / sizeof memory_tsv[0],
    .host_only = 1,
};
