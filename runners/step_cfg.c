/* The "step" experiment's configuration; see step_cfg.h (keys: runners/step.c).
 *
 * A run is a preset name or an object. Presets (name -> the memory model's policy, models/
 * policy.c, and Megatron's recomputation):
 *   bf16 store-all | recompute: bf16 + full recomputation of every layer | selective: bf16 +
 *   recompute_attn_core | coat, agoq, int8, int4, agoq_balanced: that policy, no recomputation.
 * Engine convention: a policy whose gradients are "native" (bf16) keeps fp32 main gradients, as
 * Megatron trains and as agoq_step_config_default sets; an explicit "grad" is taken as given. */
#include "runners/step_cfg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

static const struct {
    const char *name, *policy;
    long recompute_layers;
    int selective;
} g_presets[] = {
    {"bf16", "bf16", 0, 0},  {"recompute", "bf16", -1, 0}, {"selective", "bf16", 0, 1},
    {"coat", "coat", 0, 0},  {"agoq", "agoq", 0, 0},       {"int8", "int8", 0, 0},
    {"int4", "int4", 0, 0},  {"agoq_balanced", "agoq_balanced", 0, 0},
};
#define NPRESETS (sizeof g_presets / sizeof g_presets[0])

/* Roles a run's "store" may set: the saved tensors the engine produces (step/plan.c). */
static const agoq_role g_store_roles[] = {AGOQ_ROLE_NORM_IN, AGOQ_ROLE_QKV_IN,  AGOQ_ROLE_ATTENTION,
                                          AGOQ_ROLE_FFN1_IN, AGOQ_ROLE_FC1_OUT, AGOQ_ROLE_FFN2_IN};
#define STORE_ROLES "norm_in, qkv_in, attention, ffn1_in, fc1_out, ffn2_in"

const char *step_preset_names(void) { return "bf16, recompute, selective, coat, agoq, int8, int4, agoq_balanced"; }

static int preset(const char *name) {
    for (size_t i = 0; i < NPRESETS; i++)
        if (name && strcmp(name, g_presets[i].name) == 0) return (int)i;
    return -1;
}

/* A number or a non-empty array of integers in [lo, hi]; missing: dflt. */
static int long_list(jconf c, const cJSON *cfg, const char *key, long lo, long hi, long dflt, long *out, size_t *n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    *n = 0;
    if (!v || cJSON_IsNumber(v)) {
        if (jconf_long(c, cfg, key, 0, lo, hi, dflt, &out[0])) return -1;
        *n = 1;
        return 0;
    }
    double *a;
    size_t k;
    if (jconf_nums(c, cfg, key, 1, (double)lo, (double)hi, &a, &k)) return -1;
    for (size_t i = 0; i < k; i++) {
        if (a[i] != floor(a[i]) || i >= STEP_MAX_AXIS) {
            agoq_error("%s: key '%s.%s[%zu]': expected an integer (at most %d values)", c.file, c.prefix, key, i,
                       STEP_MAX_AXIS);
            free(a);
            return -1;
        }
        out[i] = (long)a[i];
    }
    *n = k;
    free(a);
    return 0;
}

/* "model": a card name or an array of them. */
static int parse_models(jconf c, const cJSON *cfg, step_exp *x) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "model");
    const char *one = "llama2-7b", **names = &one;
    size_t n = 1;
    if (v && cJSON_IsArray(v)) {
        if (jconf_strs(c, cfg, "model", 1, &names, &n)) return -1;
    } else if (jconf_str(c, cfg, "model", 0, "llama2-7b", &one)) {
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char why[512];
        agoq_error_capture(why, sizeof why);
        int bad = i >= STEP_MAX_AXIS || agoq_model_load(names[i], &x->cards[i]);
        agoq_error_capture(NULL, 0);
        if (bad) {
            agoq_error("%s: key '%s.model': %s", c.file, c.prefix,
                       i >= STEP_MAX_AXIS ? "too many models" : why);
            rc = -1;
        }
    }
    x->ncards = n;
    if (names != &one) free(names);
    return rc;
}

static int store_value(jconf c, const cJSON *o, const char *key, agoq_store *st) {
    const char *s;
    if (jconf_str(c, o, key, 1, NULL, &s)) return -1;
    if (agoq_store_parse(s, st)) {
        agoq_error("%s: key '%s.%s': bad store '%s' (native, recompute, fp32 or <format>[/<block>]; formats: %s)",
                   c.file, c.prefix, key, s, agoq_format_names());
        return -1;
    }
    return 0;
}

