/* The two modes of experiment kind "simulate" (keys documented in sim_experiment.c):
 *   step  one record per (machine, model, seq, gpus, variant, method): step time, tokens/s,
 *         memory per GPU, recomputed layers and the time breakdown (step_model.h)
 *   comm  one record per (machine, size): fp32 ring/tree all-reduce vs AGoQ's quantize ->
 *         all-to-all -> local sum -> all-gather of the quantized gradient (paper Table 4) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/common.h"
#include "sim/sim_experiment.h"

typedef struct {
    const char **models, **methods;
    size_t nmodels, nmethods, nseq, ngpus;
    double *seqs, *gpus;
    long dp, tp, pp, vpp, micro_batch, global_batch, batch_per_replica, recompute;
    int overlap, fused, baseline; /* baseline: method index or -1 */
    agoq_accounting acc;
} step_cfg;

static void step_cfg_free(step_cfg *s) {
    free(s->models);
    free(s->methods);
    free(s->seqs);
    free(s->gpus);
}

static int parse_step(jconf c, const cJSON *cfg, step_cfg *s) {
    const char *acc, *base;
    memset(s, 0, sizeof *s);
    if (jconf_strs(c, cfg, "models", 1, &s->models, &s->nmodels) || jconf_strs(c, cfg, "methods", 1, &s->methods, &s->nmethods) ||
        jconf_nums(c, cfg, "seqs", 1, 1, 1e8, &s->seqs, &s->nseq) || jconf_nums(c, cfg, "gpus", 0, 1, 1 << 20, &s->gpus, &s->ngpus) ||
        jconf_long(c, cfg, "dp", 0, 1, 1 << 20, 1, &s->dp) || jconf_long(c, cfg, "tp", 0, 1, 1024, 1, &s->tp) ||
        jconf_long(c, cfg, "pp", 0, 1, 1024, 1, &s->pp) || jconf_long(c, cfg, "vpp", 0, 1, 64, 1, &s->vpp) ||
        jconf_long(c, cfg, "micro_batch", 0, 1, 1 << 20, 1, &s->micro_batch) ||
        jconf_long(c, cfg, "global_batch", 0, 0, 1 << 24, 0, &s->global_batch) ||
        jconf_long(c, cfg, "batch_per_replica", 0, 0, 1 << 24, 0, &s->batch_per_replica) ||
        jconf_long(c, cfg, "recompute", 0, -1, 1 << 20, -1, &s->recompute) || jconf_bool(c, cfg, "overlap", 0, 1, &s->overlap) ||
        jconf_bool(c, cfg, "fused_quant", 0, 0, &s->fused) || jconf_str(c, cfg, "accounting", 0, "real", &acc) ||
        jconf_str(c, cfg, "baseline", 0, NULL, &base))
        return -1;
    if ((s->global_batch > 0) == (s->batch_per_replica > 0)) {
        agoq_error("%s: key '%s': give exactly one of 'global_batch' and 'batch_per_replica'", c.file, c.prefix);
        return -1;
    }
    if (strcmp(acc, "real") != 0 && strcmp(acc, "paper") != 0) {
        agoq_error("%s: key '%s.accounting': unknown value '%s' (valid: real, paper)", c.file, c.prefix, acc);
        return -1;
    }
    s->acc = strcmp(acc, "paper") == 0 ? AGOQ_ACCOUNT_PAPER : AGOQ_ACCOUNT_REAL;
    for (size_t i = 0; i < s->nmethods; i++)
        if (agoq_method_by_name(s->methods[i]) < 0) {
            agoq_error("%s: key '%s.methods[%zu]': unknown value '%s' (valid: %s)", c.file, c.prefix, i, s->methods[i],
                       agoq_method_names());
            return -1;
        }
    s->baseline = base ? agoq_method_by_name(base) : -1;
    if (base && s->baseline < 0) {
        agoq_error("%s: key '%s.baseline': unknown value '%s' (valid: %s)", c.file, c.prefix, base, agoq_method_names());
        return -1;
    }
    for (size_t i = 0; i < s->ngpus; i++)
        if ((long)s->gpus[i] % (s->tp * s->pp) || s->gpus[i] != floor(s->gpus[i])) {
            agoq_error("%s: key '%s.gpus[%zu]': %g is not a multiple of tp*pp = %ld", c.file, c.prefix, i, s->gpus[i],
                       s->tp * s->pp);
            return -1;
        }
    return 0;
}

