/* Benchmark cases of the wgmma GEMM (gemm_wg.cu) for `agoq kernels` (group "gemm"), each
 * beside cuBLASLt (kernels/blaslt) on the same shape in the same run.
 *
 * Shapes: the decoder-layer GEMMs of LLaMA-7B (hidden H 4096, FFN F 11008) and LLaMA-13B
 * (5120, 13824), whole and as one rank's shard at tensor parallelism 8 (column-parallel QKV
 * and FC1 split N, row-parallel out-projection and FC2 split K); tokens M = n / 4096 rounded
 * down to a multiple of 128 (-b 64M is 4096 tokens):
 *   qkv  C[M, 3H] = X[M, H] Wqkv^T          out  C[M, H] = A[M, H] Wo^T + R (residual)
 *   fc1  C[M, 2F] = X[M, H] W1^T            fc2  C[M, H] = A[M, F] W2^T + R (residual)
 * and, for 7B FC1/FC2, the backward layouts: dgrad dX = dY W, wgrad dW = dY^T X (bf16 out).
 * Variants: lt (cuBLASLt), wg (ours), ltq (cuBLASLt, then the standalone rowq quantizer on its
 * output: the unfused AGoQ path), wgq (ours, the quantized copy in the epilogue), wgu (ours, then
 * the standalone quantizer: the same GEMM unfused). runners/kernels.c pairs them: wg gets
 * vs_cublas = median(lt) / median(wg), wgq vs_cublas_quant = median(ltq) / median(wgq) and
 * vs_own_quant = median(wgu) / median(wgq) (the fusion's own gain, what the paper's 1.03-1.11x
 * per GEMM measures). out, fc1, fc2 are quantized (the next RMSNorm's and SwiGLU's
 * inputs), qkv is not. FC2 again with its input read from the stored FP4 copy: ltd (the
 * standalone dequantize kernel, then cuBLASLt) against wgd (ours, decoding in the prologue):
 * wgd gets vs_cublas_quant = median(ltd) / median(wgd). TFLOP/s = 2 M N K / median (README). Bytes: A + B + C (+ R) (+ the quantized copy; ltq also reads C again). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/bench/bench_cases.h"
#include "kernels/blaslt/blaslt.h"
#include "kernels/gemm/gemm_wg.h"
#include "kernels/quant/quant_cuda.h"

enum { L_QKV, L_OUT, L_FC1, L_FC2 };
enum { V_LT, V_LTQ, V_WG, V_WGQ, V_LTD, V_WGD, V_WGU };
enum { O_FWD, O_DGRAD, O_WGRAD };
struct wspec {
    int hidden, ffn, tp, layer, op, var;
};
struct wstate {
    wspec sp;
    int M, N, K; /* blaslt.h's names of the op */
    agoq_qconfig qc;
    agoq_fq fq;
    agoq_dqt q;
    uint16_t *a, *b, *c, *r, *adq; /* adq: ltd's dequantized A */
    void *ws;
    agoq_lt *lt;
};
static const size_t kWorkspace = (size_t)32 << 20;

static int tokens(const agoq_bench_args *a) { return (int)(a->n / 4096 / 128 * 128); }
/* M, N, K of the forward GEMM Y[M, N] = X[M, K] W[N, K]^T of this layer */
static void wshape(wspec sp, const agoq_bench_args *a, int *M, int *N, int *K) {
    const int H = sp.hidden, F = sp.ffn, t = sp.tp;
    *M = tokens(a);
    *N = sp.layer == L_QKV ? 3 * H / t : sp.layer == L_FC1 ? 2 * F / t : H;
    *K = sp.layer == L_OUT ? H / t : sp.layer == L_FC2 ? F / t : H;
}
static bool quantized(wspec sp) { return sp.var == V_LTQ || sp.var == V_WGQ || sp.var == V_WGU; }
/* the standalone quantizer after the GEMM: it reads C again */
static bool unfused(wspec sp) { return sp.var == V_LTQ || sp.var == V_WGU; }
static bool stored_a(wspec sp) { return sp.var == V_LTD || sp.var == V_WGD; }
static bool residual(wspec sp) { return sp.op == O_FWD && (sp.layer == L_OUT || sp.layer == L_FC2); }

