/* CUDA fused activation kernels (see fused.h): RMSNorm / SwiGLU / GELU forward writing the bf16
 * output and the quantized copy of the input in one pass, and backward kernels that
 * dequantize, recompute and differentiate in one pass. The same templates with quantization
 * off are the plain bf16 kernels and, with the op off, the standalone quantize / dequantize
 * kernels of the unfused baseline, so fused and unfused run the same code paths.
 * Bit-exact with kernels/{fused,rmsnorm,swiglu,gelu}_ref.c (tests/cuda/test_fused.c).
 *
 * Work split:
 *   forward elementwise (GELU, SwiGLU, quantize), blocks of 8..256 (powers of two, FP4's 128
 *     included): one thread per 8-element group, a block = B/8 consecutive lanes reduced with
 *     xor shuffles, one read of the input; other blocks: one warp per (row, block), pass 1
 *     reduces the block, pass 2 re-reads it (an L1 hit), encodes it and writes the output;
 *   RMSNorm: one CTA of AGOQ_ROW_THREADS per row (forward) or per row group (backward, which
 *     also accumulates the dweight partials of its rows in shared memory), sums in the fixed
 *     order of fused_math.h;
 *   backward elementwise (GELU, SwiGLU, dequantize): one thread per 8-element group. */
#include <cuda_runtime.h>

#include "harness/check.h"
#include "harness/common.h"
#include "kernels/fused.h"
#include "kernels/fused_math.h"
#include "kernels/fused_quant.cuh"

enum { OP_NONE = 0, OP_GELU = 1, OP_SWIGLU = 2 };
static const int kWarpsPerCta = 8;

/* ---- forward, elementwise: one warp per (row, block) ---- */
template <int OP, bool QUANT>
__global__ void __launch_bounds__(256) ew_fwd_kernel(agoq_fq q, const uint16_t *__restrict__ x, int rows, int cols,
                                                     int task_cols, uint16_t *__restrict__ y, agoq_dqt xq) {
    const int lane = threadIdx.x & 31;
    const int ntask = (cols + task_cols - 1) / task_cols;
    const size_t task = (size_t)blockIdx.x * kWarpsPerCta + (threadIdx.x >> 5);
    if (task >= (size_t)rows * (size_t)ntask) return;
    const size_t r = task / (size_t)ntask;
    const int k = (int)(task % (size_t)ntask), c0 = k * task_cols;
    const int len = min(task_cols, cols - c0), ngroups = (len + 7) / 8, ngroups_all = task_cols / 8;
    const bool vec = (cols & 7) == 0;
    constexpr int NIN = OP == OP_SWIGLU ? 2 : 1; /* SwiGLU reads gate and up */
    const size_t in_stride = (size_t)NIN * (size_t)cols;
    const uint16_t *in[NIN];
    for (int s = 0; s < NIN; s++) in[s] = x + r * in_stride + (size_t)s * (size_t)cols + (size_t)c0;
    float inv[NIN], m[NIN];
    if (QUANT) {
        fq_stat st[NIN];
        for (int s = 0; s < NIN; s++) st[s] = fq_stat_init();
        for (int gi = lane; gi < ngroups; gi += 32)
            for (int s = 0; s < NIN; s++) {
                float v[8];
                bf16_load8(in[s] + 8 * gi, len - 8 * gi, vec, v);
                fq_stat_add(st[s], v, len - 8 * gi);
            }
        for (int s = 0; s < NIN; s++) {
            float sc;
            fq_params(q, fq_stat_warp(st[s]), &sc, &m[s], &inv[s]);
            if (lane == 0) fq_store_params(q, xq, (size_t)NIN * r * (size_t)ntask + (size_t)s * ntask + (size_t)k, sc, m[s]);
        }
    }
    const size_t cb = (size_t)task_cols * (size_t)q.bits / 8;
    for (int gi = lane; gi < (QUANT ? ngroups_all : ngroups); gi += 32) {
        const int n = len - 8 * gi;
        float v[NIN][8];
        for (int s = 0; s < NIN; s++) bf16_load8(in[s] + 8 * gi, n, vec, v[s]);
        if (QUANT)
            for (int s = 0; s < NIN; s++) {
                const size_t seg = (size_t)NIN * r + (size_t)s; /* row of the stored [NIN*rows, cols] view */
                fq_put_group(q, v[s], n, inv[s], m[s], seg * (size_t)cols + (size_t)(c0 + 8 * gi),
                             xq.codes + (seg * (size_t)ntask + (size_t)k) * cb + (size_t)gi * (size_t)q.bits);
            }
        if (OP != OP_NONE && n > 0) {
            float o[8];
#pragma unroll
            for (int e = 0; e < 8; e++)
                o[e] = OP == OP_GELU ? agoq_gelu(v[0][e]) : agoq_silu(v[0][e]) * v[NIN - 1][e];
            bf16_store8(y + r * (size_t)cols + (size_t)(c0 + 8 * gi), n, vec, o);
        }
    }
}