static agoq_step_plan make_plan(const step_cfg *s, int method, long seq, long dp, agoq_allreduce_algo algo) {
    agoq_step_plan p;
    agoq_step_plan_defaults(&p, (agoq_method)method);
    p.tp = (int)s->tp;
    p.pp = (int)s->pp;
    p.dp = (int)dp;
    p.vpp = (int)s->vpp;
    p.micro_batch = (int)s->micro_batch;
    p.global_batch = (int)(s->global_batch > 0 ? s->global_batch : s->batch_per_replica * dp);
    p.seq = seq;
    p.recompute = (int)s->recompute;
    p.overlap = s->overlap;
    p.fused_quant = s->fused;
    p.algo = algo;
    p.acc = s->acc;
    return p;
}

static void add_step_record(cJSON *rec, const agoq_step_plan *p, const agoq_step_result *r) {
    const double ms = 1e3, gib = 1.0 / 1073741824.0;
    cJSON_AddNumberToObject(rec, "gpus", (double)p->tp * p->pp * p->dp);
    cJSON_AddNumberToObject(rec, "tp", p->tp);
    cJSON_AddNumberToObject(rec, "pp", p->pp);
    cJSON_AddNumberToObject(rec, "dp", p->dp);
    cJSON_AddNumberToObject(rec, "vpp", p->vpp);
    cJSON_AddNumberToObject(rec, "seq", (double)p->seq);
    results_num(rec, "seq_k", (double)p->seq / 1024.0);
    cJSON_AddNumberToObject(rec, "micro_batch", p->micro_batch);
    cJSON_AddNumberToObject(rec, "global_batch", p->global_batch);
    cJSON_AddNumberToObject(rec, "microbatches", r->microbatches);
    cJSON_AddNumberToObject(rec, "recompute", r->recompute);
    cJSON_AddNumberToObject(rec, "fits", r->fits);
    results_num(rec, "step_ms", ms * r->step_s);
    results_num(rec, "tokens_per_s", r->tokens_per_s);
    results_num(rec, "tokens_per_s_per_gpu", r->tokens_per_s_per_gpu);
    results_num(rec, "tflops_per_gpu", r->tflops_per_gpu);
    results_num(rec, "mem_GiB", r->mem_bytes * gib);
    results_num(rec, "mem_MB", r->mem_bytes / 1048576.0);
    results_num(rec, "act_GiB", r->act_bytes * gib);
    results_num(rec, "capacity_GiB", r->capacity_bytes * gib);
    results_num(rec, "compute_ms", ms * r->compute_s);
    results_num(rec, "recompute_ms", ms * r->recompute_s);
    results_num(rec, "tp_comm_ms", ms * r->tp_comm_s);
    results_num(rec, "pp_comm_ms", ms * r->pp_comm_s);
    results_num(rec, "bubble_ms", ms * r->bubble_s);
    results_num(rec, "quant_ms", ms * r->quant_s);
    results_num(rec, "dp_comm_ms", ms * r->dp_comm_s);
    results_num(rec, "dp_comm_total_ms", ms * r->dp_comm_total_s);
    results_num(rec, "optimizer_ms", ms * r->optimizer_s);
    results_num(rec, "grad_wire_bits", r->grad_wire_bits);
    results_num(rec, "qact_elems_per_layer", r->qact_elems);
}

