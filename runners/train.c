/* agoq train: the convergence check (experiment kind "train"). A small LLaMA-style decoder
 * (train/model.h) is trained under several (activation policy, gradient all-reduce) pairs from
 * the same initial weights and data order; held-out loss curves and the final gap to the
 * baseline are recorded. Measured, not simulated: every number is a real training run.
 * Backend: cpu (the fp32 reference model), or cuda (one GPU: the same model on the step engine
 * in bf16 with real activation storage, train/engine.h); `agoq train` defaults to cpu, whose
 * recorded results are the reference (docs/train.md), experiment files say which they want.
 * On cuda the gradient probes (grad_probe, class_probe) have no fp32 reference to compare with:
 * grad_probe records null, class_probe is refused; activation policy fp32 is CPU only, and
 * uniform4 (attention quantized) needs a head size that is a multiple of act_block.
 *
 * config keys (defaults in brackets):
 *   runs ["bf16+fp32","agoq+fp32","uniform4+fp32","coat+fp32","agoq+agoq8","bf16+fp8lm"]
 *        each "ACT+GRAD": ACT one of fp32, bf16, agoq, uniform4, coat; GRAD fp32, agoq8, fp8lm
 *   baseline ["bf16+fp32"]  the run the final held-out gaps are taken against
 *   seeds [the --seed]      weights + data order; one set of runs per seed
 *   layers [4] heads [4] d_model [128] d_ff [352] seq_len [64] micro_batch [4] ranks [2]
 *   steps [300] warmup [20] lr [3e-3] min_lr_frac [0.1] weight_decay [0.1] grad_clip [1.0]
 *   eval_every [25] eval_windows [64]  held-out windows per evaluation (multiple of micro_batch)
 *   grad_probe [true]       at each evaluation, the gradient error of the run's activation
 *                           policy against fp32 storage (same weights, same held-out batch)
 *   act_block [128]         FP4 / FP8 block of the activation policies
 *   grad_format ["int8"] grad_block [256]  the agoq8 all-reduce format
 *   corpus ["grammar"] or a text file path; corpus_seed [1]; train_bytes [2M];
 *   heldout_bytes [256K] (grammar); heldout_frac [0.1] (file)
 *   class_probe [false]     after each run: the gradient error of storing ONE role of saved
 *                           tensors (memory-model roles: norm_in, qkv_in, attention, ...) in FP4
 *                           E2M1 (act_block), all others exact, vs fp32 storage (the paper's
 *                           per-layer sensitivity, Table 13), one record per role
 *   time_limit_s [0 = none]  per run: the first step that starts past it is the last (evaluated
 *                           and recorded, final record marked truncated with its steps_done) so
 *                           a bounded batch still returns data; the final record's
 *                           heldout_gap_vs_baseline is then taken at heldout_gap_step, the last
 *                           evaluation both the run and the baseline reached */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/cmdline.h"
#include "core/common.h"
#include "runners/experiment.h"
#include "kernels/quant/qspec.h"
#include "train/layers.h"
#include "train/trainer.h"

#define MAX_RUNS 32
#define MAX_SEEDS 16

typedef struct {
    train_run_cfg base;
    char run_name[MAX_RUNS][64];
    int act_of[MAX_RUNS], grad_of[MAX_RUNS];
    size_t nruns, nseeds;
    uint64_t seeds[MAX_SEEDS];
    int baseline;           /* index into runs, -1 when not among them */
    long eval_every;
    int grad_probe, class_probe, act_block;
    const char *corpus;
    long corpus_seed;
    double train_bytes, heldout_bytes, heldout_frac, time_limit_s;
} train_plan;

static const char *const act_names[] = {"fp32", "bf16", "agoq", "uniform4", "coat"};
static const char *const default_runs[] = {"bf16+fp32", "agoq+fp32", "uniform4+fp32", "coat+fp32", "agoq+agoq8", "bf16+fp8lm"};

static int act_by_name(const char *s) {
    for (int i = 0; i < (int)(sizeof act_names / sizeof act_names[0]); i++)
        if (strcmp(s, act_names[i]) == 0) return i;
    return -1;
}

