/* Shared state and host-side checks of the quantization benchmark cases (bench_quant.cu) and the
 * 8-bit gradient cases built on them (kernels/grad8/bench_grad8.cu): device buffers of one case,
 * their teardown, and the bit-exact comparison against the C reference. CUDA builds only. */
#ifndef AGOQ_BENCH_QUANT_UTIL_H
#define AGOQ_BENCH_QUANT_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/bench/bench_cases.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_ref.h"

#define AGOQ_BENCH_MAX_CHUNKS 64 /* received chunks a reduce case holds */

typedef struct {
    agoq_qconfig qc;
    size_t n;
    float *xf;    /* fp32 input / fp32 gradient */
    uint16_t *xh; /* bf16 input / bf16 gradient */
    float *yf;
    uint16_t *yh;
    agoq_cuda_qtensor q; /* output, or the stored gradient */
    agoq_cuda_qtensor chunk[AGOQ_BENCH_MAX_CHUNKS];
    int nchunks;
} qstate;


static inline double qbytes(const agoq_bench_args *a) { return (double)agoq_qtensor_bytes(&a->qc, a->n); }
static inline double bytes_quant_f32(const agoq_bench_args *a) { return 4.0 * (double)a->n + qbytes(a); }
static inline double bytes_quant_bf16(const agoq_bench_args *a) { return 2.0 * (double)a->n + qbytes(a); }
static inline double bytes_acc_f32(const agoq_bench_args *a) { return 2.0 * qbytes(a) + 4.0 * (double)a->n; }
static inline double bytes_acc_bf16(const agoq_bench_args *a) { return 2.0 * qbytes(a) + 2.0 * (double)a->n; }
static inline double bytes_reduce(const agoq_bench_args *a) { return (double)(a->nchunks + 1) * qbytes(a); }

static inline qstate *state_new(const agoq_bench_args *a) {
    qstate *s = (qstate *)calloc(1, sizeof *s);
    if (!s) agoq_die("kernels benchmark: out of host memory");
    s->qc = a->qc;
    s->n = a->n;
    AGOQ_BENCH_MUST(agoq_cuda_qtensor_alloc(&s->q, &s->qc, s->n));
    return s;
}
static inline float *new_f32(const agoq_bench_args *a, uint64_t seed) {
    float *x = (float *)agoq_cuda_malloc(a->n * sizeof(float));
    agoq_cuda_fill_normal_f32(x, a->n, seed, a->stream);
    return x;
}
static inline uint16_t *new_bf16(const agoq_bench_args *a, uint64_t seed) {
    uint16_t *x = (uint16_t *)agoq_cuda_malloc(a->n * sizeof(uint16_t));
    agoq_cuda_fill_normal_bf16(x, a->n, seed, a->stream);
    return x;
}

static inline void teardown(void *p) {
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
static inline int same_bytes(const char *what, const void *ref, const void *got, size_t n) {
    const uint8_t *r = (const uint8_t *)ref, *g = (const uint8_t *)got;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i] != g[i] && bad++ == 0) first = i;
    if (bad) agoq_error("kernels check: %s: %zu of %zu bytes differ from the reference, first at byte %zu (0x%02x vs 0x%02x)",
                        what, bad, n, first, r[first], g[first]);
    return bad ? -1 : 0;
}
static inline int same_qtensor(const char *what, const agoq_qconfig *c, const agoq_qtensor *ref, const agoq_cuda_qtensor *d) {
    agoq_qtensor got;
    if (agoq_qtensor_alloc(&got, c, ref->n)) return -1;
    AGOQ_BENCH_MUST(agoq_cuda_qtensor_download(c, d, &got));
    int rc = same_bytes(what, ref->codes, got.codes, agoq_codes_bytes(c, ref->n)) ||
             same_bytes(what, ref->scales, got.scales, agoq_scales_bytes(c, ref->n)) ||
             (agoq_has_zeros(c) && same_bytes(what, ref->zeros, got.zeros, agoq_zeros_bytes(c, ref->n)));
    agoq_qtensor_free(&got);
    return rc ? -1 : 0;
}
static inline void *download(const void *d, size_t bytes) {
    void *h = malloc(bytes ? bytes : 1);
    if (!h) agoq_die("kernels check: out of host memory");
    agoq_cuda_d2h(h, d, bytes);
    return h;
}
static inline int host_qtensor(const qstate *s, const agoq_cuda_qtensor *d, agoq_qtensor *h) {
    if (agoq_qtensor_alloc(h, &s->qc, s->n)) return -1;
    return agoq_cuda_qtensor_download(&s->qc, d, h);
}
#endif
