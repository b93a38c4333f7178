/* The linear ops of blaslt.h on cuBLASLt: bf16 A/B, CUBLAS_COMPUTE_32F, fp32 alpha/beta.
 *
 * Row-major -> column-major: a row-major [R, C] matrix is the column-major [C, R] matrix (ld C)
 * that is its transpose, so each op is computed transposed (Xc, Wc, ... below are the stored
 * buffers read as column-major):
 *   fwd    Y^T [N, M]  = W  X^T  = op_T(Wc [K, N]) * Xc [K, M]          m = N, n = M, k = K
 *   dgrad  dX^T [K, M] = W^T dY^T = Wc [K, N] * dYc [N, M]              m = K, n = M, k = N
 *   wgrad  dW^T [K, N] = X^T dY   = Xc [K, M] * op_T(dYc [N, M])        m = K, n = N, k = M
 * The residual / accumulation is C with beta = 1 (C = R, or C = D = dW for accumulate); without
 * it beta = 0 and C = D.
 *
 * Plan cache: a fixed table of plans keyed by (op, M, N, K, out dtype, R/accumulate, alignment);
 * alignment is the largest power of two (<= 256) dividing every pointer of the call, handed to
 * the heuristic as the minimum alignment of A, B, C, D so the cached algo is valid for any later
 * call with the same key. When the table is full the oldest plan is replaced (round robin). */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "kernels/blaslt/blaslt.h"

namespace {
constexpr int kMaxPlans = 64;

struct PlanKey {
    int op, m, n, k, out_f32, has_c, align;
};

struct Plan {
    PlanKey key;
    int used;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d;
    cublasLtMatmulAlgo_t algo;
};

bool key_eq(const PlanKey &x, const PlanKey &y) {
    return x.op == y.op && x.m == y.m && x.n == y.n && x.k == y.k && x.out_f32 == y.out_f32 && x.has_c == y.has_c &&
           x.align == y.align;
}

int ptr_align(const void *p) {
    uintptr_t u = (uintptr_t)p;
    int a = 256;
    while (a > 1 && (u % (uintptr_t)a) != 0) a >>= 1;
    return a;
}

void plan_release(Plan *p) {
    if (!p->used) return;
    cublasCheck(cublasLtMatrixLayoutDestroy(p->a));
    cublasCheck(cublasLtMatrixLayoutDestroy(p->b));
    cublasCheck(cublasLtMatrixLayoutDestroy(p->c));
    cublasCheck(cublasLtMatrixLayoutDestroy(p->d));
    cublasCheck(cublasLtMatmulDescDestroy(p->desc));
    p->used = 0;
}
} // namespace

struct agoq_lt {
    cublasLtHandle_t handle;
    void *workspace;
    size_t workspace_bytes;
    Plan plans[kMaxPlans];
    int next_victim; /* round-robin replacement when the table is full */
};

namespace {
/* Builds the descriptors of a key and asks the heuristic once; 0, or -1 when it offers nothing. */
int plan_build(agoq_lt *lt, const PlanKey &key, Plan *p) {
    const cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
    cublasOperation_t ta = N, tb = N;
    uint64_t ar, ac, br, bc, cr, cc; /* stored column-major rows x cols (ld = rows) */
    const uint64_t M = (uint64_t)key.m, Nn = (uint64_t)key.n, K = (uint64_t)key.k;
    switch (key.op) {
    case AGOQ_LT_FWD:
        ta = T, ar = K, ac = Nn, br = K, bc = M, cr = Nn, cc = M;
        break;
    case AGOQ_LT_DGRAD:
        ar = K, ac = Nn, br = Nn, bc = M, cr = K, cc = M;
        break;
    default: /* wgrad */
        tb = T, ar = K, ac = M, br = Nn, bc = M, cr = K, cc = Nn;
        break;
    }
    const cudaDataType_t out_t = key.out_f32 ? CUDA_R_32F : CUDA_R_16BF;
    cublasCheck(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasCheck(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    cublasCheck(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasCheck(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, ar, ac, (int64_t)ar));
    cublasCheck(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, br, bc, (int64_t)br));
    cublasCheck(cublasLtMatrixLayoutCreate(&p->c, out_t, cr, cc, (int64_t)cr));
    cublasCheck(cublasLtMatrixLayoutCreate(&p->d, out_t, cr, cc, (int64_t)cr));

    cublasLtMatmulPreference_t pref;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &lt->workspace_bytes, sizeof lt->workspace_bytes));
    const uint32_t al = (uint32_t)key.align;
    const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++) cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &al, sizeof al));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    /* no algorithm is NOT_SUPPORTED (or found 0): an answer for this shape, not an API failure */
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(lt->handle, p->desc, p->a, p->b, p->c, p->d, pref, 1, &res, &found);
    cublasCheck(cublasLtMatmulPreferenceDestroy(pref));
    p->used = 1;
    if (st != CUBLAS_STATUS_SUCCESS || found < 1) {
        fprintf(stderr, "agoq_lt: no cuBLASLt algorithm for op %d M=%d N=%d K=%d (out %s, C %d, align %d): %s\n",
                key.op, key.m, key.n, key.k, key.out_f32 ? "fp32" : "bf16", key.has_c, key.align,
                cublasLtGetStatusString(st));
        plan_release(p);
        return -1;
    }
    p->algo = res.algo;
    p->key = key;
    return 0;
}

