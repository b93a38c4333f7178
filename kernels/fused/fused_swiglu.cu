/* CUDA fused SwiGLU (fused.h), fast paths (fused_dev.cuh): 16-byte vectors, a warp owning whole
 * 512-byte runs, several vectors of loads in flight per lane, grids of what stays resident with
 * grid-stride loops; other shapes and configs go to the general kernels of fused.cu. The stored
 * copy is bit-exact with swiglu_ref.c, the outputs (fast math, fused_fast.cuh) within the bounds of
 * fused_tol.c (tests/cuda/fused/test_fused_cuda.c).
 *
 * Work unit: V warp vectors of one output row r (columns 256 V k ..; V = 2 forward, 4
 * backward), gate h[r, c] and up h[r, F + c] loaded together. Forward, F % 256 == 0 (4/8-bit
 * codes, blocks 32..256, round to nearest): the unit's gate and up runs are quantized together
 * (below). Backward, rows of whole power-of-two blocks with 4/8-bit codes: the
 * stored copy decoded per lane. Without quantization the same kernels are the plain bf16 ops
 * (any F % 8 == 0). The per-element cost and the compute bound are in bench_fused.cu's header.
 * Forward (issue 15's fourth round, F8; it needed AGOQ_F8=1 until the eighth session): a whole unit
 * stays as the loaded bf16 words; the SwiGLU outputs are computed from them, then the 4 vectors
 * are ONE split tile (gate run, then its up run F further) of the quantizers' packed path with
 * the q7 options (fz_quantize_bf16p: absmax by max.NaN.xorsign.abs.bf16x2, half an instruction
 * per element instead of an unpack and a max; FP4 by agoq_q7_fp4_pack_bf16: three magic adds
 * and two mins per element, the signs permuted from the words, no binade). The codes and scales
 * are the same bits (quant_q7.h, proved by tests/quant/test_quant_q7.c). At 4 CTAs per SM (64
 * registers) ptxas spills 32 bytes of that split tile for FP4 and the asymmetric integers (ncu,
 * H100, 64 MiB: 213K local-memory requests), so for those encoders the unit is two tiles of 2
 * vectors, the gate run and the up run (AGOQ_SWI_FWD_TILE=auto, the twenty-eighth session; no
 * spill): three rounds (results/h100/logs/s28_8d0677a/), copy ratio at 16 / 64 / 256 MiB / 1 /
 * 4 GiB, FP4 0.595 / 0.808 / 0.928 / 0.978 / 0.988 -> 0.561 / 0.854 / 0.952 / 0.991 / 0.997,
 * int4_asym 0.562 / 0.774 / 0.899 / 0.946 / 0.954 -> 0.538 / 0.814 / 0.917 / 0.964 / 0.970
 * (better in every round from 64 MiB); int8, which does not spill, loses with two tiles (-0.031
 * at 64 MiB) and keeps the split tile. A row's last partial unit goes vector by vector.
 * The alternatives it was measured against lost (H200, FP4 E2M1/128, copy ratio at 256 MiB /
 * 1 GiB / 4 GiB; docs/kernels.md "Fused kernels") and were removed in the eleventh session: the unit
 * unpacked once into fp32 and quantized as one split tile (F5, 0.70 / 0.74 / 0.75 against F8's
 * 0.77 / 0.81 / 0.81, logs/s8_callB_ca17d3f/), the same at 3 CTAs per SM (AGOQ_F8=2: 0.75 /
 * 0.79 / 0.79), the F5 loads through a per-warp cp.async ring on a resident grid (AGOQ_F6,
 * within 0.01-0.03 of F5, logs/f6_ab_s5.log), and the two tiles of 2 vectors before F5
 * (AGOQ_F5_OLD, logs/f5_ab_s5.log).
 * The plain bf16 forward under AGOQ_F8=1: units of SWI_BF16_V = 4 vectors (8 loads per lane in
 * flight instead of 4; the same math per element; within the noise of the default, so off). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/fused/fused_dev.cuh"
#include "kernels/fused/fused_udiv.h"

#define SWI_V 4     /* output warp vectors per backward unit: 12 loads per lane in flight */
#define SWI_FWD_V 2 /* per forward unit (and its quantizer tiles): 4 loads per lane in flight at
                       FZ_FWD_CTAS CTAs per SM (4 vectors need > 64 registers: 0.64 of copy at 2 CTAs) */

