/* Benchmark cases of the quantization kernels (quant.cu) and the 8-bit gradient kernels
 * (grad8.cu) for `agoq kernels`; see bench_cases.h. Bytes moved, per launch, with
 * Q = agoq_qtensor_bytes(qc, n) (codes incl. tail padding + scales + zero points):
 *   quantize_f32        reads 4n,       writes Q            -> 4n + Q
 *   quantize_bf16       reads 2n,       writes Q            -> 2n + Q
 *   dequantize_f32      reads Q,        writes 4n           -> Q + 4n
 *   dequantize_bf16     reads Q,        writes 2n           -> Q + 2n
 *   grad_accumulate_*   reads Q + {2,4}n (stored + new),    writes Q -> 2Q + {2,4}n
 *   grad_reduce         reads N*Q (N received chunks),      writes Q -> (N + 1) Q
 * Each case's check launches once more and compares with the C reference bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/bench/bench_cases.h"
#include "kernels/grad8/grad8.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_ref.h"

typedef struct {
    agoq_qconfig qc;
    size_t n;
    float *xf;    /* fp32 input / fp32 gradient */
    uint16_t *xh; /* bf16 input / bf16 gradient */
    float *yf;
    uint16_t *yh;
    agoq_cuda_qtensor q; /* output, or the stored gradient */
    agoq_cuda_qtensor chunk[AGOQ_CUDA_MAX_CHUNKS];
    int nchunks;
} qstate;


static double qbytes(const agoq_bench_args *a) { return (double)agoq_qtensor_bytes(&a->qc, a->n); }
static double bytes_quant_f32(const agoq_bench_args *a) { return 4.0 * (double)a->n + qbytes(a); }
static double bytes_quant_bf16(const agoq_bench_args *a) { return 2.0 * (double)a->n + qbytes(a); }
static double bytes_acc_f32(const agoq_bench_args *a) { return 2.0 * qbytes(a) + 4.0 * (double)a->n; }
static double bytes_acc_bf16(const agoq_bench_args *a) { return 2.0 * qbytes(a) + 2.0 * (double)a->n; }
static double bytes_reduce(const agoq_bench_args *a) { return (double)(a->nchunks + 1) * qbytes(a); }

static qstate *state_new(const agoq_bench_args *a) {
    qstate *s = (qstate *)calloc(1, sizeof *s);
    if (!s) agoq_die("kernels benchmark: out of host memory");
    s->qc = a->qc;
    s->n = a->n;
    AGOQ_BENCH_MUST(agoq_cuda_qtensor_alloc(&s->q, &s->qc, s->n));
    return s;
}
static float *new_f32(const agoq_bench_args *a, uint64_t seed) {
    float *x = (float *)agoq_cuda_malloc(a->n * sizeof(float));
    agoq_cuda_fill_normal_f32(x, a->n, seed, a->stream);
    return x;
}
static uint16_t *new_bf16(const agoq_bench_args *a, uint64_t seed) {
    uint16_t *x = (uint16_t *)agoq_cuda_malloc(a->n * sizeof(uint16_t));
    agoq_cuda_fill_normal_bf16(x, a->n, seed, a->stream);
    return x;
}

static void teardown(void *p) {
    qstate *s = (qstate *)p;
    agoq_cuda_sync(NULL);
    agoq_cuda_free(s->xf);
    agoq_cuda_free(s->xh);
    agoq_cuda_free(s->yf);
    agoq_cuda_free(s->yh);
    agoq_cuda_qtensor_free(&s->q);
    for (int r = 0; r < s->nchunks; r++) agoq_cuda_qtensor_free(&s->chunk[r]);
    free(s);
}

/* ---- host-side comparison for the checks ---- */
static int same_bytes(const char *what, const void *ref, const void *got, size_t n) {
    const uint8_t *r = (const uint8_t *)ref, *g = (const uint8_t *)got;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i] != g[i] && bad++ == 0) first = i;
    if (bad) agoq_error("kernels check: %s: %zu of %zu bytes differ from the reference, first at byte %zu (0x%02x vs 0x%02x)",
                        what, bad, n, first, r[first], g[first]);
    return bad ? -1 : 0;
}
static int same_qtensor(const char *what, const agoq_qconfig *c, const agoq_qtensor *ref, const agoq_cuda_qtensor *d) {
    agoq_qtensor got;
    if (agoq_qtensor_alloc(&got, c, ref->n)) return -1;
    AGOQ_BENCH_MUST(agoq_cuda_qtensor_download(c, d, &got));
    int rc = same_bytes(what, ref->codes, got.codes, agoq_codes_bytes(c, ref->n)) ||
             same_bytes(what, ref->scales, got.scales, agoq_scales_bytes(c, ref->n)) ||
             (agoq_has_zeros(c) && same_bytes(what, ref->zeros, got.zeros, agoq_zeros_bytes(c, ref->n)));
    agoq_qtensor_free(&got);
    return rc ? -1 : 0;
}
static void *download(const void *d, size_t bytes) {
    void *h = malloc(bytes ? bytes : 1);
    if (!h) agoq_die("kernels check: out of host memory");
    agoq_cuda_d2h(h, d, bytes);
    return h;
}
static int host_qtensor(const qstate *s, const agoq_cuda_qtensor *d, agoq_qtensor *h) {
    if (agoq_qtensor_alloc(h, &s->qc, s->n)) return -1;
    return agoq_cuda_qtensor_download(&s->qc, d, h);
}

