/* The step engine's driver (step.h): sizing by a dry run, the arena, weights, the 1F1B
 * micro-batch schedule of one pipeline stage, timing, and the gradient probe.
 *
 * Sizing: the whole step runs once with dry = 1 (every allocation, no kernel), which gives the
 * exact arena high-water mark; the real arena is that size (or the budget), so a step that
 * ran dry fits for sure. cuDNN's workspace is the only size a dry run cannot know without a
 * GPU: the real run creates the attention plan first and passes its size in.
 * Schedule of stage i with m micro-batches (Megatron's 1F1B): w = min(pp - i - 1, m) warm-up
 * forwards, then (forward, backward) pairs, then w backwards: at most min(pp - i, m)
 * micro-batches hold their activations at once, as the memory model counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/common.h"
#include "core/metrics.h"
#include "step/dev.h"
#include "step/step_internal.h"

#define SEED_INPUT 0x1000u
#define SEED_DY 0x2000u
#define SEED_W 0x3000u

_Static_assert(STEP_OP_COUNT <= 16, "agoq_step_result.op_ms holds 16 ops");
const char *const step_op_names[STEP_OP_COUNT] = {
    "norm_fwd", "gemm_fwd", "rope", "attn_fwd", "quantize", "swiglu_fwd", "gemm_dgrad", "gemm_wgrad",
    "swiglu_bwd", "norm_bwd", "attn_bwd", "dequantize", "grad_store", "elementwise", "optimizer", "input"};

#if AGOQ_HAVE_CUDA
void step_prof_begin(step_prof *p, int id, void *stream) {
    if (p->n >= STEP_PROF_MAX) return;
    for (int k = 0; k < 2; k++)
        if (!p->ev[2 * p->n + k]) p->ev[2 * p->n + k] = step_dev_event_create();
    p->id[p->n] = id;
    step_dev_event_record(p->ev[2 * p->n], stream);
}
void step_prof_end(step_prof *p, void *stream) {
    if (p->n >= STEP_PROF_MAX) return;
    step_dev_event_record(p->ev[2 * p->n + 1], stream);
    p->n++;
}
/* Sums the recorded pairs per op (synchronizes) and frees the events. */
static void prof_collect(step_prof *p, double *ms, double *calls) {
    for (int i = 0; i < p->n; i++) {
        ms[p->id[i]] += step_dev_event_ms(p->ev[2 * i], p->ev[2 * i + 1]);
        calls[p->id[i]] += 1;
    }
    for (int i = 0; i < 2 * STEP_PROF_MAX; i++) step_dev_event_destroy(p->ev[i]);
}
#endif

static void engine_free_host(step_engine *e) {
    free(e->w);
    free(e->master);
    free(e->g32);
    free(e->m32);
    free(e->v32);
    free(e->g8);
    free(e->mq);
    free(e->vq);
    free(e->grad_fresh);
    free(e->slots);
    agoq_arena_release(&e->ar);
}