#define SWI_BF16_V 4 /* per unit of the plain bf16 forward under AGOQ_F8: 8 loads per lane in flight */
/* SwiGLU work unit u = (row r, k) of a [rows, F] output in units of V vectors: its warp vectors
 * cv0 + i, i < nv (cv0 = V k, nv <= V of them inside the row), lane l at columns
 * 256 (cv0 + i) + 8 l. */
struct swi_unit {
    size_t r;
    uint32_t cv0;
    int nv;
};
#ifndef AGOQ_SWI_UDIV /* 0: the row by nvcc's integer division, as before the thirty-seventh session (A/B) */
#define AGOQ_SWI_UDIV 1
#endif
template <int V>
__device__ __forceinline__ swi_unit swi_at(size_t u, agoq_udiv upr, uint32_t vpr) {
    /* the launcher keeps units < AGOQ_UDIV_NMAX */
    const uint32_t r = AGOQ_SWI_UDIV ? agoq_udiv_q(upr, (uint32_t)u) : (uint32_t)u / upr.d;
    swi_unit a;
    a.r = r;
    a.cv0 = ((uint32_t)u - r * upr.d) * V;
    a.nv = vpr - a.cv0 < V ? (int)(vpr - a.cv0) : V;
    return a;
}

/* 8 outputs silu(gate) * up from a lane's gate and up vectors, stored at dst */
__device__ __forceinline__ void swi_out_vec(uint4 g, uint4 u, uint16_t *dst) {
    float a[8], b[8];
    agoq_bf16x8_to_f32(g, a);
    agoq_bf16x8_to_f32(u, b);
#pragma unroll
    for (int e = 0; e < 8; e++) a[e] = agoq_fast_silu(a[e]) * b[e];
    fz_store(dst, agoq_f32x8_to_bf16(a));
}

/* ---- SwiGLU forward: out[r, c] = silu(h[r, c]) * h[r, F + c]. QUANT needs F % 256 == 0 (whole
 * warp vectors): a whole unit's gate and up vectors are one split packed tile of 2 V vectors
 * (planes offset to its first element: the gate and up of an output run are F apart); a row's
 * last partial unit is quantized vector by vector (U = 1). ---- */
/* AGOQ_SWI_FWD_BASE (compile time, default 1 since the forty-second session; 0 for the A/B build): a
 * unit whose vectors all lie inside the row (every unit of a QUANT kernel but a row's last partial
 * one) loads from one base address, the gate's V vectors and the up's at immediate offsets from it
 * and from base + f (the whole-unit stores already were: ptxas folds them); 0: each load its own
 * predicated 64-bit address, the h pointer reloaded from the constant bank for each. The same
 * loads; what it saves is per-unit address arithmetic in a kernel that handles one 2 KB unit a
 * warp. The SASS of the FP4 kernel (`tools/sass.sh kernels/fused/fused_swiglu.cu
 * 'swiglu_fwd_kernelILi2ELi4ELi7ELb1ELi2ELb1ELi0E'`): from the unit's row to its first tile
 * instruction 73 slots at 0, 46 at 1, of the about 716 instructions a warp that ncu counted on an
 * H100 (thirty-eighth session); ptxas: no spill changes in any SwiGLU forward, registers +-2.
 * Measured (H100, eb36143, results/h100/logs/s42_eb36143b/): the fused GPU tests 18 of 18 under
 * it; three rounds against 0, copy ratio at 64 MiB / 256 MiB / 1 / 4 GiB, FP4 0.892 / 0.973 /
 * 1.003 / 1.005 -> 0.911 / 0.979 / 1.004 / 1.005 (never below in a round), int8 +0.003 mean, the
 * plain bf16 forward +0.001. The H200, where this kernel misses 0.85 of copy at 64 / 256 MiB, has
 * not run it (vars/sb0, tools/device_s35.sh s42). */