static int parse_run(jconf c, size_t i, const char *spec, train_plan *p) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", spec);
    char *plus = strchr(buf, '+');
    int a = -1, g = -1;
    if (plus) {
        *plus = '\0';
        a = act_by_name(buf);
        g = train_grad_mode_by_name(plus + 1);
    }
    if (a < 0 || g < 0) {
        agoq_error("%s: key '%s.runs[%zu]': bad run '%s' (expect ACT+GRAD, ACT one of %s; GRAD one of %s)", c.file,
                   c.prefix, i, spec, TRAIN_ACT_POLICY_NAMES, TRAIN_GRAD_MODE_NAMES);
        return -1;
    }
    snprintf(p->run_name[p->nruns], sizeof p->run_name[0], "%s+%s", act_names[a], train_grad_mode_names[g]);
    p->act_of[p->nruns] = a;
    p->grad_of[p->nruns++] = g;
    return 0;
}

static const char *const train_keys[] = {"runs", "baseline", "seeds", "layers", "heads", "d_model", "d_ff", "seq_len",
                                       "micro_batch", "ranks", "steps", "warmup", "lr", "min_lr_frac", "weight_decay",
                                       "grad_clip", "eval_every", "eval_windows", "grad_probe", "act_block",
                                       "grad_format", "grad_block", "corpus", "corpus_seed", "train_bytes",
                                       "heldout_bytes", "heldout_frac", "time_limit_s", "class_probe", "seed", NULL};