const Plan *plan_get(agoq_lt *lt, const PlanKey &key) {
    for (int i = 0; i < kMaxPlans; i++)
        if (lt->plans[i].used && key_eq(lt->plans[i].key, key)) return &lt->plans[i];
    Plan *slot = NULL;
    for (int i = 0; i < kMaxPlans && !slot; i++)
        if (!lt->plans[i].used) slot = &lt->plans[i];
    if (!slot) {
        slot = &lt->plans[lt->next_victim];
        lt->next_victim = (lt->next_victim + 1) % kMaxPlans;
        plan_release(slot);
    }
    return plan_build(lt, key, slot) == 0 ? slot : NULL;
}

/* D = alpha op(A) op(B) + beta C in the column-major terms of the file comment. */
int lt_matmul(agoq_lt *lt, const char *fn, int op, int M, int N, int K, const void *A, const void *B, const void *C,
              void *D, int out_f32, int has_c, void *stream) {
    if (!lt || M < 1 || N < 1 || K < 1 || !A || !B || !D) {
        fprintf(stderr, "%s: bad argument (lt %p, M %d, N %d, K %d, inputs %p %p, out %p)\n", fn, (void *)lt, M, N, K,
                A, B, D);
        return -1;
    }
    int al = ptr_align(A);
    const void *ptrs[3] = {B, has_c ? C : D, D};
    for (int i = 0; i < 3; i++) {
        const int a = ptr_align(ptrs[i]);
        if (a < al) al = a;
    }
    if (al < 2 || (out_f32 && al < 4)) {
        fprintf(stderr, "%s: pointers not aligned to their element size\n", fn);
        return -1;
    }
    const PlanKey key = {op, M, N, K, out_f32, has_c, al};
    const Plan *p = plan_get(lt, key);
    if (!p) return -1;
    const float alpha = 1.0f, beta = has_c ? 1.0f : 0.0f;
    cublasCheck(cublasLtMatmul(lt->handle, p->desc, &alpha, A, p->a, B, p->b, &beta, has_c ? C : D, p->c, D, p->d,
                               &p->algo, lt->workspace, lt->workspace_bytes, (cudaStream_t)stream));
    return 0;
}

/* R [rows, cols] and out [rows, cols] bf16 share no byte (blaslt.h: in place is refused). */
int r_overlaps(const char *fn, const uint16_t *R, const uint16_t *out, int rows, int cols) {
    if (!R || !out || rows < 1 || cols < 1) return 0;
    const uintptr_t bytes = (uintptr_t)rows * (uintptr_t)cols * 2u, r = (uintptr_t)R, o = (uintptr_t)out;
    if (r < o + bytes && o < r + bytes) {
        fprintf(stderr, "%s: R %p overlaps the output %p (%zu bytes each): in place is not supported\n", fn,
                (const void *)R, (const void *)out, (size_t)bytes);
        return 1;
    }
    return 0;
}
} // namespace

extern "C" int agoq_lt_create(void *workspace, size_t workspace_bytes, agoq_lt **out) {
    if (!out || (workspace_bytes && !workspace)) {
        fprintf(stderr, "agoq_lt_create: bad argument (out %p, workspace %p, %zu bytes)\n", (void *)out, workspace,
                workspace_bytes);
        return -1;
    }
    agoq_lt *lt = (agoq_lt *)calloc(1, sizeof *lt);
    if (!lt) {
        fprintf(stderr, "agoq_lt_create: out of host memory\n");
        return -1;
    }
    cublasCheck(cublasLtCreate(&lt->handle));
    lt->workspace = workspace;
    lt->workspace_bytes = workspace_bytes;
    *out = lt;
    return 0;
}

extern "C" void agoq_lt_destroy(agoq_lt *lt) {
    if (!lt) return;
    for (int i = 0; i < kMaxPlans; i++) plan_release(&lt->plans[i]);
    cublasCheck(cublasLtDestroy(lt->handle));
    free(lt);
}

