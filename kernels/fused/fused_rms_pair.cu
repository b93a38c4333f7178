/* CUDA fused RMSNorm forward, a row to a pair of warps (twenty-seventh session), beside the
 * warp-per-row kernel of fused_rmsnorm.cu. Its copy bit-exact with rmsnorm_ref.c, y and rstd within
 * fused_tol.c's bounds like every RMSNorm forward (the squares summed by FMA in the reference's
 * order; tests/cuda/fused/test_fused_cuda.c). AGOQ_RMS_FWD_PAIR: 2 (the default) takes it for the
 * forwards of at least 24 rows an SM, 1 for every shape it allows, 0 never.
 *
 * Why: the warp-per-row kernel holds a row of 4096 columns in 64 registers a lane, so 2 CTAs (16
 * warps) fit an SM, and a warp's row is one dependent chain (loads, the sum, its shuffle trees,
 * the rstd, then the quantizer tiles, the normalization and the stores). ncu on an H100 at 64
 * MiB (results/h100/logs/s27_b7f3a5d_ncu/): with the FP4 copy 40.0 us against 21.3 us for the plain
 * forward (72.5 against 64 MiB of traffic), DRAM 41% of peak, 23% of the warps active; 256 MiB:
 * 120 against 89 us, DRAM 70%. Here each warp of a pair holds half the row (32 registers), so
 * more warps fit and each row's chain is half as long.
 *
 * The same sum as the warp kernel and the specification: the partial of thread
 * t = 32 k + l of the specification's CTA (part[k] of lane l) sums warp vectors m = k, k + 8,
 * ... in that order. Warp 0 of the pair holds vectors m < nv / 2 and warp 1 the rest, all of
 * larger m, so warp 0's partials go first: it writes them to shared memory and arrives on the
 * pair's first named barrier; warp 1 waits there, continues each part[k] from them in m order,
 * runs the warp kernel's trees (the shuffles over lanes, the halving tree over k), computes rstd
 * and hands it back through the second barrier. Then each warp normalizes and quantizes its half
 * in tiles of 2 warp vectors (fz_quantize; a block of at most 256 lies inside a tile: the same
 * codes and scales as the warp kernel's tiles of 4). Shapes: the warp kernel's with cols a
 * multiple of 2048 (8 or 16 warp vectors, 4 or 8 a warp).
 * Measured (H100, b602649, results/h100/logs/s27_b602649/, three rounds, copy ratio, 4096
 * columns): with the FP4 copy 0.739 / 0.882 / 0.952 / 0.965 -> 0.825 / 0.926 / 0.974 / 0.981 at
 * 64 MiB / 256 MiB / 1 / 4 GiB, with int8 0.869 / 0.928 / 0.955 / 0.942 -> 0.914 / 0.957 / 0.977
 * / 0.976; at 32 MiB (2048 rows: 1.3 waves of 3 CTAs an SM against 0.97 of the warp kernel's 2)
 * int8 0.79 -> 0.71 in every round, hence the 24 rows an SM. ncu at 64 MiB (FP4): 40.0 -> 30.4
 * us, DRAM 41% -> 53% of peak, warps active 23% -> 32%; 256 MiB: 120.3 -> 107.4 us, DRAM 70% ->
 * 78%. The plain forward then lost (0.97 -> 0.61 at every size): its 4096-column kernel spilled
 * 236 bytes a thread (ncu on an H200, results/h200/logs/s28_a61af4f/: 2.4M local-memory
 * requests, L2 busy 91%, 104 against the warp kernel's 65 us at 256 MiB); without the spill
 * (the inputs converted again below) it wins from 64 MiB (H100, e6e8a6c, three rounds,
 * results/h100/logs/s28_e6e8a6c/: 0.977 / 0.974 / 0.982 / 0.966 -> 0.985 / 0.988 / 1.000 / 0.998
 * of copy at 64 MiB / 256 MiB / 1 / 4 GiB; -0.08 at 8-16 MiB, below the 24 rows an SM), so
 * since the twenty-eighth session the default takes it for the plain forward too. */
#include <cuda_runtime.h>

#include <type_traits>