#ifndef AGOQ_SWI_FWD_BASE
#define AGOQ_SWI_FWD_BASE 1
#endif
/* A unit's gate and up vectors of lane `lane` (zeros past the row) */
template <int V>
__device__ __forceinline__ void swi_fwd_load(const uint16_t *__restrict__ h, int f, const swi_unit &at, int lane,
                                             uint4 (&g)[V], uint4 (&up)[V]) {
    const size_t hrow = 2 * at.r * (size_t)f;
    if (AGOQ_SWI_FWD_BASE && (at.cv0 + (uint32_t)V) * FZ_WVEC <= (uint32_t)f) { /* warp-uniform */
        const uint16_t *gb = h + hrow + (size_t)(at.cv0 * FZ_WVEC + 8 * lane), *ub = gb + f;
#pragma unroll
        for (int i = 0; i < V; i++) {
            g[i] = fz_load(gb + i * FZ_WVEC);
            up[i] = fz_load(ub + i * FZ_WVEC);
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < V; i++) {
        const int c = (int)(at.cv0 + (uint32_t)i) * FZ_WVEC + 8 * lane;
        const bool ok = i < at.nv && c < f;
        g[i] = ok ? fz_load(h + hrow + (size_t)c) : make_uint4(0, 0, 0, 0);
        up[i] = ok ? fz_load(h + hrow + (size_t)f + (size_t)c) : make_uint4(0, 0, 0, 0);
    }
}
/* AGOQ_FWD_L2PF: a unit's gate and up runs into L2 (lane 0; f % 8 == 0 and h 16-byte aligned,
 * the vector kernels' condition, keep both 16-byte multiples at 16-byte addresses) */
template <int V>
__device__ __forceinline__ void swi_fwd_l2pf(const uint16_t *__restrict__ h, int f, const swi_unit &at) {
    const int c0 = (int)at.cv0 * FZ_WVEC, cols = min(at.nv * FZ_WVEC, f - c0);
    const uint16_t *g = h + 2 * at.r * (size_t)f + (size_t)c0;
    fz_l2_prefetch(g, (uint32_t)cols * 2u);
    fz_l2_prefetch(g + f, (uint32_t)cols * 2u);
}
/* The outputs of a loaded unit and (QUANT) the stored copy of its gate and up vectors */
template <int ENC, int BITS, int LOG2B, bool QUANT, int V, bool TILE2>
__device__ __forceinline__ void swi_fwd_unit(const agoq_cuda_qparams &p, const agoq_smem_table *tab,
                                             uint16_t *__restrict__ out, const agoq_cuda_qtensor &q, int f,
                                             const swi_unit &at, int lane, const uint4 (&g)[V], const uint4 (&up)[V]) {
    const size_t hrow = 2 * at.r * (size_t)f, orow = at.r * (size_t)f;
    int c[V];
#pragma unroll
    for (int i = 0; i < V; i++) c[i] = (int)(at.cv0 + (uint32_t)i) * FZ_WVEC + 8 * lane;
    if constexpr (QUANT) { /* warp-uniform branches: at is the warp's */
        const size_t e0 = hrow + (size_t)at.cv0 * FZ_WVEC;
        if (at.nv == V) { /* the whole unit: the words as loaded, one split packed tile */
            uint32_t w[2 * V][4]; /* gate vectors, then up vectors */
#pragma unroll
            for (int i = 0; i < V; i++) {
                w[i][0] = g[i].x; w[i][1] = g[i].y; w[i][2] = g[i].z; w[i][3] = g[i].w;
                w[V + i][0] = up[i].x; w[V + i][1] = up[i].y;
                w[V + i][2] = up[i].z; w[V + i][3] = up[i].w;
            }
#pragma unroll
            for (int i = 0; i < V; i++) swi_out_vec(g[i], up[i], out + orow + (size_t)c[i]);
            if constexpr (TILE2) { /* AGOQ_SWI_FWD_TILE=2: the gate run, then the up run, each a tile */
                uint32_t(&wg)[V][4] = *reinterpret_cast<uint32_t(*)[V][4]>(&w[0]);
                uint32_t(&wu)[V][4] = *reinterpret_cast<uint32_t(*)[V][4]>(&w[V]);
                fz_quantize_bf16p<ENC, BITS, LOG2B, V>(p, tab, wg, fz_qt_at<BITS, LOG2B>(p, q, e0), lane, 0);
                fz_quantize_bf16p<ENC, BITS, LOG2B, V>(p, tab, wu, fz_qt_at<BITS, LOG2B>(p, q, e0 + f), lane, 0);
            } else {
                fz_quantize_bf16p<ENC, BITS, LOG2B, 2 * V>(p, tab, w, fz_qt_at<BITS, LOG2B>(p, q, e0), lane, (size_t)f);
            }
            return;
        }
#pragma unroll
        for (int i = 0; i < V; i++) {
            if (i >= at.nv) continue;
            const size_t ei = e0 + (size_t)(i * FZ_WVEC);
            float v[1][8];
            agoq_bf16x8_to_f32(g[i], v[0]);
            fz_quantize<ENC, BITS, LOG2B, 1>(p, tab, v, 0, fz_qt_at<BITS, LOG2B>(p, q, ei), lane);
            agoq_bf16x8_to_f32(up[i], v[0]);
            fz_quantize<ENC, BITS, LOG2B, 1>(p, tab, v, 0, fz_qt_at<BITS, LOG2B>(p, q, ei + f), lane);
        }
    }
#pragma unroll
    for (int i = 0; i < V; i++) {
        if (i >= at.nv || c[i] >= f) continue;
        swi_out_vec(g[i], up[i], out + orow + (size_t)c[i]);
    }
}
/* pfd: AGOQ_FWD_L2PF's distance in units (0: off; not with PF).
 * PF: 0, a unit per warp, every warp done after it (agoq_grid_units' grid); else
 * (AGOQ_FWD_PF=1, non-table encoders) the resident grid at PF CTAs an SM, each warp looping
 * over its units with the next unit's loads issued before this one's math (registers for two
 * units: 4 CTAs' 64 would spill) */
template <int ENC, int BITS, int LOG2B, bool QUANT, int V = SWI_FWD_V, bool TILE2 = false, int PF = 0>
__global__ void __launch_bounds__(FZ_THREADS, PF ? PF : FZ_FWD_CTAS(ENC))
    swiglu_fwd_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ h, uint16_t *__restrict__ out,
                      agoq_cuda_qtensor q, int f, uint32_t vpr, agoq_udiv upr, size_t nunits, uint32_t pfd) {
    static_assert(V == SWI_FWD_V || !QUANT, "units of V != SWI_FWD_V: the plain bf16 kernel only");
    __shared__ agoq_smem_table tab;
    if constexpr (QUANT && ENC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE_LUT(tab, p.table);
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    if constexpr (PF != 0) {
        uint4 gn[V], upn[V];
        if (warp < nunits) swi_fwd_load<V>(h, f, swi_at<V>(warp, upr, vpr), lane, gn, upn);
        for (size_t u = warp; u < nunits; u += nwarps) {
            uint4 g[V], up[V];
#pragma unroll
            for (int i = 0; i < V; i++) { g[i] = gn[i]; up[i] = upn[i]; }
            if (u + nwarps < nunits) swi_fwd_load<V>(h, f, swi_at<V>(u + nwarps, upr, vpr), lane, gn, upn);
            swi_fwd_unit<ENC, BITS, LOG2B, QUANT, V, TILE2>(p, &tab, out, q, f, swi_at<V>(u, upr, vpr), lane, g, up);
        }
    } else {
        for (size_t u = warp; u < nunits; u += nwarps) {
            const swi_unit at = swi_at<V>(u, upr, vpr);
            if (pfd && lane == 0 && u + pfd < nunits) swi_fwd_l2pf<V>(h, f, swi_at<V>(u + pfd, upr, vpr));
            uint4 g[V], up[V];
            swi_fwd_load<V>(h, f, at, lane, g, up);
            swi_fwd_unit<ENC, BITS, LOG2B, QUANT, V, TILE2>(p, &tab, out, q, f, at, lane, g, up);
        }
    }
}

/* ---- SwiGLU backward: dh = (d_gate | d_up), out recomputed; units of SWI_V output vectors ---- */
template <int DEC, int BITS, bool DEQ>
__global__ void __launch_bounds__(FZ_THREADS, FZ_EW_CTAS)
    swiglu_bwd_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q, const uint16_t *__restrict__ h,
                      const uint16_t *__restrict__ dout, uint16_t *__restrict__ dh, uint16_t *__restrict__ out, int f,
                      uint32_t vpr, agoq_udiv upr, size_t nunits, int log2b) {
    __shared__ agoq_smem_table tab;
    if constexpr (DEQ && DEC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t u = warp; u < nunits; u += nwarps) {
        const swi_unit at = swi_at<SWI_V>(u, upr, vpr);
        const size_t hrow = 2 * at.r * (size_t)f, orow = at.r * (size_t)f;
        int c[SWI_V];
        fz_bwd_in<DEC, BITS, DEQ> gin[SWI_V], uin[SWI_V];
        uint4 d[SWI_V];
#pragma unroll
        for (int i = 0; i < SWI_V; i++) {
            c[i] = (int)(at.cv0 + (uint32_t)i) * FZ_WVEC + 8 * lane;
            if (i >= at.nv || c[i] >= f) continue;
            gin[i].load(p, q, h, hrow + (size_t)c[i], log2b);
            uin[i].load(p, q, h, hrow + (size_t)f + (size_t)c[i], log2b);
            d[i] = fz_load(dout + orow + (size_t)c[i]);
        }
#pragma unroll
        for (int i = 0; i < SWI_V; i++) {
            if (i >= at.nv || c[i] >= f) continue;
            float a[8], b[8], g[8], o[8];
            gin[i].get(p, &tab, a);
            uin[i].get(p, &tab, b);
            agoq_bf16x8_to_f32(d[i], g);
#pragma unroll
            for (int e = 0; e < 8; e++) agoq_fast_swiglu_bwd(a[e], b[e], g[e], &a[e], &b[e], &o[e]);
            fz_store(dh + hrow + (size_t)c[i], agoq_f32x8_to_bf16(a));
            fz_store(dh + hrow + (size_t)f + (size_t)c[i], agoq_f32x8_to_bf16(b));
            fz_store(out + orow + (size_t)c[i], agoq_f32x8_to_bf16(o));
        }
    }
}

