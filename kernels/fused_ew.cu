/* CUDA fused GELU and SwiGLU (fused.h), fast paths: 16-byte vectors, a warp owning whole
 * 512-byte runs, several vectors of loads in flight per lane, grids of what stays resident
 * with grid-stride loops (fused_dev.cuh). Other shapes and configs go to the general kernels
 * of fused.cu. Bit-exact with gelu_ref.c / swiglu_ref.c (tests/cuda/test_fused.c).
 *
 *   GELU forward     tiles of 8 warp vectors (2048 elements) of the flat tensor; quantized as
 *                    one tile by agoq_tile_quantize<U = 8> when rows are whole blocks of
 *                    32..256 (4/8-bit codes, round to nearest); the rest of the tensor (< one
 *                    tile) and every other config: the general kernel.
 *   SwiGLU forward   units of 4 output warp vectors (row r, columns 256cv..): gate h[r, c] and
 *                    up h[r, F + c] loaded together; quantized per vector (U = 1: the gate and
 *                    up vectors of one output vector are F apart) when F % 256 == 0.
 *   backward         units of 4 output warp vectors; the stored copy decoded per lane (its
 *                    codes, its block's scale: agoq_tile_decode) when rows are whole blocks
 *                    of a power of two with 4/8-bit codes; else the general kernel.
 * Without quantization the same kernels are the plain bf16 ops (any row length % 8 == 0).
 *
 * Per-element cost (op math of fused_math.h, no FMA contraction): see the bounds in
 * kernels/bench_fused.cu's header. */
#include <cuda_runtime.h>

#include "harness/check.h"
#include "harness/common.h"
#include "kernels/fused_dev.cuh"

#define SWI_V 4  /* output warp vectors per SwiGLU unit: 8 (fwd) / 12 (bwd) loads per lane in flight */
#define BWD_V 4  /* output warp vectors per GELU backward unit: 8 loads per lane in flight */

/* ---- GELU forward: tile t = elements [2048 t, 2048 (t + 1)), vector j of lane l at
 * 256 j + 8 l. QUANT: whole tiles only (the launcher leaves the rest to the general kernel). ---- */
template <int ENC, int BITS, int LOG2B, bool QUANT>
__global__ void __launch_bounds__(FZ_THREADS) gelu_fwd_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ x,
                                                               uint16_t *__restrict__ y, agoq_cuda_qtensor q, size_t n,
                                                               size_t ntiles) {
    constexpr int U = AGOQ_TILE_U;
    __shared__ agoq_smem_table tab;
    if constexpr (QUANT && ENC == AGOQ_ENC_TABLE) {
        agoq_dev_load_table(&tab, p.table);
        __syncthreads();
    }
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t t = warp; t < ntiles; t += nwarps) {
        const size_t e_lane = t * (size_t)(U * FZ_WVEC) + (size_t)(8 * lane);
        uint4 raw[U];
#pragma unroll
        for (int j = 0; j < U; j++) {
            const size_t e = e_lane + (size_t)(j * FZ_WVEC);
            raw[j] = QUANT || e < n ? fz_load(x + e) : make_uint4(0, 0, 0, 0);
        }
        if constexpr (QUANT) {
            float v[U][8];
#pragma unroll
            for (int j = 0; j < U; j++) fz_unpack(raw[j], v[j]);
            fz_quantize<ENC, BITS, LOG2B, U>(p, &tab, v, t, q, lane);
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            const size_t e = e_lane + (size_t)(j * FZ_WVEC);
            if (!QUANT && e >= n) continue;
            float v[8];
            fz_unpack(raw[j], v);
#pragma unroll
            for (int k = 0; k < 8; k++) v[k] = agoq_gelu(v[k]);
            fz_store(y + e, fz_pack(v));
        }
    }
}

/* Output warp vector o of a [rows, F] output: row r, columns 256 cv + 8 lane (ok: inside). */
struct swi_vec {
    size_t r;
    uint32_t cv;
    int c;
    bool any, ok;
};
__device__ __forceinline__ swi_vec swi_at(size_t o, uint32_t vpr, uint32_t nvec, int f, int lane) {
    swi_vec v;
    v.any = o < nvec; /* the same for the whole warp */
    const uint32_t o32 = v.any ? (uint32_t)o : 0u, r = o32 / vpr;
    v.r = r;
    v.cv = o32 - r * vpr;
    v.c = (int)v.cv * FZ_WVEC + 8 * lane;
    v.ok = v.any && v.c < f;
    return v;
}

