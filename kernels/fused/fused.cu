/* CUDA fused activation kernels (fused.h), part 1: the general paths and the standalone rowq
 * quantize / dequantize of the unfused baseline, plus the host helpers. The fast vector
 * kernels are in fused_gelu.cu, fused_swiglu.cu and fused_rmsnorm.cu; fused_dev.cuh says how the
 * work is split. Stored copies bit-exact with the kernels/fused/<op>_ref.c references; RMSNorm's
 * outputs (its sums by FMA: the forwards and the staged backward) and SiLU/GELU outputs
 * (fused_fast.cuh) within the bounds of fused_tol.c (tests/cuda/fused/test_fused_cuda.c).
 *
 * General forward (any block, format, rounding, row length): output blocks (r, k) of the rowq
 * layout. Blocks of <= 256 elements: G = B/8 consecutive lanes per block, 32/G blocks per warp
 * (agoq_warp_seg_reduce handles any G <= 32), the input read once into registers; larger
 * blocks: a warp per block, pass 1 the range, pass 2 re-reads (cache hits) and encodes.
 * Without quantization a "block" is one 8-element group. SwiGLU quantizes the gate and up
 * blocks of its output block (rows 2r and 2r+1 of the stored [2*rows, F] view).
 * General backward: one thread per 8-element output group, the stored copy decoded group by
 * group. Grids: what stays resident, grid-stride loops.
 * Standalone rowq quantize / dequantize: when rows are whole blocks the rowq layout is the flat
 * one and they are quant.cu's quantizers (agoq_cuda_quantize_bf16 / dequantize_bf16), else
 * the general kernels with the op off. */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/common.h"
#include "core/knob.h"
#include "kernels/fused/fused_dev.cuh"

/* ---- general forward ---- */
/* Blocks of > 256 elements: a warp per block, the range, then a second pass that encodes. */
template <int OP>
__device__ __forceinline__ void ew_fwd_gen_warp(const agoq_cuda_qparams &p, const agoq_smem_table *tab,
                                                const uint16_t *__restrict__ x, int cols, uint16_t *__restrict__ y,
                                                const agoq_cuda_qtensor &q, size_t nbpr, size_t nob, size_t first,
                                                size_t nwarps, int vec) {
    constexpr int NIN = OP == FZ_OP_SWIGLU ? 2 : 1;
    const int B = p.block, G = B >> 3, lane = (int)(threadIdx.x & 31u);
    for (size_t ob = first; ob < nob; ob += nwarps) {
        const size_t r = ob / nbpr, k = ob % nbpr;
        const int c0 = (int)k * B;
        float inv[NIN], m[NIN];
#pragma unroll
        for (int s = 0; s < NIN; s++) {
            float amax = 0.0f, lo = __int_as_float(0x7f800000), hi = __int_as_float(0xff800000), sc;
            for (int gi = lane; gi < G; gi += 32) {
                const int c = c0 + 8 * gi, nv = fz_nvalid(cols, c);
                if (!nv) break;
                float v[8];
                agoq_dev_load8(x, (r * NIN + (size_t)s) * (size_t)cols + (size_t)c, nv, vec, v);
                fz_range8(v, nv, amax, lo, hi);
            }
            fz_params_warp(p, amax, lo, hi, &sc, &m[s], &inv[s]);
            if (lane == 0) agoq_dev_store_params(p, q, (r * NIN + (size_t)s) * nbpr + k, sc, m[s]);
        }
        for (int gi = lane; gi < G; gi += 32) {
            const int c = c0 + 8 * gi, nv = fz_nvalid(cols, c);
            float v[NIN][8];
#pragma unroll
            for (int s = 0; s < NIN; s++) {
                const size_t sr = r * NIN + (size_t)s;
                agoq_dev_load8(x, sr * (size_t)cols + (size_t)c, nv, vec, v[s]);
                agoq_dev_store_group(q.codes, (sr * nbpr + k) * (size_t)G + (size_t)gi, p.bits,
                                     fz_encode8(p, tab, v[s], nv, inv[s], m[s], sr * (size_t)cols + (size_t)c));
            }
            if (OP != FZ_OP_NONE && nv > 0) {
                float o[8];
#pragma unroll
                for (int e = 0; e < 8; e++) o[e] = OP == FZ_OP_GELU ? agoq_fast_gelu(v[0][e]) : agoq_fast_silu(v[0][e]) * v[NIN - 1][e];
                agoq_dev_store8(y, r * (size_t)cols + (size_t)c, nv, vec, o);
            }
        }
    }
}

