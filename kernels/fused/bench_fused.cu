/* Benchmark cases of the fused activation kernels (fused.cu) for `agoq kernels` (bench_cases.h), each beside its baselines in the same run:
 *   <op>_<fwd|bwd>_bf16     plain bf16 kernel, nothing quantized (Megatron-style storage)
 *   <op>_<fwd|bwd>_unfused  producer, then the standalone rowq quantize kernel (fwd), or the
 *                           standalone dequantize kernel, then the bf16 backward (bwd)
 *   <op>_<fwd|bwd>_fused    one kernel (fused.h)
 * for op = rmsnorm, swiglu, gelu. The point's n elements (= sweep bytes / 4) are the op's
 * input, `cols` its row length (SwiGLU: cols = 2F, the FC1 output width), rows = n / cols.
 * Bytes moved per launch, bf16 tensors (2 bytes/element), Q = bytes of the quantized copy of
 * the input (codes + scales + zeros, rowq layout), C = cols, G = dweight partial groups:
 *   rmsnorm fwd   bf16 4n + 2C          fused 4n + 2C + Q        unfused 6n + 2C + Q
 *   rmsnorm bwd   bf16 8n + 2C + 8GC    fused 6n + 2C + 8GC + Q  unfused 10n + 2C + 8GC + Q
 *                 (x, dy read; dx, y written; partials written then re-read by the reduction)
 *   swiglu fwd    bf16 3n (h read, out = n/2 written)           fused 3n + Q   unfused 5n + Q
 *   swiglu bwd    bf16 6n (h, dout read; dh, out written)       fused 4n + Q   unfused 8n + Q
 *   gelu fwd      bf16 4n    fused 4n + Q    unfused 6n + Q
 *   gelu bwd      bf16 8n    fused 6n + Q    unfused 10n + Q
 * (unfused = its two kernels' traffic: the intermediate is written and read back).
 *
 * Byte-ratio bound of fused vs unfused: at equal bandwidth the speedup is at most unfused bytes /
 * fused bytes. With Q = q n (q = 0.53 bytes per input element for FP4 E2M1 block 128, fp32
 * scales: 4 bits + 32 / 128 bits) and the dweight partials 8GC -> 0 for large n:
 *   rmsnorm fwd (6 + q) / (4 + q) = 1.44    rmsnorm bwd (10 + q) / (6 + q) = 1.61 (1.53 at 64 MiB)
 *   swiglu fwd  (5 + q) / (3 + q) = 1.57    swiglu bwd  (8 + q) / (4 + q)  = 1.88
 *   gelu fwd    (6 + q) / (4 + q) = 1.44    gelu bwd    (10 + q) / (6 + q) = 1.61
 * so a 1.5x target is out of reach for the RMSNorm and GELU forwards whatever the kernels do.
 * Compute: until issue 15 the op math was the exact-IEEE spec of fused_math.h (no FMA,
 * agoq_exp_det, IEEE division: ~43-60 instructions per SiLU/GELU element, ~8 more per division)
 * and the SwiGLU/GELU kernels were compute-bound (GELU forward at 0.28 of copy). The fast math of
 * fused_fast.cuh (ex2.approx, rcp.approx, FMA: ~10 instructions) leaves the quantizer (~16-22
 * per element in tiles) as the main cost; measured limiters are in README "Fused kernels" and docs/kernels.md.
 * The fused GEMM cases are kernels/gemm/bench_gemm.cu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/bench/bench_cases.h"
#include "kernels/fused/fused.h"
#include "kernels/fused/fused_tol.h"
#include "kernels/quant/quant_cuda.h"

enum { OP_RMS, OP_SWIGLU, OP_GELU };
enum { V_BF16, V_UNFUSED, V_FUSED };
static const float kEps = 1e-5f;
static const int kCheckRows = 16; /* rows compared with the CPU reference in check() */

typedef struct {
    int op, bwd, var;
} fspec;

typedef struct {
    fspec sp;
    int rows, cols;       /* input [rows, cols] */
    int qrows, qcols;     /* stored view: SwiGLU [2 rows, cols/2], else the input */
    int ocols;            /* output width */
    int rpg, groups;      /* RMSNorm dweight partial groups */
    agoq_qconfig qc;
    agoq_fq fq;
    agoq_dqt xq;
    uint16_t *x, *w, *dy, *y, *dx, *tmp;
    float *partial, *dw;
} fstate;