/* ---- host side ---- */
extern "C" int agoq_swiglu_fwd_cuda(const agoq_fq *q, const uint16_t *h, int rows, int f, uint16_t *out, agoq_dqt hq,
                                    void *stream) {
    if (fz_check_shape("swiglu fwd", rows, f)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t vpr = (size_t)((f + FZ_WVEC - 1) / FZ_WVEC), upr = (vpr + SWI_FWD_V - 1) / SWI_FWD_V;
    const size_t nunits = (size_t)rows * upr;
    const agoq_udiv du = agoq_udiv_make((uint32_t)upr); /* unit -> row (swi_at) */
    const bool vec = f % 8 == 0 && nunits < AGOQ_UDIV_NMAX && fz_al16(h) && fz_al16(out) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(hq, 2 * (size_t)rows * (size_t)f);
    if (!q && vec && fz_f8()) { /* units of SWI_BF16_V vectors */
        const size_t upr8 = (vpr + SWI_BF16_V - 1) / SWI_BF16_V, n8 = (size_t)rows * upr8;
        constexpr auto k = swiglu_fwd_kernel<0, 0, 0, false, SWI_BF16_V>;
        FZ_LAUNCH(k, n8, false, agoq_cuda_qparams{}, h, out, qt, f, (uint32_t)vpr, agoq_udiv_make((uint32_t)upr8), n8,
                  fz_l2pf_units<k>());
    } else if (!q && vec) {
        constexpr auto k = swiglu_fwd_kernel<0, 0, 0, false>;
        FZ_LAUNCH(k, nunits, false, agoq_cuda_qparams{}, h, out, qt, f, (uint32_t)vpr, du, nunits,
                  fz_l2pf_units<k>());
    } else if (q && vec && f % FZ_WVEC == 0 && fz_fast_quant(q->p, hq)) {
        fz_dispatch_quant(q->p, [&](auto enc, auto bits, auto lb) {
            constexpr int ENC = decltype(enc)::value, BITS = decltype(bits)::value, LB = decltype(lb)::value;
            auto go = [&](auto t2) {
                constexpr auto k = swiglu_fwd_kernel<ENC, BITS, LB, true, SWI_FWD_V, decltype(t2)::value != 0>;
                FZ_LAUNCH(k, nunits, ENC == AGOQ_ENC_TABLE, q->p, h, out, qt, f, (uint32_t)vpr, du, nunits,
                          fz_l2pf_units<k>());
            };
            constexpr bool two = ENC == AGOQ_ENC_FP4 || ENC == AGOQ_ENC_INT_ASYM; /* auto: where the tile of 4 spills */
            if constexpr (ENC != AGOQ_ENC_TABLE) {
                if (fz_fwd_pf()) { /* the pipelined kernel on the resident grid, auto's tiles */
                    constexpr auto k = swiglu_fwd_kernel<ENC, BITS, LB, true, SWI_FWD_V, two, FZ_FWD_PF_CTAS>;
                    FZ_LAUNCH(k, nunits, true, q->p, h, out, qt, f, (uint32_t)vpr, du, nunits, 0u);
                    return;
                }
            }
            const int tile = fz_swi_fwd_tile(); /* auto (0): 2 where the split tile of 4 spills */
            if (tile == 2 || (tile == 0 && two)) go(agoq_enc_t<1>());
            else go(agoq_enc_t<0>());
        });
    } else {
        fz_ew_fwd_general(FZ_OP_SWIGLU, q, h, rows, f, out, hq, 0, s);
    }
    return 0;
}

extern "C" int agoq_swiglu_bwd_cuda(const agoq_fq *q, agoq_dqt hq, const uint16_t *h, const uint16_t *dout, int rows,
                                    int f, uint16_t *dh, uint16_t *out, void *stream) {
    if (fz_check_shape("swiglu bwd", rows, f)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const size_t vpr = (size_t)((f + FZ_WVEC - 1) / FZ_WVEC), upr = (vpr + SWI_V - 1) / SWI_V;
    const size_t nunits = (size_t)rows * upr;
    const agoq_udiv du = agoq_udiv_make((uint32_t)upr); /* unit -> row (swi_at) */
    const bool vec = f % 8 == 0 && nunits < AGOQ_UDIV_NMAX && (q || fz_al16(h)) && fz_al16(dout) && fz_al16(dh) &&
                     fz_al16(out) && !fz_no_fast();
    const agoq_cuda_qtensor qt = fz_qt(hq, 2 * (size_t)rows * (size_t)f);
    if (!q && vec) {
        constexpr auto k = swiglu_bwd_kernel<0, 0, false>;
        FZ_LAUNCH(k, nunits, false, agoq_cuda_qparams{}, qt, h, dout, dh, out, f, (uint32_t)vpr, du, nunits, 0);
    } else if (q && vec && f % q->p.block == 0 && fz_fast_dequant(q->p, hq)) {
        const int lb = __builtin_ctz((unsigned)q->p.block);
        fz_dispatch_dequant(q->p, [&](auto dec, auto bits) {
            constexpr auto k = swiglu_bwd_kernel<decltype(dec)::value, decltype(bits)::value, true>;
            FZ_LAUNCH(k, nunits, false, q->p, qt, h, dout, dh, out, f, (uint32_t)vpr, du, nunits, lb);
        });
    } else {
        fz_ew_bwd_general(FZ_OP_SWIGLU, q, hq, h, dout, rows, f, dh, out, s);
    }
    return 0;
}