template <int OP, bool QUANT>
__global__ void __launch_bounds__(FZ_THREADS) ew_fwd_gen_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ x,
                                                                 int rows, int cols, uint16_t *__restrict__ y,
                                                                 agoq_cuda_qtensor q, size_t ob0, int vec) {
    __shared__ agoq_smem_table tab;
    /* p is uniform: every thread takes the barrier */
    if (QUANT && p.enc == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    constexpr int NIN = OP == FZ_OP_SWIGLU ? 2 : 1;
    const int B = QUANT ? p.block : 8, G = B >> 3, lane = (int)(threadIdx.x & 31u);
    const size_t nbpr = (size_t)((cols + B - 1) / B), nob = (size_t)rows * nbpr;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    if (G <= 32) {
        const int bpw = 32 / G, seg = lane / G, pos = lane - seg * G;
        const size_t ntask = (nob - ob0 + (size_t)bpw - 1) / (size_t)bpw;
        for (size_t task = warp; task < ntask; task += nwarps) { /* warp-uniform: the shuffles below */
            const size_t ob = ob0 + task * (size_t)bpw + (size_t)seg;
            const bool act = seg < bpw && ob < nob;
            const size_t r = act ? ob / nbpr : 0, k = act ? ob % nbpr : 0;
            const int c = (int)k * B + 8 * pos, nv = act ? fz_nvalid(cols, c) : 0;
            float v[NIN][8];
#pragma unroll
            for (int s = 0; s < NIN; s++) agoq_dev_load8(x, (r * NIN + (size_t)s) * (size_t)cols + (size_t)c, nv, vec, v[s]);
            if constexpr (QUANT) {
#pragma unroll
                for (int s = 0; s < NIN; s++) {
                    float sc, m, inv;
                    fz_params_seg(p, v[s], nv, G, pos, &sc, &m, &inv);
                    const size_t sr = r * NIN + (size_t)s, sb = sr * nbpr + k;
                    if (act) { /* padding groups of the row's last block get code 0 */
                        agoq_dev_store_group(q.codes, sb * (size_t)G + (size_t)pos, p.bits,
                                             fz_encode8(p, &tab, v[s], nv, inv, m, sr * (size_t)cols + (size_t)c));
                        if (pos == 0) agoq_dev_store_params(p, q, sb, sc, m);
                    }
                }
            }
            if (OP != FZ_OP_NONE && nv > 0) {
                float o[8];
#pragma unroll
                for (int e = 0; e < 8; e++) o[e] = OP == FZ_OP_GELU ? agoq_fast_gelu(v[0][e]) : agoq_fast_silu(v[0][e]) * v[NIN - 1][e];
                agoq_dev_store8(y, r * (size_t)cols + (size_t)c, nv, vec, o);
            }
        }
    } else if constexpr (QUANT) {
        ew_fwd_gen_warp<OP>(p, &tab, x, cols, y, q, nbpr, nob, ob0 + warp, nwarps, vec);
    }
}

/* ---- general backward: one thread per 8-element output group ---- */
template <int OP, bool DEQ>
__global__ void __launch_bounds__(FZ_THREADS) ew_bwd_gen_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                                 const uint16_t *__restrict__ x,
                                                                 const uint16_t *__restrict__ dy, int rows, int cols,
                                                                 uint16_t *__restrict__ dx, uint16_t *__restrict__ y,
                                                                 int vec) {
    __shared__ agoq_smem_table tab;
    if (DEQ && p.dec == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    constexpr int NIN = OP == FZ_OP_SWIGLU ? 2 : 1;
    const size_t gpr = (size_t)((cols + 7) / 8), ngroups = (size_t)rows * gpr;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < ngroups; t += stride) {
        const size_t r = t / gpr;
        const int c = (int)(t % gpr) * 8, nv = fz_nvalid(cols, c);
        float v[NIN][8];
#pragma unroll
        for (int s = 0; s < NIN; s++) {
            const size_t sr = r * NIN + (size_t)s;
            if (DEQ) fz_decode_rowq(p, &tab, q, cols, sr, c, v[s]);
            else agoq_dev_load8(x, sr * (size_t)cols + (size_t)c, nv, vec, v[s]);
        }
        const size_t o = r * (size_t)cols + (size_t)c;
        if (OP == FZ_OP_NONE) {
            agoq_dev_store8(y, o, nv, vec, v[0]);
            continue;
        }
        float g[8], d0[8], d1[8], out[8];
        agoq_dev_load8(dy, o, nv, vec, g);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            if (OP == FZ_OP_GELU) {
                const float s = agoq_fast_gelu_sig(v[0][e]);
                d0[e] = g[e] * agoq_fast_gelu_grad_of(v[0][e], s);
                out[e] = agoq_fast_gelu_of(v[0][e], s);
            } else {
                agoq_fast_swiglu_bwd(v[0][e], v[NIN - 1][e], g[e], &d0[e], &d1[e], &out[e]);
            }
        }
        const size_t hi = r * NIN * (size_t)cols + (size_t)c;
        agoq_dev_store8(dx, hi, nv, vec, d0);
        if (OP == FZ_OP_SWIGLU) agoq_dev_store8(dx, hi + (size_t)cols, nv, vec, d1);
        agoq_dev_store8(y, o, nv, vec, out);
    }
}