/* paper_speedup = the paper's baseline time / the paper's time for this record's method. */
static int add_paper_speedup(const agoq_sim_paper *paper, const char *baseline, double seq, cJSON *rec) {
    cJSON *base = cJSON_CreateObject();
    int rc = agoq_sim_paper_attach(paper, baseline, seq, base);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(base, "paper_step_ms");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(rec, "paper_step_ms");
    if (rc == 0 && cJSON_IsNumber(b) && cJSON_IsNumber(o)) results_num(rec, "paper_speedup", b->valuedouble / o->valuedouble);
    cJSON_Delete(base);
    return rc;
}

int agoq_sim_run_step(const agoq_run_ctx *ctx, const cJSON *cfg, const agoq_machine *machines, size_t nm,
                      agoq_allreduce_algo algo, const agoq_sim_paper *paper, agoq_results *res) {
    jconf c = ctx->where;
    step_cfg s;
    int rc = -1;
    agoq_model_card *cards = NULL;
    agoq_policy *pols = NULL;
    const char **labels = NULL;
    size_t nvar = 0;
    if (parse_step(c, cfg, &s)) goto out;
    cards = calloc(s.nmodels, sizeof *cards);
    pols = calloc(s.nmethods * AGOQ_SIM_MAX_VARIANTS, sizeof *pols);
    labels = calloc(s.nmethods * AGOQ_SIM_MAX_VARIANTS, sizeof *labels);
    for (size_t i = 0; i < s.nmodels; i++) {
        agoq_error_context("%s: key '%s.models[%zu]': ", c.file, c.prefix, i);
        int bad = agoq_model_load(s.models[i], &cards[i]);
        agoq_error_context(NULL);
        if (bad) goto out;
    }
    for (size_t k = 0; k < s.nmethods; k++) {
        agoq_step_plan d;
        agoq_step_plan_defaults(&d, (agoq_method)agoq_method_by_name(s.methods[k]));
        if (agoq_sim_variants(c, cfg, &d.pol, pols + k * AGOQ_SIM_MAX_VARIANTS, labels + k * AGOQ_SIM_MAX_VARIANTS,
                              AGOQ_SIM_MAX_VARIANTS, &nvar))
            goto out;
    }
    if (ctx->check_only) {
        rc = 0;
        goto out;
    }
    size_t ngpus = s.ngpus ? s.ngpus : 1;
    size_t total = nm * s.nmodels * s.nseq * ngpus * nvar * s.nmethods, done = 0;
    double t0 = agoq_now_s();
    printf("# %-20s %-12s %-8s %-14s %5s %3s %3s %4s %7s %3s %4s %12s %12s %8s %12s %8s\n", "machine", "model", "method",
           "variant", "gpus", "tp", "pp", "dp", "seq", "R", "fits", "step_ms", "tok/s/gpu", "mem_GiB", "paper_ms", "speedup");
    for (size_t mi = 0; mi < nm; mi++)
        for (size_t di = 0; di < s.nmodels; di++)
            for (size_t si = 0; si < s.nseq; si++)
                for (size_t gi = 0; gi < ngpus; gi++) {
                    long dp = s.ngpus ? (long)s.gpus[gi] / (s.tp * s.pp) : s.dp;
                    double base_s = NAN;
                    /* a point the step model refuses is named in its one error line (cleared at out) */
                    agoq_error_context("%s: point machine %s, model %s, seq %g, dp %ld: ", c.file, machines[mi].name,
                                       cards[di].name, s.seqs[si], dp);
                    if (s.baseline >= 0) {
                        agoq_step_plan bp = make_plan(&s, s.baseline, (long)s.seqs[si], dp, algo);
                        agoq_step_result br;
                        if (agoq_step_simulate(&cards[di], &machines[mi], &bp, &br)) goto out;
                        base_s = br.step_s;
                    }
                    for (size_t vi = 0; vi < nvar; vi++)
                        for (size_t k = 0; k < s.nmethods; k++) {
                            int method = agoq_method_by_name(s.methods[k]);
                            agoq_step_plan p = make_plan(&s, method, (long)s.seqs[si], dp, algo);
                            p.pol = pols[k * AGOQ_SIM_MAX_VARIANTS + vi];
                            agoq_step_result r;
                            if (agoq_step_simulate(&cards[di], &machines[mi], &p, &r)) goto out;
                            cJSON *rec = results_add_record(res);
                            cJSON_AddStringToObject(rec, "machine", machines[mi].name);
                            cJSON_AddStringToObject(rec, "model", cards[di].name);
                            cJSON_AddStringToObject(rec, "method", s.methods[k]);
                            cJSON_AddNumberToObject(rec, "method_id", (double)k);
                            cJSON_AddStringToObject(rec, "variant", labels[k * AGOQ_SIM_MAX_VARIANTS + vi]);
                            cJSON_AddNumberToObject(rec, "variant_id", (double)vi);
                            add_step_record(rec, &p, &r);
                            agoq_machine_add_inputs(&machines[mi], rec);
                            /* Layouts larger than the real cluster of the machine file are
                             * extrapolations of its node type: say so in the record. */
                            cJSON_AddNumberToObject(rec, "beyond_cluster",
                                                    p.tp * p.pp * p.dp > machines[mi].nodes * machines[mi].gpus_per_node);
                            results_num(rec, "speedup", base_s / r.step_s);
                            if (agoq_sim_paper_attach(paper, s.methods[k], (double)p.seq, rec)) goto out;
                            if (s.baseline >= 0 && add_paper_speedup(paper, agoq_method_name((agoq_method)s.baseline),
                                                                     (double)p.seq, rec))
                                goto out;
                            const cJSON *pm = cJSON_GetObjectItemCaseSensitive(rec, "paper_step_ms");
                            printf("  %-20s %-12s %-8s %-14.14s %5d %3d %3d %4d %7ld %3d %4d %12.1f %12.1f %8.2f %12.0f %8.3f\n",
                                   machines[mi].name, cards[di].name, s.methods[k], labels[k * AGOQ_SIM_MAX_VARIANTS + vi],
                                   p.tp * p.pp * p.dp, p.tp, p.pp, p.dp, p.seq, r.recompute, r.fits, 1e3 * r.step_s,
                                   r.tokens_per_s_per_gpu, r.mem_bytes / 1073741824.0,
                                   cJSON_IsNumber(pm) ? pm->valuedouble : NAN, base_s / r.step_s);
                            agoq_progress(ctx->quiet, "simulate", ++done, total, t0);
                        }
                }
    rc = 0;
out:
    agoq_error_context(NULL);
    step_cfg_free(&s);
    free(cards);
    free(pols);
    free(labels);
    return rc;
}