extern "C" int agoq_lt_plan_count(const agoq_lt *lt) {
    int n = 0;
    for (int i = 0; lt && i < kMaxPlans; i++) n += lt->plans[i].used;
    return n;
}

/* Y^T = W X^T (+ R^T): A = W, B = X, C = R. */
extern "C" int agoq_lt_fwd(agoq_lt *lt, int M, int N, int K, const uint16_t *X, const uint16_t *W, const uint16_t *R,
                           uint16_t *Y, void *stream) {
    if (r_overlaps("agoq_lt_fwd", R, Y, M, N)) return -1;
    return lt_matmul(lt, "agoq_lt_fwd", AGOQ_LT_FWD, M, N, K, W, X, R, Y, 0, R != NULL, stream);
}

/* dX^T = W^T dY^T (+ R^T): A = W, B = dY, C = R. */
extern "C" int agoq_lt_dgrad(agoq_lt *lt, int M, int N, int K, const uint16_t *dY, const uint16_t *W,
                             const uint16_t *R, uint16_t *dX, void *stream) {
    if (r_overlaps("agoq_lt_dgrad", R, dX, M, K)) return -1;
    return lt_matmul(lt, "agoq_lt_dgrad", AGOQ_LT_DGRAD, M, N, K, W, dY, R, dX, 0, R != NULL, stream);
}

/* dW^T = X^T dY (+ dW^T): A = X, B = dY, C = D = dW when accumulating. */
extern "C" int agoq_lt_wgrad(agoq_lt *lt, int M, int N, int K, const uint16_t *dY, const uint16_t *X, int accumulate,
                             float *dW_f32, uint16_t *dW_bf16, void *stream) {
    if ((dW_f32 == NULL) == (dW_bf16 == NULL) || (accumulate != 0 && accumulate != 1) || (accumulate && !dW_f32)) {
        fprintf(stderr, "agoq_lt_wgrad: exactly one of dW_f32 %p / dW_bf16 %p, accumulate %d (0/1, 1 needs fp32)\n",
                (void *)dW_f32, (void *)dW_bf16, accumulate);
        return -1;
    }
    void *D = dW_f32 ? (void *)dW_f32 : (void *)dW_bf16;
    return lt_matmul(lt, "agoq_lt_wgrad", AGOQ_LT_WGRAD, M, N, K, X, dY, accumulate ? D : NULL, D, dW_f32 != NULL,
                     accumulate, stream);
}

extern "C" int agoq_lt_time(agoq_lt *lt, int op, int M, int N, int K, const uint16_t *A, const uint16_t *B, void *out,
                            int warmup, int reps, float *median_ms, void *stream) {
    if (op < AGOQ_LT_FWD || op > AGOQ_LT_WGRAD || warmup < 0 || reps < 1 || reps > 1000 || !median_ms) {
        fprintf(stderr, "agoq_lt_time: bad argument (op %d, warmup %d, reps %d)\n", op, warmup, reps);
        return -1;
    }
    cudaStream_t s = (cudaStream_t)stream;
    float ms[1000];
    cudaEvent_t e0, e1;
    cudaCheck(cudaEventCreate(&e0));
    cudaCheck(cudaEventCreate(&e1));
    int rc = 0;
    for (int i = 0; i < warmup + reps && rc == 0; i++) {
        cudaCheck(cudaEventRecord(e0, s));
        rc = op == AGOQ_LT_FWD     ? agoq_lt_fwd(lt, M, N, K, A, B, NULL, (uint16_t *)out, stream)
             : op == AGOQ_LT_DGRAD ? agoq_lt_dgrad(lt, M, N, K, A, B, NULL, (uint16_t *)out, stream)
                                   : agoq_lt_wgrad(lt, M, N, K, A, B, 1, (float *)out, NULL, stream);
        cudaCheck(cudaEventRecord(e1, s));
        cudaCheck(cudaEventSynchronize(e1));
        if (i >= warmup) cudaCheck(cudaEventElapsedTime(&ms[i - warmup], e0, e1));
    }
    cudaCheck(cudaEventDestroy(e0));
    cudaCheck(cudaEventDestroy(e1));
    if (rc) return rc;
    for (int i = 1; i < reps; i++) /* insertion sort: reps is small */
        for (int j = i; j > 0 && ms[j - 1] > ms[j]; j--) {
            const float t = ms[j];
            ms[j] = ms[j - 1];
            ms[j - 1] = t;
        }
    *median_ms = reps % 2 ? ms[reps / 2] : 0.5f * (ms[reps / 2 - 1] + ms[reps / 2]);
    return 0;
}
