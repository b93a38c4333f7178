/* CUDA fused GELU (fused.h), fast paths (fused_dev.cuh): 16-byte vectors, a warp owning whole
 * 512-byte runs, several vectors of loads in flight per lane, grids of what stays resident with
 * grid-stride loops; other shapes and configs go to the general kernels of fused.cu. The stored
 * copy is bit-exact with gelu_ref.c, the outputs (fast math, fused_fast.cuh) within the bounds of
 * fused_tol.c (tests/cuda/fused/test_fused_cuda.c).
 *
 *   forward   tiles of 4 warp vectors (1024 elements) of the flat tensor, quantized as one tile
 *             (agoq_tile_quantize<U = 4> from the fp32 values, or for FP4 by default the packed
 *             q7 tile from the bf16 words: AGOQ_GELU_FWD_Q7 below) when rows are whole blocks of
 *             32..256 (4/8-bit codes, round to nearest); the rest of the tensor (< one tile) and
 *             every other config: the general kernel.
 *   backward  units of 4 warp vectors; the stored copy decoded per lane (its codes, its block's
 *             scale: agoq_tile_decode) when rows are whole blocks of a power of two with 4/8-bit
 *             codes, else the general kernel; one tanh for GELU and its derivative.
 * Without quantization the same kernels are the plain bf16 GELU (any n % 8 == 0). The per-element
 * cost and the compute bound are in kernels/fused/bench_fused.cu's header. */
#include <cuda_runtime.h>

#include <type_traits>

#include "core/check.h"
#include "core/common.h"
#include "core/knob.h"
#include "kernels/fused/fused_dev.cuh"

#define FWD_U 4 /* warp vectors per forward tile (and quantizer tile): 4 loads per lane in flight, at
                   FZ_FWD_CTAS CTAs per SM (8 vectors at 2 CTAs measured 0.70 of copy, 25% occupancy) */
#define BWD_V 4 /* warp vectors per backward unit: 8 loads per lane in flight */

/* ---- GELU forward: tile t = elements [256 U t, 256 U (t + 1)), vector j of lane l at
 * 256 j + 8 l. U = FWD_U = 4 for the quantizing forward, 1 for the plain bf16 one;
 * AGOQ_GELU_FWD_U = 4|2|1 forces one (tiles of 2 or 1 vectors at 6 / 8 CTAs per SM, 4 for table
 * encoders). QUANT: whole tiles only (the launcher leaves the rest to the general kernel). ---- */
/* One tile's outputs and (QUANT) stored copy from its loaded words. Q7 (AGOQ_GELU_FWD_Q7, the
 * thirty-seventh session; 0 never, 1 always, 2 the default: the FP4 encoder only): the copy from
 * the bf16 words as loaded by the quantizers' packed tile with the q7 options (fz_quantize_bf16p,
 * as the SwiGLU forward and the RMSNorm pair kernel: the absmax by max.NaN.xorsign.abs.bf16x2,
 * FP4 codes by agoq_q7_fp4_pack_bf16), instead of from the fp32 values the GELU converts: the
 * same codes and scales (the copy is of the input x either way), fewer instructions (ncu on an
 * H100 at 9eb51b5: the FP4 forward ran 938 instructions a warp, its copy by the fp32 tile's FP4
 * encoder about 10 an element against q7's 6). */