int step_engine_open(step_engine *e, const agoq_step_config *c, void *base, size_t capacity, int arena_ends,
                     agoq_attn *attn, size_t attn_ws_bytes, void *stream) {
    memset(e, 0, sizeof *e);
    e->cfg = c;
    e->dry = base == NULL;
#if AGOQ_HAVE_CUDA
    e->sms = c->dry ? AGOQ_PLAN_SMS : agoq_cuda_sm_count(); /* a real run's sizing pass too */
#else
    e->sms = AGOQ_PLAN_SMS;
#endif
    e->stream = stream;
    e->attn = attn;
    e->attn_ws_bytes = attn_ws_bytes;
    if (step_plan_make(c, &e->pl)) return -1;
    const step_plan *p = &e->pl;
    const size_t np = (size_t)p->L * AGOQ_PARAM_COUNT;
    e->w = calloc(np, sizeof *e->w);
    e->master = calloc(np, sizeof *e->master);
    e->g32 = calloc(np, sizeof *e->g32);
    e->m32 = calloc(np, sizeof *e->m32);
    e->v32 = calloc(np, sizeof *e->v32);
    e->g8 = calloc(np, sizeof *e->g8);
    e->mq = calloc(np, sizeof *e->mq);
    e->vq = calloc(np, sizeof *e->vq);
    e->grad_fresh = calloc(np, 1);
    e->slots = calloc((size_t)p->inflight * (size_t)p->L, sizeof *e->slots);
    if (!e->w || !e->master || !e->g32 || !e->m32 || !e->v32 || !e->g8 || !e->mq || !e->vq || !e->grad_fresh || !e->slots)
        return agoq_error("step: out of host memory"), -1;
    if (agoq_arena_init(&e->ar, base, capacity, arena_ends)) return -1;
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++)
        if (p->has[r] && p->st[r].kind == AGOQ_STORE_QUANT) STEP_GPU(e, agoq_fq_make(&p->st[r].q, &e->fq[r]));
    if (!(e->lt_ws = step_tmp(e, STEP_LT_WORKSPACE_BYTES, "cublasLt workspace"))) return -1;
    if (attn_ws_bytes && !(e->attn_ws = step_tmp(e, attn_ws_bytes, "cudnn workspace"))) return -1;
    STEP_GPU(e, agoq_lt_create(e->lt_ws, STEP_LT_WORKSPACE_BYTES, &e->lt));
    for (size_t i = 0; i < np; i++)
        if (!(e->w[i] = agoq_arena_alloc(&e->ar, p->pelems[i % AGOQ_PARAM_COUNT] * 2, AGOQ_MEM_WEIGHTS, -1, -1, "weight")))
            return -1;
    if (step_grads_alloc(e)) return -1;
    /* weights: N(0, 0.02) (LLaMA's init), norm weights 1; bf16 copies of the fp32 masters */
    for (size_t i = 0; i < np; i++) {
        const int k = (int)(i % AGOQ_PARAM_COUNT);
        const size_t n = p->pelems[k];
        if (k == AGOQ_PARAM_NORM1 || k == AGOQ_PARAM_NORM2) STEP_GPU(e, step_dev_fill_f32(e->master[i], n, 1.0f, stream));
        else STEP_GPU(e, step_dev_randn_f32(e->master[i], n, c->seed * 7919u + SEED_W + i, 0.02f, stream));
        STEP_GPU(e, step_dev_cast_bf16(e->w[i], e->master[i], n, stream));
    }
    return 0;
}

void step_engine_close(step_engine *e) {
#if AGOQ_HAVE_CUDA
    if (!e->dry && e->lt) agoq_lt_destroy(e->lt);
#endif
    engine_free_host(e);
}

static int fwd_mb(step_engine *e, long mb) {
    const step_plan *p = &e->pl;
    const size_t xb = (size_t)p->T * (size_t)p->h * 2;
    uint16_t *x = agoq_arena_alloc(&e->ar, xb, AGOQ_MEM_IO, -1, -1, "stage input");
    if (!x) return -1;
    STEP_OP(e, STEP_OP_INPUT, step_dev_randn_bf16(x, (size_t)p->T * (size_t)p->h, e->cfg->seed * 7919u + SEED_INPUT + (uint64_t)mb,
                                    1.0f, e->stream));
    if (e->dump && (size_t)mb < e->dump->nmb) {
        STEP_GPUV(e, step_dev_sync());
        STEP_GPUV(e, step_dev_d2h(e->dump->x[mb], x, xb));
    }
    step_layer_saved *slot = &e->slots[(size_t)(mb % p->inflight) * (size_t)p->L];
    memset(slot, 0, (size_t)p->L * sizeof *slot);
    for (int l = 0; l < p->L; l++) {
        step_layer_saved *S = &slot[l];
        uint16_t *y;
        /* the output outlives this layer when the next one checkpoints it or keeps it bf16 */
        const int next_q = l + 1 < p->L && l + 1 >= p->recompute_layers && p->st[AGOQ_ROLE_NORM_IN].kind == AGOQ_STORE_QUANT;
        const int keep = l + 1 < p->L && !next_q;
        step_saved *next_x = next_q ? &slot[l + 1].x : NULL; /* its quantized copy (the fc2 site) */
        if (l < p->recompute_layers) { /* Megatron full recomputation: keep the input only */
            S->recomputed = 1;
            S->ckpt = x;
            if (agoq_arena_retag(&e->ar, x, AGOQ_MEM_SAVED, -1, l)) return -1;
            if (e->counting) e->saved_total += (double)xb;
            if (step_layer_fwd(e, l, S, x, 0, keep, next_x, &y)) return -1;
        } else if (step_layer_fwd(e, l, S, x, 1, keep, next_x, &y)) {
            return -1;
        }
        x = y;
    }
    e->counting = 0;
    if (e->dump && (size_t)mb < e->dump->nmb) {
        STEP_GPUV(e, step_dev_sync());
        STEP_GPUV(e, step_dev_d2h(e->dump->y[mb], x, xb));
    }
    if (agoq_arena_retag(&e->ar, x, AGOQ_MEM_IO, -1, -1)) return -1;
    step_release(e, x); /* sent to the next stage */
    return 0;
}