/* ---- SwiGLU forward: out[r, c] = silu(h[r, c]) * h[r, F + c]; QUANT needs F % 256 == 0, so a
 * gate (up) vector is whole and is tile 2 r vpr + cv (+ vpr) of the flat h. ---- */
template <int ENC, int BITS, int LOG2B, bool QUANT>
__global__ void __launch_bounds__(FZ_THREADS) swiglu_fwd_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ h,
                                                                 uint16_t *__restrict__ out, agoq_cuda_qtensor q, int f,
                                                                 uint32_t vpr, uint32_t nvec, size_t nunits) {
    __shared__ agoq_smem_table tab;
    if constexpr (QUANT && ENC == AGOQ_ENC_TABLE) {
        agoq_dev_load_table(&tab, p.table);
        __syncthreads();
    }
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t u = warp; u < nunits; u += nwarps) {
        swi_vec at[SWI_V];
        uint4 g[SWI_V], up[SWI_V];
#pragma unroll
        for (int k = 0; k < SWI_V; k++) {
            at[k] = swi_at(u * SWI_V + (size_t)k, vpr, nvec, f, lane);
            const uint16_t *src = h + 2 * at[k].r * (size_t)f + (size_t)at[k].c;
            g[k] = at[k].ok ? fz_load(src) : make_uint4(0, 0, 0, 0);
            up[k] = at[k].ok ? fz_load(src + f) : make_uint4(0, 0, 0, 0);
        }
        if constexpr (QUANT) {
#pragma unroll
            for (int k = 0; k < SWI_V; k++) {
                if (!at[k].any) continue; /* warp-uniform */
                const size_t tile = 2 * at[k].r * vpr + at[k].cv;
                float vg[1][8], vu[1][8];
                fz_unpack(g[k], vg[0]);
                fz_unpack(up[k], vu[0]);
                fz_quantize<ENC, BITS, LOG2B, 1>(p, &tab, vg, tile, q, lane);
                fz_quantize<ENC, BITS, LOG2B, 1>(p, &tab, vu, tile + vpr, q, lane);
            }
        }
#pragma unroll
        for (int k = 0; k < SWI_V; k++) {
            if (!at[k].ok) continue;
            float a[8], b[8];
            fz_unpack(g[k], a);
            fz_unpack(up[k], b);
#pragma unroll
            for (int e = 0; e < 8; e++) a[e] = agoq_silu(a[e]) * b[e];
            fz_store(out + at[k].r * (size_t)f + (size_t)at[k].c, fz_pack(a));
        }
    }
}

/* ---- GELU backward: dx = dy * gelu'(x), y = gelu(x) (recomputed); units of BWD_V vectors ---- */
template <int DEC, int BITS, bool DEQ>
__global__ void __launch_bounds__(FZ_THREADS) gelu_bwd_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                               const uint16_t *__restrict__ x,
                                                               const uint16_t *__restrict__ dy,
                                                               uint16_t *__restrict__ dx, uint16_t *__restrict__ y,
                                                               size_t n, size_t nunits, int log2b) {
    __shared__ agoq_smem_table tab;
    if constexpr (DEQ && DEC == AGOQ_ENC_TABLE) {
        agoq_dev_load_table(&tab, p.table);
        __syncthreads();
    }
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t u = warp; u < nunits; u += nwarps) {
        const size_t e_lane = u * (size_t)(BWD_V * FZ_WVEC) + (size_t)(8 * lane);
        fz_bwd_in<DEC, BITS, DEQ> in[BWD_V];
        uint4 d[BWD_V];
#pragma unroll
        for (int j = 0; j < BWD_V; j++) {
            const size_t e = e_lane + (size_t)(j * FZ_WVEC);
            if (e >= n) continue;
            in[j].load(p, q, x, e, log2b);
            d[j] = fz_load(dy + e);
        }
#pragma unroll
        for (int j = 0; j < BWD_V; j++) {
            const size_t e = e_lane + (size_t)(j * FZ_WVEC);
            if (e >= n) continue;
            float v[8], g[8];
            in[j].get(p, &tab, v);
            fz_unpack(d[j], g);
#pragma unroll
            for (int k = 0; k < 8; k++) { /* one tanh for both: agoq_gelu_grad and agoq_gelu */
                const float t = agoq_gelu_tanh(v[k]);
                g[k] = g[k] * agoq_gelu_grad_of(v[k], t);
                v[k] = agoq_gelu_of(v[k], t);
            }
            fz_store(dx + e, fz_pack(g));
            fz_store(y + e, fz_pack(v));
        }
    }
}