/* ---- forward, elementwise, blocks of 8..256 (a power of two): one thread per 8-element group,
 * a block = G = B/8 consecutive lanes, its statistics a segment reduction; values stay in
 * registers (one read of the input). Rows are padded to whole blocks (padding groups write
 * code 0). Without quantization G = 1 and this is the plain bf16 kernel. ---- */
template <int OP, bool QUANT>
__global__ void __launch_bounds__(256) ew_fwd_seg_kernel(agoq_fq q, const uint16_t *__restrict__ x, int rows, int cols,
                                                         uint16_t *__restrict__ y, agoq_dqt xq) {
    const int G = QUANT ? q.block / 8 : 1;
    const int nbpr = QUANT ? (cols + q.block - 1) / q.block : 0;
    const size_t gpr = QUANT ? (size_t)nbpr * G : (size_t)((cols + 7) / 8);
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = t < (size_t)rows * gpr; /* invalid lanes still join the shuffles */
    const size_t r = valid ? t / gpr : 0;
    const int g = valid ? (int)(t % gpr) : 0, c = 8 * g, n = valid ? cols - c : 0;
    const bool vec = (cols & 7) == 0;
    constexpr int NIN = OP == OP_SWIGLU ? 2 : 1;
    float v[NIN][8];
    for (int s = 0; s < NIN; s++)
        bf16_load8(x + (r * NIN + (size_t)s) * (size_t)cols + (size_t)(n > 0 ? c : 0), n, vec, v[s]);
    if (QUANT) {
        const size_t cb = (size_t)q.block * (size_t)q.bits / 8;
        for (int s = 0; s < NIN; s++) {
            fq_stat st = fq_stat_init();
            fq_stat_add(st, v[s], n);
            st = fq_stat_seg(st, G);
            float sc, m, inv;
            fq_params(q, st, &sc, &m, &inv);
            const size_t seg = (size_t)NIN * r + (size_t)s, b = seg * (size_t)nbpr + (size_t)(g / G);
            if (valid && g % G == 0) fq_store_params(q, xq, b, sc, m);
            if (valid)
                fq_put_group(q, v[s], n, inv, m, seg * (size_t)cols + (size_t)c,
                             xq.codes + b * cb + (size_t)(g % G) * (size_t)q.bits);
        }
    }
    if (OP != OP_NONE && n > 0) {
        float o[8];
#pragma unroll
        for (int e = 0; e < 8; e++) o[e] = OP == OP_GELU ? agoq_gelu(v[0][e]) : agoq_silu(v[0][e]) * v[NIN - 1][e];
        bf16_store8(y + r * (size_t)cols + (size_t)c, n, vec, o);
    }
}

