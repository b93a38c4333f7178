/* Benchmark cases of the fused GEMM (gemm.cu) for `agoq kernels` (bench_cases.h), each beside
 * its baselines in the same run (the fused activation kernels: kernels/fused/bench_fused.cu).
 *
 * GEMM cases (group "gemm"), LLaMA-7B (hidden 4096, FFN 11008) and LLaMA-13B (5120, 13824),
 * tokens M = n / 4096 rounded down to a multiple of 128 (so -b 64M is 4096 tokens):
 *   gemm_<m>_fc1_*   C[M, 2F] = X[M, H] W1[2F, H]^T; the FC1 output h is stored quantized
 *   gemm_<m>_fc2_*   C[M, H] = A[M, F] W2[H, F]^T with A (the FC2 input) read from its stored
 *                    quantized copy
 * variants: cublas (bf16, nothing quantized), cublas_q (cuBLAS + standalone quantize of C /
 * dequantize of A), own (this project's GEMM, bf16), own_q (own GEMM + standalone kernel),
 * fused (quantization in the epilogue / dequantization in the prologue). Bytes: the logical
 * tensors read and written (A, B, C, Q; unfused adds the intermediate's write + read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/bench/bench_cases.h"
#include "kernels/gemm/gemm.h"
#include "kernels/quant/quant_cuda.h"

enum { G_CUBLAS, G_CUBLAS_Q, G_OWN, G_OWN_Q, G_FUSED };
typedef struct {
    int hidden, ffn, fc2, var;
} gspec;
typedef struct {
    gspec sp;
    int m, n, k;
    agoq_qconfig qc;
    agoq_fq fq;
    agoq_dqt q;                 /* fc1: stored copy of C; fc2: stored A */
    uint16_t *a, *b, *c, *adq;  /* adq: fc2 unfused, the dequantized A */
    void *cublas;
} gstate;

static void gshape(gspec sp, const agoq_bench_args *a, int *m, int *n, int *k) {
    *m = (int)(a->n / 4096 / 128 * 128);
    *n = sp.fc2 ? sp.hidden : 2 * sp.ffn;
    *k = sp.fc2 ? sp.ffn : sp.hidden;
}
static double gbytes(gspec sp, const agoq_bench_args *a) {
    int m, n, k;
    gshape(sp, a, &m, &n, &k);
    const double w = 2.0 * n * k, quant = sp.var == G_CUBLAS || sp.var == G_OWN ? 0.0 : 1.0;
    const double unf = sp.var == G_CUBLAS_Q || sp.var == G_OWN_Q ? 1.0 : 0.0;
    if (!sp.fc2) {
        const double qb = (double)agoq_qtensor_bytes(&a->qc, agoq_rowq_alloc_n(&a->qc, (size_t)m, (size_t)n));
        return 2.0 * m * k + w + 2.0 * m * n + quant * qb + unf * 2.0 * m * n;
    }
    const double qb = (double)agoq_qtensor_bytes(&a->qc, agoq_rowq_alloc_n(&a->qc, (size_t)m, (size_t)k));
    return (quant ? qb : 2.0 * m * k) + w + 2.0 * m * n + unf * 4.0 * m * k;
}

static int gsetup(gspec sp, const agoq_bench_args *a, void **out) {
    gstate *s = (gstate *)calloc(1, sizeof *s);
    s->sp = sp;
    s->qc = a->qc;
    gshape(sp, a, &s->m, &s->n, &s->k);
    const int quant = sp.var != G_CUBLAS && sp.var != G_OWN;
    if (agoq_gemm_check(s->m, s->n, s->k, quant && !sp.fc2 ? &s->qc : NULL, quant && sp.fc2 ? &s->qc : NULL)) {
        free(s);
        return -1;
    }
    s->a = agoq_cuda_random_bf16((size_t)s->m * s->k, a->seed + 11, a->stream);
    s->b = agoq_cuda_random_bf16((size_t)s->n * s->k, a->seed + 12, a->stream);
    s->c = agoq_cuda_random_bf16((size_t)s->m * s->n, 0, a->stream);
    if (sp.var == G_CUBLAS || sp.var == G_CUBLAS_Q) s->cublas = agoq_cublas_create();
    if (quant) {
        AGOQ_BENCH_MUST(agoq_fq_make(&s->qc, &s->fq));
        if (sp.fc2) {
            AGOQ_BENCH_MUST(agoq_dqt_alloc(&s->qc, (size_t)s->m, (size_t)s->k, &s->q));
            AGOQ_BENCH_MUST(agoq_rowq_quantize_cuda(&s->fq, s->a, s->m, s->k, s->q, a->stream));
            if (sp.var != G_FUSED) s->adq = agoq_cuda_random_bf16((size_t)s->m * s->k, 0, a->stream);
        } else {
            AGOQ_BENCH_MUST(agoq_dqt_alloc(&s->qc, (size_t)s->m, (size_t)s->n, &s->q));
        }
    }
    agoq_cuda_sync(a->stream);
    *out = s;
    return 0;
}

