/* The cuda backend of ops.h: one GPU, device memory, the legacy default stream.
 *   memory       cudaMalloc / cudaMemcpy (synchronous up/downloads, ordered device copies)
 *   matmul       cuBLAS SGEMM, fp32 compute with the default math mode (never TF32), row-major
 *                through the transpose of the column-major call: C^T = op(B)^T op(A)^T
 *   act_store    the policy hook with this project's kernels: bf16 rounding by quant_math.h's
 *                agoq_round_bf16; block formats by agoq_cuda_quantize_f32 then
 *                agoq_cuda_dequantize_f32 (kernels/quant/quant_cuda.h) on the rowq layout
 *   optimizer    AdamW by optim.h's train_adam_elem (the CPU's expression), sum of squares in
 *                double in a fixed order, compare = download + core/metrics.h
 * Layer kernels: layers_cuda.cu; all-reduces: dp_cuda.cu. */
#include <stdlib.h>
#include <string.h>

#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_math.h"
#include "train/cuda_common.cuh"

/* ---- memory ---- */
void *cuda_scratch(train_dev *d, int which, size_t bytes) {
    cuda_state *s = cst(d);
    if (bytes > s->scr_bytes[which]) {
        cudaCheck(cudaDeviceSynchronize()); /* queued kernels may still read the old buffer */
        if (s->scr[which]) cudaCheck(cudaFree(s->scr[which]));
        s->scr[which] = NULL;
        cudaCheck(cudaMalloc(&s->scr[which], bytes));
        s->scr_bytes[which] = bytes;
    }
    return s->scr[which];
}

static void *g_alloc(train_dev *d, size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError(); /* not sticky: the caller reports and unwinds */
        agoq_error("train cuda: out of device memory for %zu bytes", bytes);
        return NULL;
    }
    cudaCheck(e);
    cudaCheck(cudaMemset(p, 0, bytes ? bytes : 1));
    return p;
}
static void g_release(train_dev *d, void *p) {
    if (p) cudaCheck(cudaFree(p));
}
static void g_upload(train_dev *d, void *dst, const void *host, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice));
}
static void g_download(train_dev *d, void *host, const void *src, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost));
}
static void g_copy(train_dev *d, void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
}
static void g_zero(train_dev *d, void *dst, size_t bytes) {
    if (bytes) cudaCheck(cudaMemsetAsync(dst, 0, bytes, 0));
}

/* ---- GEMM ---- */
void cuda_gemm(train_dev *d, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, long long sa,
               const float *b, long long sb, float beta, float *c, long long sc, int batch) {
    /* row-major X (r, s) is column-major X^T with leading dimension s; so compute
     * C^T (N, M) = op(B)^T (N, K) @ op(A)^T (K, M) in cuBLAS's column-major terms */
    const int lda = trans_a ? m : k, ldb = trans_b ? k : n;
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 1)
        cublasCheck(cublasSgemm(cst(d)->blas, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c, n));
    else
        cublasCheck(cublasSgemmStridedBatched(cst(d)->blas, op_b, op_a, n, m, k, &alpha, b, ldb, sb, a, lda, sa, &beta,
                                              c, n, sc, batch));
}

static void g_matmul(train_dev *d, float *out, const float *a, int trans_a, const float *b, int trans_b, int m, int k,
                     int n, int accumulate) {
    cuda_gemm(d, trans_a, trans_b, m, n, k, 1.0f, a, 0, b, 0, accumulate ? 1.0f : 0.0f, out, 0, 1);
}

/* ---- elementwise ---- */
__global__ void k_add(float *dst, const float *a, const float *b, size_t n) {
    GRID_STRIDE(i, n) dst[i] = a[i] + b[i];
}
static void g_add(train_dev *d, float *dst, const float *a, const float *b, size_t n) {
    if (!n) return;
    k_add<<<blocks_for(n, kThreads), kThreads>>>(dst, a, b, n);
    cudaCheckLaunch();
}

__global__ void k_round_bf16(float *dst, const float *src, size_t n) {
    GRID_STRIDE(i, n) dst[i] = agoq_round_bf16(src[i]);
}