#include "core/check.h"
#include "core/common.h"
#include "kernels/fused/fused_dev.cuh"

#define RMS_PAIR_H 8    /* warp vectors a warp at most: half of 4096 columns */
#define RMS_PAIR_U 2    /* vectors per quantizer tile (512 columns) */
#define RMS_PAIR_CTAS 3 /* CTAs an SM the kernel is register-bounded for (<= 85 registers) */
/* AGOQ_RMS_PAIR_QCTAS (compile time, 3 or 4; default 3, as the plain kernel): the CTAs an SM the
 * quantizing kernels are bounded for. Why 4 was tried (forty-second session): at 4096 columns the step's 4096 tokens are 4096 rows, and 3 CTAs of 4 pairs an SM hold
 * 1584 rows on 132 SMs, so 64 MiB runs in 2.59 waves of rows (3 rounds, the last 59% full) and
 * 256 MiB in 10.3; at 4 CTAs (2112 rows) 1.94 and 7.8. The FP4 kernel then spills (ptxas, sm_90:
 * `<true,2,4,7,8,true>` 28 / 44 bytes stored / loaded at 64 registers; none at 3 CTAs). On the
 * H200 the quantizing forward's fitted fixed cost is 5.6 us a call against the plain one's 1.6
 * (`tools/kernels_vs_torch.py --fixed results/h200/kernels_fused.json`, 92f72b2) and it misses
 * 0.85 of copy at 64 MiB (0.77). Measured on an H100 (eb36143, results/h100/logs/s42_eb36143b/,
 * three rounds, vars/pq4): 4 LOSES, FP4 0.881 / 0.953 / 0.981 / 0.982 -> 0.869 / 0.906 / 0.929 /
 * 0.930 of copy at 64 MiB / 256 MiB / 1 / 4 GiB (the spill); the default stays 3. */
#ifndef AGOQ_RMS_PAIR_QCTAS
#define AGOQ_RMS_PAIR_QCTAS 3
#endif
/* AGOQ_RMS_FWD_Q7 (thirty-first session; 0 never, 1 always, 2 the default: the FP4 encoder only):
 * the quantized copy from the row's bf16 words as loaded, by the quantizers' packed tile with the
 * q7 options (fz_quantize_bf16p, as the SwiGLU forward: the absmax by max.NaN.xorsign.abs.bf16x2,
 * FP4 codes by agoq_q7_fp4_pack_bf16 from the words) instead of from the fp32 values the
 * normalization converts. The copy is of the input x, so the codes and scales are the same bits
 * either way (tests/quant/test_quant_q7.c proves the q7 encoders against the reference; the GPU
 * test runs the pair kernel under 0, 1 and the default). Measured (H100, 62bb276,
 * results/h100/logs/s31_62bb276/, three rounds, copy ratio at 64 MiB / 256 MiB / 1 / 4 GiB): FP4
 * 0.814 / 0.929 / 0.973 / 0.981 -> 0.842 / 0.940 / 0.978 / 0.982 (ncu at 64 MiB: 30.1 -> 28.3 us,
 * 16.4M -> 14.1M warp instructions); FP8 +0.007 .. -0.001, int8 0 .. -0.004, int4_asym -0.013 at
 * 64 MiB: so FP4 only.
 * AGOQ_RMS_FWD_FMA (compile time, default 1; -DAGOQ_RMS_FWD_FMA=0 for an A/B by a variant build): the
 * sum of squares by FMA (fused_dev.cuh's fz_sq_acc, as every RMSNorm forward) or as the reference
 * (0: y and rstd bit for bit). It was the runtime knob AGOQ_RMS_FMA in the thirty-second session
 * (its A/B done: +0.02 of copy on the H200), which doubled the kernel's instantiations.
 * Tried in the thirty-third session and dropped before any GPU run: each warp quantizing its half
 * from the loaded words while it waits at the pair's barriers (the copy needs no rstd) instead of
 * beside the normalization; at 4096 columns ptxas (nvcc 13.0) spilled 296-384 bytes a thread of
 * the FP4 kernel at its 80 registers (none at 2048 columns), the row's words live across the
 * quantizer and the barriers. */