/* ---- backward, elementwise: one thread per 8-element group ---- */
template <int OP, bool DEQ>
__global__ void __launch_bounds__(256) ew_bwd_kernel(agoq_fq q, agoq_dqt xq, const uint16_t *__restrict__ x,
                                                     const uint16_t *__restrict__ dy, int rows, int cols,
                                                     uint16_t *__restrict__ dx, uint16_t *__restrict__ y) {
    const int gpr = (cols + 7) / 8;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)rows * (size_t)gpr) return;
    const size_t r = t / (size_t)gpr;
    const int col0 = (int)(t % (size_t)gpr) * 8, n = cols - col0;
    const bool vec = (cols & 7) == 0;
    constexpr int NIN = OP == OP_SWIGLU ? 2 : 1;
    float v[NIN][8];
    for (int s = 0; s < NIN; s++) {
        if (DEQ) fq_load_rowq_group(q, xq, cols, (size_t)NIN * r + (size_t)s, col0, v[s]);
        else bf16_load8(x + ((size_t)NIN * r + (size_t)s) * (size_t)cols + (size_t)col0, n, vec, v[s]);
    }
    const size_t o = r * (size_t)cols + (size_t)col0;
    if (OP == OP_NONE) {
        bf16_store8(y + o, n, vec, v[0]);
        return;
    }
    float g[8], d0[8], d1[8], out[8];
    bf16_load8(dy + o, n, vec, g);
#pragma unroll
    for (int e = 0; e < 8; e++) {
        if (OP == OP_GELU) {
            d0[e] = g[e] * agoq_gelu_grad(v[0][e]);
            out[e] = agoq_gelu(v[0][e]);
        } else {
            agoq_swiglu_bwd(v[0][e], v[NIN - 1][e], g[e], &d0[e], &d1[e], &out[e]);
        }
    }
    const size_t hi = (size_t)NIN * r * (size_t)cols + (size_t)col0;
    bf16_store8(dx + hi, n, vec, d0);
    if (OP == OP_SWIGLU) bf16_store8(dx + hi + (size_t)cols, n, vec, d1);
    bf16_store8(y + o, n, vec, out);
}

/* ---- RMSNorm ---- */
/* Sum of the CTA's per-thread partials in the order of agoq_tree_sum_ref; every thread gets it.
 * red: 2 * AGOQ_ROW_THREADS / 32 floats of shared memory. NV: values reduced at once (1 or 2). */
template <int NV>
__device__ __forceinline__ void row_tree_sum(float *v, float *red) {
    constexpr int NW = AGOQ_ROW_THREADS / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int i = 0; i < NV; i++) {
        for (int off = 16; off > 0; off >>= 1) v[i] = v[i] + __shfl_down_sync(0xffffffffu, v[i], off);
        if (lane == 0) red[i * NW + warp] = v[i];
    }
    __syncthreads();
    if (warp == 0)
        for (int i = 0; i < NV; i++) {
            float w = lane < NW ? red[i * NW + lane] : 0.0f;
            for (int off = NW / 2; off > 0; off >>= 1) w = w + __shfl_down_sync(0xffffffffu, w, off);
            if (lane == 0) red[i * NW] = w;
        }
    __syncthreads();
    for (int i = 0; i < NV; i++) v[i] = red[i * NW];
    __syncthreads(); /* red is reused by the next row */
}