template <int OP, bool QUANT>
static void fwd_gen(const agoq_cuda_qparams &p, const uint16_t *x, int rows, int cols, uint16_t *y,
                    agoq_cuda_qtensor q, size_t ob0, size_t warps, int vec, cudaStream_t s) {
    constexpr auto kernel = ew_fwd_gen_kernel<OP, QUANT>;
    kernel<<<fz_grid<kernel>(warps, false), FZ_THREADS, 0, s>>>(p, x, rows, cols, y, q, ob0, vec);
    cudaCheckLaunch();
}
void fz_ew_fwd_general(int op, const agoq_fq *q, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_dqt xq,
                       size_t ob0, cudaStream_t s) {
    const int B = q ? q->p.block : 8, G = B / 8;
    const size_t nob = (size_t)rows * (size_t)((cols + B - 1) / B);
    if (ob0 >= nob) return;
    const size_t bpw = G <= 32 ? (size_t)(32 / G) : 1, warps = (nob - ob0 + bpw - 1) / bpw;
    const int vec = (cols & 7) == 0 && fz_al16(x) && fz_al16(y);
    const agoq_cuda_qparams none = {};
    const agoq_cuda_qtensor qt = fz_qt(xq, 0);
    if (!q) {
        if (op == FZ_OP_GELU) fwd_gen<FZ_OP_GELU, false>(none, x, rows, cols, y, qt, ob0, warps, vec, s);
        else fwd_gen<FZ_OP_SWIGLU, false>(none, x, rows, cols, y, qt, ob0, warps, vec, s);
    } else if (op == FZ_OP_GELU) {
        fwd_gen<FZ_OP_GELU, true>(q->p, x, rows, cols, y, qt, ob0, warps, vec, s);
    } else if (op == FZ_OP_SWIGLU) {
        fwd_gen<FZ_OP_SWIGLU, true>(q->p, x, rows, cols, y, qt, ob0, warps, vec, s);
    } else {
        fwd_gen<FZ_OP_NONE, true>(q->p, x, rows, cols, y, qt, ob0, warps, vec, s);
    }
}