/* (rows, cols) <-> (rows, cols_pad): rows padded with zeros to a whole number of blocks */
__global__ void k_pad_rows(float *dst, const float *src, size_t rows, size_t cols, size_t cols_pad) {
    GRID_STRIDE(i, rows * cols_pad) {
        size_t r = i / cols_pad, j = i % cols_pad;
        dst[i] = j < cols ? src[r * cols + j] : 0.0f;
    }
}
__global__ void k_unpad_rows(float *dst, const float *src, size_t rows, size_t cols, size_t cols_pad) {
    GRID_STRIDE(i, rows * cols) dst[i] = src[(i / cols) * cols_pad + i % cols];
}

/* ---- the saved-activation hook ---- */
/* Planes of a quantized tensor of n elements carved from one buffer: codes, scales, zeros,
 * each 16-byte aligned and followed by 16 bytes of slack (the kernels read whole words). */
static size_t qt_layout(const agoq_qconfig *q, size_t n, size_t *scales_off, size_t *zeros_off) {
    *scales_off = (agoq_codes_bytes(q, n) + 16 + 15) / 16 * 16;
    *zeros_off = (*scales_off + agoq_scales_bytes(q, n) + 16 + 15) / 16 * 16;
    return *zeros_off + agoq_zeros_bytes(q, n) + 16;
}

/* The rowq layout (each row of cols its own run of blocks) is the flat layout of the rows
 * padded to a whole number of blocks. Padding with zeros leaves every real element's block
 * scale and code unchanged for symmetric formats (absmax scale: a zero never raises it) with
 * round-to-nearest; an asymmetric format's minimum or a stochastic draw's index would change,
 * so those are refused for ragged rows. */
static int g_act_store_check(train_dev *d, const agoq_store *s, size_t rows, size_t cols) {
    if (s->kind != AGOQ_STORE_QUANT || cols % (size_t)s->q.block == 0) return 0;
    if (agoq_has_zeros(&s->q) || s->q.rounding == AGOQ_ROUND_STOCHASTIC) {
        agoq_error("train cuda: rows of %zu elements are not whole blocks of %d, and %s%s cannot be padded exactly",
                   cols, s->q.block, agoq_formats[s->q.fmt].name,
                   s->q.rounding == AGOQ_ROUND_STOCHASTIC ? " with stochastic rounding" : " (asymmetric)");
        return -1;
    }
    return 0;
}

static void g_act_store(train_dev *d, const agoq_store *s, const float *src, size_t rows, size_t cols, float *dst) {
    const size_t n = rows * cols;
    switch (s->kind) {
    case AGOQ_STORE_FP32: g_copy(d, dst, src, n * sizeof(float)); break;
    case AGOQ_STORE_NATIVE:
        k_round_bf16<<<blocks_for(n, kThreads), kThreads>>>(dst, src, n);
        cudaCheckLaunch();
        break;
    case AGOQ_STORE_QUANT: {
        if (g_act_store_check(d, s, rows, cols)) agoq_die("train cuda: act_store of (%zu, %zu) refused", rows, cols);
        const size_t block = (size_t)s->q.block, cols_pad = (cols + block - 1) / block * block, np = rows * cols_pad;
        const float *x = src;
        float *pad = NULL;
        if (cols_pad != cols) {
            pad = (float *)cuda_scratch(d, SCR_PAD, np * sizeof(float));
            k_pad_rows<<<blocks_for(np, kThreads), kThreads>>>(pad, src, rows, cols, cols_pad);
            cudaCheckLaunch();
            x = pad;
        }
        size_t so, zo, bytes = qt_layout(&s->q, np, &so, &zo);
        uint8_t *buf = (uint8_t *)cuda_scratch(d, SCR_QT, bytes);
        agoq_cuda_qtensor qt = {buf, buf + so, agoq_has_zeros(&s->q) ? buf + zo : NULL, np};
        if (agoq_cuda_quantize_f32(&s->q, x, np, &qt, NULL) || agoq_cuda_dequantize_f32(&s->q, &qt, pad ? pad : dst, NULL))
            agoq_die("train cuda: quantized store of (%zu, %zu) failed (see above)", rows, cols);
        if (pad) {
            k_unpad_rows<<<blocks_for(n, kThreads), kThreads>>>(dst, pad, rows, cols, cols_pad);
            cudaCheckLaunch();
        }
        break;
    }
    case AGOQ_STORE_RECOMPUTE: break;
    }
}