static int parse_plan(const agoq_run_ctx *ctx, const cJSON *cfg, train_plan *p) {
    const char *const *keys = train_keys;
    jconf c = ctx->where;
    memset(p, 0, sizeof *p);
    train_run_cfg *b = &p->base;
    long layers, heads, dm, dff, seq, mb, ranks, ew, ewin, blk, gblk;
    double lr, minf, wd, clip, *seeds = NULL;
    const char **runs = NULL, *baseline, *gfmt;
    size_t nruns = 0, nseeds = 0;
    if (jconf_only(c, cfg, keys) || jconf_strs(c, cfg, "runs", 0, &runs, &nruns) ||
        jconf_str(c, cfg, "baseline", 0, "bf16+fp32", &baseline) ||
        jconf_nums(c, cfg, "seeds", 0, 0, 9007199254740992.0, &seeds, &nseeds) ||
        jconf_long(c, cfg, "layers", 0, 1, 64, 4, &layers) || jconf_long(c, cfg, "heads", 0, 1, 64, 4, &heads) ||
        jconf_long(c, cfg, "d_model", 0, 2, 4096, 128, &dm) || jconf_long(c, cfg, "d_ff", 0, 1, 16384, 352, &dff) ||
        jconf_long(c, cfg, "seq_len", 0, 2, 4096, 64, &seq) || jconf_long(c, cfg, "micro_batch", 0, 1, 1024, 4, &mb) ||
        jconf_long(c, cfg, "ranks", 0, 1, TRAIN_MAX_RANKS, 2, &ranks) ||
        jconf_long(c, cfg, "steps", 0, 1, 10000000, 300, &b->steps) ||
        jconf_long(c, cfg, "warmup", 0, 0, 10000000, 20, &b->warmup) || jconf_num(c, cfg, "lr", 0, 1e-7, 1.0, 3e-3, &lr) ||
        jconf_num(c, cfg, "min_lr_frac", 0, 0, 1, 0.1, &minf) || jconf_num(c, cfg, "weight_decay", 0, 0, 1, 0.1, &wd) ||
        jconf_num(c, cfg, "grad_clip", 0, 0, 1e6, 1.0, &clip) || jconf_long(c, cfg, "eval_every", 0, 1, 10000000, 25, &ew) ||
        jconf_long(c, cfg, "eval_windows", 0, 1, 100000, 64, &ewin) ||
        jconf_bool(c, cfg, "grad_probe", 0, 1, &p->grad_probe) || jconf_bool(c, cfg, "class_probe", 0, 0, &p->class_probe) || jconf_long(c, cfg, "act_block", 0, 8, 65536, 128, &blk) ||
        jconf_str(c, cfg, "grad_format", 0, "int8", &gfmt) || jconf_long(c, cfg, "grad_block", 0, 8, 65536, 256, &gblk) ||
        jconf_str(c, cfg, "corpus", 0, "grammar", &p->corpus) ||
        jconf_long(c, cfg, "corpus_seed", 0, 0, 1L << 40, 1, &p->corpus_seed) ||
        jconf_num(c, cfg, "train_bytes", 0, 1024, 1e10, 2 << 20, &p->train_bytes) ||
        jconf_num(c, cfg, "heldout_bytes", 0, 1024, 1e10, 256 << 10, &p->heldout_bytes) ||
        jconf_num(c, cfg, "heldout_frac", 0, 0.001, 0.9, 0.1, &p->heldout_frac) ||
        jconf_num(c, cfg, "time_limit_s", 0, 0, 1e7, 0, &p->time_limit_s))
        goto fail;
    b->eval_windows = (int)ewin;
    p->eval_every = ew;
    if (b->eval_windows % mb) {
        agoq_error("%s: key '%s.eval_windows': %d is not a multiple of micro_batch %ld", c.file, c.prefix,
                   b->eval_windows, mb);
        goto fail;
    }
    if (blk % 8 || gblk % 8) {
        agoq_error("%s: key '%s.%s': block %ld is not a multiple of 8", c.file, c.prefix, blk % 8 ? "act_block" : "grad_block",
                   blk % 8 ? blk : gblk);
        goto fail;
    }
    int gf = agoq_format_by_name(gfmt);
    if (gf < 0 || agoq_formats[gf].bits != 8) {
        agoq_error("%s: key '%s.grad_format': '%s' is not an 8-bit format (int8, int8_asym, dyn8, fp8_e4m3, fp8_e5m2)",
                   c.file, c.prefix, gfmt);
        goto fail;
    }
    if (nruns > MAX_RUNS || nseeds > MAX_SEEDS) {
        agoq_error("%s: key '%s.%s': at most %d entries", c.file, c.prefix, nruns > MAX_RUNS ? "runs" : "seeds",
                   nruns > MAX_RUNS ? MAX_RUNS : MAX_SEEDS);
        goto fail;
    }
    for (size_t i = 0; i < (nruns ? nruns : sizeof default_runs / sizeof default_runs[0]); i++)
        if (parse_run(c, i, nruns ? runs[i] : default_runs[i], p)) goto fail;
    p->baseline = -1;
    for (size_t i = 0; i < p->nruns; i++)
        if (strcmp(p->run_name[i], baseline) == 0) p->baseline = (int)i;
    p->nseeds = nseeds ? nseeds : 1;
    for (size_t i = 0; i < p->nseeds; i++) p->seeds[i] = nseeds ? (uint64_t)seeds[i] : ctx->seed;
    b->model = (train_cfg){.vocab = 256, .seq_len = (int)seq, .n_layer = (int)layers, .n_head = (int)heads,
                           .d_model = (int)dm, .d_ff = (int)dff, .batch = (int)mb, .rope_base = 10000.0f,
                           .norm_eps = 1e-5f};
    if (dm % heads || (dm / heads) % 2) {
        agoq_error("%s: key '%s.heads': d_model %ld does not split into %ld heads of an even size", c.file, c.prefix, dm, heads);
        goto fail;
    }
    b->ranks = (int)ranks;
    b->lr = (float)lr;
    b->min_lr_frac = (float)minf;
    b->weight_decay = (float)wd;
    b->grad_clip = (float)clip;
    b->beta1 = 0.9f;
    b->beta2 = 0.95f;
    agoq_qspec_make((agoq_format)gf, gblk, &b->grad_q); /* block checked above */
    p->act_block = (int)blk;
    free(runs);
    free(seeds);
    return 0;
fail:
    free(runs);
    free(seeds);
    return -1;
}