template <int OP, bool DEQ>
static void bwd_gen(const agoq_cuda_qparams &p, agoq_cuda_qtensor q, const uint16_t *x, const uint16_t *dy, int rows,
                    int cols, uint16_t *dx, uint16_t *y, int vec, cudaStream_t s) {
    constexpr auto kernel = ew_bwd_gen_kernel<OP, DEQ>;
    const size_t warps = ((size_t)rows * (size_t)((cols + 7) / 8) + 31) / 32;
    kernel<<<fz_grid<kernel>(warps, false), FZ_THREADS, 0, s>>>(p, q, x, dy, rows, cols, dx, y, vec);
    cudaCheckLaunch();
}
void fz_ew_bwd_general(int op, const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, int rows,
                       int cols, uint16_t *dx, uint16_t *y, cudaStream_t s) {
    const int vec = (cols & 7) == 0 && fz_al16(x) && fz_al16(dy) && fz_al16(dx) && fz_al16(y);
    const agoq_cuda_qparams none = {};
    const agoq_cuda_qtensor qt = fz_qt(xq, 0);
    if (!q) {
        if (op == FZ_OP_GELU) bwd_gen<FZ_OP_GELU, false>(none, qt, x, dy, rows, cols, dx, y, vec, s);
        else bwd_gen<FZ_OP_SWIGLU, false>(none, qt, x, dy, rows, cols, dx, y, vec, s);
    } else if (op == FZ_OP_GELU) {
        bwd_gen<FZ_OP_GELU, true>(q->p, qt, x, dy, rows, cols, dx, y, vec, s);
    } else if (op == FZ_OP_SWIGLU) {
        bwd_gen<FZ_OP_SWIGLU, true>(q->p, qt, x, dy, rows, cols, dx, y, vec, s);
    } else {
        bwd_gen<FZ_OP_NONE, true>(q->p, qt, x, dy, rows, cols, dx, y, vec, s);
    }
}

/* ---- standalone rowq quantize / dequantize (the unfused baseline) ---- */
extern "C" int agoq_rowq_quantize_cuda(const agoq_fq *q, const uint16_t *x, int rows, int cols, agoq_dqt xq, void *stream) {
    AGOQ_REQUIRE(q, "rowq quantize: no quantization config");
    if (fz_check_shape("rowq quantize", rows, cols)) return -1;
    if (cols % q->p.block == 0 && !fz_no_fast()) { /* rowq == flat */
        agoq_cuda_qtensor qt = fz_qt(xq, (size_t)rows * (size_t)cols);
        return agoq_cuda_quantize_bf16(&q->c, x, qt.n, &qt, stream);
    }
    fz_ew_fwd_general(FZ_OP_NONE, q, x, rows, cols, NULL, xq, 0, (cudaStream_t)stream);
    return 0;
}
extern "C" int agoq_rowq_dequantize_cuda(const agoq_fq *q, agoq_dqt xq, int rows, int cols, uint16_t *y, void *stream) {
    AGOQ_REQUIRE(q, "rowq dequantize: no quantization config");
    if (fz_check_shape("rowq dequantize", rows, cols)) return -1;
    if (cols % q->p.block == 0 && !fz_no_fast()) {
        const agoq_cuda_qtensor qt = fz_qt(xq, (size_t)rows * (size_t)cols);
        return agoq_cuda_dequantize_bf16(&q->c, &qt, y, stream);
    }
    fz_ew_bwd_general(FZ_OP_NONE, q, xq, NULL, NULL, rows, cols, NULL, y, (cudaStream_t)stream);
    return 0;
}

