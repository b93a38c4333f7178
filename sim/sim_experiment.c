/* Experiment kind "simulate": step time, throughput and memory per GPU at scale (mode "step"),
 * or the data-parallel gradient all-reduce alone (mode "comm", the paper's Table 4). Every
 * record is a prediction: results are marked "simulated", and the calibration of each machine
 * (value + source) is written to meta.calibration.
 *
 * config keys, both modes:
 *   mode "step"|"comm", machines [machine files] (required), algo ring|tree|auto,
 *   paper {source, columns, rows, key, key_scale, map}: the paper's reported numbers, copied into
 *     the experiment file with their source; a record whose `key` field equals a row's key
 *     column (times key_scale) gets "paper_<field>" = that row's column map[<label>][<field>],
 *     where label is the record's method (step) or machine name (comm).
 * step: models [cards], methods [megatron zero1 zero3 zeropp coat agoq], seqs [tokens],
 *   gpus [counts] (dp = gpus / (tp pp)) or dp, tp, pp, vpp, micro_batch, global_batch or
 *   batch_per_replica (global = it x dp), recompute (-1 auto), overlap, fused_quant,
 *   accounting real|paper, baseline (method: adds speedup = its step / ours at the same point),
 *   memory_budget_gb (every machine's device memory replaced by this budget),
 *   variants [{label, policy, act: "fmt"|{role: store}, grad: store}] (ablations: policy replaces
 *   the method's memory policy; stores are "native", "fp32", "recompute" or "format[/block]";
 *   act "fmt" re-formats every quantized role).
 * holdout: measured [step results files], calibrate_seqs, time_tolerance, peak_tolerance: the step
 *   model calibrated on measured `agoq step` records, checked on held-out seqs (sim_holdout.c).
 * comm: tp (groups sharing a NIC), dp, sizes [bytes of the fp32 gradient buffer] or min_bytes,
 *   max_bytes, factor (the -b -e -f sweep), grad (quantized wire format, default dyn8/256). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "models/memory.h"
#include "sim/sim_experiment.h"

/* The memory model's store syntax (models/memory.h), one parser for both. */
int agoq_sim_parse_store(const char *s, agoq_store *out) { return agoq_store_parse(s, out); }

static int store_arg(jconf c, const char *key, const char *v, agoq_store *out) {
    if (agoq_sim_parse_store(v, out) == 0) return 0;
    agoq_error("%s: key '%s.%s': bad store '%s' (native, fp32, recompute or a format[/block]: %s)", c.file, c.prefix, key,
               v, agoq_format_names());
    return -1;
}

/* Applies one variant object to a policy. */
static int apply_variant(jconf c, const cJSON *v, agoq_policy *pol, const char **label) {
    static const char *const keys[] = {"label", "policy", "act", "grad", NULL};
    const char *grad, *policy;
    if (!cJSON_IsObject(v)) {
        agoq_error("%s: key '%s': expected an object {label, policy, act, grad}", c.file, c.prefix);
        return -1;
    }
    if (jconf_only(c, v, keys) || jconf_str(c, v, "label", 1, NULL, label) || jconf_str(c, v, "grad", 0, NULL, &grad) ||
        jconf_str(c, v, "policy", 0, NULL, &policy))
        return -1;
    /* A whole memory-model policy first (e.g. agoq_balanced), then the per-role changes. */
    if (policy && agoq_policy_by_name(policy, pol)) {
        agoq_error("%s: key '%s.policy': unknown value '%s' (valid: %s)", c.file, c.prefix, policy, agoq_policy_names());
        return -1;
    }
    agoq_store st;
    if (grad) {
        if (store_arg(c, "grad", grad, &st)) return -1;
        if (st.kind == AGOQ_STORE_RECOMPUTE) {
            agoq_error("%s: key '%s.grad': gradients cannot be recomputed", c.file, c.prefix);
            return -1;
        }
        pol->grad = st;
    }
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(v, "act");
    if (cJSON_IsString(act)) {
        if (store_arg(c, "act", act->valuestring, &st)) return -1;
        for (int r = 0; r < AGOQ_ROLE_COUNT; r++)
            if (pol->act[r].kind == AGOQ_STORE_QUANT) pol->act[r] = st;
    } else if (cJSON_IsObject(act)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, act) {
            int role = agoq_role_by_name(e->string);
            if (role < 0 || !cJSON_IsString(e)) {
                agoq_error("%s: key '%s.act.%s': expected a known role name with a store string", c.file, c.prefix, e->string);
                return -1;
            }
            if (store_arg(c, "act", e->valuestring, &st)) return -1;
            pol->act[role] = st;
        }
    } else if (act) {
        agoq_error("%s: key '%s.act': expected a store string or an object {role: store}", c.file, c.prefix);
        return -1;
    }
    return 0;
}