static int bwd_mb(step_engine *e, long mb) {
    const step_plan *p = &e->pl;
    uint16_t *dy = agoq_arena_alloc(&e->ar, (size_t)p->T * (size_t)p->h * 2, AGOQ_MEM_IO, -1, -1, "stage output grad");
    if (!dy) return -1;
    STEP_OP(e, STEP_OP_INPUT, step_dev_randn_bf16(dy, (size_t)p->T * (size_t)p->h, e->cfg->seed * 7919u + SEED_DY + (uint64_t)mb, 1.0f,
                                    e->stream));
    if (e->dump && (size_t)mb < e->dump->nmb) {
        STEP_GPUV(e, step_dev_sync());
        STEP_GPUV(e, step_dev_d2h(e->dump->dy[mb], dy, (size_t)p->T * (size_t)p->h * 2));
    }
    step_layer_saved *slot = &e->slots[(size_t)(mb % p->inflight) * (size_t)p->L];
    for (int l = (int)p->L - 1; l >= 0; l--) {
        step_layer_saved *S = &slot[l];
        if (S->recomputed) {
            uint16_t *y;
            uint16_t *ck = S->ckpt;
            S->ckpt = NULL;
            if (step_layer_fwd(e, l, S, ck, 1, 0, NULL, &y)) return -1;
            step_release(e, y);
        }
        uint16_t *dx;
        if (step_layer_bwd(e, l, S, dy, &dx)) return -1;
        step_release(e, dy);
        dy = dx;
    }
    step_release(e, dy); /* sent to the previous stage */
    return 0;
}

/* One step: every micro-batch forward and backward in 1F1B order, then the optimizer. */
static int engine_step(step_engine *e, int optimizer) {
    const step_plan *p = &e->pl;
    const long m = p->m, warm = p->inflight - 1 < m ? p->inflight - 1 : m;
    long nf = 0, nb = 0;
    e->flops_done = 0;
    memset(e->grad_fresh, 1, (size_t)p->L * AGOQ_PARAM_COUNT);
    for (; nf < warm; nf++)
        if (fwd_mb(e, nf)) return -1;
    while (nf < m) {
        if (fwd_mb(e, nf++) || bwd_mb(e, nb++)) return -1;
    }
    while (nb < m)
        if (bwd_mb(e, nb++)) return -1;
    return optimizer ? step_optimizer(e) : 0;
}