/* ---- host helpers ---- */
unsigned fz_grid_cap(unsigned grid) {
    const int cap = agoq_knob_int("AGOQ_FUSED_GRID_CAP", 0, 0, INT_MAX);
    return cap > 0 && (unsigned)cap < grid ? (unsigned)cap : grid;
}
bool fz_no_fast(void) { return agoq_knob_int("AGOQ_FUSED_NO_FAST", 0, 0, 1); }
bool fz_f6(void) { return agoq_knob_int("AGOQ_F6", 0, 0, 1); }
int fz_f8(void) { return agoq_knob_int("AGOQ_F8", 0, 0, 1); }
int fz_dw_reduce(void) { return agoq_knob_int("AGOQ_DW_REDUCE", 2, 0, 2); }
int fz_swi_fwd_tile(void) {
    static const char *const names[] = {"auto", "2", "4", NULL};
    static const int value[] = {0, 2, 4};
    return value[agoq_knob_choice("AGOQ_SWI_FWD_TILE", 0, names)];
}
bool fz_fwd_pf(void) { return agoq_knob_int("AGOQ_FWD_PF", 0, 0, 1) != 0; }
int fz_fwd_l2pf(int dflt) {
    static const char *const names[] = {"auto", "0", "1", "2", "3", "4", "5", "6", "7", "8",
                                        "9", "10", "11", "12", "13", "14", "15", "16", NULL};
    const int i = agoq_knob_choice("AGOQ_FWD_L2PF", 0, names);
    return i == 0 ? dflt : i - 1;
}
int fz_dw_fuse_wait(void) {
    static const char *const names[] = {"all", "owners", NULL};
    return agoq_knob_choice("AGOQ_DW_FUSE_WAIT", 1, names);
}
bool fz_dw_fuse(void) {
    if (!agoq_knob_int("AGOQ_DW_FUSE", 1, 0, 1)) return false;
    static int coop[32]; /* per device: 0 not asked, 1 cooperative launches, 2 none */
    int dev = 0;
    cudaCheck(cudaGetDevice(&dev));
    if (dev >= 32) return false;
    if (!__atomic_load_n(&coop[dev], __ATOMIC_RELAXED)) {
        int v = 0;
        cudaCheck(cudaDeviceGetAttribute(&v, cudaDevAttrCooperativeLaunch, dev));
        __atomic_store_n(&coop[dev], v ? 1 : 2, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&coop[dev], __ATOMIC_RELAXED) == 1;
}
int fz_rms_fwd_pair_mode(void) { return agoq_knob_int("AGOQ_RMS_FWD_PAIR", 2, 0, 2); }
bool fz_fwd_q7(const char *knob, int enc) {
    const int m = agoq_knob_int(knob, 2, 0, 2);
    return m == 1 || (m == 2 && enc == AGOQ_ENC_FP4);
}
int fz_smem_optin(const void *kernel, size_t smem, unsigned *done, int *per_sm) {
    int dev = 0;
    cudaCheck(cudaGetDevice(&dev));
    if (dev >= 32 || !((__atomic_load_n(done, __ATOMIC_RELAXED) >> dev) & 1u)) {
        cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        if (dev < 32) __atomic_fetch_or(done, 1u << dev, __ATOMIC_RELAXED);
    }
    if (!per_sm) return 0;
    int any = 0, *mine = dev < 32 ? &per_sm[dev] : &any;
    if (*mine <= 0) {
        int n = 0;
        cudaCheck(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, FZ_THREADS, smem));
        *mine = n > 0 ? n : 1;
    }
    return *mine;
}
int fz_check_shape(const char *what, int rows, int cols) {
    AGOQ_REQUIRE(rows >= 1 && cols >= 1, "%s: rows %d and cols %d must be >= 1", what, rows, cols);
    return 0;
}

extern "C" int agoq_fq_make(const agoq_qconfig *c, agoq_fq *out) {
    agoq_fq q = {};
    if (agoq_cuda_qparams_make(c, &q.p)) return -1;
    q.c = *c;
    *out = q;
    return 0;
}
extern "C" void agoq_fq_free(agoq_fq *q) { (void)q; /* the device tables are per device, freed at exit */ }

extern "C" int agoq_dqt_alloc(const agoq_qconfig *c, size_t rows, size_t cols, agoq_dqt *out) {
    const size_t n = agoq_rowq_alloc_n(c, rows, cols);
    *out = {};
    /* + 8 bytes, as agoq_cuda_qtensor_alloc: the flat-layout quantizers may use word access */
    out->codes = (uint8_t *)agoq_fused_dmalloc(agoq_codes_bytes(c, n) + 8);
    out->scales = (uint8_t *)agoq_fused_dmalloc(agoq_scales_bytes(c, n) + 8);
    cudaCheck(cudaMemset(out->codes, 0, agoq_codes_bytes(c, n) + 8));
    cudaCheck(cudaMemset(out->scales, 0, agoq_scales_bytes(c, n) + 8));
    if (agoq_has_zeros(c)) {
        out->zeros = (uint8_t *)agoq_fused_dmalloc(agoq_zeros_bytes(c, n) + 8);
        cudaCheck(cudaMemset(out->zeros, 0, agoq_zeros_bytes(c, n) + 8));
    }
    return 0;
}
extern "C" void agoq_dqt_free(agoq_dqt *q) {
    cudaCheck(cudaFree(q->codes));
    cudaCheck(cudaFree(q->scales));
    if (q->zeros) cudaCheck(cudaFree(q->zeros));
    *q = {};
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