/* ---- quantize ---- */
static int setup_quant_f32(const agoq_bench_args *a, void **st) {
    qstate *s = state_new(a);
    s->xf = new_f32(a, a->seed);
    *st = s;
    return 0;
}
static int setup_quant_bf16(const agoq_bench_args *a, void **st) {
    qstate *s = state_new(a);
    s->xh = new_bf16(a, a->seed);
    *st = s;
    return 0;
}
static void launch_quant_f32(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    AGOQ_BENCH_MUST(agoq_cuda_quantize_f32(&s->qc, s->xf, s->n, &s->q, a->stream));
}
static void launch_quant_bf16(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    AGOQ_BENCH_MUST(agoq_cuda_quantize_bf16(&s->qc, s->xh, s->n, &s->q, a->stream));
}
static int check_quant(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    agoq_qtensor ref;
    if (agoq_qtensor_alloc(&ref, &s->qc, s->n)) return -1;
    if (s->xf) {
        launch_quant_f32(p, a);
        float *x = (float *)download(s->xf, s->n * 4);
        agoq_quantize_ref(&s->qc, x, s->n, &ref);
        free(x);
    } else {
        launch_quant_bf16(p, a);
        uint16_t *x = (uint16_t *)download(s->xh, s->n * 2);
        agoq_quantize_bf16_ref(&s->qc, x, s->n, &ref);
        free(x);
    }
    int rc = same_qtensor(s->xf ? "quantize_f32" : "quantize_bf16", &s->qc, &ref, &s->q);
    agoq_qtensor_free(&ref);
    return rc;
}

/* ---- dequantize ---- */
static int setup_dequant(const agoq_bench_args *a, void **st, int out_bf16) {
    qstate *s = state_new(a);
    float *x = new_f32(a, a->seed);
    AGOQ_BENCH_MUST(agoq_cuda_quantize_f32(&s->qc, x, s->n, &s->q, a->stream));
    agoq_cuda_sync(a->stream);
    agoq_cuda_free(x);
    if (out_bf16) s->yh = (uint16_t *)agoq_cuda_malloc(s->n * 2);
    else s->yf = (float *)agoq_cuda_malloc(s->n * 4);
    *st = s;
    return 0;
}
static int setup_dequant_f32(const agoq_bench_args *a, void **st) { return setup_dequant(a, st, 0); }
static int setup_dequant_bf16(const agoq_bench_args *a, void **st) { return setup_dequant(a, st, 1); }
static void launch_dequant(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    if (s->yf) AGOQ_BENCH_MUST(agoq_cuda_dequantize_f32(&s->qc, &s->q, s->yf, a->stream));
    else AGOQ_BENCH_MUST(agoq_cuda_dequantize_bf16(&s->qc, &s->q, s->yh, a->stream));
}
static int check_dequant(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    launch_dequant(p, a);
    agoq_cuda_sync(a->stream);
    agoq_qtensor h;
    if (host_qtensor(s, &s->q, &h)) return -1;
    const size_t esz = s->yf ? 4 : 2;
    void *ref = malloc(s->n * esz + 1), *got = download(s->yf ? (void *)s->yf : (void *)s->yh, s->n * esz);
    if (s->yf) agoq_dequantize_ref(&s->qc, &h, (float *)ref);
    else agoq_dequantize_bf16_ref(&s->qc, &h, (uint16_t *)ref);
    int rc = same_bytes(s->yf ? "dequantize_f32" : "dequantize_bf16", ref, got, s->n * esz);
    free(ref);
    free(got);
    agoq_qtensor_free(&h);
    return rc;
}

/* ---- 8-bit gradient path ---- */
static int only_8bit(const agoq_qconfig *qc) { return agoq_formats[qc->fmt].bits == 8; }

