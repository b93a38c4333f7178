/* Experiment kind "simulate", mode "holdout": the step-time model calibrated by measured
 * `agoq step` records on some sequence lengths, checked on the others (issue 16).
 *
 *   {"mode": "holdout", "measured": ["results/h200/step_seq.json", ...],
 *    "calibrate_seqs": [4096, 16384, 65536], "skip_seqs": [1024], "time_tolerance": 0.10,
 *    "peak_tolerance": 0.03}
 * (skip_seqs: records left out altogether, e.g. a sweep's warm-up point)
 *
 * Inputs (sim/step_calib.h counts them): every complete measured record of the files (a missing
 * file is skipped and named in meta.holdout.missing; no record at all is an error). From the
 * records whose seq is in calibrate_seqs:
 *   gemm rate    sum of executed GEMM FLOPs / sum of GEMM ms           (one rate for all)
 *   attn rate    sum of attention FLOPs / sum of attention ms          (one rate for all)
 *   and per run group (model, tp, run name):
 *   c_other      ms per token-layer of the memory-bound ops (norms, RoPE, SwiGLU, quantization,
 *                gradient storage, residuals), sum of other_ms / sum of token_layers
 *   c_opt        optimizer ms per parameter
 *   f            sum of step_ms / sum of profiled op ms (the profile's event overhead)
 * Prediction of every record (calibration ones too, role "calibration" / "held_out"):
 *   predicted_ms = f (gemm_flops / gemm rate + attn_flops / attn rate + c_other token_layers
 *                     + c_opt params)
 * i.e. GEMMs linear and attention quadratic in seq at the calibrated rates, the rest linear in
 * tokens: exactly what the step-time model assumes, so its error on held-out seqs is the error
 * of extrapolating the simulator in seq. Peak memory: predicted_peak_bytes is the memory model's
 * total for the record's setup (models/memory.c, model_total_bytes), plan_peak_bytes the step
 * engine's dry plan plus cuDNN's workspace (needed_bytes + attn_workspace_bytes); both against the
 * measured arena high-water mark peak_bytes. Records are predictions ("simulated"); each carries
 * the measured values it is compared with and says which inputs were measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "core/results.h"
#include "sim/sim_experiment.h"
#include "sim/step_calib.h"

typedef struct {
    const cJSON *rec;
    const char *file;
    agoq_step_meas m;
    int calib, group;
} hrec;

typedef struct {
    char key[160];
    double other_ms, token_layers, opt_ms, params, step_ms, op_ms;
    int n;
} hgroup;

static const char *str(const cJSON *o, const char *k) { return results_get_str(o, k); }

static double num(const cJSON *o, const char *k) { return results_get_num(o, k); }

static int group_of(hgroup *g, int *ng, int cap, const cJSON *rec) {
    char key[160];
    snprintf(key, sizeof key, "%s tp%g %s", str(rec, "model"), num(rec, "tp"), str(rec, "name"));
    for (int i = 0; i < *ng; i++)
        if (!strcmp(g[i].key, key)) return i;
    if (*ng >= cap) return -1;
    memset(&g[*ng], 0, sizeof g[*ng]);
    snprintf(g[*ng].key, sizeof g[*ng].key, "%s", key);
    return (*ng)++;
}

static void add_rate(cJSON *cal, const char *k, double v, const char *source) {
    cJSON *o = cJSON_AddObjectToObject(cal, k);
    results_num(o, "value", v);
    cJSON_AddStringToObject(o, "source", source);
}

int agoq_sim_run_holdout(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    static const char *const keys[] = {"mode", "measured", "calibrate_seqs", "skip_seqs", "time_tolerance",
                                       "peak_tolerance", NULL};
    jconf c = ctx->where;
    const char **files = NULL;
    double *cseq = NULL, *skip = NULL, ttol, ptol;
    size_t nf = 0, ncs = 0, nskip = 0;
    if (jconf_only(c, cfg, keys) || jconf_strs(c, cfg, "measured", 1, &files, &nf) ||
        jconf_nums(c, cfg, "calibrate_seqs", 1, 1, 1e8, &cseq, &ncs) ||
        jconf_nums(c, cfg, "skip_seqs", 0, 1, 1e8, &skip, &nskip) ||
        jconf_num(c, cfg, "time_tolerance", 0, 0, 10, 0.10, &ttol) || jconf_num(c, cfg, "peak_tolerance", 0, 0, 10, 0.03, &ptol)) {
        free(files);
        free(cseq);
        free(skip);
        return -1;
    }
    if (ctx->check_only) { /* the measured files are read (and may be missing) only by a run */
        free(files);
        free(cseq);
        free(skip);
        return 0;
    }
    results_set_source(res, "simulated");
    cJSON *meta = cJSON_AddObjectToObject(res->meta, "holdout"), *missing = cJSON_AddArrayToObject(meta, "missing");
    cJSON **docs = calloc(nf, sizeof *docs);
    enum { MAXR = 4096, MAXG = 256 };
    hrec *r = calloc(MAXR, sizeof *r);
    hgroup *g = calloc(MAXG, sizeof *g);
    int nr = 0, ng = 0, rc = -1;
    for (size_t i = 0; i < nf; i++) {
        if (access(files[i], R_OK) != 0) {
            cJSON_AddItemToArray(missing, cJSON_CreateString(files[i]));
            continue;
        }
        if (!(docs[i] = agoq_read_json(files[i]))) goto out;
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(docs[i], "records")) {
            int skipped = 0;
            for (size_t k = 0; k < nskip; k++) skipped |= num(e, "seq") == skip[k];
            if (skipped || nr >= MAXR || agoq_step_meas_read(e, &r[nr].m)) continue;
            r[nr].rec = e;
            r[nr].file = files[i];
            for (size_t k = 0; k < ncs; k++) r[nr].calib |= num(e, "seq") == cseq[k];
            if ((r[nr].group = group_of(g, &ng, MAXG, e)) < 0) continue;
            nr++;
        }
    }
    double gf = 0, gms = 0, af = 0, ams = 0;
    int ncal = 0;
    for (int i = 0; i < nr; i++) {
        if (!r[i].calib) continue;
        hgroup *h = &g[r[i].group];
        const agoq_step_meas *m = &r[i].m;
        gf += m->gemm_flops, gms += m->gemm_ms, af += m->attn_flops, ams += m->attn_ms;
        h->other_ms += m->other_ms, h->token_layers += m->token_layers, h->opt_ms += m->opt_ms;
        h->params += m->params, h->step_ms += m->step_ms, h->op_ms += m->op_sum_ms, h->n++;
        ncal++;
    }
    if (ncal == 0) {
        agoq_error("%s: key '%s.calibrate_seqs': no complete measured step record at these seqs in 'measured' (%zu of %zu "
                   "files present; run the GPU sweeps first: tools/device_step.sh)",
                   c.file, c.prefix, nf - (size_t)cJSON_GetArraySize(missing), nf);
        goto out;
    }
    const double gemm_rate = gf / gms, attn_rate = af / ams; /* FLOPs per ms */
    cJSON *cal = cJSON_AddObjectToObject(meta, "calibration");
    char src[256];
    snprintf(src, sizeof src, "measured: %d calibration records' op profiles (GEMM FLOPs / GEMM ms)", ncal);
    add_rate(cal, "gemm_tflops", gemm_rate / 1e9, src);
    snprintf(src, sizeof src, "measured: %d calibration records' op profiles (attention FLOPs / attention ms)", ncal);
    add_rate(cal, "attention_tflops", attn_rate / 1e9, src);
    cJSON_AddStringToObject(meta, "assumed",
                            "FLOP counts (sim/step_calib.h: backward = 2x forward for GEMMs, 2.5x for flash attention); "
                            "memory-bound ops linear in token-layers; one GEMM and one attention rate for every shape");
    cJSON *groups = cJSON_AddObjectToObject(meta, "groups");
    for (int i = 0; i < ng; i++) {
        cJSON *o = cJSON_AddObjectToObject(groups, g[i].key);
        results_num(o, "calibration_records", g[i].n);
        results_num(o, "other_ns_per_token_layer", g[i].n ? 1e6 * g[i].other_ms / g[i].token_layers : NAN);
        results_num(o, "optimizer_ns_per_param", g[i].n ? 1e6 * g[i].opt_ms / g[i].params : NAN);
        results_num(o, "step_over_profile", g[i].n ? g[i].step_ms / g[i].op_ms : NAN);
    }
    printf("# calibration on seq");
    for (size_t k = 0; k < ncs; k++) printf(" %g", cseq[k]);
    printf(": GEMM %.1f TFLOP/s, attention %.1f TFLOP/s (measured, %d records)\n", gemm_rate / 1e9, attn_rate / 1e9, ncal);
    printf("# %-12s %3s %-16s %6s %-11s %11s %11s %7s %9s %9s %7s\n", "model", "tp", "name", "seq", "role", "measured_ms",
           "predicted_ms", "err", "peak_GB", "model_GB", "err");
    int nheld = 0, nok = 0, npk = 0, npl = 0, nplc = 0;
    for (int i = 0; i < nr; i++) {
        const hgroup *h = &g[r[i].group];
        const agoq_step_meas *m = &r[i].m;
        const cJSON *e = r[i].rec;
        cJSON *o = results_add_record(res);
        const char *role = r[i].calib ? "calibration" : h->n ? "held_out" : "no_calibration";
        cJSON_AddStringToObject(o, "model", str(e, "model"));
        results_num(o, "tp", num(e, "tp"));
        cJSON_AddStringToObject(o, "name", str(e, "name"));
        cJSON_AddStringToObject(o, "policy", str(e, "policy"));
        static const char *const copy[] = {"pp", "stage", "layers", "seq", "micro_batches", "recomputed_layers"};
        for (size_t k = 0; k < sizeof copy / sizeof copy[0]; k++) results_num(o, copy[k], num(e, copy[k]));
        cJSON_AddStringToObject(o, "role", role);
        cJSON_AddStringToObject(o, "measured_in", r[i].file);
        cJSON_AddStringToObject(o, "gpu", str(e, "gpu"));
        cJSON_AddStringToObject(o, "measured_inputs", "GEMM and attention rates, ms per token-layer of the memory-bound ops "
                                "and per parameter of the optimizer of this run group, profile overhead: op profiles of "
                                "the calibration records");
        cJSON_AddStringToObject(o, "assumed_inputs", "FLOP counts (backward 2x forward for GEMMs, 2.5x for flash "
                                "attention); memory-bound ops linear in token-layers; one rate per op class for every shape");
        double pred = NAN, pg = NAN, pa = NAN, po = NAN, pop = NAN;
        if (h->n) {
            const double f = h->step_ms / h->op_ms;
            pg = f * m->gemm_flops / gemm_rate;
            pa = f * m->attn_flops / attn_rate;
            po = f * m->token_layers * h->other_ms / h->token_layers;
            pop = f * m->params * h->opt_ms / h->params;
            pred = pg + pa + po + pop;
        }
        const double err = pred / m->step_ms - 1.0;
        results_num(o, "measured_ms", m->step_ms);
        results_num(o, "predicted_ms", pred);
        results_num(o, "time_err", err);
        results_num(o, "predicted_gemm_ms", pg);
        results_num(o, "predicted_attn_ms", pa);
        results_num(o, "predicted_other_ms", po);
        results_num(o, "predicted_optimizer_ms", pop);
        /* needed_bytes is the dry plan of the first k that fit on paper; where the measured need
           raised k (recomputed_layers_dry below recomputed_layers) it is another setup's plan:
           no plan comparison for that record */
        const cJSON *kd = cJSON_GetObjectItem(e, "recomputed_layers_dry");
        const int raised = cJSON_IsNumber(kd) && kd->valuedouble != num(e, "recomputed_layers");
        const double peak = num(e, "peak_bytes"), model = num(e, "model_total_bytes"),
                     plan = raised ? NAN : num(e, "needed_bytes") + num(e, "attn_workspace_bytes");
        results_num(o, "measured_peak_bytes", peak);
        results_num(o, "predicted_peak_bytes", model);
        const double peak_err = model / peak - 1.0, plan_err = plan / peak - 1.0;
        results_num(o, "peak_err", peak_err);
        results_num(o, "plan_peak_bytes", plan);
        results_num(o, "plan_err", plan_err);
        cJSON_AddBoolToObject(o, "time_within_tolerance", fabs(err) <= ttol);
        cJSON_AddBoolToObject(o, "peak_within_tolerance", fabs(peak_err) <= ptol);
        if (!r[i].calib && h->n) {
            nheld++;
            nok += fabs(err) <= ttol;
        }
        npk += fabs(peak_err) <= ptol;
        nplc += !raised;
        npl += !raised && fabs(plan_err) <= ptol;
        printf("  %-12s %3g %-16s %6g %-11s %11.2f %11.2f %+6.1f%% %9.3f %9.3f %+6.1f%%\n", str(e, "model"), num(e, "tp"),
               str(e, "name"), num(e, "seq"), role, m->step_ms, pred, 100 * err, peak / 1e9, model / 1e9,
               100 * peak_err);
    }
    results_num(meta, "held_out_records", nheld);
    results_num(meta, "held_out_time_within_tolerance", nok);
    results_num(meta, "peak_within_tolerance", npk);
    results_num(meta, "plan_peak_within_tolerance", npl);
    results_num(meta, "plan_peak_compared", nplc);
    results_num(meta, "time_tolerance", ttol);
    results_num(meta, "peak_tolerance", ptol);
    printf("# held out: %d of %d within %.0f%% of the measured step time; peak memory within %.0f%%: the memory model %d "
           "of %d (it has no backward transients), the engine's dry plan + cuDNN's workspace %d of %d\n", nok, nheld,
           100 * ttol, 100 * ptol, npk, nr, npl, nplc);
    rc = 0;
out:
    for (size_t i = 0; i < nf; i++) cJSON_Delete(docs[i]);
    free(docs);
    free(r);
    free(g);
    free(files);
    free(cseq);
    free(skip);
    return rc;
}