static void glaunch(void *state, const agoq_bench_args *a) {
    gstate *s = (gstate *)state;
    const agoq_dqt none = {};
    const int v = s->sp.var, cub = v == G_CUBLAS || v == G_CUBLAS_Q;
    const uint16_t *A = s->a;
    if (s->sp.fc2 && v == G_FUSED) {
        AGOQ_BENCH_MUST(agoq_gemm_deqa_cuda(&s->fq, s->q, s->b, s->m, s->n, s->k, s->c, a->stream));
        return;
    }
    if (s->sp.fc2 && (v == G_CUBLAS_Q || v == G_OWN_Q)) {
        AGOQ_BENCH_MUST(agoq_rowq_dequantize_cuda(&s->fq, s->q, s->m, s->k, s->adq, a->stream));
        A = s->adq;
    }
    if (!s->sp.fc2 && v == G_FUSED) {
        AGOQ_BENCH_MUST(agoq_gemm_cuda(&s->fq, A, s->b, s->m, s->n, s->k, s->c, s->q, a->stream));
        return;
    }
    if (cub) AGOQ_BENCH_MUST(agoq_cublas_gemm(s->cublas, A, s->b, s->m, s->n, s->k, s->c, a->stream));
    else AGOQ_BENCH_MUST(agoq_gemm_cuda(NULL, A, s->b, s->m, s->n, s->k, s->c, none, a->stream));
    if (!s->sp.fc2 && (v == G_CUBLAS_Q || v == G_OWN_Q))
        AGOQ_BENCH_MUST(agoq_rowq_quantize_cuda(&s->fq, s->c, s->m, s->n, s->q, a->stream));
}

static void gteardown(void *state) {
    gstate *s = (gstate *)state;
    agoq_cuda_free(s->a);
    agoq_cuda_free(s->b);
    agoq_cuda_free(s->c);
    agoq_cuda_free(s->adq);
    if (s->cublas) agoq_cublas_destroy(s->cublas);
    if (s->q.codes) agoq_dqt_free(&s->q);
    agoq_fq_free(&s->fq);
    free(s);
}

/* Fused GEMM formats: epilogue blocks must divide the 128-wide tile, prologue codes be 4/8-bit. */
static int gsupports_fc1(const agoq_qconfig *qc) { return AGOQ_GEMM_TILE_N % qc->block == 0; }
static int gsupports_fc2(const agoq_qconfig *qc) {
    const int bits = agoq_formats[qc->fmt].bits;
    return (bits == 4 || bits == 8) && 11008 % qc->block == 0 && 13824 % qc->block == 0; /* K of both models */
}

#define GCASE(mdl, H, F, g, FC2, var, VAR)                                                                 \
    static double gbytes_##mdl##_##g##_##var(const agoq_bench_args *a) { return gbytes(gspec{H, F, FC2, VAR}, a); } \
    static int gsetup_##mdl##_##g##_##var(const agoq_bench_args *a, void **s) { return gsetup(gspec{H, F, FC2, VAR}, a, s); }
#define GCASES(mdl, H, F, g, FC2)                                                                          \
    GCASE(mdl, H, F, g, FC2, cublas, G_CUBLAS) GCASE(mdl, H, F, g, FC2, cublas_q, G_CUBLAS_Q)             \
    GCASE(mdl, H, F, g, FC2, own, G_OWN) GCASE(mdl, H, F, g, FC2, own_q, G_OWN_Q) GCASE(mdl, H, F, g, FC2, fused, G_FUSED)
GCASES(7b, 4096, 11008, fc1, 0)
GCASES(7b, 4096, 11008, fc2, 1)
GCASES(13b, 5120, 13824, fc1, 0)
GCASES(13b, 5120, 13824, fc2, 1)

#define GROW(mdl, g, var, FMT)                                                                             \
    {"gemm_" #mdl "_" #g "_" #var, "gemm", FMT, gbytes_##mdl##_##g##_##var, gsetup_##mdl##_##g##_##var, glaunch, NULL, \
     gteardown, FMT ? gsupports_##g : NULL}
#define GROWS(mdl, g)                                                                                      \
    GROW(mdl, g, cublas, 0), GROW(mdl, g, cublas_q, 1), GROW(mdl, g, own, 0), GROW(mdl, g, own_q, 1), GROW(mdl, g, fused, 1)
static const agoq_bench_case gemm_cases[] = {GROWS(7b, fc1), GROWS(7b, fc2), GROWS(13b, fc1), GROWS(13b, fc2)};
AGOQ_BENCH_REGISTER(gemm_cases)