/* One curve point: evaluation of run `name` after `step` steps. */
static void add_point(agoq_results *res, const char *name, const train_plan *p, int ri, uint64_t seed, long step,
                      double tokens, double train_loss, double heldout, double gnorm, double lr,
                      const agoq_error_stats *ge, const agoq_error_stats *re, double elapsed) {
    cJSON *r = results_add_record(res);
    cJSON_AddStringToObject(r, "record", "curve");
    cJSON_AddStringToObject(r, "run", name);
    cJSON_AddStringToObject(r, "activations", act_names[p->act_of[ri]]);
    cJSON_AddStringToObject(r, "gradients", train_grad_mode_names[p->grad_of[ri]]);
    cJSON_AddNumberToObject(r, "seed", (double)seed);
    cJSON_AddNumberToObject(r, "step", (double)step);
    cJSON_AddNumberToObject(r, "tokens", tokens);
    results_num(r, "train_loss", train_loss);
    results_num(r, "heldout_loss", heldout);
    results_num(r, "grad_norm", gnorm);
    results_num(r, "lr", lr);
    results_num(r, "grad_rel_l2_vs_fp32_act", ge ? agoq_norm_l2(ge) : NAN);
    results_num(r, "grad_cosine_vs_fp32_act", ge ? ge->cosine : NAN);
    results_num(r, "allreduce_rel_l2_vs_exact", re ? agoq_norm_l2(re) : NAN);
    results_num(r, "elapsed_s", elapsed);
    printf("  %-14s %4llu %6ld %10.0f %10.4f %10.4f %9.4f %9.5f %10.3g\n", name, (unsigned long long)seed, step, tokens,
           train_loss, heldout, gnorm, ge ? agoq_norm_l2(ge) : NAN, lr);
    fflush(stdout);
}

/* Roles the trainer's model stores (train/model.c's slots), in layer order. */
static const agoq_role probe_roles[] = {AGOQ_ROLE_NORM_IN, AGOQ_ROLE_QKV_IN, AGOQ_ROLE_ATTENTION, AGOQ_ROLE_OUTPROJ_IN,
                                        AGOQ_ROLE_FFN1_IN, AGOQ_ROLE_FC1_OUT, AGOQ_ROLE_FFN2_IN};

/* Per-role sensitivity: FP4 on one role at a time, everything else exact, against fp32. */
static void class_probe(train_trainer *t, const train_plan *p, int ri, uint64_t seed, agoq_results *res) {
    train_act_policy fp32, one;
    train_act_policy_by_name("fp32", p->act_block, &fp32);
    printf("# gradient error of FP4 E2M1/%d on one role (others fp32) vs fp32, %s after %ld steps\n", p->act_block,
           p->run_name[ri], t->step);
    for (size_t i = 0; i < sizeof probe_roles / sizeof probe_roles[0]; i++) {
        const agoq_role role = probe_roles[i];
        one = fp32;
        one.name = "fp4-one-role";
        one.store[role].kind = AGOQ_STORE_QUANT;
        one.store[role].q = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
        one.store[role].q.block = p->act_block;
        agoq_error_stats e = train_policy_grad_error(t, &one, &fp32);
        cJSON *r = results_add_record(res);
        cJSON_AddStringToObject(r, "record", "class_error");
        cJSON_AddStringToObject(r, "run", p->run_name[ri]);
        cJSON_AddNumberToObject(r, "seed", (double)seed);
        cJSON_AddNumberToObject(r, "step", (double)t->step);
        cJSON_AddStringToObject(r, "class", agoq_role_name(role));
        cJSON_AddStringToObject(r, "format", "fp4_e2m1");
        cJSON_AddNumberToObject(r, "block", p->act_block);
        results_num(r, "grad_rel_l2_vs_fp32_act", agoq_norm_l2(&e));
        results_num(r, "grad_cosine_vs_fp32_act", e.cosine);
        printf("  %-12s rel_l2 %.5f cosine %.6f\n", agoq_role_name(role), agoq_norm_l2(&e), e.cosine);
    }
}

