/* Benchmark cases of the quantization kernels (quant.cu) for `agoq kernels`; see bench_cases.h
 * (the 8-bit gradient cases are kernels/grad8/bench_grad8.cu). Bytes moved, per launch, with
 * Q = agoq_qtensor_bytes(qc, n) (codes incl. tail padding + scales + zero points):
 *   quantize_f32        reads 4n,       writes Q            -> 4n + Q
 *   quantize_bf16       reads 2n,       writes Q            -> 2n + Q
 *   dequantize_f32      reads Q,        writes 4n           -> Q + 4n
 *   dequantize_bf16     reads Q,        writes 2n           -> Q + 2n
 * Each case's check launches once more and compares with the C reference bit for bit. */
#include "kernels/quant/bench_quant_util.h"

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

static const agoq_bench_case quant_cases[] = {
    {"quantize_f32", "quant", 1, bytes_quant_f32, setup_quant_f32, launch_quant_f32, check_quant, teardown, NULL},
    {"quantize_bf16", "quant", 1, bytes_quant_bf16, setup_quant_bf16, launch_quant_bf16, check_quant, teardown, NULL},
    {"dequantize_f32", "quant", 1, bytes_quant_f32, setup_dequant_f32, launch_dequant, check_dequant, teardown, NULL},
    {"dequantize_bf16", "quant", 1, bytes_quant_bf16, setup_dequant_bf16, launch_dequant, check_dequant, teardown, NULL},
};
AGOQ_BENCH_REGISTER(quant_cases)