template <int ENC, int BITS, int LOG2B, bool QUANT, int U, bool Q7 = false>
__device__ __forceinline__ void gelu_fwd_tile(const agoq_cuda_qparams &p, const agoq_smem_table *tab,
                                              uint16_t *__restrict__ y, const agoq_cuda_qtensor &q, size_t n,
                                              size_t t, int lane, const uint4 (&raw)[U]) {
    const size_t e_lane = t * (size_t)(U * FZ_WVEC) + (size_t)(8 * lane);
    if constexpr (QUANT && Q7) {
        uint32_t wq[U][4];
#pragma unroll
        for (int j = 0; j < U; j++) {
            wq[j][0] = raw[j].x; wq[j][1] = raw[j].y; wq[j][2] = raw[j].z; wq[j][3] = raw[j].w;
        }
        fz_quantize_bf16p<ENC, BITS, LOG2B, U>(p, tab, wq, fz_qt_at<BITS, LOG2B>(p, q, t * (size_t)(U * FZ_WVEC)),
                                               lane, 0);
    }
    float v[U][8];
#pragma unroll
    for (int j = 0; j < U; j++) agoq_bf16x8_to_f32(raw[j], v[j]);
    if constexpr (QUANT && !Q7) fz_quantize<ENC, BITS, LOG2B, U>(p, tab, v, t, q, lane);
#pragma unroll
    for (int j = 0; j < U; j++) {
        const size_t e = e_lane + (size_t)(j * FZ_WVEC);
        if (!QUANT && e >= n) continue;
#pragma unroll
        for (int k = 0; k < 8; k++) v[j][k] = agoq_fast_gelu(v[j][k]);
        fz_store(y + e, agoq_f32x8_to_bf16(v[j]));
    }
}
template <bool QUANT, int U>
__device__ __forceinline__ void gelu_fwd_load(const uint16_t *__restrict__ x, size_t n, size_t t, int lane,
                                              uint4 (&raw)[U]) {
    const size_t e_lane = t * (size_t)(U * FZ_WVEC) + (size_t)(8 * lane);
#pragma unroll
    for (int j = 0; j < U; j++) {
        const size_t e = e_lane + (size_t)(j * FZ_WVEC);
        raw[j] = QUANT || e < n ? fz_load(x + e) : make_uint4(0, 0, 0, 0);
    }
}
/* PF (AGOQ_FWD_PF=1; the launcher's resident grid at MINB = FZ_FWD_PF_CTAS): each warp loads its
 * next tile before this one's math; else pfd: AGOQ_FWD_L2PF's distance in tiles (0: off) */
template <int ENC, int BITS, int LOG2B, bool QUANT, int U = FWD_U, int MINB = FZ_FWD_CTAS(ENC), bool PF = false,
          bool Q7 = false>
__global__ void __launch_bounds__(FZ_THREADS, MINB)
    gelu_fwd_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ x, uint16_t *__restrict__ y, agoq_cuda_qtensor q,
                    size_t n, size_t ntiles, uint32_t pfd) {
    __shared__ agoq_smem_table tab;
    if constexpr (QUANT && ENC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE_LUT(tab, p.table);
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    if constexpr (PF) {
        uint4 nx[U];
        if (warp < ntiles) gelu_fwd_load<QUANT, U>(x, n, warp, lane, nx);
        for (size_t t = warp; t < ntiles; t += nwarps) {
            uint4 raw[U];
#pragma unroll
            for (int j = 0; j < U; j++) raw[j] = nx[j];
            if (t + nwarps < ntiles) gelu_fwd_load<QUANT, U>(x, n, t + nwarps, lane, nx);
            gelu_fwd_tile<ENC, BITS, LOG2B, QUANT, U>(p, &tab, y, q, n, t, lane, raw);
        }
    } else {
        for (size_t t = warp; t < ntiles; t += nwarps) {
            if (pfd && lane == 0 && t + pfd < ntiles) { /* AGOQ_FWD_L2PF: tile t + pfd's input into L2 */
                const size_t e = (t + pfd) * (size_t)(U * FZ_WVEC);
                const size_t m = n - e < (size_t)(U * FZ_WVEC) ? n - e : (size_t)(U * FZ_WVEC);
                fz_l2_prefetch(x + e, (uint32_t)m * 2u); /* n % 8 == 0: whole 16-byte vectors */
            }
            uint4 raw[U];
            gelu_fwd_load<QUANT, U>(x, n, t, lane, raw);
            gelu_fwd_tile<ENC, BITS, LOG2B, QUANT, U, Q7>(p, &tab, y, q, n, t, lane, raw);
        }
    }
}

/* ---- GELU backward: dx = dy * gelu'(x), y = gelu(x) (recomputed); units of V vectors: BWD_V,
 * and for the plain bf16 backward by default (AGOQ_F9=1) 1 vector at MINB 6 CTAs of 256 threads
 * per SM (40 registers; at 8 CTAs it spills), the one-shot shape whose plain copy reads 1.00 of
 * cudaMemcpy (tools/alloc_order.cu); AGOQ_F9=2: 2 vectors at 4 CTAs ---- */
template <int DEC, int BITS, bool DEQ, int V = BWD_V, int MINB = FZ_EW_CTAS>
__global__ void __launch_bounds__(FZ_THREADS, MINB)
    gelu_bwd_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q, const uint16_t *__restrict__ x,
                    const uint16_t *__restrict__ dy, uint16_t *__restrict__ dx, uint16_t *__restrict__ y, size_t n,
                    size_t nunits, int log2b) {
    __shared__ agoq_smem_table tab;
    if constexpr (DEQ && DEC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t u = warp; u < nunits; u += nwarps) {
        const size_t e_lane = u * (size_t)(V * FZ_WVEC) + (size_t)(8 * lane);
        fz_bwd_in<DEC, BITS, DEQ> in[V];
        uint4 d[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            const size_t e = e_lane + (size_t)(j * FZ_WVEC);
            if (e >= n) continue;
            in[j].load(p, q, x, e, log2b);
            d[j] = fz_load(dy + e);
        }
#pragma unroll
        for (int j = 0; j < V; j++) {
            const size_t e = e_lane + (size_t)(j * FZ_WVEC);
            if (e >= n) continue;
            float v[8], g[8];
            in[j].get(p, &tab, v);
            agoq_bf16x8_to_f32(d[j], g);
#pragma unroll
            for (int k = 0; k < 8; k++) { /* one sigmoid for both: GELU and its derivative */
                const float s = agoq_fast_gelu_sig(v[k]);
                g[k] = g[k] * agoq_fast_gelu_grad_of(v[k], s);
                v[k] = agoq_fast_gelu_of(v[k], s);
            }
            fz_store(dx + e, agoq_f32x8_to_bf16(g));
            fz_store(y + e, agoq_f32x8_to_bf16(v));
        }
    }
}