static double wbytes(wspec sp, const agoq_bench_args *a) {
    int M, N, K;
    wshape(sp, a, &M, &N, &K);
    const double m = M, n = N, k = K;
    if (sp.op != O_FWD) return 2.0 * (m * n + n * k + m * k);
    if (stored_a(sp)) { /* codes + scales of A instead of A; ltd also writes and reads A in bf16 */
        const double qa = (double)agoq_qtensor_bytes(&a->qc, agoq_rowq_alloc_n(&a->qc, (size_t)M, (size_t)K));
        return qa + 2.0 * (n * k + 2.0 * m * n) + (sp.var == V_LTD ? 4.0 * m * k : 0.0);
    }
    double b = 2.0 * (m * k + n * k + m * n) + (residual(sp) ? 2.0 * m * n : 0.0);
    if (quantized(sp)) b += (double)agoq_qtensor_bytes(&a->qc, agoq_rowq_alloc_n(&a->qc, (size_t)M, (size_t)N));
    if (unfused(sp)) b += 2.0 * m * n;
    return b;
}

static int wsetup(wspec sp, const agoq_bench_args *a, void **out) {
    wstate *s = (wstate *)calloc(1, sizeof *s);
    s->sp = sp;
    s->qc = a->qc;
    wshape(sp, a, &s->M, &s->N, &s->K);
    const int M = s->M, N = s->N, K = s->K;
    /* operand sizes per op: fwd A = X [M, K], B = W [N, K], C [M, N]; dgrad A = dY [M, N],
     * B = W [N, K], C [M, K]; wgrad A = dY [M, N], B = X [M, K], C [N, K] */
    const size_t na = sp.op == O_FWD ? (size_t)M * K : (size_t)M * N;
    const size_t nb = sp.op == O_WGRAD ? (size_t)M * K : (size_t)N * K;
    const size_t nc = sp.op == O_FWD ? (size_t)M * N : sp.op == O_DGRAD ? (size_t)M * K : (size_t)N * K;
    const int gm = sp.op == O_WGRAD ? N : M, gn = sp.op == O_FWD ? N : K, gk = sp.op == O_FWD ? K : sp.op == O_DGRAD ? N : M;
    const agoq_format_traits *fi = &agoq_formats[s->qc.fmt];
    if (M <= 0 || agoq_wg_check(gm, gn, gk, quantized(sp) ? &s->qc : NULL) ||
        (stored_a(sp) && ((fi->bits != 4 && fi->bits != 8) || s->qc.block % 64 || K % s->qc.block))) {
        free(s);
        return -1;
    }
    s->a = agoq_cuda_random_bf16(na, a->seed + 21, a->stream);
    s->b = agoq_cuda_random_bf16(nb, a->seed + 22, a->stream);
    s->c = agoq_cuda_random_bf16(nc, 0, a->stream);
    if (residual(sp)) s->r = agoq_cuda_random_bf16(nc, a->seed + 23, a->stream);
    if (sp.var == V_LT || sp.var == V_LTQ) {
        cudaCheck(cudaMalloc(&s->ws, kWorkspace));
        AGOQ_BENCH_MUST(agoq_lt_create(s->ws, kWorkspace, &s->lt));
    }
    if (quantized(sp)) {
        AGOQ_BENCH_MUST(agoq_fq_make(&s->qc, &s->fq));
        AGOQ_BENCH_MUST(agoq_dqt_alloc(&s->qc, (size_t)M, (size_t)N, &s->q));
    }
    if (stored_a(sp)) { /* A (the FC2 input) as its stored quantized copy */
        AGOQ_BENCH_MUST(agoq_fq_make(&s->qc, &s->fq));
        AGOQ_BENCH_MUST(agoq_dqt_alloc(&s->qc, (size_t)M, (size_t)K, &s->q));
        AGOQ_BENCH_MUST(agoq_rowq_quantize_cuda(&s->fq, s->a, M, K, s->q, a->stream));
        if (sp.var == V_LTD) s->adq = agoq_cuda_random_bf16(na, 0, a->stream);
    }
    if (sp.var == V_LTD) {
        cudaCheck(cudaMalloc(&s->ws, kWorkspace));
        AGOQ_BENCH_MUST(agoq_lt_create(s->ws, kWorkspace, &s->lt));
    }
    agoq_cuda_sync(a->stream);
    *out = s;
    return 0;
}

