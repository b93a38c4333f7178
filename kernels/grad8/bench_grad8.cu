/* Benchmark cases of the 8-bit gradient kernels (grad8.cu) for `agoq kernels`; see
 * bench_cases.h. Bytes moved, per launch, with Q = agoq_qtensor_bytes(qc, n):
 *   grad_accumulate_*   reads Q + {2,4}n (stored + new),    writes Q -> 2Q + {2,4}n
 *   grad_reduce         reads N*Q (N received chunks),      writes Q -> (N + 1) Q
 * Each case's check launches once more and compares with the C reference bit for bit. */
#include "kernels/grad8/grad8_cuda.h"
#include "kernels/quant/bench_quant_util.h"

static_assert(AGOQ_CUDA_MAX_CHUNKS <= AGOQ_BENCH_MAX_CHUNKS, "a reduce case holds every chunk");

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

static const agoq_bench_case grad8_cases[] = {
    {"grad_accumulate_bf16", "grad8", 1, bytes_acc_bf16, setup_acc_bf16, launch_acc, check_acc, teardown, only_8bit},
    {"grad_accumulate_f32", "grad8", 1, bytes_acc_f32, setup_acc_f32, launch_acc, check_acc, teardown, only_8bit},
    {"grad_reduce", "grad8", 1, bytes_reduce, setup_reduce, launch_reduce, check_reduce, teardown, only_8bit},
};
AGOQ_BENCH_REGISTER(grad8_cases)