int agoq_sim_run_comm(const agoq_run_ctx *ctx, const cJSON *cfg, const agoq_machine *machines, size_t nm,
                      agoq_allreduce_algo algo, const agoq_sim_paper *paper, agoq_results *res) {
    jconf c = ctx->where;
    long tp, dp;
    double *sizes;
    size_t ns;
    const char *grad;
    agoq_store gs;
    cli_sweep sw;
    if (jconf_long(c, cfg, "tp", 0, 1, 1024, 1, &tp) || jconf_long(c, cfg, "dp", 1, 2, 1 << 20, 2, &dp) ||
        jconf_str(c, cfg, "grad", 0, "dyn8/256", &grad) || jconf_nums(c, cfg, "sizes", 0, 4, 1e13, &sizes, &ns) ||
        jconf_sweep(c, cfg, 4, 1e13, (cli_sweep){32768, 1 << 30, 32}, &sw))
        return -1;
    if (!ns) { /* no explicit sizes: the -b/-e/-f sweep of the command line */
        if (cli_sweep_check(c.file, &sw)) return -1;
        ns = cli_sweep_count(&sw);
        sizes = calloc(ns, sizeof *sizes);
        for (size_t i = 0; i < ns; i++) sizes[i] = (double)cli_sweep_bytes(&sw, i, 4);
    }
    if (agoq_sim_parse_store(grad, &gs) || gs.kind != AGOQ_STORE_QUANT) {
        agoq_error("%s: key '%s.grad': expected a quantized format[/block], got '%s'", c.file, c.prefix, grad);
        free(sizes);
        return -1;
    }
    if (ctx->check_only) {
        free(sizes);
        return 0;
    }
    double wire_bits = agoq_bits_per_element(&gs.q, (size_t)gs.q.block * 4096);
    size_t total = nm * ns, done = 0;
    double t0 = agoq_now_s();
    printf("# %-20s %12s %12s %10s %10s %10s %12s %8s %12s %12s\n", "machine", "bytes", "allreduce_ms", "a2a_ms", "quant_ms",
           "gather_ms", "agoq_ms", "speedup", "paper_ar_ms", "paper_agoq");
    for (size_t mi = 0; mi < nm; mi++) {
        const agoq_machine *m = &machines[mi];
        agoq_step_plan p;
        agoq_step_plan_defaults(&p, AGOQ_METHOD_AGOQ);
        p.tp = (int)tp;
        p.dp = (int)dp;
        agoq_group g = agoq_dp_group(&p, m->gpus_per_node);
        double kbw = 1e9 * agoq_machine_val(m, AGOQ_CAL_KERNEL_GBPS);
        for (size_t i = 0; i < ns; i++) {
            double bytes = sizes[i], n = bytes / 4.0, w = n * wire_bits / 8.0;
            double ar = agoq_t_allreduce(&m->fabric, &g, bytes, algo);
            double a2a = agoq_t_alltoall(&m->fabric, &g, w);
            /* quantize fp32 -> codes; dequantize dp shards, sum, requantize; dequantize the result */
            double quant = ((4.0 * n + w) + (w + w / dp) + (w + 4.0 * n)) / kbw;
            double ag = agoq_t_allgather(&m->fabric, &g, w);
            cJSON *rec = results_add_record(res);
            cJSON_AddStringToObject(rec, "machine", m->name);
            cJSON_AddNumberToObject(rec, "machine_id", (double)mi);
            agoq_machine_add_inputs(m, rec);
            cJSON_AddNumberToObject(rec, "bytes", bytes);
            results_num(rec, "MiB", bytes / 1048576.0);
            cJSON_AddNumberToObject(rec, "tp", (double)tp);
            cJSON_AddNumberToObject(rec, "dp", (double)dp);
            cJSON_AddNumberToObject(rec, "concurrent_groups", g.concurrent);
            results_num(rec, "grad_wire_bits", wire_bits);
            results_num(rec, "allreduce_ms", 1e3 * ar);
            results_num(rec, "a2a_ms", 1e3 * a2a);
            results_num(rec, "quant_ms", 1e3 * quant);
            results_num(rec, "allgather_ms", 1e3 * ag);
            results_num(rec, "agoq_total_ms", 1e3 * (a2a + quant + ag));
            results_num(rec, "speedup", ar / (a2a + quant + ag));
            if (agoq_sim_paper_attach(paper, m->name, bytes, rec)) {
                free(sizes);
                return -1;
            }
            const cJSON *pa = cJSON_GetObjectItemCaseSensitive(rec, "paper_allreduce_ms");
            const cJSON *pt = cJSON_GetObjectItemCaseSensitive(rec, "paper_agoq_total_ms");
            printf("  %-20s %12.0f %12.3f %10.3f %10.3f %10.3f %12.3f %8.2f %12.2f %12.2f\n", m->name, bytes, 1e3 * ar,
                   1e3 * a2a, 1e3 * quant, 1e3 * ag, 1e3 * (a2a + quant + ag), ar / (a2a + quant + ag),
                   cJSON_IsNumber(pa) ? pa->valuedouble : NAN, cJSON_IsNumber(pt) ? pt->valuedouble : NAN);
            agoq_progress(ctx->quiet, "simulate", ++done, total, t0);
        }
    }
    free(sizes);
    return 0;
}