static double fbytes(fspec sp, const agoq_bench_args *a) {
    const double n = (double)a->n, c = (double)a->cols;
    const size_t rows = a->n / (size_t)a->cols;
    const double q = sp.var == V_BF16 ? 0.0
                     : sp.op == OP_SWIGLU ? (double)agoq_qtensor_bytes(&a->qc, agoq_rowq_alloc_n(&a->qc, 2 * rows, (size_t)a->cols / 2))
                                          : (double)agoq_qtensor_bytes(&a->qc, agoq_rowq_alloc_n(&a->qc, rows, (size_t)a->cols));
    const double extra = sp.var == V_UNFUSED ? 2.0 * n : 0.0; /* intermediate write + read */
    const int rpg = agoq_rmsnorm_bwd_rows_per_group(agoq_cuda_sm_count(), sp.var == V_FUSED, (int)rows, a->cols);
    const double groups = (double)((rows + rpg - 1) / rpg);
    switch (sp.op) {
    case OP_RMS:
        return sp.bwd ? (sp.var == V_BF16 ? 8.0 * n : 6.0 * n) + extra + 2.0 * c + 8.0 * groups * c + q
                      : 4.0 * n + 2.0 * c + extra + q;
    case OP_SWIGLU: return (sp.bwd ? (sp.var == V_BF16 ? 6.0 * n : 4.0 * n) : 3.0 * n) + extra + q;
    default: return (sp.bwd ? (sp.var == V_BF16 ? 8.0 * n : 6.0 * n) : 4.0 * n) + extra + q;
    }
}

/* Differing bytes of two buffers; prints the first one. */
static size_t count_diff(const uint8_t *ref, const uint8_t *got, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (ref[i] != got[i] && bad++ == 0) fprintf(stderr, "  first mismatch at byte %zu: ref 0x%02x got 0x%02x\n", i, ref[i], got[i]);
    return bad;
}

static int fsetup(fspec sp, const agoq_bench_args *a, void **out) {
    if (a->cols < 8 || a->n < (size_t)a->cols || (sp.op == OP_SWIGLU && a->cols % 2)) {
        agoq_error("kernels: fused case needs n >= cols >= 8 (SwiGLU: even cols), got n %zu cols %d", a->n, a->cols);
        return -1;
    }
    fstate *s = (fstate *)calloc(1, sizeof *s);
    s->sp = sp;
    s->qc = a->qc;
    s->rows = (int)(a->n / (size_t)a->cols);
    s->cols = a->cols;
    const size_t nin = (size_t)s->rows * s->cols;
    s->qrows = sp.op == OP_SWIGLU ? 2 * s->rows : s->rows;
    s->qcols = sp.op == OP_SWIGLU ? s->cols / 2 : s->cols;
    s->ocols = s->qcols;
    const size_t nout = (size_t)s->rows * s->ocols;
    s->rpg = agoq_rmsnorm_bwd_rows_per_group(agoq_cuda_sm_count(), sp.var == V_FUSED, s->rows, s->cols); /* one CTA a group, one wave */
    s->groups = (s->rows + s->rpg - 1) / s->rpg;
    s->x = agoq_cuda_random_bf16(nin, a->seed + 1, a->stream);
    s->y = agoq_cuda_random_bf16(nout, 0, a->stream);
    if (sp.op == OP_RMS) {
        s->w = agoq_cuda_random_bf16((size_t)s->cols, a->seed + 2, a->stream);
        s->partial = (float *)agoq_cuda_malloc((size_t)s->groups * s->cols * sizeof(float));
        s->dw = (float *)agoq_cuda_malloc((size_t)s->cols * sizeof(float));
    }
    if (sp.bwd) {
        s->dy = agoq_cuda_random_bf16(nout, a->seed + 3, a->stream);
        s->dx = agoq_cuda_random_bf16(nin, 0, a->stream);
    }
    if (sp.var == V_UNFUSED && sp.bwd) s->tmp = agoq_cuda_random_bf16(nin, 0, a->stream);
    if (sp.var != V_BF16) {
        AGOQ_BENCH_MUST(agoq_fq_make(&s->qc, &s->fq));
        AGOQ_BENCH_MUST(agoq_dqt_alloc(&s->qc, (size_t)s->qrows, (size_t)s->qcols, &s->xq));
        if (sp.bwd) AGOQ_BENCH_MUST(agoq_rowq_quantize_cuda(&s->fq, s->x, s->qrows, s->qcols, s->xq, a->stream)); /* the stored copy */
    }
    agoq_cuda_sync(a->stream);
    *out = s;
    return 0;
}

/* The op with nothing quantized (q NULL) or fused (q set), forward or backward; x is the input
 * (backward, unfused: the dequantized copy). */