/* ---- SwiGLU backward: dh = (d_gate | d_up), out recomputed; units of SWI_V output vectors ---- */
template <int DEC, int BITS, bool DEQ>
__global__ void __launch_bounds__(FZ_THREADS) swiglu_bwd_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                                 const uint16_t *__restrict__ h,
                                                                 const uint16_t *__restrict__ dout,
                                                                 uint16_t *__restrict__ dh, uint16_t *__restrict__ out,
                                                                 int f, uint32_t vpr, uint32_t nvec, size_t nunits,
                                                                 int log2b) {
    __shared__ agoq_smem_table tab;
    if constexpr (DEQ && DEC == AGOQ_ENC_TABLE) {
        agoq_dev_load_table(&tab, p.table);
        __syncthreads();
    }
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t u = warp; u < nunits; u += nwarps) {
        swi_vec at[SWI_V];
        fz_bwd_in<DEC, BITS, DEQ> gin[SWI_V], uin[SWI_V];
        uint4 d[SWI_V];
#pragma unroll
        for (int k = 0; k < SWI_V; k++) {
            at[k] = swi_at(u * SWI_V + (size_t)k, vpr, nvec, f, lane);
            if (!at[k].ok) continue;
            const size_t e = 2 * at[k].r * (size_t)f + (size_t)at[k].c;
            gin[k].load(p, q, h, e, log2b);
            uin[k].load(p, q, h, e + (size_t)f, log2b);
            d[k] = fz_load(dout + at[k].r * (size_t)f + (size_t)at[k].c);
        }
#pragma unroll
        for (int k = 0; k < SWI_V; k++) {
            if (!at[k].ok) continue;
            float a[8], b[8], g[8], o[8];
            gin[k].get(p, &tab, a);
            uin[k].get(p, &tab, b);
            fz_unpack(d[k], g);
#pragma unroll
            for (int e = 0; e < 8; e++) agoq_swiglu_bwd(a[e], b[e], g[e], &a[e], &b[e], &o[e]);
            const size_t e = 2 * at[k].r * (size_t)f + (size_t)at[k].c;
            fz_store(dh + e, fz_pack(a));
            fz_store(dh + e + f, fz_pack(b));
            fz_store(out + at[k].r * (size_t)f + (size_t)at[k].c, fz_pack(o));
        }
    }
}

/* ---- host side ---- */
#define LAUNCH(kernel, units, ...)                                                                 \
    do {                                                                                           \
        kernel<<<fz_grid<kernel>(units), FZ_THREADS, 0, s>>>(__VA_ARGS__);                         \
        cudaCheckLaunch();                                                                         \
    } while (0)