/* Trains run ri for one seed; writes its curve and returns the final held-out loss. */
static int train_one(const agoq_run_ctx *ctx, const train_plan *p, int ri, uint64_t seed, const train_corpus *corpus,
                     agoq_results *res, long *done, long total, double t0, double *final_heldout, double *final_train,
                     size_t *act_bytes, long *steps_done, const char **allreduce_backend) {
    train_run_cfg rc = p->base;
    train_act_policy fp32;
    rc.seed = seed;
    rc.grad = (train_grad_mode)p->grad_of[ri];
    train_act_policy_by_name(act_names[p->act_of[ri]], p->act_block, &rc.act);
    train_act_policy_by_name("fp32", p->act_block, &fp32);
    train_trainer t;
    if (train_trainer_init(&t, &rc, corpus)) return -1;
    *act_bytes = t.act_bytes_per_layer;
    *allreduce_backend = t.allreduce_backend; /* a static string */
    const double tok_per_step = (double)rc.ranks * rc.model.batch * rc.model.seq_len, run_t0 = agoq_now_s();
    double loss_sum = 0.0, gnorm = 0.0, heldout = train_trainer_eval(&t), last_train = NAN;
    long nsum = 0;
    agoq_error_stats ge;
    if (p->grad_probe) ge = train_trainer_grad_error(&t, &fp32);
    add_point(res, p->run_name[ri], p, ri, seed, 0, 0, NAN, heldout, NAN, 0, p->grad_probe ? &ge : NULL, NULL, 0);
    for (long s = 1; s <= rc.steps; s++) {
        /* decided before the step, so that it measures its all-reduce error only when recorded
         * (on cuda that comparison downloads two gradient copies) */
        int timed_out = p->time_limit_s > 0 && agoq_now_s() - run_t0 > p->time_limit_s;
        int record = s % p->eval_every == 0 || s == rc.steps || timed_out;
        double lr = train_lr_at(t.step, rc.steps, rc.warmup, rc.lr, rc.min_lr_frac);
        t.measure_reduce = record;
        loss_sum += train_trainer_step(&t, &gnorm);
        nsum++;
        agoq_progress(ctx->quiet, p->run_name[ri], (size_t)++*done, (size_t)total, t0);
        if (!record) continue;
        heldout = train_trainer_eval(&t);
        if (p->grad_probe) ge = train_trainer_grad_error(&t, &fp32);
        last_train = loss_sum / (double)nsum;
        add_point(res, p->run_name[ri], p, ri, seed, s, tok_per_step * (double)s, last_train, heldout, gnorm, lr,
                  p->grad_probe ? &ge : NULL, &t.reduce_err, agoq_now_s() - run_t0);
        loss_sum = 0.0;
        nsum = 0;
        if (timed_out) break;
    }
    *final_heldout = heldout;
    *final_train = last_train;
    *steps_done = t.step;
    if (p->class_probe) class_probe(&t, p, ri, seed, res);
    train_trainer_free(&t);
    return 0;
}

/* The held-out loss of the "curve" record r if it is (run, seed) at a step <= max_step: its step
 * in *step; else 0. */
static int curve_point(const cJSON *r, const char *run, uint64_t seed, long max_step, long *step, double *heldout) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "record"), *n = cJSON_GetObjectItemCaseSensitive(r, "run");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(r, "seed"), *st = cJSON_GetObjectItemCaseSensitive(r, "step");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(r, "heldout_loss");
    if (!cJSON_IsString(k) || strcmp(k->valuestring, "curve") != 0 || !cJSON_IsString(n) ||
        strcmp(n->valuestring, run) != 0 || !cJSON_IsNumber(sd) || (uint64_t)sd->valuedouble != seed ||
        !cJSON_IsNumber(st) || (long)st->valuedouble > max_step || !cJSON_IsNumber(h))
        return 0;
    *step = (long)st->valuedouble;
    *heldout = h->valuedouble;
    return 1;
}

long agoq_train_gap_at_common_step(const cJSON *records, const char *run, const char *base, uint64_t seed,
                                   long max_step, double *gap) {
    long best = -1, s, sb;
    double h, hb;
    *gap = NAN;
    const cJSON *r, *b;
    cJSON_ArrayForEach(r, records) {
        if (!curve_point(r, run, seed, max_step, &s, &h) || s <= best) continue;
        cJSON_ArrayForEach(b, records) {
            if (curve_point(b, base, seed, max_step, &sb, &hb) && sb == s) {
                best = s;
                *gap = h - hb;
                break;
            }
        }
    }
    return best;
}

/* "4 threads" (cpu: OpenMP inside layers.c) or "backend cuda" for the header line. */
static const char *backend_label(agoq_backend b, char *buf, size_t len) {
    if (b == AGOQ_BACKEND_CUDA) snprintf(buf, len, "backend cuda");
    else snprintf(buf, len, "%d threads", tr_threads());
    return buf;
}