/* ---- host side ---- */
/* The forward over whole tiles of U vectors (the plain one: every element; QUANT: the whole
 * tiles, the rest to the general kernel). Returns the output blocks done. */
template <int U>
static size_t gelu_fwd_tiles(const agoq_fq *q, const uint16_t *x, uint16_t *y, size_t n, bool vec, int cols,
                             agoq_dqt xq, const agoq_cuda_qtensor &qt, cudaStream_t s) {
    constexpr int kMinb = U == 4 ? 0 : U == 2 ? 6 : 8; /* 0: FZ_FWD_CTAS */
    const size_t tile = (size_t)U * FZ_WVEC;
    if (!q) {
        constexpr auto k = gelu_fwd_kernel<0, 0, 0, false, U, kMinb ? kMinb : FZ_FWD_CTAS(0)>;
        FZ_LAUNCH(k, (n + tile - 1) / tile, false, agoq_cuda_qparams{}, x, y, qt, n, (n + tile - 1) / tile,
                  fz_l2pf_units<k>());
        return 0;
    }
    if (!(vec && cols % q->p.block == 0 && fz_fast_quant(q->p, xq) && n >= tile)) return 0;
    const size_t ntiles = n / tile;
    fz_dispatch_quant(q->p, [&](auto enc, auto bits, auto lb) {
        constexpr int E = decltype(enc)::value;
        constexpr int M = kMinb == 0 || E == AGOQ_ENC_TABLE ? FZ_FWD_CTAS(E) : kMinb;
        static_assert((1 << decltype(lb)::value) <= U * FZ_WVEC, "a tile holds whole blocks (<= 256)");
        if constexpr (U == FWD_U && E != AGOQ_ENC_TABLE) {
            if (fz_fwd_pf()) { /* pipelined, on the resident grid */
                constexpr auto k =
                    gelu_fwd_kernel<E, decltype(bits)::value, decltype(lb)::value, true, U, FZ_FWD_PF_CTAS, true>;
                FZ_LAUNCH(k, ntiles, true, q->p, x, y, qt, n, ntiles, 0u);
                return;
            }
        }
        auto go = [&](auto q7) {
            constexpr auto k =
                gelu_fwd_kernel<E, decltype(bits)::value, decltype(lb)::value, true, U, M, false, decltype(q7)::value>;
            FZ_LAUNCH(k, ntiles, E == AGOQ_ENC_TABLE, q->p, x, y, qt, n, ntiles,
                      fz_l2pf_units<k>(E == AGOQ_ENC_TABLE ? 0 : FZ_L2PF_GELU_Q));
        };
        if (fz_fwd_q7("AGOQ_GELU_FWD_Q7", E)) go(std::true_type());
        else go(std::false_type());
    });
    return ntiles * tile / (size_t)q->p.block;
}