static void run_op(const fstate *s, const agoq_fq *q, const uint16_t *x, void *st) {
    const int r = s->rows;
    if (!s->sp.bwd) {
        if (s->sp.op == OP_RMS) AGOQ_BENCH_MUST(agoq_rmsnorm_fwd_cuda(q, x, s->w, r, s->cols, kEps, s->y, s->xq, NULL, st));
        else if (s->sp.op == OP_SWIGLU) AGOQ_BENCH_MUST(agoq_swiglu_fwd_cuda(q, x, r, s->ocols, s->y, s->xq, st));
        else AGOQ_BENCH_MUST(agoq_gelu_fwd_cuda(q, x, r, s->cols, s->y, s->xq, st));
        return;
    }
    if (s->sp.op == OP_RMS) {
        AGOQ_BENCH_MUST(agoq_rmsnorm_bwd_dw_cuda(q, s->xq, x, s->dy, s->w, r, s->cols, kEps, s->rpg, s->dx, s->y,
                                                 s->partial, s->dw, st)); /* with its dweight reduction */
    } else if (s->sp.op == OP_SWIGLU) {
        AGOQ_BENCH_MUST(agoq_swiglu_bwd_cuda(q, s->xq, x, s->dy, r, s->ocols, s->dx, s->y, st));
    } else {
        AGOQ_BENCH_MUST(agoq_gelu_bwd_cuda(q, s->xq, x, s->dy, r, s->cols, s->dx, s->y, st));
    }
}

static void flaunch(void *state, const agoq_bench_args *a) {
    fstate *s = (fstate *)state;
    switch (s->sp.var) {
    case V_BF16: run_op(s, NULL, s->x, a->stream); break;
    case V_FUSED: run_op(s, &s->fq, s->x, a->stream); break;
    default:
        if (s->sp.bwd) {
            AGOQ_BENCH_MUST(agoq_rowq_dequantize_cuda(&s->fq, s->xq, s->qrows, s->qcols, s->tmp, a->stream));
            run_op(s, NULL, s->tmp, a->stream);
        } else {
            run_op(s, NULL, s->x, a->stream);
            AGOQ_BENCH_MUST(agoq_rowq_quantize_cuda(&s->fq, s->x, s->qrows, s->qcols, s->xq, a->stream));
        }
    }
}

/* Fused and bf16 variants: one more launch, then the first kCheckRows rows (their outputs and
 * stored blocks are a prefix of every buffer) against the reference: the stored copy bit for
 * bit, the outputs within the bounds of fused_tol.c (RMSNorm's bit for bit). */
static int fcheck(void *state, const agoq_bench_args *a) {
    fstate *s = (fstate *)state;
    const int r = s->rows < kCheckRows ? s->rows : kCheckRows, qr = s->sp.op == OP_SWIGLU ? 2 * r : r;
    const size_t nin = (size_t)r * s->cols, nout = (size_t)r * s->ocols;
    const agoq_qconfig *qc = s->sp.var == V_FUSED ? &s->qc : NULL;
    flaunch(s, a);
    agoq_cuda_sync(a->stream);
    uint16_t *x = (uint16_t *)malloc(nin * 2), *w = (uint16_t *)malloc((size_t)s->cols * 2);
    uint16_t *dy = (uint16_t *)malloc(nout * 2), *y = (uint16_t *)malloc(nout * 2), *dx = (uint16_t *)malloc(nin * 2);
    uint16_t *gy = (uint16_t *)malloc(nout * 2), *gdx = (uint16_t *)malloc(nin * 2);
    float *part = (float *)malloc((size_t)s->cols * sizeof(float) * ((r + s->rpg - 1) / s->rpg));
    agoq_qtensor hq = {}, gq = {};
    size_t bad = 0;
    agoq_cuda_d2h(x, s->x, nin * 2);
    if (s->w) agoq_cuda_d2h(w, s->w, (size_t)s->cols * 2);
    if (s->dy) agoq_cuda_d2h(dy, s->dy, nout * 2);
    if (qc) {
        AGOQ_BENCH_MUST(agoq_qtensor_alloc(&hq, qc, agoq_rowq_alloc_n(qc, (size_t)qr, (size_t)s->qcols)));
        AGOQ_BENCH_MUST(agoq_qtensor_alloc(&gq, qc, agoq_rowq_alloc_n(qc, (size_t)qr, (size_t)s->qcols)));
        agoq_dqt_download(qc, (size_t)qr, (size_t)s->qcols, s->xq, &gq); /* the first qr rows' blocks */
        if (s->sp.bwd) agoq_dqt_download(qc, (size_t)qr, (size_t)s->qcols, s->xq, &hq);
    }
    if (!s->sp.bwd) {
        if (s->sp.op == OP_RMS) agoq_rmsnorm_fwd_ref(qc, x, w, r, s->cols, kEps, y, &hq, NULL);
        else if (s->sp.op == OP_SWIGLU) agoq_swiglu_fwd_ref(qc, x, r, s->ocols, y, &hq);
        else agoq_gelu_fwd_ref(qc, x, r, s->cols, y, &hq);
        if (qc) {
            size_t nq = agoq_rowq_alloc_n(qc, (size_t)qr, (size_t)s->qcols);
            bad += count_diff(hq.codes, gq.codes, agoq_codes_bytes(qc, nq));
            bad += count_diff(hq.scales, gq.scales, agoq_scales_bytes(qc, nq));
        }
    } else {
        if (s->sp.op == OP_RMS) agoq_rmsnorm_bwd_ref(qc, &hq, x, dy, w, r, s->cols, kEps, s->rpg, dx, y, part);
        else if (s->sp.op == OP_SWIGLU) agoq_swiglu_bwd_ref(qc, &hq, x, dy, r, s->ocols, dx, y);
        else agoq_gelu_bwd_ref(qc, &hq, x, dy, r, s->cols, dx, y);
    }
    float *xf = agoq_fused_input_f32(s->sp.bwd ? qc : NULL, &hq, x, (size_t)qr, (size_t)s->qcols);
    if (s->sp.bwd) {
        agoq_cuda_d2h(gdx, s->dx, nin * 2);
        if (s->sp.op == OP_RMS) /* its bound needs w and the row sums */
            bad += agoq_rms_bwd_cmp(xf, dy, w, (size_t)r, (size_t)s->cols, kEps, s->rpg, dx, gdx, NULL, NULL, NULL, NULL);
        else bad += agoq_fused_cmp(agoq_fused_out_of(s->sp.op, 1), "dx", xf, dy, (size_t)r, (size_t)s->ocols, dx, gdx);
    }
    agoq_cuda_d2h(gy, s->y, nout * 2);
    bad += agoq_fused_cmp(agoq_fused_out_of(s->sp.op, s->sp.bwd ? 2 : 0), "y", xf, NULL, (size_t)r, (size_t)s->ocols, y, gy);
    free(xf);
    if (bad) agoq_error("kernels: %zu bytes or elements of the first %d rows differ from the reference", bad, r);
    if (qc) {
        agoq_qtensor_free(&hq);
        agoq_qtensor_free(&gq);
    }
    free(x); free(w); free(dy); free(y); free(dx); free(gy); free(gdx); free(part);
    return bad ? -1 : 0;
}