template <bool QUANT>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS) rmsnorm_fwd_kernel(agoq_fq q, const uint16_t *__restrict__ x,
                                                                       const uint16_t *__restrict__ w, int cols,
                                                                       float eps, uint16_t *__restrict__ y,
                                                                       agoq_dqt xq, float *rstd_out) {
    __shared__ float red[2 * AGOQ_ROW_THREADS / 32];
    const size_t r = blockIdx.x;
    const uint16_t *xr = x + r * (size_t)cols;
    const bool vec = (cols & 7) == 0;
    const int ngroups = (cols + 7) / 8;
    float acc[1] = {0.0f};
    for (int g = threadIdx.x; g < ngroups; g += AGOQ_ROW_THREADS) {
        float v[8];
        bf16_load8(xr + 8 * g, cols - 8 * g, vec, v);
        for (int e = 0; e < 8 && 8 * g + e < cols; e++) acc[0] = acc[0] + v[e] * v[e];
    }
    row_tree_sum<1>(acc, red);
    const float rstd = agoq_rms_rstd(acc[0], cols, eps);
    if (rstd_out && threadIdx.x == 0) rstd_out[r] = rstd;
    if (!QUANT || fq_seg_ok(q.block)) {
        /* pass 2, thread-strided groups; a block = G consecutive lanes (segment reduction) */
        const int G = QUANT ? q.block / 8 : 1, nbpr = QUANT ? (cols + q.block - 1) / q.block : 0;
        const int gpad = QUANT ? nbpr * G : ngroups;
        const size_t cb = QUANT ? (size_t)q.block * (size_t)q.bits / 8 : 0;
        for (int base = 0; base < gpad; base += AGOQ_ROW_THREADS) {
            const int g = base + threadIdx.x, c = 8 * g, n = g < gpad ? cols - c : 0;
            float v[8], wv[8], o[8];
            bf16_load8(xr + (n > 0 ? c : 0), n, vec, v);
            if (QUANT) {
                fq_stat st = fq_stat_init();
                fq_stat_add(st, v, n);
                float s, m, inv;
                fq_params(q, fq_stat_seg(st, G), &s, &m, &inv);
                const size_t b = r * (size_t)nbpr + (size_t)(g / G);
                if (g < gpad && g % G == 0) fq_store_params(q, xq, b, s, m);
                if (g < gpad)
                    fq_put_group(q, v, n, inv, m, r * (size_t)cols + (size_t)c, xq.codes + b * cb + (size_t)(g % G) * (size_t)q.bits);
            }
            if (n <= 0) continue;
            bf16_load8(w + c, n, vec, wv);
#pragma unroll
            for (int e = 0; e < 8; e++) o[e] = agoq_rms_out(v[e], rstd, wv[e]);
            bf16_store8(y + r * (size_t)cols + (size_t)c, n, vec, o);
        }
        return;
    }
    /* pass 2, general blocks: warp per quantization block */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int task_cols = q.block, ntask = (cols + task_cols - 1) / task_cols;
    const size_t cb = (size_t)task_cols * (size_t)q.bits / 8;
    for (int k = warp; k < ntask; k += AGOQ_ROW_THREADS / 32) {
        const int c0 = k * task_cols, len = min(task_cols, cols - c0), ngr = (len + 7) / 8;
        float inv = 0.0f, m = 0.0f;
        const size_t b = r * (size_t)ntask + (size_t)k;
        if (QUANT) {
            fq_stat st = fq_stat_init();
            for (int gi = lane; gi < ngr; gi += 32) {
                float v[8];
                bf16_load8(xr + c0 + 8 * gi, len - 8 * gi, vec, v);
                fq_stat_add(st, v, len - 8 * gi);
            }
            float s;
            fq_params(q, fq_stat_warp(st), &s, &m, &inv);
            if (lane == 0) fq_store_params(q, xq, b, s, m);
        }
        for (int gi = lane; gi < (QUANT ? task_cols / 8 : ngr); gi += 32) {
            const int n = len - 8 * gi, c = c0 + 8 * gi;
            float v[8], wv[8], o[8];
            bf16_load8(xr + c, n, vec, v);
            if (QUANT) fq_put_group(q, v, n, inv, m, r * (size_t)cols + (size_t)c, xq.codes + b * cb + (size_t)gi * (size_t)q.bits);
            if (n <= 0) continue;
            bf16_load8(w + c, n, vec, wv);
#pragma unroll
            for (int e = 0; e < 8; e++) o[e] = agoq_rms_out(v[e], rstd, wv[e]);
            bf16_store8(y + r * (size_t)cols + (size_t)c, n, vec, o);
        }
    }
}