static int setup_acc(const agoq_bench_args *a, void **st, int g_bf16) {
    qstate *s = state_new(a);
    float *x = new_f32(a, a->seed);
    AGOQ_BENCH_MUST(agoq_cuda_quantize_f32(&s->qc, x, s->n, &s->q, a->stream));
    agoq_cuda_sync(a->stream);
    agoq_cuda_free(x);
    if (g_bf16) s->xh = new_bf16(a, a->seed + 1);
    else s->xf = new_f32(a, a->seed + 1);
    *st = s;
    return 0;
}
static int setup_acc_f32(const agoq_bench_args *a, void **st) { return setup_acc(a, st, 0); }
static int setup_acc_bf16(const agoq_bench_args *a, void **st) { return setup_acc(a, st, 1); }
static void launch_acc(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    AGOQ_BENCH_MUST(agoq_cuda_grad_accumulate(&s->qc, &s->q, s->xf, s->xh, a->stream));
}
static int check_acc(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    agoq_cuda_sync(a->stream);
    agoq_qtensor h;
    if (host_qtensor(s, &s->q, &h)) return -1;
    float *gf = s->xf ? (float *)download(s->xf, s->n * 4) : NULL;
    uint16_t *gh = s->xh ? (uint16_t *)download(s->xh, s->n * 2) : NULL;
    launch_acc(p, a);
    agoq_cuda_sync(a->stream);
    agoq_grad_accumulate_ref(&s->qc, &h, gf, gh, s->n);
    int rc = same_qtensor("grad_accumulate", &s->qc, &h, &s->q);
    agoq_qtensor_free(&h);
    free(gf);
    free(gh);
    return rc;
}

static int setup_reduce(const agoq_bench_args *a, void **st) {
    if (a->nchunks < 1 || a->nchunks > AGOQ_CUDA_MAX_CHUNKS) {
        agoq_error("kernels: grad_reduce: nchunks %d outside 1..%d", a->nchunks, AGOQ_CUDA_MAX_CHUNKS);
        return -1;
    }
    qstate *s = state_new(a);
    float *x = (float *)agoq_cuda_malloc(s->n * 4);
    for (int r = 0; r < a->nchunks; r++) {
        AGOQ_BENCH_MUST(agoq_cuda_qtensor_alloc(&s->chunk[r], &s->qc, s->n));
        s->nchunks = r + 1;
        agoq_cuda_fill_normal_f32(x, s->n, a->seed + 17 * (uint64_t)r, a->stream);
        AGOQ_BENCH_MUST(agoq_cuda_quantize_f32(&s->qc, x, s->n, &s->chunk[r], a->stream));
    }
    agoq_cuda_sync(a->stream);
    agoq_cuda_free(x);
    *st = s;
    return 0;
}
static void launch_reduce(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    AGOQ_BENCH_MUST(agoq_cuda_grad_reduce(&s->qc, s->chunk, s->nchunks, AGOQ_SUM_FP32, &s->q, NULL, a->stream));
}
static int check_reduce(void *p, const agoq_bench_args *a) {
    qstate *s = (qstate *)p;
    agoq_qtensor h[AGOQ_CUDA_MAX_CHUNKS], want;
    const agoq_qtensor *hp[AGOQ_CUDA_MAX_CHUNKS];
    for (int r = 0; r < s->nchunks; r++) {
        if (host_qtensor(s, &s->chunk[r], &h[r])) return -1;
        hp[r] = &h[r];
    }
    if (agoq_qtensor_alloc(&want, &s->qc, s->n)) return -1;
    launch_reduce(p, a);
    agoq_cuda_sync(a->stream);
    agoq_grad_reduce_ref(&s->qc, hp, s->nchunks, s->n, AGOQ_SUM_FP32, &want, NULL);
    int rc = same_qtensor("grad_reduce", &s->qc, &want, &s->q);
    for (int r = 0; r < s->nchunks; r++) agoq_qtensor_free(&h[r]);
    agoq_qtensor_free(&want);
    return rc;
}

static const agoq_bench_case quant_cases[] = {
    {"quantize_f32", "quant", 1, bytes_quant_f32, setup_quant_f32, launch_quant_f32, check_quant, teardown, NULL},
    {"quantize_bf16", "quant", 1, bytes_quant_bf16, setup_quant_bf16, launch_quant_bf16, check_quant, teardown, NULL},
    {"dequantize_f32", "quant", 1, bytes_quant_f32, setup_dequant_f32, launch_dequant, check_dequant, teardown, NULL},
    {"dequantize_bf16", "quant", 1, bytes_quant_bf16, setup_dequant_bf16, launch_dequant, check_dequant, teardown, NULL},
    {"grad_accumulate_bf16", "grad8", 1, bytes_acc_bf16, setup_acc_bf16, launch_acc, check_acc, teardown, only_8bit},
    {"grad_accumulate_f32", "grad8", 1, bytes_acc_f32, setup_acc_f32, launch_acc, check_acc, teardown, only_8bit},
    {"grad_reduce", "grad8", 1, bytes_reduce, setup_reduce, launch_reduce, check_reduce, teardown, only_8bit},
};
AGOQ_BENCH_REGISTER(quant_cases)