static void fteardown(void *state) {
    fstate *s = (fstate *)state;
    uint16_t *bufs[] = {s->x, s->w, s->dy, s->y, s->dx, s->tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) agoq_cuda_free(bufs[i]);
    agoq_cuda_free(s->partial);
    agoq_cuda_free(s->dw);
    if (s->sp.var != V_BF16) {
        agoq_dqt_free(&s->xq);
        agoq_fq_free(&s->fq);
    }
    free(s);
}

#define FCASE(op, OPK, dir, BWD, var, VAR)                                                           \
    static double bytes_##op##_##dir##_##var(const agoq_bench_args *a) { return fbytes(fspec{OPK, BWD, VAR}, a); } \
    static int setup_##op##_##dir##_##var(const agoq_bench_args *a, void **s) { return fsetup(fspec{OPK, BWD, VAR}, a, s); }
#define FCASES(op, OPK)                                                                                    \
    FCASE(op, OPK, fwd, 0, bf16, V_BF16) FCASE(op, OPK, fwd, 0, unfused, V_UNFUSED)                   \
    FCASE(op, OPK, fwd, 0, fused, V_FUSED) FCASE(op, OPK, bwd, 1, bf16, V_BF16)                       \
    FCASE(op, OPK, bwd, 1, unfused, V_UNFUSED) FCASE(op, OPK, bwd, 1, fused, V_FUSED)
FCASES(rmsnorm, OP_RMS)
FCASES(swiglu, OP_SWIGLU)
FCASES(gelu, OP_GELU)

#define FROW(op, dir, var, FMT, CHECK)                                                                     \
    {#op "_" #dir "_" #var, "fused", FMT, bytes_##op##_##dir##_##var, setup_##op##_##dir##_##var, flaunch, CHECK, fteardown, NULL}
#define FROWS(op)                                                                                          \
    FROW(op, fwd, bf16, 0, fcheck), FROW(op, fwd, unfused, 1, NULL), FROW(op, fwd, fused, 1, fcheck),      \
    FROW(op, bwd, bf16, 0, fcheck), FROW(op, bwd, unfused, 1, NULL), FROW(op, bwd, fused, 1, fcheck)
static const agoq_bench_case fused_cases[] = {FROWS(rmsnorm), FROWS(swiglu), FROWS(gelu)};
AGOQ_BENCH_REGISTER(fused_cases)
