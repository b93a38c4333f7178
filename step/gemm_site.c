/* The step engine's forward GEMM sites (step.h: OUT_PROJ, FC2, FC1) and the config key `gemm`:
 * which GEMM writes the output and who writes its quantized copy.
 *
 *   cublaslt  cuBLASLt's GEMM; the consumer (RMSNorm / SwiGLU forward) quantizes its input as it
 *             reads it (the engine's original path, kernel for kernel)
 *   fused     the project's Hopper GEMM (kernels/gemm/gemm_wg.h) with the copy written by its
 *             epilogue from its own bf16 output (bit-exact with agoq_rowq_quantize_ref of it);
 *             the consumer quantizes nothing. Where the GEMM refuses (format, block, shape), the
 *             FC1 copy's planes would differ, or the device is not Hopper, the site falls back
 *             to cuBLASLt and the reason is recorded.
 *   auto      on a GPU, before anything else of the step: each site timed both ways (GEMM +
 *             consumer, cudaEvents, warm-up then the median of STEP_GEMM_REPS) at the step's
 *             own shapes, quantizer and stream, and the faster kept. The buffers are this
 *             file's own (seeded random data, the engine's weight scale), not the arena's: the
 *             arena is sized by the dry run, and the dry run must already know the choice (the
 *             fused path allocates the copy's planes before its GEMM, not after). A dry run
 *             does not time: auto plans cuBLASLt there and says "not timed (dry)".
 * Only sites whose output the plan stores quantized are affected; the rest keep cuBLASLt. A
 * fused out_proj / fc1 site runs the fused GEMM in every forward of every layer, without the copy
 * where nothing is stored (a fully recomputed layer's first forward), so the recomputing forward
 * reproduces the first one bit for bit.
 * FC2's copy is the next layer's saved input: it applies to layers l with a next layer that
 * is not fully recomputed (recompute_layers <= l + 1 < L); the last layer's output leaves the
 * stage in bf16. FC1's output hh [T, 2F] is stored as the rowq of its [2T, F] view: the GEMM's
 * copy of T rows of 2F has the same planes (and the same stochastic-draw indices) exactly when
 * the block divides F. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/common.h"
#include "kernels/gemm/gemm_wg.h"
#include "step/dev.h"
#include "step/step_internal.h"

#define STEP_GEMM_WARMUP 2
#define STEP_GEMM_REPS 7

static const char *const g_gemm_names[AGOQ_STEP_GEMM_KEY_COUNT] = {"auto", "cublaslt", "fused"};
static const char *const g_site_names[AGOQ_GEMM_SITE_COUNT] = {"out_proj", "fc2", "fc1"};

const char *agoq_step_gemm_name(agoq_step_gemm g) {
    return (unsigned)g < AGOQ_STEP_GEMM_KEY_COUNT ? g_gemm_names[g] : "?";
}

int agoq_step_gemm_parse(const char *s, agoq_step_gemm *out) {
    for (int i = 0; s && i < AGOQ_STEP_GEMM_KEY_COUNT; i++)
        if (strcmp(s, g_gemm_names[i]) == 0) return *out = (agoq_step_gemm)i, 0;
    return -1;
}

const char *agoq_gemm_site_name(agoq_gemm_site s) { return (unsigned)s < AGOQ_GEMM_SITE_COUNT ? g_site_names[s] : "?"; }

/* Site s as a GEMM Y[M, N] = X[M, K] W[N, K]^T (+ R) and the role its copy is stored as. */
typedef struct {
    int M, N, K, residual;
    agoq_role role;
} site_shape;

static site_shape site_of(const step_plan *p, int s) {
    const int T = (int)p->T, h = (int)p->h, F = (int)p->F;
    if (s == AGOQ_GEMM_SITE_OUT_PROJ) return (site_shape){T, h, (int)p->AD, 1, AGOQ_ROLE_NORM_IN};
    if (s == AGOQ_GEMM_SITE_FC2) return (site_shape){T, h, F, 1, AGOQ_ROLE_NORM_IN};
    return (site_shape){T, 2 * F, h, 0, AGOQ_ROLE_FC1_OUT};
}

/* The plan stores site s's output quantized (for FC2: in at least one layer). */
static int site_applies(const step_plan *p, int s) {
    const site_shape g = site_of(p, s);
    if (p->st[g.role].kind != AGOQ_STORE_QUANT) return 0;
    return s != AGOQ_GEMM_SITE_FC2 || p->recompute_layers <= p->L - 1;
}