static int parse_paper(jconf c, const cJSON *cfg, agoq_sim_paper *p) {
    static const char *const keys[] = {"source", "columns", "rows", "key", "key_scale", "map", "note", NULL};
    const cJSON *obj;
    char buf[64];
    memset(p, 0, sizeof *p);
    if (jconf_obj(c, cfg, "paper", 0, &obj)) return -1;
    if (!obj) return 0;
    jconf pc = jconf_child(c, "paper", buf, sizeof buf);
    if (jconf_only(pc, obj, keys) || jconf_str(pc, obj, "source", 1, NULL, &p->source) ||
        jconf_str(pc, obj, "key", 1, NULL, &p->key) || jconf_num(pc, obj, "key_scale", 0, 1e-9, 1e12, 1, &p->key_scale) ||
        jconf_obj(pc, obj, "map", 1, &p->map))
        return -1;
    if (strncmp(p->source, "paper", 5) != 0) {
        agoq_error("%s: key '%s.source': must start with \"paper\" (these are reported, not our, numbers)", c.file, pc.prefix);
        return -1;
    }
    p->cols = cJSON_GetObjectItemCaseSensitive(obj, "columns");
    p->rows = cJSON_GetObjectItemCaseSensitive(obj, "rows");
    if (!cJSON_IsArray(p->cols) || !cJSON_IsArray(p->rows)) {
        agoq_error("%s: key '%s': needs arrays 'columns' and 'rows'", c.file, pc.prefix);
        return -1;
    }
    return 0;
}

static int column_index(const cJSON *cols, const char *name) {
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cols) {
        if (cJSON_IsString(e) && strcmp(e->valuestring, name) == 0) return i;
        i++;
    }
    return -1;
}

int agoq_sim_paper_attach(const agoq_sim_paper *p, const char *label, double key_value, cJSON *rec) {
    if (!p->map) return 0;
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(p->map, label);
    int kc = column_index(p->cols, p->key);
    if (!cJSON_IsObject(sub) || kc < 0) return 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, p->rows) {
        const cJSON *k = cJSON_GetArrayItem(row, kc);
        if (!cJSON_IsNumber(k) || fabs(k->valuedouble * p->key_scale - key_value) > 1e-9 * fabs(key_value)) continue;
        const cJSON *f;
        cJSON_ArrayForEach(f, sub) {
            int ci = cJSON_IsString(f) ? column_index(p->cols, f->valuestring) : -1;
            const cJSON *v = ci >= 0 ? cJSON_GetArrayItem(row, ci) : NULL;
            if (!cJSON_IsNumber(v)) {
                agoq_error("paper map '%s.%s': column '%s' not in the paper rows", label, f->string,
                           cJSON_IsString(f) ? f->valuestring : "?");
                return -1;
            }
            char key[96];
            snprintf(key, sizeof key, "paper_%s", f->string);
            results_num(rec, key, v->valuedouble);
        }
        return 0;
    }
    return 0;
}

/* budget_gb > 0 replaces every machine's device memory (config.memory_budget_gb: the paper's
 * 48 GB A6000 budget on another machine's rates). */