/* One dry run with the arena placed from arena_ends ends: exact need, per-role accounting. */
static int dry_once(const agoq_step_config *c, size_t attn_ws, int ends, agoq_step_result *r, size_t *need) {
    step_engine e;
    int rc = step_engine_open(&e, c, NULL, (size_t)1 << 62, ends, NULL, attn_ws, NULL);
    if (!rc) {
        e.counting = 1;
        e.count_layer = e.pl.recompute_layers < e.pl.L ? (int)e.pl.recompute_layers : -1;
        rc = engine_step(&e, 1);
    }
    if (!rc && r) {
        memcpy(r->saved_by_role, e.saved_by_role, sizeof r->saved_by_role);
        memcpy(r->model_saved_by_role, e.pl.model_by_role, sizeof r->model_saved_by_role);
        r->saved_activation_bytes = e.saved_total;
        r->peak_bytes = (double)e.ar.high_water;
        r->peak_live_bytes = (double)e.ar.peak_live_bytes;
        for (int k = 0; k < AGOQ_MEM_CLASS_COUNT; k++) r->at_peak[k] = (double)e.ar.at_peak_by_class[k];
        r->recomputed_layers = (double)e.pl.recompute_layers;
        r->optimizer_fused = step_optimizer_fused(c);
        r->fwd_flops = e.pl.fwd_flops;
        r->bwd_flops = e.pl.bwd_flops;
    }
    if (!rc) *need = e.ar.high_water;
    if (!rc && r) r->arena_ends = ends;
    step_engine_close(&e);
    return rc;
}

/* The dry run: sizes the arena with both placements (arena.h) and keeps the one that needs less
 * (one end on a tie), in *ends; r (may be NULL) gets that run's accounting. */
static int dry_size(const agoq_step_config *c, size_t attn_ws, agoq_step_result *r, size_t *need, int *ends) {
    agoq_step_result t[2];
    size_t n[2];
    for (int k = 0; k < 2; k++) {
        if (r) t[k] = *r;
        if (dry_once(c, attn_ws, k + 1, r ? &t[k] : NULL, &n[k])) return -1;
    }
    const int i = n[1] < n[0];
    *ends = i + 1;
    *need = n[i];
    if (r) *r = t[i];
    return 0;
}