template <bool DEQ>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS) rmsnorm_bwd_kernel(agoq_fq q, agoq_dqt xq,
                                                                       const uint16_t *__restrict__ x,
                                                                       const uint16_t *__restrict__ dy,
                                                                       const uint16_t *__restrict__ w, int rows,
                                                                       int cols, float eps, int rpg,
                                                                       uint16_t *__restrict__ dx,
                                                                       uint16_t *__restrict__ y, float *dw_partial) {
    extern __shared__ float dw_acc[]; /* [cols]: column j owned by the thread owning group j/8 */
    __shared__ float red[2 * AGOQ_ROW_THREADS / 32];
    const bool vec = (cols & 7) == 0;
    const int ngroups = (cols + 7) / 8;
    for (int g = threadIdx.x; g < ngroups; g += AGOQ_ROW_THREADS)
        for (int e = 0; e < 8 && 8 * g + e < cols; e++) dw_acc[8 * g + e] = 0.0f;
    const int r0 = blockIdx.x * rpg, r1 = min(rows, r0 + rpg);
    for (int ri = r0; ri < r1; ri++) {
        const size_t o = (size_t)ri * (size_t)cols;
        float acc[2] = {0.0f, 0.0f}; /* sum x^2, sum g*x */
        for (int gr = threadIdx.x; gr < ngroups; gr += AGOQ_ROW_THREADS) {
            const int c = 8 * gr, n = cols - c;
            float v[8], d[8], wv[8];
            if (DEQ) fq_load_rowq_group(q, xq, cols, (size_t)ri, c, v);
            else bf16_load8(x + o + c, n, vec, v);
            bf16_load8(dy + o + c, n, vec, d);
            bf16_load8(w + c, n, vec, wv);
            for (int e = 0; e < 8 && e < n; e++) {
                acc[0] = acc[0] + v[e] * v[e];
                acc[1] = acc[1] + (d[e] * wv[e]) * v[e];
            }
        }
        row_tree_sum<2>(acc, red);
        const float rstd = agoq_rms_rstd(acc[0], cols, eps), coef = agoq_rms_coef(acc[1], cols, rstd);
        for (int gr = threadIdx.x; gr < ngroups; gr += AGOQ_ROW_THREADS) {
            const int c = 8 * gr, n = cols - c;
            float v[8], d[8], wv[8], dxv[8], yv[8];
            if (DEQ) fq_load_rowq_group(q, xq, cols, (size_t)ri, c, v);
            else bf16_load8(x + o + c, n, vec, v);
            bf16_load8(dy + o + c, n, vec, d);
            bf16_load8(w + c, n, vec, wv);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                dxv[e] = agoq_rms_dx(v[e], d[e] * wv[e], rstd, coef);
                yv[e] = agoq_rms_out(v[e], rstd, wv[e]);
                if (e < n) dw_acc[c + e] = dw_acc[c + e] + d[e] * (v[e] * rstd);
            }
            bf16_store8(dx + o + c, n, vec, dxv);
            bf16_store8(y + o + c, n, vec, yv);
        }
    }
    float *dst = dw_partial + (size_t)blockIdx.x * (size_t)cols;
    for (int g = threadIdx.x; g < ngroups; g += AGOQ_ROW_THREADS)
        for (int e = 0; e < 8 && 8 * g + e < cols; e++) dst[8 * g + e] = dw_acc[8 * g + e];
}

__global__ void dw_reduce_kernel(const float *__restrict__ partial, int groups, int cols, float *__restrict__ dw) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float acc = 0.0f;
    for (int g = 0; g < groups; g++) acc = acc + partial[(size_t)g * (size_t)cols + (size_t)j];
    dw[j] = acc;
}