/* "store": {role: store}. */
static int parse_stores(jconf c, const cJSON *o, agoq_policy *pol) {
    const cJSON *e;
    cJSON_ArrayForEach(e, o) {
        int r = agoq_role_by_name(e->string), ok = 0;
        for (size_t i = 0; i < sizeof g_store_roles / sizeof g_store_roles[0]; i++) ok |= r == (int)g_store_roles[i];
        if (!ok) {
            agoq_error("%s: key '%s.%s': unknown role '%s' (roles the engine stores: " STORE_ROLES ")", c.file,
                       c.prefix, e->string, e->string);
            return -1;
        }
        if (store_value(c, o, e->string, &pol->act[r])) return -1;
    }
    return 0;
}

static void apply_preset(int p, step_run_spec *r) {
    agoq_policy_by_name(g_presets[p].policy, &r->pol);
    r->recompute_layers = g_presets[p].recompute_layers;
    r->selective = g_presets[p].selective;
}

/* runs[i]: a preset name or {name, policy, recompute_layers, selective, store, grad, moments,
 * fused_optimizer}. */
static int parse_run(jconf c, const cJSON *e, size_t i, const step_exp *x, step_run_spec *r) {
    static const char *const keys[] = {"name", "policy", "recompute_layers", "selective", "store", "grad", "moments",
                                       "fused_optimizer", NULL};
    char key[64], sub[96];
    snprintf(key, sizeof key, "%s.runs[%zu]", c.prefix, i);
    jconf ci = {c.file, key};
    memset(r, 0, sizeof *r);
    if (cJSON_IsString(e)) {
        int p = preset(e->valuestring);
        if (p < 0) {
            agoq_error("%s: key '%s': unknown run '%s' (presets: %s; or an object with \"policy\": one of %s)", c.file,
                       key, e->valuestring, step_preset_names(), agoq_policy_names());
            return -1;
        }
        apply_preset(p, r);
        if (r->pol.grad.kind == AGOQ_STORE_NATIVE) r->pol.grad.kind = AGOQ_STORE_FP32;
        snprintf(r->name, sizeof r->name, "%s", e->valuestring);
        return 0;
    }
    if (!cJSON_IsObject(e)) {
        agoq_error("%s: key '%s': expected a run name or an object", c.file, key);
        return -1;
    }
    const char *name, *policy;
    const cJSON *rl = cJSON_GetObjectItemCaseSensitive(e, "recompute_layers"), *store;
    if (jconf_only(ci, e, keys) || jconf_str(ci, e, "name", 1, NULL, &name) ||
        jconf_str(ci, e, "policy", 0, NULL, &policy) || jconf_obj(ci, e, "store", 0, &store))
        return -1;
    if (strlen(name) == 0 || strlen(name) >= sizeof r->name) {
        agoq_error("%s: key '%s.name': expected 1 to %zu characters", c.file, key, sizeof r->name - 1);
        return -1;
    }
    snprintf(r->name, sizeof r->name, "%s", name);
    int p = preset(name);
    if (policy) {
        if (agoq_policy_by_name(policy, &r->pol)) {
            agoq_error("%s: key '%s.policy': unknown policy '%s' (valid: %s)", c.file, key, policy, agoq_policy_names());
            return -1;
        }
        if (p >= 0 && strcmp(g_presets[p].policy, policy) == 0) apply_preset(p, r); /* {"name": "recompute", "policy": "bf16"} */
    } else if (p >= 0) {
        apply_preset(p, r);
    } else {
        agoq_error("%s: key '%s.name': '%s' is not a preset run (%s): give \"policy\" (one of %s)", c.file, key, name,
                   step_preset_names(), agoq_policy_names());
        return -1;
    }
    if (r->pol.grad.kind == AGOQ_STORE_NATIVE) r->pol.grad.kind = AGOQ_STORE_FP32;
    if (rl && cJSON_IsString(rl)) {
        if (strcmp(rl->valuestring, "min_fit") != 0) {
            agoq_error("%s: key '%s.recompute_layers': expected an integer in [-1, %ld] or \"min_fit\"", c.file, key,
                       x->layers);
            return -1;
        }
        if (x->budget_gb <= 0) {
            agoq_error("%s: key '%s.recompute_layers': \"min_fit\" needs a budget (config.budget_gb > 0)", c.file, key);
            return -1;
        }
        r->min_fit = 1;
    } else if (jconf_long(ci, e, "recompute_layers", 0, -1, x->layers, r->recompute_layers, &r->recompute_layers)) {
        return -1;
    }
    int fused = 1;
    if (jconf_bool(ci, e, "selective", 0, r->selective, &r->selective) ||
        jconf_bool(ci, e, "fused_optimizer", 0, 1, &fused))
        return -1;
    r->adam_unfused = !fused;
    if (store && parse_stores(jconf_child(ci, "store", sub, sizeof sub), store, &r->pol)) return -1;
    if (cJSON_GetObjectItemCaseSensitive(e, "grad") && store_value(ci, e, "grad", &r->pol.grad)) return -1;
    if (cJSON_GetObjectItemCaseSensitive(e, "moments") && store_value(ci, e, "moments", &r->pol.moments)) return -1;
    return 0;
}