/* ---- optimizer ---- */
__global__ void k_adam(train_adam_hyper h, float *p, const float *g, float *m, float *v, size_t n) {
    GRID_STRIDE(i, n) {
        float pi = p[i], mi = m[i], vi = v[i];
        train_adam_elem(&h, &pi, g[i], &mi, &vi);
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
    }
}
static void g_adam(train_dev *d, const train_adam_hyper *h, float *p, const float *g, float *m, float *v, size_t n) {
    if (!n) return;
    k_adam<<<blocks_for(n, kThreads), kThreads>>>(*h, p, g, m, v, n);
    cudaCheckLaunch();
}

/* Sum of squares: kSumBlocks fixed partial sums (grid-stride, double), then one block adds
 * them in a fixed tree: the same bits on every run. */
constexpr int kSumBlocks = 1024;
__global__ void k_sumsq_partial(const float *x, size_t n, double *partial) {
    __shared__ double sh[kThreads];
    double acc = 0.0;
    GRID_STRIDE(i, n) acc += (double)x[i] * (double)x[i];
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}
static double g_sumsq(train_dev *d, const float *x, size_t n) {
    double *partial = (double *)cuda_scratch(d, SCR_PARTIAL, kSumBlocks * sizeof(double));
    double *out = (double *)cuda_scratch(d, SCR_SCALARS, 64), host = 0.0;
    k_sumsq_partial<<<kSumBlocks, kThreads>>>(x, n, partial);
    cudaCheckLaunch();
    cu_sum_doubles(partial, kSumBlocks, out);
    cudaCheck(cudaMemcpy(&host, out, sizeof host, cudaMemcpyDeviceToHost));
    return host;
}

__global__ void k_scale(float *x, size_t n, float s) {
    GRID_STRIDE(i, n) x[i] *= s;
}
static void g_scale(train_dev *d, float *x, size_t n, float s) {
    if (!n) return;
    k_scale<<<blocks_for(n, kThreads), kThreads>>>(x, n, s);
    cudaCheckLaunch();
}

/* The metric is defined once (core/metrics.c): compare host copies. Used at evaluation
 * points only (gradient probes, the all-reduce's error), so the download is not per step. */
static agoq_error_stats g_compare(train_dev *d, const float *ref, const float *approx, size_t n) {
    float *a = (float *)malloc((n ? n : 1) * sizeof(float)), *b = (float *)malloc((n ? n : 1) * sizeof(float));
    if (!a || !b) agoq_die("train cuda: out of host memory comparing %zu floats", n);
    g_download(d, a, ref, n * sizeof(float));
    g_download(d, b, approx, n * sizeof(float));
    agoq_error_stats e = agoq_compare(a, b, n);
    free(a);
    free(b);
    return e;
}

/* ---- the table ---- */
static const train_ops cuda_ops = {
    /* alloc */ g_alloc, g_release, g_upload, g_download, g_copy, g_zero,
    /* layers */ g_matmul, cu_rmsnorm_fwd, cu_rmsnorm_bwd, cu_rope, cu_attention_fwd, cu_attention_bwd, cu_swiglu_fwd,
    cu_swiglu_bwd, g_add, cu_embed_fwd, cu_embed_bwd, cu_cross_entropy,
    /* policy */ g_act_store, g_act_store_check,
    /* data parallel */ cu_reduce_init, cu_reduce_mean, cu_mean_fp32,
    /* optimizer */ g_adam, g_sumsq, g_scale, g_compare,
};

extern "C" train_dev *train_cuda_open(void) {
    train_dev *d = (train_dev *)calloc(1, sizeof *d);
    cuda_state *s = (cuda_state *)calloc(1, sizeof *s);
    if (!d || !s) agoq_die("train cuda: out of host memory");
    cudaCheck(cudaSetDevice(0));
    cublasCheck(cublasCreate(&s->blas));
    cublasCheck(cublasSetMathMode(s->blas, CUBLAS_DEFAULT_MATH)); /* fp32 SGEMM stays fp32: no TF32 */
    cublasCheck(cublasSetStream(s->blas, 0));
    d->ops = &cuda_ops;
    d->kind = AGOQ_BACKEND_CUDA;
    d->impl = s;
    return d;
}

extern "C" void train_cuda_close(train_dev *d) {
    cuda_state *s = cst(d);
    cudaCheck(cudaDeviceSynchronize());
    for (int i = 0; i < SCR_COUNT; i++) g_release(d, s->scr[i]);
    g_release(d, s->rope);
    cublasCheck(cublasDestroy(s->blas));
    free(s);
    free(d);
}