int agoq_exp_train(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res) {
    train_plan p;
    if (parse_plan(ctx, cfg, &p)) return -1;
    if (ctx->check_only) return 0;
    p.base.model.backend = ctx->backend;
    if (ctx->backend == AGOQ_BACKEND_CUDA && p.class_probe) {
        agoq_error("%s: key '%s.class_probe': needs the cpu backend (the fp32 reference model)", ctx->where.file,
                   ctx->where.prefix);
        return -1;
    }
    if (ctx->backend == AGOQ_BACKEND_CUDA) {
        agoq_gpu_info gi;
        if (agoq_gpu_query(0, &gi) == 0) results_set_gpu(res, agoq_gpu_json(&gi));
    }
    train_corpus corpus;
    char label[64];
    int rc = strcmp(p.corpus, "grammar") == 0
                 ? train_corpus_grammar(&corpus, (uint64_t)p.corpus_seed, (size_t)p.train_bytes, (size_t)p.heldout_bytes)
                 : train_corpus_file(&corpus, p.corpus, p.heldout_frac);
    if (rc) {
        if (strcmp(p.corpus, "grammar") != 0)
            agoq_error("%s: key '%s.corpus': cannot read a text file '%s'", ctx->where.file, ctx->where.prefix, p.corpus);
        return -1;
    }
    const train_cfg *m = &p.base.model;
    printf("# train: %d layers, d_model %d, %d heads, d_ff %d, seq %d, micro-batch %d x %d ranks, %ld steps, "
           "corpus %s (%zu train / %zu held-out bytes), %s\n",
           m->n_layer, m->d_model, m->n_head, m->d_ff, m->seq_len, m->batch, p.base.ranks, p.base.steps, p.corpus,
           corpus.n_train, corpus.n_heldout, backend_label(ctx->backend, label, sizeof label));
    printf("# %-14s %4s %6s %10s %10s %10s %9s %9s %10s\n", "run", "seed", "step", "tokens", "train_loss", "heldout",
           "grad_norm", "grad_err", "lr");
    double final_h[MAX_SEEDS][MAX_RUNS], final_t[MAX_SEEDS][MAX_RUNS], t0 = agoq_now_s();
    size_t bytes[MAX_RUNS];
    long steps_done[MAX_SEEDS][MAX_RUNS];
    const char *ar_backend[MAX_RUNS];
    long done = 0, total = (long)(p.nseeds * p.nruns) * p.base.steps;
    for (size_t si = 0; si < p.nseeds && rc == 0; si++)
        for (size_t ri = 0; ri < p.nruns && rc == 0; ri++)
            rc = train_one(ctx, &p, (int)ri, p.seeds[si], &corpus, res, &done, total, t0, &final_h[si][ri],
                           &final_t[si][ri], &bytes[ri], &steps_done[si][ri], &ar_backend[ri]);
    train_corpus_free(&corpus);
    if (rc) return -1;
    printf("# final held-out loss after %ld steps (gap = run - %s, same seed; at the last step both reached "
           "when a run was cut)\n",
           p.base.steps, p.baseline >= 0 ? p.run_name[p.baseline] : "no baseline");
    printf("# %-14s %4s %10s %10s %10s %14s\n", "run", "seed", "train", "heldout", "gap", "act_bytes/layer");
    for (size_t si = 0; si < p.nseeds; si++)
        for (size_t ri = 0; ri < p.nruns; ri++) {
            double gap = NAN;
            long gap_step = -1;
            if (p.baseline >= 0) {
                const long both = steps_done[si][ri] < steps_done[si][p.baseline] ? steps_done[si][ri]
                                                                                   : steps_done[si][p.baseline];
                gap_step = agoq_train_gap_at_common_step(res->records, p.run_name[ri], p.run_name[p.baseline],
                                                         p.seeds[si], both, &gap);
            }
            cJSON *r = results_add_record(res);
            cJSON_AddStringToObject(r, "record", "final");
            cJSON_AddStringToObject(r, "run", p.run_name[ri]);
            cJSON_AddStringToObject(r, "activations", act_names[p.act_of[ri]]);
            cJSON_AddStringToObject(r, "gradients", train_grad_mode_names[p.grad_of[ri]]);
            cJSON_AddNumberToObject(r, "seed", (double)p.seeds[si]);
            cJSON_AddNumberToObject(r, "step", (double)steps_done[si][ri]);
            cJSON_AddNumberToObject(r, "tokens", (double)steps_done[si][ri] * p.base.ranks * m->batch * m->seq_len);
            cJSON_AddBoolToObject(r, "truncated", steps_done[si][ri] < p.base.steps);
            results_num(r, "train_loss", final_t[si][ri]);
            results_num(r, "heldout_loss", final_h[si][ri]);
            results_num(r, "heldout_gap_vs_baseline", gap);
            results_num(r, "heldout_gap_step", gap_step >= 0 ? (double)gap_step : NAN);
            if (p.baseline >= 0) cJSON_AddStringToObject(r, "baseline", p.run_name[p.baseline]);
            cJSON_AddNumberToObject(r, "act_bytes_per_layer", (double)bytes[ri]);
            cJSON_AddStringToObject(r, "allreduce_backend", ar_backend[ri]);
            cJSON_AddNumberToObject(r, "threads", tr_threads());
            char at[48] = "";
            if (gap_step >= 0 && gap_step != steps_done[si][ri]) snprintf(at, sizeof at, " (gap at step %ld)", gap_step);
            printf("  %-14s %4llu %10.4f %10.4f %+10.4f %14zu%s%s\n", p.run_name[ri], (unsigned long long)p.seeds[si],
                   final_t[si][ri], final_h[si][ri], gap, bytes[ri],
                   steps_done[si][ri] < p.base.steps ? "  (truncated by time_limit_s)" : "", at);
        }
    return 0;
}