static void wlaunch(void *state, const agoq_bench_args *a) {
    wstate *s = (wstate *)state;
    const int M = s->M, N = s->N, K = s->K, v = s->sp.var;
    const agoq_dqt none = {};
    if (s->sp.op == O_DGRAD) {
        if (v == V_LT) AGOQ_BENCH_MUST(agoq_lt_dgrad(s->lt, M, N, K, s->a, s->b, NULL, s->c, a->stream));
        else AGOQ_BENCH_MUST(agoq_wg_dgrad(M, N, K, s->a, s->b, NULL, s->c, a->stream));
        return;
    }
    if (s->sp.op == O_WGRAD) {
        if (v == V_LT) AGOQ_BENCH_MUST(agoq_lt_wgrad(s->lt, M, N, K, s->a, s->b, 0, NULL, s->c, a->stream));
        else AGOQ_BENCH_MUST(agoq_wg_wgrad(M, N, K, s->a, s->b, s->c, a->stream));
        return;
    }
    if (v == V_LTD) {
        AGOQ_BENCH_MUST(agoq_rowq_dequantize_cuda(&s->fq, s->q, M, K, s->adq, a->stream));
        AGOQ_BENCH_MUST(agoq_lt_fwd(s->lt, M, N, K, s->adq, s->b, s->r, s->c, a->stream));
    } else if (v == V_WGD) {
        AGOQ_BENCH_MUST(agoq_wg_fwd_deqa(M, N, K, &s->fq, s->q, s->b, s->r, s->c, a->stream));
    } else if (v == V_LT || v == V_LTQ) {
        AGOQ_BENCH_MUST(agoq_lt_fwd(s->lt, M, N, K, s->a, s->b, s->r, s->c, a->stream));
        if (v == V_LTQ) AGOQ_BENCH_MUST(agoq_rowq_quantize_cuda(&s->fq, s->c, M, N, s->q, a->stream));
    } else {
        AGOQ_BENCH_MUST(agoq_wg_fwd(M, N, K, s->a, s->b, s->r, s->c, v == V_WGQ ? &s->fq : NULL,
                                    v == V_WGQ ? s->q : none, a->stream));
        if (v == V_WGU) AGOQ_BENCH_MUST(agoq_rowq_quantize_cuda(&s->fq, s->c, M, N, s->q, a->stream));
    }
}

static void wteardown(void *state) {
    wstate *s = (wstate *)state;
    agoq_cuda_sync(NULL);
    agoq_cuda_free(s->a);
    agoq_cuda_free(s->b);
    agoq_cuda_free(s->c);
    agoq_cuda_free(s->r);
    agoq_cuda_free(s->adq);
    if (s->lt) agoq_lt_destroy(s->lt);
    if (s->ws) cudaCheck(cudaFree(s->ws));
    if (s->q.codes) agoq_dqt_free(&s->q);
    agoq_fq_free(&s->fq);
    free(s);
}

#define WCASE(id, H, F, T, L, O, V)                                                                        \
    static double wb_##id(const agoq_bench_args *a) { return wbytes(wspec{H, F, T, L, O, V}, a); }        \
    static int ws_##id(const agoq_bench_args *a, void **s) { return wsetup(wspec{H, F, T, L, O, V}, a, s); }