extern "C" int agoq_gelu_fwd_cuda(const agoq_fq *q, const uint16_t *x, int rows, int cols, uint16_t *y, agoq_dqt xq,
                                  void *stream) {
    if (fz_check_shape("gelu fwd", rows, cols)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t n = (size_t)rows * (size_t)cols;
    const bool vec = n % 8 == 0 && fz_al16(x) && fz_al16(y) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(xq, n);
    /* AGOQ_GELU_FWD_U (the ninth session's A/B with the arena at b1e98cd, two rounds, FP4 / NF4 /
     * int8, results/h200/logs/s9_callJ_gelu_fwd_u/): the plain bf16 forward read 0.92 / 0.94 /
     * 0.93 of copy at 256 MiB / 1 GiB / 4 GiB in tiles of 4, 0.91 / 0.93 / 0.92 in tiles of 2,
     * 0.95 / 0.97 / 0.97 in tiles of 1 (its default); the quantizing forward lost with smaller
     * tiles (FP4 0.84 / 0.86 / 0.86 -> 0.79 / 0.81 / 0.81 with 2, 0.67 / 0.69 / 0.70 with 1:
     * the per-tile block parameters), so it keeps 4 */
    const int u = agoq_knob_int("AGOQ_GELU_FWD_U", q ? FWD_U : 1, 1, 4);
    if (u == 3) agoq_die("AGOQ_GELU_FWD_U: 1, 2 or 4"); /* every U: tiles of >= 256 elements, blocks <= 256 */
    if (!q) {
        if (!vec) fz_ew_fwd_general(FZ_OP_GELU, NULL, x, rows, cols, y, xq, 0, s);
        else if (u == 1) gelu_fwd_tiles<1>(q, x, y, n, vec, cols, xq, qt, s);
        else if (u == 2) gelu_fwd_tiles<2>(q, x, y, n, vec, cols, xq, qt, s);
        else gelu_fwd_tiles<4>(q, x, y, n, vec, cols, xq, qt, s);
        return 0;
    }
    const size_t done = u == 1   ? gelu_fwd_tiles<1>(q, x, y, n, vec, cols, xq, qt, s)
                        : u == 2 ? gelu_fwd_tiles<2>(q, x, y, n, vec, cols, xq, qt, s)
                                 : gelu_fwd_tiles<4>(q, x, y, n, vec, cols, xq, qt, s);
    fz_ew_fwd_general(FZ_OP_GELU, q, x, rows, cols, y, xq, done, s); /* the tail (nothing when done) */
    return 0;
}

extern "C" int agoq_gelu_bwd_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, int rows,
                                  int cols, uint16_t *dx, uint16_t *y, void *stream) {
    if (fz_check_shape("gelu bwd", rows, cols)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t n = (size_t)rows * (size_t)cols, nunits = (n + BWD_V * FZ_WVEC - 1) / (BWD_V * FZ_WVEC);
    const bool vec = n % 8 == 0 && (q || fz_al16(x)) && fz_al16(dy) && fz_al16(dx) && fz_al16(y) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(xq, n);
    /* AGOQ_F9 (issue 15, ninth session; H200 A/B with the arena at c397df9, two rounds,
     * results/h200/logs/s9_callH_f9_deq23/): the plain bf16 backward read 0.94 / 0.94 / 0.93 of
     * copy at 256 MiB / 1 GiB / 4 GiB in units of 4 vectors (0), 0.97 / 0.97 / 0.97 in units of
     * 1 (1, the default), 0.94 / 0.93 / 0.93 in units of 2 (2) */
    const int f9 = q ? 0 : agoq_knob_int("AGOQ_F9", 1, 0, 2);
    if (!q && vec && f9 == 1) {
        constexpr auto k = gelu_bwd_kernel<0, 0, false, 1, 6>;
        const size_t nv = (n + FZ_WVEC - 1) / FZ_WVEC;
        FZ_LAUNCH(k, nv, false, agoq_cuda_qparams{}, qt, x, dy, dx, y, n, nv, 0);
    } else if (!q && vec && f9 == 2) {
        constexpr auto k = gelu_bwd_kernel<0, 0, false, 2, 4>;
        const size_t nv = (n + 2 * FZ_WVEC - 1) / (2 * FZ_WVEC);
        FZ_LAUNCH(k, nv, false, agoq_cuda_qparams{}, qt, x, dy, dx, y, n, nv, 0);
    } else if (!q && vec) {
        constexpr auto k = gelu_bwd_kernel<0, 0, false>;
        FZ_LAUNCH(k, nunits, false, agoq_cuda_qparams{}, qt, x, dy, dx, y, n, nunits, 0);
    } else if (q && vec && cols % q->p.block == 0 && fz_fast_dequant(q->p, xq)) {
        const int lb = __builtin_ctz((unsigned)q->p.block);
        fz_dispatch_dequant(q->p, [&](auto dec, auto bits) {
            constexpr auto k = gelu_bwd_kernel<decltype(dec)::value, decltype(bits)::value, true>;
            FZ_LAUNCH(k, nunits, false, q->p, qt, x, dy, dx, y, n, nunits, lb);
        });
    } else {
        fz_ew_bwd_general(FZ_OP_GELU, q, xq, x, dy, rows, cols, dx, y, s);
    }
    return 0;
}