extern "C" int agoq_gelu_fwd_cuda(const agoq_fq *q, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_dqt xq,
                                  void *stream) {
    if (fz_check_shape("gelu fwd", rows, cols)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t n = (size_t)rows * (size_t)cols, tile = (size_t)AGOQ_TILE_U * FZ_WVEC;
    const bool vec = n % 8 == 0 && fz_al16(x) && fz_al16(y) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(xq, n);
    if (!q) {
        if (!vec) fz_ew_fwd_general(FZ_OP_GELU, NULL, x, rows, cols, y, xq, 0, s);
        else {
            constexpr auto k = gelu_fwd_kernel<0, 0, 0, false>;
            LAUNCH(k, (n + tile - 1) / tile, agoq_cuda_qparams{}, x, y, qt, n, (n + tile - 1) / tile);
        }
        return 0;
    }
    size_t done = 0; /* output blocks of the fast kernel */
    if (vec && cols % q->p.block == 0 && fz_fast_quant(q->p, xq) && n >= tile) {
        const size_t ntiles = n / tile;
        fz_dispatch_quant(q->p, [&](auto enc, auto bits, auto lb) {
            constexpr auto k = gelu_fwd_kernel<decltype(enc)::value, decltype(bits)::value, decltype(lb)::value, true>;
            LAUNCH(k, ntiles, q->p, x, y, qt, n, ntiles);
        });
        done = ntiles * tile / (size_t)q->p.block;
    }
    fz_ew_fwd_general(FZ_OP_GELU, q, x, rows, cols, y, xq, done, s); /* the tail (nothing when done) */
    return 0;
}

extern "C" int agoq_swiglu_fwd_cuda(const agoq_fq *q, const uint16_t *h, int rows, int f, uint16_t *out, agoq_dqt hq,
                                    void *stream) {
    if (fz_check_shape("swiglu fwd", rows, f)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t vpr = (size_t)((f + FZ_WVEC - 1) / FZ_WVEC), nvec = (size_t)rows * vpr;
    const size_t nunits = (nvec + SWI_V - 1) / SWI_V;
    const bool vec = f % 8 == 0 && nvec < ((size_t)1 << 32) && fz_al16(h) && fz_al16(out) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(hq, 2 * (size_t)rows * (size_t)f);
    if (!q && vec) {
        constexpr auto k = swiglu_fwd_kernel<0, 0, 0, false>;
        LAUNCH(k, nunits, agoq_cuda_qparams{}, h, out, qt, f, (uint32_t)vpr,
               (uint32_t)nvec, nunits);
    } else if (q && vec && f % FZ_WVEC == 0 && fz_fast_quant(q->p, hq)) {
        fz_dispatch_quant(q->p, [&](auto enc, auto bits, auto lb) {
            constexpr auto k = swiglu_fwd_kernel<decltype(enc)::value, decltype(bits)::value, decltype(lb)::value, true>;
            LAUNCH(k, nunits, q->p, h, out, qt, f, (uint32_t)vpr, (uint32_t)nvec, nunits);
        });
    } else {
        fz_ew_fwd_general(FZ_OP_SWIGLU, q, h, rows, f, out, hq, 0, s);
    }
    return 0;
}

extern "C" int agoq_gelu_bwd_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, int rows,
                                  int cols, uint16_t *dx, uint16_t *y, void *stream) {
    if (fz_check_shape("gelu bwd", rows, cols)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t n = (size_t)rows * (size_t)cols, nunits = (n + BWD_V * FZ_WVEC - 1) / (BWD_V * FZ_WVEC);
    const bool vec = n % 8 == 0 && (q || fz_al16(x)) && fz_al16(dy) && fz_al16(dx) && fz_al16(y) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(xq, n);
    if (!q && vec) {
        constexpr auto k = gelu_bwd_kernel<0, 0, false>;
        LAUNCH(k, nunits, agoq_cuda_qparams{}, qt, x, dy, dx, y, n, nunits, 0);
    } else if (q && vec && cols % q->p.block == 0 && fz_fast_dequant(q->p, xq)) {
        const int lb = __builtin_ctz((unsigned)q->p.block);
        fz_dispatch_dequant(q->p, [&](auto dec, auto bits) {
            constexpr auto k = gelu_bwd_kernel<decltype(dec)::value, decltype(bits)::value, true>;
            LAUNCH(k, nunits, q->p, qt, x, dy, dx, y, n, nunits, lb);
        });
    } else {
        fz_ew_bwd_general(FZ_OP_GELU, q, xq, x, dy, rows, cols, dx, y, s);
    }
    return 0;
}

extern "C" int agoq_swiglu_bwd_cuda(const agoq_fq *q, agoq_dqt hq, const uint16_t *h, const uint16_t *dout, int rows,
                                    int f, uint16_t *dh, uint16_t *out, void *stream) {
    if (fz_check_shape("swiglu bwd", rows, f)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t vpr = (size_t)((f + FZ_WVEC - 1) / FZ_WVEC), nvec = (size_t)rows * vpr;
    const size_t nunits = (nvec + SWI_V - 1) / SWI_V;
    const bool vec = f % 8 == 0 && nvec < ((size_t)1 << 32) && (q || fz_al16(h)) && fz_al16(dout) && fz_al16(dh) &&
                     fz_al16(out) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(hq, 2 * (size_t)rows * (size_t)f);
    if (!q && vec) {
        constexpr auto k = swiglu_bwd_kernel<0, 0, false>;
        LAUNCH(k, nunits, agoq_cuda_qparams{}, qt, h, dout, dh, out, f, (uint32_t)vpr,
               (uint32_t)nvec, nunits, 0);
    } else if (q && vec && f % q->p.block == 0 && fz_fast_dequant(q->p, hq)) {
        const int lb = __builtin_ctz((unsigned)q->p.block);
        fz_dispatch_dequant(q->p, [&](auto dec, auto bits) {
            constexpr auto k = swiglu_bwd_kernel<decltype(dec)::value, decltype(bits)::value, true>;
            LAUNCH(k, nunits, q->p, qt, h, dout, dh, out, f, (uint32_t)vpr, (uint32_t)nvec, nunits, lb);
        });
    } else {
        fz_ew_bwd_general(FZ_OP_SWIGLU, q, hq, h, dout, rows, f, dh, out, s);
    }
    return 0;
}