#define WPLAIN(m, H, F, T, L, O) WCASE(m##_lt, H, F, T, L, O, V_LT) WCASE(m##_wg, H, F, T, L, O, V_WG)
#define WQUANT(m, H, F, T, L)                                                                                   \
    WPLAIN(m, H, F, T, L, O_FWD) WCASE(m##_ltq, H, F, T, L, O_FWD, V_LTQ) WCASE(m##_wgq, H, F, T, L, O_FWD, V_WGQ)   \
    WCASE(m##_wgu, H, F, T, L, O_FWD, V_WGU)
#define WMODEL(mdl, H, F, T)                                                                               \
    WPLAIN(mdl##_qkv, H, F, T, L_QKV, O_FWD) WQUANT(mdl##_out, H, F, T, L_OUT) WQUANT(mdl##_fc1, H, F, T, L_FC1) \
    WQUANT(mdl##_fc2, H, F, T, L_FC2)
WMODEL(7b, 4096, 11008, 1)
WMODEL(7b_tp8, 4096, 11008, 8)
WMODEL(13b, 5120, 13824, 1)
WMODEL(13b_tp8, 5120, 13824, 8)
WPLAIN(7b_fc1_dgrad, 4096, 11008, 1, L_FC1, O_DGRAD)
WPLAIN(7b_fc1_wgrad, 4096, 11008, 1, L_FC1, O_WGRAD)
WPLAIN(7b_fc2_dgrad, 4096, 11008, 1, L_FC2, O_DGRAD)
WPLAIN(7b_fc2_wgrad, 4096, 11008, 1, L_FC2, O_WGRAD)
WPLAIN(7b_tp8_fc1_dgrad, 4096, 11008, 8, L_FC1, O_DGRAD)
WPLAIN(7b_tp8_fc1_wgrad, 4096, 11008, 8, L_FC1, O_WGRAD)
WCASE(7b_fc2_ltd, 4096, 11008, 1, L_FC2, O_FWD, V_LTD) WCASE(7b_fc2_wgd, 4096, 11008, 1, L_FC2, O_FWD, V_WGD)
WCASE(13b_fc2_ltd, 5120, 13824, 1, L_FC2, O_FWD, V_LTD) WCASE(13b_fc2_wgd, 5120, 13824, 1, L_FC2, O_FWD, V_WGD)

/* Quantized variants: the block must divide the 256-wide tile (and N, checked in setup). */
static int wsupports(const agoq_qconfig *qc) { return AGOQ_WG_TILE_N % qc->block == 0; }
/* Stored-A variants: 4/8-bit codes, a block that is a multiple of the 64-wide k-tile. */
static int wsupports_deq(const agoq_qconfig *qc) {
    const int bits = agoq_formats[qc->fmt].bits;
    return (bits == 4 || bits == 8) && qc->block % 64 == 0;
}

#define WROW(id, FMT) \
    {"gemmwg_" #id, "gemm", FMT, wb_##id, ws_##id, wlaunch, NULL, wteardown, FMT ? wsupports : NULL}
#define WROWS_PLAIN(m) WROW(m##_lt, 0), WROW(m##_wg, 0)
#define WROWS_QUANT(m) WROWS_PLAIN(m), WROW(m##_ltq, 1), WROW(m##_wgq, 1), WROW(m##_wgu, 1)
#define WROWS_MODEL(mdl) WROWS_PLAIN(mdl##_qkv), WROWS_QUANT(mdl##_out), WROWS_QUANT(mdl##_fc1), WROWS_QUANT(mdl##_fc2)
static const agoq_bench_case gemm_wg_cases[] = {
    WROWS_MODEL(7b), WROWS_MODEL(7b_tp8), WROWS_MODEL(13b), WROWS_MODEL(13b_tp8),
    WROWS_PLAIN(7b_fc1_dgrad), WROWS_PLAIN(7b_fc1_wgrad), WROWS_PLAIN(7b_fc2_dgrad), WROWS_PLAIN(7b_fc2_wgrad),
    WROWS_PLAIN(7b_tp8_fc1_dgrad), WROWS_PLAIN(7b_tp8_fc1_wgrad),
    {"gemmwg_7b_fc2_ltd", "gemm", 1, wb_7b_fc2_ltd, ws_7b_fc2_ltd, wlaunch, NULL, wteardown, wsupports_deq},
    {"gemmwg_7b_fc2_wgd", "gemm", 1, wb_7b_fc2_wgd, ws_7b_fc2_wgd, wlaunch, NULL, wteardown, wsupports_deq},
    {"gemmwg_13b_fc2_ltd", "gemm", 1, wb_13b_fc2_ltd, ws_13b_fc2_ltd, wlaunch, NULL, wteardown, wsupports_deq},
    {"gemmwg_13b_fc2_wgd", "gemm", 1, wb_13b_fc2_wgd, ws_13b_fc2_wgd, wlaunch, NULL, wteardown, wsupports_deq},
};
AGOQ_BENCH_REGISTER(gemm_wg_cases)