#if AGOQ_HAVE_CUDA
static double peak_tflops_of(const char *name) {
    if (strstr(name, "H100") || strstr(name, "H200") || strstr(name, "H800") || strstr(name, "GH200")) return 989.4;
    if (strstr(name, "A100") || strstr(name, "A800")) return 312.0;
    return 0.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Gradients of one probe step (no optimizer) of config c, into host arrays. */
static int probe_grads(const agoq_step_config *c, agoq_attn *attn, size_t attn_ws, void *stream, float **host) {
    size_t need;
    int ends;
    if (dry_size(c, attn_ws, NULL, &need, &ends)) return -1;
    void *base = step_dev_malloc(need);
    if (!base) return -1;
    step_engine e;
    int rc = step_engine_open(&e, c, base, need, ends, attn, attn_ws, stream);
    if (!rc) rc = engine_step(&e, 0);
    if (!rc) rc = step_grads_to_host(&e, host);
    step_dev_sync();
    step_engine_close(&e);
    step_dev_free(base);
    return rc;
}

static int grad_error(const agoq_step_config *c, agoq_attn *attn, size_t attn_ws, void *stream, agoq_step_result *r) {
    const size_t np = (size_t)c->layers * AGOQ_PARAM_COUNT;
    float **ref = calloc(np, sizeof *ref), **ref2 = calloc(np, sizeof *ref2), **got = calloc(np, sizeof *got);
    int rc = -1;
    if (!ref || !ref2 || !got) goto out;
    agoq_step_config rc_cfg = *c;
    agoq_policy_by_name("bf16", &rc_cfg.ms.pol);
    rc_cfg.ms.pol.grad.kind = AGOQ_STORE_FP32;
    rc_cfg.ms.par.recompute_layers = 0;
    rc_cfg.ms.par.recompute_attn_core = 0;
    if (agoq_step_config_fix(&rc_cfg) || probe_grads(&rc_cfg, attn, attn_ws, stream, ref) ||
        probe_grads(&rc_cfg, attn, attn_ws, stream, ref2) || probe_grads(c, attn, attn_ws, stream, got))
        goto out;
    step_plan pl;
    if (step_plan_make(c, &pl)) goto out;
    r->grad_errs = calloc(np, sizeof *r->grad_errs);
    if (!r->grad_errs) goto out;
    for (size_t i = 0; i < np; i++) {
        const size_t n = pl.pelems[i % AGOQ_PARAM_COUNT];
        agoq_error_stats s = agoq_compare(ref[i], got[i], n), s2 = agoq_compare(ref[i], ref2[i], n);
        agoq_step_grad_err *g = &r->grad_errs[r->ngrad_errs++];
        g->layer = (int)(i / AGOQ_PARAM_COUNT);
        g->kind = (agoq_param_kind)(i % AGOQ_PARAM_COUNT);
        g->snr_db = s.snr_db;
        g->rel_err = agoq_norm_l2(&s);
        g->max_abs_err = s.max_abs;
        g->ref_rel_spread = agoq_norm_l2(&s2);
        g->ref_max_abs_spread = s2.max_abs;
    }
    rc = 0;
out:
    for (size_t i = 0; i < np; i++) {
        if (ref) free(ref[i]);
        if (ref2) free(ref2[i]);
        if (got) free(got[i]);
    }
    free(ref);
    free(ref2);
    free(got);
    return rc;
}
#endif

int agoq_step_run(const agoq_step_config *cin, agoq_step_result *r) {
    memset(r, 0, sizeof *r);
    agoq_step_config cfg = *cin;
    if (agoq_step_config_fix(&cfg)) return -1;
    const agoq_step_config *c = &cfg;
    if (agoq_memory_stage(&c->ms, c->stage, &r->model)) return -1;
    size_t need = 0;
    int ends = 1;
    if (c->dry) {
        step_plan dp;
        if (step_plan_make(c, &dp) || step_gemm_resolve(&cfg, &dp, NULL, r->gemm_sites)) return -1;
        if (dry_size(c, 0, r, &need, &ends)) return -1;
        r->arena_bytes = (double)need;
        return 0;
    }
#if !AGOQ_HAVE_CUDA
    agoq_error("step: built without CUDA: only a dry run (plan and memory) is possible");
    return -1;
#else
    char why[256];
    if (agoq_cuda_devices(why, sizeof why) <= 0) return agoq_error("step: no GPU: %s", why), -1;
    if (agoq_attn_available(why, sizeof why)) return agoq_error("step: cuDNN flash attention unavailable: %s", why), -1;
    agoq_gpu_info gi;
    if (agoq_gpu_query(0, &gi) == 0) snprintf(r->gpu_name, sizeof r->gpu_name, "%.127s", gi.name);
    step_plan pl;
    if (step_plan_make(c, &pl)) return -1;
    agoq_attn_desc ad = {(int)pl.b, (int)pl.s, (int)pl.a, (int)pl.kv, (int)pl.d, pl.QKVN, pl.QKVN, pl.AD,
                         1.0f / sqrtf((float)pl.d), 1};
    agoq_attn *attn = NULL;
    if (agoq_attn_create(&ad, &attn)) return -1;
    const size_t attn_ws = agoq_attn_workspace_bytes(attn);
    r->attn_workspace_bytes = (double)attn_ws;
    void *stream = step_dev_stream_create();
    int rc = -1;
    void *base = NULL;
    step_engine e;
    int opened = 0;
    double *ms = calloc((size_t)c->reps, sizeof *ms);
    void *ev0 = step_dev_event_create(), *ev1 = step_dev_event_create();
    /* the GEMM sites first: the dry run that sizes the arena follows their choice */
    if (!ms || step_gemm_resolve(&cfg, &pl, stream, r->gemm_sites) || dry_size(c, attn_ws, r, &need, &ends)) goto out;
    if (c->budget_bytes > 0 && (double)need > c->budget_bytes) {
        agoq_error("step: policy %s needs %.3f GB of device memory, over the budget of %.3f GB",
                   agoq_policy_name(c->ms.pol.id), (double)need / 1e9, c->budget_bytes / 1e9);
        goto out;
    }
    if (c->grad_error && grad_error(c, attn, attn_ws, stream, r)) goto out;
    size_t fr0, tot;
    step_dev_sync();
    step_dev_meminfo(&fr0, &tot);
    r->cuda_context_bytes = (double)(tot - fr0);
    const size_t cap = c->budget_bytes > 0 ? (size_t)c->budget_bytes : need;
    r->arena_bytes = (double)cap;
    if (!(base = step_dev_malloc(cap))) goto out;
    if (step_engine_open(&e, c, base, cap, ends, attn, attn_ws, stream)) goto out;
    opened = 1;
    for (int it = 0; it < c->warmup + c->reps; it++) {
        step_dev_event_record(ev0, stream);
        if (engine_step(&e, 1)) goto out;
        step_dev_event_record(ev1, stream);
        const float t = step_dev_event_ms(ev0, ev1);
        if (it >= c->warmup) ms[it - c->warmup] = t;
        if (!c->quiet)
            fprintf(stderr, "step: %s %s seq %ld: step %d/%d %.1f ms%s\n", c->card.name, agoq_policy_name(c->ms.pol.id),
                    pl.s, it + 1, c->warmup + c->reps, t, it < c->warmup ? " (warm-up)" : "");
    }
    step_dev_sync();
    size_t fr1;
    step_dev_meminfo(&fr1, &tot);
    {   /* one more step with an event pair around every op: the per-op breakdown */
        step_prof *prof = calloc(1, sizeof *prof);
        if (!prof) goto out;
        e.prof = prof;
        int bad = engine_step(&e, 1);
        e.prof = NULL;
        step_dev_sync();
        prof_collect(prof, r->op_ms, r->op_calls);
        r->profiled = prof->n < STEP_PROF_MAX;
        free(prof);
        if (bad) goto out;
    }
    r->cuda_used_bytes = (double)(tot - fr1);
    qsort(ms, (size_t)c->reps, sizeof *ms, cmp_double);
    r->step_ms_min = ms[0];
    r->step_ms_max = ms[c->reps - 1];
    r->step_ms_median = c->reps % 2 ? ms[c->reps / 2] : 0.5 * (ms[c->reps / 2 - 1] + ms[c->reps / 2]);
    const double tokens = (double)pl.T * (double)pl.m, sec = r->step_ms_median / 1e3;
    r->tokens_per_s = tokens / sec;
    r->model_tflops = (double)pl.m * (double)pl.L * (pl.fwd_flops + pl.bwd_flops) / sec / 1e12;
    r->hw_tflops = e.flops_done / sec / 1e12;
    r->peak_tflops = peak_tflops_of(r->gpu_name);
    r->mfu = r->peak_tflops > 0 ? r->model_tflops / r->peak_tflops : 0.0;
    r->peak_bytes = (double)e.ar.high_water;
    r->peak_live_bytes = (double)e.ar.peak_live_bytes;
    for (int k = 0; k < AGOQ_MEM_CLASS_COUNT; k++) r->at_peak[k] = (double)e.ar.at_peak_by_class[k];
    rc = 0;
out:
    if (opened) step_engine_close(&e);
    step_dev_sync();
    step_dev_free(base);
    step_dev_event_destroy(ev0);
    step_dev_event_destroy(ev1);
    step_dev_stream_destroy(stream);
    agoq_attn_destroy(attn);
    free(ms);
    return rc;
#endif
}

void agoq_step_dump_free(agoq_step_dump *d) {
    for (size_t i = 0; i < d->nparams; i++) {
        if (d->weights) free(d->weights[i]);
        if (d->grads) free(d->grads[i]);
    }
    for (size_t i = 0; i < d->nmb; i++) {
        if (d->x) free(d->x[i]);
        if (d->dy) free(d->dy[i]);
        if (d->y) free(d->y[i]);
    }
    free(d->weights);
    free(d->grads);
    free(d->x);
    free(d->dy);
    free(d->y);
    memset(d, 0, sizeof *d);
}

int agoq_step_probe(const agoq_step_config *cin, agoq_step_dump *d) {
    memset(d, 0, sizeof *d);
    agoq_step_config cfg = *cin;
    if (agoq_step_config_fix(&cfg)) return -1;
#if !AGOQ_HAVE_CUDA
    agoq_error("step: built without CUDA: no probe");
    return -1;
#else
    const agoq_step_config *c = &cfg;
    char why[256];
    if (agoq_cuda_devices(why, sizeof why) <= 0) return agoq_error("step: no GPU: %s", why), -1;
    if (agoq_attn_available(why, sizeof why)) return agoq_error("step: cuDNN flash attention unavailable: %s", why), -1;
    step_plan pl;
    if (step_plan_make(c, &pl)) return -1;
    d->nparams = (size_t)pl.L * AGOQ_PARAM_COUNT;
    d->nmb = (size_t)pl.m;
    d->tokens = (size_t)pl.T;
    d->hidden = (size_t)pl.h;
    memcpy(d->prow, pl.prow, sizeof d->prow);
    memcpy(d->pcol, pl.pcol, sizeof d->pcol);
    d->weights = calloc(d->nparams, sizeof *d->weights);
    d->grads = calloc(d->nparams, sizeof *d->grads);
    d->x = calloc(d->nmb, sizeof *d->x);
    d->dy = calloc(d->nmb, sizeof *d->dy);
    d->y = calloc(d->nmb, sizeof *d->y);
    const size_t xb = d->tokens * d->hidden * 2;
    int ok = d->weights && d->grads && d->x && d->dy && d->y;
    for (size_t i = 0; ok && i < d->nmb; i++) ok = (d->x[i] = malloc(xb)) && (d->dy[i] = malloc(xb)) && (d->y[i] = malloc(xb));
    for (size_t i = 0; ok && i < d->nparams; i++) ok = (d->weights[i] = malloc(pl.pelems[i % AGOQ_PARAM_COUNT] * 2)) != NULL;
    if (!ok) return agoq_step_dump_free(d), agoq_error("step: out of host memory"), -1;
    agoq_attn_desc ad = {(int)pl.b, (int)pl.s, (int)pl.a, (int)pl.kv, (int)pl.d, pl.QKVN, pl.QKVN, pl.AD,
                         1.0f / sqrtf((float)pl.d), 1};
    agoq_attn *attn = NULL;
    if (agoq_attn_create(&ad, &attn)) return agoq_step_dump_free(d), -1;
    const size_t ws = agoq_attn_workspace_bytes(attn);
    size_t need;
    int ends;
    void *stream = step_dev_stream_create(), *base = NULL;
    step_engine e;
    int rc = -1, opened = 0;
    agoq_step_gemm_site sites[AGOQ_GEMM_SITE_COUNT];
    if (step_gemm_resolve(&cfg, &pl, stream, sites) || dry_size(c, ws, NULL, &need, &ends) || !(base = step_dev_malloc(need)))
        goto out;
    if (step_engine_open(&e, c, base, need, ends, attn, ws, stream)) goto out;
    opened = 1;
    e.dump = d;
    if (engine_step(&e, 0) || step_grads_to_host(&e, d->grads)) goto out;
    step_dev_sync();
    for (size_t i = 0; i < d->nparams; i++) step_dev_d2h(d->weights[i], e.w[i], pl.pelems[i % AGOQ_PARAM_COUNT] * 2);
    rc = 0;
out:
    if (opened) step_engine_close(&e);
    step_dev_sync();
    step_dev_free(base);
    step_dev_stream_destroy(stream);
    agoq_attn_destroy(attn);
    if (rc) agoq_step_dump_free(d);
    return rc;
#endif
}

void agoq_step_result_free(agoq_step_result *r) {
    free(r->grad_errs);
    r->grad_errs = NULL;
    r->ngrad_errs = 0;
}

const char *agoq_step_op_name(int op) { return op >= 0 && op < STEP_OP_COUNT ? step_op_names[op] : NULL; }