#ifndef AGOQ_RMS_FWD_FMA
#define AGOQ_RMS_FWD_FMA 1
#endif

__device__ __forceinline__ void rp_bar_sync(int id) { asm volatile("bar.sync %0, 64;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void rp_bar_arrive(int id) { asm volatile("bar.arrive %0, 64;" ::"r"(id) : "memory"); }

template <bool QUANT, int ENC, int BITS, int LOG2B, int NH, bool Q7>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS, QUANT ? AGOQ_RMS_PAIR_QCTAS : RMS_PAIR_CTAS)
    rms_fwd_pair_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w, int rows,
                        int cols, float eps, uint16_t *__restrict__ y, agoq_cuda_qtensor q, float *rstd_out) {
    constexpr int NW = AGOQ_ROW_THREADS / 32, U = RMS_PAIR_U, NP = NW / 2;
    static_assert(NH == 4 || NH == 8, "4 or 8 warp vectors a warp");
    __shared__ agoq_smem_table tab;
    __shared__ float pa[NP][NW][32]; /* warp 0's partials, [pair][k][lane] */
    __shared__ float rs[NP];         /* the pair's rstd */
    if constexpr (QUANT && ENC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE_LUT(tab, p.table);
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5), pair = wib >> 1, half = wib & 1;
    const int bar_a = 1 + 2 * pair, bar_b = 2 + 2 * pair; /* named barriers 1..8 (0: __syncthreads) */
    const size_t gp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 6;
    const size_t np = ((size_t)gridDim.x * blockDim.x) >> 6;
    for (size_t r = gp; r < (size_t)rows; r += np) { /* pair-uniform: both warps take every row */
        const size_t row0 = r * (size_t)cols, m0 = (size_t)half * NH;
        uint4 raw[NH];
#pragma unroll
        for (int i = 0; i < NH; i++) raw[i] = fz_load(x + row0 + (m0 + (size_t)i) * FZ_WVEC + (size_t)(8 * lane));
        float part[NW];
#pragma unroll
        for (int k = 0; k < NW; k++) part[k] = 0.0f;
        /* this warp's vectors m = H0 + i into part[m % NW], in m order */
        auto accumulate = [&](auto h0) {
            constexpr int H0 = decltype(h0)::value;
#pragma unroll
            for (int i = 0; i < NH; i++) {
                float v[8];
                agoq_bf16x8_to_f32(raw[i], v);
#pragma unroll
                for (int e = 0; e < 8; e++) part[(H0 + i) % NW] = fz_sq_acc<AGOQ_RMS_FWD_FMA != 0>(part[(H0 + i) % NW], v[e]);
            }
        };
        float rstd;
        if (half == 0) {
            accumulate(std::integral_constant<int, 0>());
#pragma unroll
            for (int k = 0; k < NW; k++) pa[pair][k][lane] = part[k];
            rp_bar_arrive(bar_a);
            rp_bar_sync(bar_b); /* warp 1's rstd */
            rstd = rs[pair];
        } else {
            rp_bar_sync(bar_a); /* warp 0's partials */
#pragma unroll
            for (int k = 0; k < NW; k++) part[k] = pa[pair][k][lane];
            accumulate(std::integral_constant<int, NH>());
            rstd = agoq_rms_rstd(warp_row_sum<NW>(part), cols, eps);
            if (lane == 0) {
                rs[pair] = rstd;
                if (rstd_out) rstd_out[r] = rstd;
            }
            rp_bar_arrive(bar_b);
        }
#pragma unroll
        for (int i = 0; i < NH / U; i++) {
            float v[U][8];
#pragma unroll
            for (int jj = 0; jj < U; jj++) {
                uint4 r = raw[U * i + jj];
                /* The plain kernel converts its inputs again here: without the quantizer's work
                 * between the row sum and this loop, the compiler kept the sum's 64 floats a
                 * lane instead and spilled (236 bytes at 4096 columns: 0.61 of copy, ncu
                 * results/h200/logs/s28_a61af4f/). The quantizing kernels are left as they were. */
                if constexpr (!QUANT) asm volatile("" : "+r"(r.x), "+r"(r.y), "+r"(r.z), "+r"(r.w));
                agoq_bf16x8_to_f32(r, v[jj]);
            }
            const size_t t0 = row0 + (m0 + (size_t)(U * i)) * FZ_WVEC; /* the tile's first element */
            if constexpr (QUANT && Q7) {
                uint32_t wq[U][4];
#pragma unroll
                for (int jj = 0; jj < U; jj++) {
                    const uint4 r = raw[U * i + jj];
                    wq[jj][0] = r.x; wq[jj][1] = r.y; wq[jj][2] = r.z; wq[jj][3] = r.w;
                }
                fz_quantize_bf16p<ENC, BITS, LOG2B, U>(p, &tab, wq, fz_qt_at<BITS, LOG2B>(p, q, t0), lane, 0);
            } else if constexpr (QUANT) {
                fz_quantize<ENC, BITS, LOG2B, U>(p, &tab, v, 0, fz_qt_at<BITS, LOG2B>(p, q, t0), lane);
            }
#pragma unroll
            for (int jj = 0; jj < U; jj++) {
                const int c = (int)(m0 + (size_t)(U * i + jj)) * FZ_WVEC + 8 * lane;
                float wf[8];
                agoq_bf16x8_to_f32(__ldg((const uint4 *)(w + c)), wf); /* an L1 hit after the first row */
#pragma unroll
                for (int e = 0; e < 8; e++) v[jj][e] = agoq_rms_out(v[jj][e], rstd, wf[e]);
                fz_store(y + row0 + (size_t)c, agoq_f32x8_to_bf16(v[jj]));
            }
        }
    }
}