static int parse_runs(jconf c, const cJSON *cfg, step_exp *x) {
    static const char *const dflt[] = {"bf16", "recompute", "agoq"};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "runs");
    x->nruns = 0;
    if (!v) {
        for (size_t i = 0; i < 3; i++) {
            cJSON *s = cJSON_CreateString(dflt[i]);
            parse_run(c, s, i, x, &x->runs[x->nruns++]);
            cJSON_Delete(s);
        }
        return 0;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0 || cJSON_GetArraySize(v) > STEP_MAX_RUNS) {
        agoq_error("%s: key '%s.runs': expected an array of 1 to %d runs (names or objects)", c.file, c.prefix,
                   STEP_MAX_RUNS);
        return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        step_run_spec *r = &x->runs[x->nruns];
        if (parse_run(c, e, x->nruns, x, r)) return -1;
        for (size_t j = 0; j < x->nruns; j++)
            if (strcmp(x->runs[j].name, r->name) == 0) {
                agoq_error("%s: key '%s.runs[%zu]': run name '%s' repeats runs[%zu] (names must be unique)", c.file,
                           c.prefix, x->nruns, r->name, j);
                return -1;
            }
        x->nruns++;
    }
    return 0;
}

const char *const step_exp_keys[] = {"model", "layers", "tp", "pp", "stage", "seq", "micro_batch", "micro_batches",
                                     "rope_base", "norm_eps", "reps", "warmup", "seed", "grad_error", "dry",
                                     "budget_gb", "fit", "runs", "dump", "gemm", NULL};