/* Why the fused GEMM cannot take site s (why = "" when it can); the device is checked only
 * for real runs. */
static void site_refusal(const step_plan *p, int s, int real, char *why, size_t len) {
    const site_shape g = site_of(p, s);
    const agoq_qconfig *q = &p->st[g.role].q;
    why[0] = '\0';
    if (s == AGOQ_GEMM_SITE_FC1 && p->F % q->block != 0) {
        snprintf(why, len, "block %d does not divide F = %ld: the [T, 2F] copy's planes are not those of [2T, F]",
                 q->block, p->F);
        return;
    }
    /* the shape rules of the kernel's launcher (plain C: the same answer in every build, so a dry
     * run plans alike with and without CUDA) */
    agoq_error_capture(why, len);
    const int bad = agoq_wg_check(g.M, g.N, g.K, q);
    agoq_error_capture(NULL, 0);
    if (!bad) why[0] = '\0';
    if (bad || !real) return;
#if AGOQ_HAVE_CUDA
    agoq_gpu_info gi;
    if (agoq_gpu_query(0, &gi) == 0 && !(gi.cc_major == 9 && gi.cc_minor == 0))
        snprintf(why, len, "device %.60s is sm_%d%d, the fused GEMM needs sm_90 (Hopper)", gi.name, gi.cc_major, gi.cc_minor);
#else
    snprintf(why, len, "built without CUDA (the fused GEMM is a CUDA kernel)");
#endif
}

#if AGOQ_HAVE_CUDA
static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Buffers of one site's timing: X, W, R (residual sites), Y, the copy's planes and the
 * consumer's weight and output. */
typedef struct {
    uint16_t *x, *w, *r, *y, *nw, *out;
    agoq_dqt q;
} site_bufs;

/* GEMM + consumer of site s one way: fused (the GEMM writes the copy) or not (the consumer
 * does). */
static int site_once(const step_plan *p, const agoq_step_config *c, int s, int fused, agoq_lt *lt, const agoq_fq *fq,
                     const site_bufs *b, void *stream) {
    const site_shape g = site_of(p, s);
    if (fused ? agoq_wg_fwd(g.M, g.N, g.K, b->x, b->w, b->r, b->y, fq, b->q, stream)
              : agoq_lt_fwd(lt, g.M, g.N, g.K, b->x, b->w, b->r, b->y, stream))
        return -1;
    const agoq_fq *cq = fused ? NULL : fq;
    if (g.role == AGOQ_ROLE_FC1_OUT) return agoq_swiglu_fwd_cuda(cq, b->y, g.M, (int)p->F, b->out, b->q, stream);
    return agoq_rmsnorm_fwd_cuda(cq, b->y, b->nw, g.M, g.N, c->norm_eps, b->out, b->q, NULL, stream);
}