static const char *train_run_names(void) {
    return "A: " TRAIN_ACT_POLICY_NAMES "; G: " TRAIN_GRAD_MODE_NAMES;
}

#define TRAIN_INT(name_, key_, what_) {.name = name_, .short_opt = 0, .kind = AGOQ_FLAG_LONG, .key = key_, .arg = "N", .help = what_, .lo = 1, .hi = 100000000}
static const agoq_flag train_flags[] = {
    {.name = "runs", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "runs", .arg = "A+G,...", .help = "runs (default bf16+fp32,agoq+fp32,uniform4+fp32,coat+fp32,agoq+agoq8,bf16+fp8lm)",
     .choices = train_run_names},
    TRAIN_INT("steps", "steps", "optimizer steps per run (default 300)"),
    TRAIN_INT("layers", "layers", "model shape: layers (4)"),
    TRAIN_INT("d-model", "d_model", "model width (128)"),
    TRAIN_INT("heads", "heads", "attention heads (4)"),
    TRAIN_INT("d-ff", "d_ff", "FFN width (352)"),
    TRAIN_INT("seq-len", "seq_len", "tokens per sequence (64)"),
    TRAIN_INT("micro-batch", "micro_batch", "sequences per rank (4)"),
    TRAIN_INT("ranks", "ranks", "simulated data-parallel ranks (2)"),
    AGOQ_NUM_FLAG("lr", "lr", "X", "peak learning rate (3e-3)"),
    TRAIN_INT("eval-every", "eval_every", "evaluation interval (25)"),
    {.name = "corpus", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "corpus", .arg = "grammar|FILE", .help = "training text (default: the generated grammar corpus)"},
    {0}};

static const char *const train_tsv[] = {"record", "run", "seed", "step", "tokens", "train_loss", "heldout_loss",
                                        "grad_norm", "grad_rel_l2_vs_fp32_act", "grad_cosine_vs_fp32_act", "lr",
                                        "allreduce_rel_l2_vs_exact"};

const agoq_runner agoq_runner_train = {
    .kind = "train",
    .what = "small LLaMA-style model trained under activation/gradient policies",
    .about = "Train a small LLaMA-style decoder under activation/gradient policies from the same\n"
             "weights and data; record train/held-out loss curves and the final gap to bf16.\n"
             "Backend: --backend cpu (the default here) | cuda (one GPU) | auto.",
    .keys = train_keys,
    .flags = train_flags,
    .notes = "Threads: OMP_NUM_THREADS (results do not depend on it).",
    .run = agoq_exp_train,
    .tsv = train_tsv,
    .ntsv = sizeof train_tsv / sizeof train_tsv[0],
    .backend = "cpu", /* the recorded CPU runs are the reference: a GPU machine runs cuda only when asked */
};