/* ---- host side ---- */
template <bool QUANT, int ENC, int BITS, int LOG2B>
static void rms_pair_launch(int nh, const agoq_cuda_qparams &p, const uint16_t *x, const uint16_t *w, int rows,
                            int cols, float eps, uint16_t *y, agoq_cuda_qtensor qt, float *rstd, cudaStream_t s) {
    auto go = [&](auto h, auto q7) {
        constexpr auto k = rms_fwd_pair_kernel<QUANT, ENC, BITS, LOG2B, decltype(h)::value, decltype(q7)::value>;
        k<<<fz_grid<k>(2 * (size_t)rows, QUANT && ENC == AGOQ_ENC_TABLE), AGOQ_ROW_THREADS, 0, s>>>(p, x, w, rows, cols,
                                                                                                  eps, y, qt, rstd);
    };
    auto with_q7 = [&](auto h) {
        if constexpr (QUANT) {
            if (fz_fwd_q7("AGOQ_RMS_FWD_Q7", ENC)) {
                go(h, std::true_type());
                return;
            }
        }
        go(h, std::false_type());
    };
    if (nh == 8) with_q7(std::integral_constant<int, 8>());
    else with_q7(std::integral_constant<int, 4>());
}

bool fz_rms_fwd_pair(const agoq_fq *q, const uint16_t *x, const uint16_t *w, int rows, int cols, float eps, uint16_t *y,
                     agoq_dqt xq, float *rstd, cudaStream_t s) {
    /* the caller (agoq_rmsnorm_fwd_cuda) asks only for the warp kernel's shapes: aligned, fast paths on */
    const int mode = fz_rms_fwd_pair_mode();
    if (!mode || (mode == 2 && rows < 24 * agoq_cuda_sm_count()) || (cols != 2048 && cols != 4096)) return false;
    const int nh = cols / FZ_WVEC / 2;
    const agoq_cuda_qtensor qt = fz_qt(xq, (size_t)rows * (size_t)cols);
    if (!q) {
        rms_pair_launch<false, 0, 0, 0>(nh, agoq_cuda_qparams{}, x, w, rows, cols, eps, y, qt, rstd, s);
        return true;
    }
    if (!fz_fast_quant(q->p, xq)) return false;
    fz_dispatch_quant(q->p, [&](auto enc, auto bits, auto lb) {
        rms_pair_launch<true, decltype(enc)::value, decltype(bits)::value, decltype(lb)::value>(nh, q->p, x, w, rows, cols,
                                                                                               eps, y, qt, rstd, s);
    });
    return true;
}