/* ---- host side ---- */
extern "C" int agoq_fq_make(const agoq_qconfig *c, agoq_fq *out) {
    if (agoq_qconfig_check(c)) return -1;
    const agoq_format_traits *t = &agoq_formats[c->fmt];
    agoq_fq q = {};
    q.kind = (int)t->kind;
    q.bits = t->bits;
    q.block = c->block;
    q.bf16_scale = c->scale == AGOQ_SCALE_BF16;
    q.stochastic = c->rounding == AGOQ_ROUND_STOCHASTIC;
    q.fp4 = c->fmt == AGOQ_FMT_FP4_E2M1;
    q.qmax = t->qmax;
    q.seed = c->seed;
    const agoq_code_table *tab = agoq_table(c->fmt);
    if (tab) {
        /* device copy: sorted[256] mid[256] value[256] (floats), sorted_code[256] (bytes) */
        char *d = NULL;
        cudaCheck(cudaMalloc(&d, 3 * 256 * sizeof(float) + 256));
        cudaCheck(cudaMemcpy(d, tab->sorted, 256 * sizeof(float), cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(d + 1024, tab->mid, 256 * sizeof(float), cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(d + 2048, tab->value, 256 * sizeof(float), cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(d + 3072, tab->sorted_code, 256, cudaMemcpyHostToDevice));
        q.nsorted = tab->nsorted;
        q.sorted = (const float *)d;
        q.mid = (const float *)(d + 1024);
        q.value = (const float *)(d + 2048);
        q.sorted_code = (const uint8_t *)(d + 3072);
        q.table_alloc = d;
    }
    *out = q;
    return 0;
}

extern "C" void agoq_fq_free(agoq_fq *q) {
    if (q->table_alloc) cudaCheck(cudaFree(q->table_alloc));
    q->table_alloc = NULL;
}

extern "C" int agoq_dqt_alloc(const agoq_qconfig *c, size_t rows, size_t cols, agoq_dqt *out) {
    const size_t n = agoq_rowq_alloc_n(c, rows, cols);
    *out = {};
    cudaCheck(cudaMalloc(&out->codes, agoq_codes_bytes(c, n)));
    cudaCheck(cudaMalloc(&out->scales, agoq_scales_bytes(c, n)));
    cudaCheck(cudaMemset(out->codes, 0, agoq_codes_bytes(c, n)));
    cudaCheck(cudaMemset(out->scales, 0, agoq_scales_bytes(c, n)));
    if (agoq_has_zeros(c)) {
        cudaCheck(cudaMalloc(&out->zeros, agoq_zeros_bytes(c, n)));
        cudaCheck(cudaMemset(out->zeros, 0, agoq_zeros_bytes(c, n)));
    }
    return 0;
}

extern "C" void agoq_dqt_free(agoq_dqt *q) {
    cudaCheck(cudaFree(q->codes));
    cudaCheck(cudaFree(q->scales));
    if (q->zeros) cudaCheck(cudaFree(q->zeros));
    *q = {};
}

static int check_shape(const char *what, int rows, int cols) {
    AGOQ_REQUIRE(rows >= 1 && cols >= 1, "%s: rows %d and cols %d must be >= 1", what, rows, cols);
    return 0;
}
static unsigned grid_for(size_t tasks, size_t per_cta) { return (unsigned)((tasks + per_cta - 1) / per_cta); }
static const agoq_fq g_no_quant = {}; /* template argument when nothing is quantized */

/* Forward elementwise launcher: q NULL -> plain kernel. nin = 2 for SwiGLU (cols = F). */
template <int OP>
static int ew_fwd(const char *what, const agoq_fq *q, const uint16_t *x, int rows, int cols, uint16_t *y,
                  agoq_dqt xq, void *stream) {
    if (check_shape(what, rows, cols)) return -1;
    cudaStream_t s = (cudaStream_t)stream;
    if (!q || fq_seg_ok(q->block)) {
        const size_t gpr = q ? (size_t)((cols + q->block - 1) / q->block) * (size_t)(q->block / 8) : (size_t)((cols + 7) / 8);
        const unsigned grid = grid_for((size_t)rows * gpr, 256);
        if (q) ew_fwd_seg_kernel<OP, true><<<grid, 256, 0, s>>>(*q, x, rows, cols, y, xq);
        else ew_fwd_seg_kernel<OP, false><<<grid, 256, 0, s>>>(g_no_quant, x, rows, cols, y, xq);
    } else {
        const int ntask = (cols + q->block - 1) / q->block;
        const unsigned grid = grid_for((size_t)rows * (size_t)ntask, kWarpsPerCta);
        ew_fwd_kernel<OP, true><<<grid, 32 * kWarpsPerCta, 0, s>>>(*q, x, rows, cols, q->block, y, xq);
    }
    cudaCheckLaunch();
    return 0;
}

template <int OP>
static int ew_bwd(const char *what, const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, int rows,
                  int cols, uint16_t *dx, uint16_t *y, void *stream) {
    if (check_shape(what, rows, cols)) return -1;
    const unsigned grid = grid_for((size_t)rows * (size_t)((cols + 7) / 8), 256);
    cudaStream_t s = (cudaStream_t)stream;
    if (q) ew_bwd_kernel<OP, true><<<grid, 256, 0, s>>>(*q, xq, x, dy, rows, cols, dx, y);
    else ew_bwd_kernel<OP, false><<<grid, 256, 0, s>>>(g_no_quant, xq, x, dy, rows, cols, dx, y);
    cudaCheckLaunch();
    return 0;
}

extern "C" int agoq_rowq_quantize_cuda(const agoq_fq *q, const uint16_t *x, int rows, int cols, agoq_dqt xq, void *stream) {
    AGOQ_REQUIRE(q, "rowq quantize: no quantization config");
    return ew_fwd<OP_NONE>("rowq quantize", q, x, rows, cols, NULL, xq, stream);
}
extern "C" int agoq_rowq_dequantize_cuda(const agoq_fq *q, agoq_dqt xq, int rows, int cols, uint16_t *y, void *stream) {
    AGOQ_REQUIRE(q, "rowq dequantize: no quantization config");
    return ew_bwd<OP_NONE>("rowq dequantize", q, xq, NULL, NULL, rows, cols, NULL, y, stream);
}
extern "C" int agoq_gelu_fwd_cuda(const agoq_fq *q, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_dqt xq, void *stream) {
    return ew_fwd<OP_GELU>("gelu fwd", q, x, rows, cols, y, xq, stream);
}
extern "C" int agoq_gelu_bwd_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, int rows,
                                  int cols, uint16_t *dx, uint16_t *y, void *stream) {
    return ew_bwd<OP_GELU>("gelu bwd", q, xq, x, dy, rows, cols, dx, y, stream);
}
extern "C" int agoq_swiglu_fwd_cuda(const agoq_fq *q, const uint16_t *h, int rows, int f, uint16_t *out, agoq_dqt hq, void *stream) {
    return ew_fwd<OP_SWIGLU>("swiglu fwd", q, h, rows, f, out, hq, stream);
}
extern "C" int agoq_swiglu_bwd_cuda(const agoq_fq *q, agoq_dqt hq, const uint16_t *h, const uint16_t *dout, int rows,
                                    int f, uint16_t *dh, uint16_t *out, void *stream) {
    return ew_bwd<OP_SWIGLU>("swiglu bwd", q, hq, h, dout, rows, f, dh, out, stream);
}

extern "C" int agoq_rmsnorm_fwd_cuda(const agoq_fq *q, const uint16_t *x, const uint16_t *w, int rows, int cols,
                                     float eps, uint16_t *y, agoq_dqt xq, float *rstd, void *stream) {
    if (check_shape("rmsnorm fwd", rows, cols)) return -1;
    cudaStream_t s = (cudaStream_t)stream;
    if (q) rmsnorm_fwd_kernel<true><<<rows, AGOQ_ROW_THREADS, 0, s>>>(*q, x, w, cols, eps, y, xq, rstd);
    else rmsnorm_fwd_kernel<false><<<rows, AGOQ_ROW_THREADS, 0, s>>>(g_no_quant, x, w, cols, eps, y, xq, rstd);
    cudaCheckLaunch();
    return 0;
}

extern "C" int agoq_rmsnorm_bwd_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy,
                                     const uint16_t *w, int rows, int cols, float eps, int rows_per_group,
                                     uint16_t *dx, uint16_t *y, float *dw_partial, void *stream) {
    if (check_shape("rmsnorm bwd", rows, cols)) return -1;
    AGOQ_REQUIRE(rows_per_group >= 1, "rmsnorm bwd: rows_per_group %d must be >= 1", rows_per_group);
    const size_t smem = (size_t)cols * sizeof(float);
    AGOQ_REQUIRE(smem <= 200 * 1024, "rmsnorm bwd: cols %d too wide for the shared-memory dweight partials (max %d)",
                 cols, 200 * 1024 / 4);
    const unsigned grid = grid_for((size_t)rows, (size_t)rows_per_group);
    cudaStream_t s = (cudaStream_t)stream;
    if (q) {
        cudaCheck(cudaFuncSetAttribute(rmsnorm_bwd_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        rmsnorm_bwd_kernel<true><<<grid, AGOQ_ROW_THREADS, smem, s>>>(*q, xq, x, dy, w, rows, cols, eps, rows_per_group, dx, y, dw_partial);
    } else {
        cudaCheck(cudaFuncSetAttribute(rmsnorm_bwd_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        rmsnorm_bwd_kernel<false><<<grid, AGOQ_ROW_THREADS, smem, s>>>(g_no_quant, xq, x, dy, w, rows, cols, eps, rows_per_group, dx, y, dw_partial);
    }
    cudaCheckLaunch();
    return 0;
}

extern "C" int agoq_dw_reduce_cuda(const float *partial, int groups, int cols, float *dw, void *stream) {
    if (check_shape("dw reduce", groups, cols)) return -1;
    dw_reduce_kernel<<<grid_for((size_t)cols, 256), 256, 0, (cudaStream_t)stream>>>(partial, groups, cols, dw);
    cudaCheckLaunch();
    return 0;
}

extern "C" void *agoq_fused_dmalloc(size_t bytes) {
    void *p = NULL;
    cudaCheck(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}
extern "C" void agoq_fused_dfree(void *p) { cudaCheck(cudaFree(p)); }
extern "C" void agoq_fused_h2d(void *dst, const void *src, size_t bytes) { cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice)); }
extern "C" void agoq_fused_d2h(void *dst, const void *src, size_t bytes) { cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost)); }
extern "C" void agoq_fused_dsync(void) { cudaCheck(cudaDeviceSynchronize()); }

extern "C" void agoq_dqt_upload(const agoq_qconfig *c, size_t rows, size_t cols, const agoq_qtensor *h, agoq_dqt d) {
    const size_t n = agoq_rowq_alloc_n(c, rows, cols);
    agoq_fused_h2d(d.codes, h->codes, agoq_codes_bytes(c, n));
    agoq_fused_h2d(d.scales, h->scales, agoq_scales_bytes(c, n));
    if (agoq_has_zeros(c)) agoq_fused_h2d(d.zeros, h->zeros, agoq_zeros_bytes(c, n));
}
extern "C" void agoq_dqt_download(const agoq_qconfig *c, size_t rows, size_t cols, agoq_dqt d, agoq_qtensor *h) {
    const size_t n = agoq_rowq_alloc_n(c, rows, cols);
    agoq_fused_d2h(h->codes, d.codes, agoq_codes_bytes(c, n));
    agoq_fused_d2h(h->scales, d.scales, agoq_scales_bytes(c, n));
    if (agoq_has_zeros(c)) agoq_fused_d2h(h->zeros, d.zeros, agoq_zeros_bytes(c, n));
}