/* Times site s both ways (alternating, after a warm-up): medians in ms. */
static int site_time(const step_plan *p, const agoq_step_config *c, int s, agoq_lt *lt, void *stream, double *ms_lt,
                     double *ms_fused) {
    const site_shape g = site_of(p, s);
    const size_t M = (size_t)g.M, N = (size_t)g.N, K = (size_t)g.K;
    const agoq_qconfig *qc = &p->st[g.role].q;
    const size_t n = agoq_rowq_alloc_n(qc, M, N), cb = agoq_codes_bytes(qc, n) + 8, sb = agoq_scales_bytes(qc, n) + 8,
                 zb = agoq_zeros_bytes(qc, n);
    site_bufs b = {0};
    agoq_fq fq;
    int rc = -1;
    if (agoq_fq_make(qc, &fq)) return -1;
    b.x = step_dev_malloc(M * K * 2);
    b.w = step_dev_malloc(N * K * 2);
    b.r = g.residual ? step_dev_malloc(M * N * 2) : NULL;
    b.y = step_dev_malloc(M * N * 2);
    b.nw = step_dev_malloc(N * 2);
    b.out = step_dev_malloc(M * N * 2);
    b.q.codes = step_dev_malloc(cb);
    b.q.scales = step_dev_malloc(sb);
    b.q.zeros = zb ? step_dev_malloc(zb + 8) : NULL;
    void *ev[3] = {step_dev_event_create(), step_dev_event_create(), step_dev_event_create()};
    float t[2][STEP_GEMM_REPS];
    if (!b.x || !b.w || (g.residual && !b.r) || !b.y || !b.nw || !b.out || !b.q.codes || !b.q.scales || (zb && !b.q.zeros))
        goto out;
    const uint64_t seed = c->seed * 7919u + 0x4000u + (uint64_t)s * 16u;
    if (step_dev_randn_bf16(b.x, M * K, seed, 1.0f, stream) || step_dev_randn_bf16(b.w, N * K, seed + 1, 0.02f, stream) ||
        (b.r && step_dev_randn_bf16(b.r, M * N, seed + 2, 1.0f, stream)) ||
        step_dev_randn_bf16(b.nw, N, seed + 3, 1.0f, stream))
        goto out;
    for (int it = 0; it < STEP_GEMM_WARMUP + STEP_GEMM_REPS; it++) {
        step_dev_event_record(ev[0], stream);
        if (site_once(p, c, s, 0, lt, &fq, &b, stream)) goto out;
        step_dev_event_record(ev[1], stream);
        if (site_once(p, c, s, 1, lt, &fq, &b, stream)) goto out;
        step_dev_event_record(ev[2], stream);
        const float a = step_dev_event_ms(ev[0], ev[1]), f = step_dev_event_ms(ev[1], ev[2]);
        if (it >= STEP_GEMM_WARMUP) t[0][it - STEP_GEMM_WARMUP] = a, t[1][it - STEP_GEMM_WARMUP] = f;
    }
    for (int k = 0; k < 2; k++) qsort(t[k], STEP_GEMM_REPS, sizeof t[k][0], cmp_f);
    *ms_lt = t[0][STEP_GEMM_REPS / 2];
    *ms_fused = t[1][STEP_GEMM_REPS / 2];
    rc = 0;
out:
    step_dev_sync();
    for (int k = 0; k < 3; k++) step_dev_event_destroy(ev[k]);
    void *bufs[] = {b.x, b.w, b.r, b.y, b.nw, b.out, b.q.codes, b.q.scales, b.q.zeros};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) step_dev_free(bufs[k]);
    agoq_fq_free(&fq);
    return rc;
}
#endif

int step_gemm_resolve(agoq_step_config *c, const step_plan *p, void *stream, agoq_step_gemm_site out[AGOQ_GEMM_SITE_COUNT]) {
    memset(out, 0, AGOQ_GEMM_SITE_COUNT * sizeof *out);
    memset(c->gemm_fused, 0, sizeof c->gemm_fused);
    int timing = 0;
    for (int s = 0; s < AGOQ_GEMM_SITE_COUNT; s++) {
        agoq_step_gemm_site *o = &out[s];
        o->applies = site_applies(p, s);
        if (!o->applies || c->gemm == AGOQ_STEP_GEMM_CUBLASLT) continue;
        site_refusal(p, s, !c->dry, o->fallback, sizeof o->fallback);
        if (o->fallback[0]) continue;
        if (c->gemm == AGOQ_STEP_GEMM_FUSED) o->fused = 1;
        else timing |= !c->dry; /* auto: timed below on a GPU; planned as cuBLASLt in a dry run */
    }
#if AGOQ_HAVE_CUDA
    if (timing) {
        void *ws = step_dev_malloc(STEP_LT_WORKSPACE_BYTES);
        agoq_lt *lt = NULL;
        int rc = !ws || agoq_lt_create(ws, STEP_LT_WORKSPACE_BYTES, &lt) ? -1 : 0;
        for (int s = 0; s < AGOQ_GEMM_SITE_COUNT && !rc; s++) {
            agoq_step_gemm_site *o = &out[s];
            if (!o->applies || o->fallback[0]) continue;
            rc = site_time(p, c, s, lt, stream, &o->ms_cublaslt, &o->ms_fused);
            o->timed = 1;
            o->fused = o->ms_fused < o->ms_cublaslt;
        }
        if (lt) agoq_lt_destroy(lt);
        step_dev_free(ws);
        if (rc) return agoq_error("step: gemm auto: timing the GEMM sites failed (above)"), -1;
    }
#else
    (void)stream;
    if (timing) return agoq_error("step: gemm auto needs a CUDA build"), -1;
#endif
    for (int s = 0; s < AGOQ_GEMM_SITE_COUNT; s++) c->gemm_fused[s] = (unsigned char)out[s].fused;
    return 0;
}

int step_gemm_fused(const step_engine *e, agoq_gemm_site s) {
    return e->cfg->gemm_fused[s] && site_applies(&e->pl, s);
}