int step_exp_parse(const agoq_run_ctx *ctx, const cJSON *cfg, step_exp *x) {
    const char *const *keys = step_exp_keys;
    jconf c = ctx->where;
    memset(x, 0, sizeof *x);
    const char *fit, *gemm;
    double seed;
    if (jconf_only(c, cfg, keys) || parse_models(c, cfg, x) || jconf_long(c, cfg, "layers", 0, 1, 4096, 4, &x->layers) ||
        long_list(c, cfg, "tp", 1, 4096, 1, x->tp, &x->ntp) || jconf_long(c, cfg, "pp", 0, 1, AGOQ_MAX_STAGES, 1, &x->pp) ||
        long_list(c, cfg, "stage", 0, AGOQ_MAX_STAGES - 1, 0, x->stage, &x->nstage) ||
        long_list(c, cfg, "seq", 1, 1L << 24, 4096, x->seq, &x->nseq) ||
        jconf_long(c, cfg, "micro_batch", 0, 1, 1 << 16, 1, &x->micro_batch) ||
        long_list(c, cfg, "micro_batches", 1, 1 << 16, 1, x->micro_batches, &x->nmb) ||
        jconf_num(c, cfg, "rope_base", 0, 1.0001, 1e9, 10000.0, &x->rope_base) ||
        jconf_num(c, cfg, "norm_eps", 0, 1e-12, 1.0, 1e-5, &x->norm_eps) ||
        jconf_long(c, cfg, "reps", 0, 1, 100000, 5, &x->reps) || jconf_long(c, cfg, "warmup", 0, 0, 100000, 2, &x->warmup) ||
        jconf_num(c, cfg, "seed", 0, 0, 9007199254740992.0, (double)ctx->seed, &seed) ||
        jconf_bool(c, cfg, "grad_error", 0, 0, &x->grad_error) || jconf_bool(c, cfg, "dry", 0, 0, &x->dry) ||
        jconf_num(c, cfg, "budget_gb", 0, 0, 1e6, 0, &x->budget_gb) || jconf_str(c, cfg, "fit", 0, "error", &fit) ||
        jconf_str(c, cfg, "dump", 0, NULL, &x->dump) || jconf_str(c, cfg, "gemm", 0, "auto", &gemm))
        return -1;
    if (agoq_step_gemm_parse(gemm, &x->gemm)) {
        agoq_error("%s: key '%s.gemm': unknown value '%s' (auto, cublaslt or fused)", c.file, c.prefix, gemm);
        return -1;
    }
    if (seed != floor(seed)) {
        agoq_error("%s: key '%s.seed': expected an integer", c.file, c.prefix);
        return -1;
    }
    x->seed = (uint64_t)seed;
    if (strcmp(fit, "error") && strcmp(fit, "record")) {
        agoq_error("%s: key '%s.fit': unknown value '%s' (error or record)", c.file, c.prefix, fit);
        return -1;
    }
    x->fit_record = strcmp(fit, "record") == 0;
    for (size_t i = 0; i < x->nstage; i++)
        if (x->stage[i] >= x->pp) {
            agoq_error("%s: key '%s.stage': %ld is not a stage of pp %ld (0..%ld)", c.file, c.prefix, x->stage[i], x->pp,
                       x->pp - 1);
            return -1;
        }
    return parse_runs(c, cfg, x);
}

void step_exp_config(const step_exp *x, const step_axes *a, const step_run_spec *r, long k, int quiet,
                     agoq_step_config *c) {
    agoq_step_config_default(c, &x->cards[a->ci]);
    c->ms.pol = r->pol;
    agoq_parallel *p = &c->ms.par;
    p->tp = a->tp;
    p->pp = x->pp;
    p->seq = a->seq;
    p->micro_batch = x->micro_batch;
    p->num_microbatches = a->micro_batches;
    p->recompute_layers = k;
    p->recompute_attn_core = r->selective;
    c->adam_unfused = r->adam_unfused;
    c->layers = x->layers;
    c->stage = (int)a->stage;
    c->reps = (int)x->reps;
    c->warmup = (int)x->warmup;
    c->grad_error = x->grad_error;
    c->rope_base = (float)x->rope_base;
    c->norm_eps = (float)x->norm_eps;
    c->seed = x->seed;
    c->dry = x->dry;
    c->quiet = quiet;
    c->gemm = x->gemm;
}

void step_gemm_record(cJSON *o, agoq_step_gemm key, const agoq_step_gemm_site *sites, int dry) {
    cJSON *g = cJSON_AddObjectToObject(o, "gemm"), *t = NULL;
    cJSON_AddStringToObject(g, "key", agoq_step_gemm_name(key));
    cJSON_AddStringToObject(g, "library", "cublaslt (bf16, fp32 accumulate); fused: kernels/gemm/gemm_wg.h");
    for (int s = 0; s < AGOQ_GEMM_SITE_COUNT; s++) {
        const agoq_step_gemm_site *e = &sites[s];
        char buf[200];
        if (e->fallback[0]) snprintf(buf, sizeof buf, "cublaslt (fallback: %s)", e->fallback);
        else snprintf(buf, sizeof buf, "%s", e->fused ? "fused" : "cublaslt");
        cJSON_AddStringToObject(g, agoq_gemm_site_name((agoq_gemm_site)s), buf);
        if (!e->timed) continue;
        if (!t) t = cJSON_AddObjectToObject(g, "timed_ms");
        cJSON *ts = cJSON_AddObjectToObject(t, agoq_gemm_site_name((agoq_gemm_site)s));
        cJSON_AddNumberToObject(ts, "cublaslt", e->ms_cublaslt);
        cJSON_AddNumberToObject(ts, "fused", e->ms_fused);
    }
    if (key == AGOQ_STEP_GEMM_AUTO && dry) cJSON_AddStringToObject(g, "timed_ms", "not timed (dry)");
}