static int load_machines(jconf c, const cJSON *cfg, double budget_gb, agoq_machine **out, size_t *n, agoq_results *res,
                         int quiet) {
    const char **files;
    if (jconf_strs(c, cfg, "machines", 1, &files, n)) return -1;
    *out = calloc(*n, sizeof **out);
    cJSON *cal = cJSON_AddObjectToObject(res->meta, "calibration");
    for (size_t i = 0; i < *n; i++) {
        agoq_error_context("%s: key '%s.machines[%zu]': ", c.file, c.prefix, i);
        int bad = agoq_machine_load(files[i], &(*out)[i]);
        agoq_error_context(NULL);
        if (bad) {
            free(files);
            return -1;
        }
        if (budget_gb > 0) {
            agoq_calib *m = &(*out)[i].cal[AGOQ_CAL_GPU_MEM_GIB];
            m->value = budget_gb * 1e9 / 1073741824.0;
            m->measured = 0;
            snprintf(m->source, sizeof m->source, "experiment: a budget of %g GB (config.memory_budget_gb), not the GPU's memory",
                     budget_gb);
        }
        cJSON_AddItemToObject(cal, (*out)[i].name, agoq_machine_json(&(*out)[i]));
        /* The calibration heads the text table too: which numbers are assumed, which measured. */
        for (int k = 0; k < AGOQ_CAL_COUNT && !quiet; k++)
            printf("# %s: %-20s %10g  %s\n", (*out)[i].name, agoq_calib_keys[k], (*out)[i].cal[k].value,
                   (*out)[i].cal[k].source);
    }
    free(files);
    return 0;
}

const char *const agoq_sim_step_keys[] = {"mode", "machines", "algo", "paper", "models", "methods", "seqs", "gpus",
                                     "dp", "tp", "pp", "vpp", "micro_batch", "global_batch", "batch_per_replica",
                                     "recompute", "overlap", "fused_quant", "accounting", "baseline", "variants",
                                     "memory_budget_gb", NULL};
const char *const agoq_sim_comm_keys[] = {"mode", "machines", "algo", "paper", "tp", "dp", "sizes", "grad",
                                     "min_bytes", "max_bytes", "factor", NULL};

int agoq_exp_simulate(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    jconf c = ctx->where;
    const char *mode, *algo_name;
    if (jconf_str(c, cfg, "mode", 0, "step", &mode) || jconf_str(c, cfg, "algo", 0, "auto", &algo_name)) return -1;
    int algo = agoq_allreduce_algo_by_name(algo_name);
    if (algo < 0) {
        agoq_error("%s: key '%s.algo': unknown value '%s' (valid: ring, tree, auto)", c.file, c.prefix, algo_name);
        return -1;
    }
    if (strcmp(mode, "holdout") == 0) return agoq_sim_run_holdout(ctx, cfg, res);
    int is_step = strcmp(mode, "step") == 0;
    if (!is_step && strcmp(mode, "comm") != 0) {
        agoq_error("%s: key '%s.mode': unknown value '%s' (valid: step, comm, holdout)", c.file, c.prefix, mode);
        return -1;
    }
    if (jconf_only(c, cfg, is_step ? agoq_sim_step_keys : agoq_sim_comm_keys)) return -1;
    agoq_sim_paper paper;
    if (parse_paper(c, cfg, &paper)) return -1;
    agoq_machine *machines = NULL;
    size_t nm = 0;
    /* Parse everything that can fail before simulating anything. */
    double budget_gb = 0;
    if (is_step && jconf_num(c, cfg, "memory_budget_gb", 0, 0, 1e6, 0, &budget_gb)) return -1;
    int rc = load_machines(c, cfg, budget_gb, &machines, &nm, res, ctx->check_only);
    if (rc == 0) {
        results_set_source(res, "simulated");
        rc = is_step ? agoq_sim_run_step(ctx, cfg, machines, nm, (agoq_allreduce_algo)algo, &paper, res)
                     : agoq_sim_run_comm(ctx, cfg, machines, nm, (agoq_allreduce_algo)algo, &paper, res);
    }
    free(machines);
    return rc;
}

int agoq_sim_variants(jconf c, const cJSON *cfg, const agoq_policy *base, agoq_policy *out, const char **labels,
                      size_t max, size_t *n) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(cfg, "variants");
    *n = 0;
    if (!arr) {
        out[0] = *base;
        labels[0] = "default";
        *n = 1;
        return 0;
    }
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0 || (size_t)cJSON_GetArraySize(arr) > max) {
        agoq_error("%s: key '%s.variants': expected 1..%zu variant objects", c.file, c.prefix, max);
        return -1;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) {
        char buf[96], idx[32];
        snprintf(idx, sizeof idx, "variants[%zu]", *n);
        out[*n] = *base;
        if (apply_variant(jconf_child(c, idx, buf, sizeof buf), v, &out[*n], &labels[*n])) return -1;
        (*n)++;
    }
    return 0;
}
