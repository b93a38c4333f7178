/* CUDA fused RMSNorm (fused.h): forward writing y and the quantized copy of x, backward from
 * the stored copy (dequantize, recompute rstd and y, dx and dweight partials). The stored copy
 * and this file's backward kernels bit-exact with rmsnorm_ref.c (the staged backward of
 * fused_rms_bwd.cu, by FMA, within fused_tol.c's bounds), the forward's y and rstd within one bf16 ulp /
 * fused_tol.c's relative bound: it sums the squares by FMA (fused_dev.cuh's fz_sq_acc) in the
 * same order (tests/cuda/fused/test_fused_cuda.c).
 *
 * The reduction order is the specification (fused_math.h): AGOQ_ROW_THREADS threads per row,
 * thread t owns the 8-column groups t, t + T, ... in ascending order, then agoq_tree_sum
 * (row_tree_sum below). Every kernel keeps it: a CTA of T threads works on one row at a time.
 *
 * Fast kernels (rows of cols % 8 == 0, at most RMS_NG * T * 8 = 8192 columns, 16-byte aligned
 * tensors): a thread's groups stay in registers between the sum and the output pass (x is read
 * once), the next row's x is loaded while this one is reduced (forward), w is loaded once per
 * CTA, grids are what stays resident with a grid-stride loop over rows (forward) or row groups
 * (backward, whose dweight partials stay in registers: the thread owning a column sums it).
 * When cols % 256 == 0 (fast quantizer configs, fused_dev.cuh) the forward also stages the row
 * in shared memory (two buffers, so the next row's staging needs no extra barrier) and warp w
 * quantizes pairs of contiguous warp vectors w, w + 8, ... as tiles of 2 (agoq_tile_quantize<U
 * = 2>: a thread's own groups are 2048 columns apart, too far for one tile; pairs halve the
 * per-block parameter work of single vectors); the backward decodes a lane's 8 codes with its
 * block's scale when rows are whole power-of-two blocks of 4/8-bit codes (the staged backward of
 * fused_rms_bwd.cu replaces it where its shapes allow).
 * Rows of 1024 k <= 4096 columns take the warp-per-row forward below instead (issue 15).
 * General kernels (any shape and config): the same sums, x re-read in the second pass; blocks
 * of <= 256 elements (powers of two) quantized by lane segments, others by a warp per block. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/fused/fused_dev.cuh"

#define RMS_NG 4 /* groups per thread kept in registers */
#define RMS_MAX_COLS (RMS_NG * AGOQ_ROW_THREADS * 8)
#define RMS_FWD_CTAS 3 /* CTAs per SM the fast kernels are register-bounded for (<= 85 registers) */
#define RMS_BWD_CTAS 2 /* (<= 128: 85 spill) */

/* ---- fast forward ---- */
template <bool QUANT, int ENC, int BITS, int LOG2B>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS, RMS_FWD_CTAS)
    rms_fwd_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w, int rows,
                   int cols, float eps, uint16_t *__restrict__ y, agoq_cuda_qtensor q, float *rstd_out) {
    __shared__ float red[2 * AGOQ_ROW_THREADS / 32];
    __shared__ agoq_smem_table tab;
    __shared__ uint4 srow[QUANT ? 2 : 1][QUANT ? RMS_MAX_COLS / 8 : 1]; /* the row's groups, 2 buffers */
    /* the LUT stays in global memory: no room beside srow */
    if constexpr (QUANT && ENC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, ngroups = cols >> 3;
    const int wvecs = cols / FZ_WVEC, npairs = wvecs / 2; /* QUANT: cols % 256 == 0 */
    int buf = 0;
    uint4 cur[RMS_NG], nxt[RMS_NG];
#pragma unroll
    for (int j = 0; j < RMS_NG; j++) cur[j] = nxt[j] = make_uint4(0, 0, 0, 0);
    auto load_row = [&](uint4(&dst)[RMS_NG], size_t r) {
#pragma unroll
        for (int j = 0; j < RMS_NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g < ngroups) dst[j] = fz_load(x + r * (size_t)cols + (size_t)(8 * g));
        }
    };
    if ((size_t)blockIdx.x < (size_t)rows) load_row(cur, blockIdx.x);
    for (size_t r = blockIdx.x; r < (size_t)rows; r += gridDim.x) { /* CTA-uniform: barriers inside */
        if (r + gridDim.x < (size_t)rows) load_row(nxt, r + gridDim.x); /* in flight during this row */
        float acc[1] = {0.0f};
#pragma unroll
        for (int j = 0; j < RMS_NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g >= ngroups) continue;
            if constexpr (QUANT) srow[buf][g] = cur[j]; /* read by other warps after the sum's barriers */
            float v[8];
            agoq_bf16x8_to_f32(cur[j], v);
#pragma unroll
            for (int e = 0; e < 8; e++) acc[0] = fz_sq_acc(acc[0], v[e]);
        }
        row_tree_sum<1>(acc, red);
        const float rstd = agoq_rms_rstd(acc[0], cols, eps);
        if (rstd_out && tid == 0) rstd_out[r] = rstd;
#pragma unroll
        for (int j = 0; j < RMS_NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g >= ngroups) continue;
            float v[8], wf[8];
            agoq_bf16x8_to_f32(cur[j], v);
            agoq_bf16x8_to_f32(__ldg((const uint4 *)(w + 8 * g)), wf); /* an L1 hit after the first row */
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] = agoq_rms_out(v[e], rstd, wf[e]);
            fz_store(y + r * (size_t)cols + (size_t)(8 * g), agoq_f32x8_to_bf16(v));
        }
        if constexpr (QUANT) { /* warp w: pairs of warp vectors w, w + 8, ..., then an odd last vector */
            const uint4 *sr = srow[buf];
            for (int pr = warp; pr < npairs; pr += AGOQ_ROW_THREADS / 32) { /* warp-uniform */
                float v[2][8];
                agoq_bf16x8_to_f32(sr[64 * pr + lane], v[0]);
                agoq_bf16x8_to_f32(sr[64 * pr + 32 + lane], v[1]);
                const size_t e0 = r * (size_t)cols + 2 * FZ_WVEC * (size_t)pr;
                fz_quantize<ENC, BITS, LOG2B, 2>(p, &tab, v, 0, fz_qt_at<BITS, LOG2B>(p, q, e0), lane);
            }
            if ((wvecs & 1) && warp == npairs % (AGOQ_ROW_THREADS / 32)) {
                float v[1][8];
                agoq_bf16x8_to_f32(sr[32 * (wvecs - 1) + lane], v[0]);
                const size_t e0 = r * (size_t)cols + (size_t)FZ_WVEC * (size_t)(wvecs - 1);
                fz_quantize<ENC, BITS, LOG2B, 1>(p, &tab, v, 0, fz_qt_at<BITS, LOG2B>(p, q, e0), lane);
            }
            buf ^= 1; /* the next row stages into the other buffer while slow warps may still read this one;
                         the row after it passes the next row's barriers first */
        }
#pragma unroll
        for (int j = 0; j < RMS_NG; j++) cur[j] = nxt[j];
    }
}

/* ---- warp-per-row forward (issue 15: the CTA-per-row kernel above, three barriers per row,
 * ran at 0.55 of copy, no faster than its unfused pair): rows of cols % 1024 == 0 and at most
 * RMS_WARP_NV warp vectors. A warp reads its row once into registers, lane l holding columns
 * 256 m + 8 l (vector m) = group 32 m + l, which the specification's CTA gives thread
 * t = 32 (m % 8) + l: so part[k] of lane l is thread 32 k + l's partial, summed over m = k,
 * k + 8, ... in the same order; its halving trees (one per k over the lanes, by the same
 * shuffles as row_tree_sum) and the tree over the 8 warp sums (in registers) give agoq_row_dot_ref's
 * order (its bits but for the FMA of fz_sq_acc), without shared memory or barriers. The row's vectors are then quantized as tiles
 * of RMS_WARP_U (agoq_tile_quantize, straight from registers) and normalized. ---- */
#define RMS_WARP_NV 16 /* warp vectors per row at most: 4096 columns */
#define RMS_WARP_U 4   /* vectors per quantizer tile (1024 columns) */
#define RMS_WARP_CTAS 2 /* <= 128 registers: the row (64) and a tile (32) */
/* The tenth session's AGOQ_RMS_PF (the warp prefetching its next row into L2 after issuing this
 * row's loads, plain and FP4 kernels) measured within -0.012 .. +0.005 of copy of this kernel at
 * 64 MiB - 4 GiB (twelfth session, 1dbd92e, results/h200/logs/s12_ab_1dbd92e/) and was removed.
 * The twenty-seventh session's AGOQ_RMS_FWD_WARP=0 (these shapes on rms_fwd_kernel, 47.6%
 * occupancy against 19.7%) lost everywhere: plain bf16 -0.006 .. -0.092, with the FP4 copy -0.14
 * .. -0.26 of copy at 64 MiB - 4 GiB (H100, results/h100/logs/s27_0076889/); removed. So did
 * AGOQ_RMS_FWD_PF=1 (this kernel on the resident grid, each warp's next row copied by cp.async
 * into its 8 KB of shared memory while it works on this one): the fused FP4 forward -0.10 ..
 * -0.12 of copy from 256 MiB, +0.04 at 64 MiB only (s27_078bf58/). */
template <bool QUANT, int ENC, int BITS, int LOG2B>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS, RMS_WARP_CTAS)
    rms_fwd_warp_kernel(agoq_cuda_qparams p, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w, int rows,
                        int cols, float eps, uint16_t *__restrict__ y, agoq_cuda_qtensor q, float *rstd_out) {
    constexpr int NW = AGOQ_ROW_THREADS / 32, U = RMS_WARP_U;
    __shared__ agoq_smem_table tab;
    if constexpr (QUANT && ENC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE_LUT(tab, p.table);
    const int lane = (int)(threadIdx.x & 31u), nv = cols / FZ_WVEC;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = warp; r < (size_t)rows; r += nwarps) {
        const size_t row0 = r * (size_t)cols, lane0 = row0 + (size_t)(8 * lane);
        uint4 raw[RMS_WARP_NV];
#pragma unroll
        for (int m = 0; m < RMS_WARP_NV; m++)
            if (m < nv) raw[m] = fz_load(x + lane0 + (size_t)(m * FZ_WVEC));
        float part[NW];
#pragma unroll
        for (int k = 0; k < NW; k++) part[k] = 0.0f;
#pragma unroll
        for (int m = 0; m < RMS_WARP_NV; m++) {
            if (m >= nv) continue;
            float v[8];
            agoq_bf16x8_to_f32(raw[m], v);
#pragma unroll
            for (int e = 0; e < 8; e++) part[m % NW] = fz_sq_acc(part[m % NW], v[e]);
        }
        const float rstd = agoq_rms_rstd(warp_row_sum<NW>(part), cols, eps);
        if (rstd_out && lane == 0) rstd_out[r] = rstd;
#pragma unroll
        for (int i = 0; i < RMS_WARP_NV / U; i++) {
            if (U * i >= nv) continue; /* nv % U == 0 */
            float v[U][8];
#pragma unroll
            for (int jj = 0; jj < U; jj++) agoq_bf16x8_to_f32(raw[U * i + jj], v[jj]);
            if constexpr (QUANT)
                fz_quantize<ENC, BITS, LOG2B, U>(p, &tab, v, 0, fz_qt_at<BITS, LOG2B>(p, q, row0 + (size_t)(U * i * FZ_WVEC)),
                                                 lane);
#pragma unroll
            for (int jj = 0; jj < U; jj++) {
                const int c = (U * i + jj) * FZ_WVEC + 8 * lane;
                float wf[8];
                agoq_bf16x8_to_f32(__ldg((const uint4 *)(w + c)), wf); /* an L1 hit after the first row */
#pragma unroll
                for (int e = 0; e < 8; e++) v[jj][e] = agoq_rms_out(v[jj][e], rstd, wf[e]);
                fz_store(y + row0 + (size_t)c, agoq_f32x8_to_bf16(v[jj]));
            }
        }
    }
}

/* ---- fast backward (the staged kernel of fused_rms_bwd.cu takes the shapes it allows; this one
 * the rest, and every shape before issue 15's second round): CTA per row group (grid-stride); the next row of the group is loaded
 * while this one is reduced; dweight partials in shared memory, [j][half][thread] float4s
 * (conflict-free: thread t only touches its own columns, so no barrier either) ---- */
template <bool DEQ, int DEC, int BITS>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS, RMS_BWD_CTAS)
    rms_bwd_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q, const uint16_t *__restrict__ x,
                   const uint16_t *__restrict__ dy, const uint16_t *__restrict__ w, int rows, int cols, float eps,
                   int rpg, uint16_t *__restrict__ dx, uint16_t *__restrict__ y, float *__restrict__ dw_partial,
                   int log2b) {
    __shared__ float red[2 * AGOQ_ROW_THREADS / 32];
    __shared__ float4 dws[RMS_NG * 2][AGOQ_ROW_THREADS];
    __shared__ agoq_smem_table tab;
    if constexpr (DEQ && DEC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int tid = (int)threadIdx.x, ngroups = cols >> 3, ngrp = (rows + rpg - 1) / rpg;
    fz_bwd_in<DEC, BITS, DEQ> in[RMS_NG], in_n[RMS_NG];
    uint4 d[RMS_NG], d_n[RMS_NG];
    auto load_row = [&](fz_bwd_in<DEC, BITS, DEQ>(&xi)[RMS_NG], uint4(&di)[RMS_NG], size_t r) {
#pragma unroll
        for (int j = 0; j < RMS_NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g >= ngroups) continue;
            xi[j].load(p, q, x, r * (size_t)cols + (size_t)(8 * g), log2b);
            di[j] = fz_load(dy + r * (size_t)cols + (size_t)(8 * g));
        }
    };
    for (int grp = blockIdx.x; grp < ngrp; grp += gridDim.x) { /* CTA-uniform */
        const int r0 = grp * rpg, r1 = min(rows, r0 + rpg);
#pragma unroll
        for (int j = 0; j < RMS_NG; j++) dws[2 * j][tid] = dws[2 * j + 1][tid] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        load_row(in, d, (size_t)r0);
        for (int r = r0; r < r1; r++) {
            if (r + 1 < r1) load_row(in_n, d_n, (size_t)r + 1); /* in flight during this row */
            const size_t o = (size_t)r * (size_t)cols;
            float acc[2] = {0.0f, 0.0f}; /* sum x^2, sum (dy w) x */
#pragma unroll
            for (int j = 0; j < RMS_NG; j++) {
                const int g = tid + j * AGOQ_ROW_THREADS;
                if (g >= ngroups) continue;
                float v[8], dd[8], wf[8];
                in[j].get(p, &tab, v);
                agoq_bf16x8_to_f32(d[j], dd);
                agoq_bf16x8_to_f32(__ldg((const uint4 *)(w + 8 * g)), wf);
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    acc[0] = acc[0] + v[e] * v[e];
                    acc[1] = acc[1] + (dd[e] * wf[e]) * v[e];
                }
            }
            row_tree_sum<2>(acc, red);
            const float rstd = agoq_rms_rstd(acc[0], cols, eps), coef = agoq_rms_coef(acc[1], cols, rstd);
#pragma unroll
            for (int j = 0; j < RMS_NG; j++) {
                const int g = tid + j * AGOQ_ROW_THREADS;
                if (g >= ngroups) continue;
                float v[8], dd[8], wf[8], dxv[8], dw[8];
                in[j].get(p, &tab, v);
                agoq_bf16x8_to_f32(d[j], dd);
                agoq_bf16x8_to_f32(__ldg((const uint4 *)(w + 8 * g)), wf);
                const float4 a = dws[2 * j][tid], b = dws[2 * j + 1][tid];
                dw[0] = a.x; dw[1] = a.y; dw[2] = a.z; dw[3] = a.w; dw[4] = b.x; dw[5] = b.y; dw[6] = b.z; dw[7] = b.w;
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    dxv[e] = agoq_rms_dx(v[e], dd[e] * wf[e], rstd, coef);
                    dw[e] = dw[e] + dd[e] * (v[e] * rstd);
                    v[e] = agoq_rms_out(v[e], rstd, wf[e]);
                }
                dws[2 * j][tid] = make_float4(dw[0], dw[1], dw[2], dw[3]);
                dws[2 * j + 1][tid] = make_float4(dw[4], dw[5], dw[6], dw[7]);
                fz_store(dx + o + (size_t)(8 * g), agoq_f32x8_to_bf16(dxv));
                fz_store(y + o + (size_t)(8 * g), agoq_f32x8_to_bf16(v));
            }
#pragma unroll
            for (int j = 0; j < RMS_NG; j++) {
                in[j] = in_n[j];
                d[j] = d_n[j];
            }
        }
        float *dst = dw_partial + (size_t)grp * (size_t)cols;
#pragma unroll
        for (int j = 0; j < RMS_NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g >= ngroups) continue;
            *(float4 *)(dst + 8 * g) = dws[2 * j][tid];
            *(float4 *)(dst + 8 * g + 4) = dws[2 * j + 1][tid];
        }
    }
}

/* ---- general forward: CTA per row (grid-stride), x read twice ---- */
template <bool QUANT>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS) rms_fwd_gen_kernel(agoq_cuda_qparams p,
                                                                      const uint16_t *__restrict__ x,
                                                                      const uint16_t *__restrict__ w, int rows,
                                                                      int cols, float eps, uint16_t *__restrict__ y,
                                                                      agoq_cuda_qtensor q, float *rstd_out, int vec) {
    __shared__ float red[2 * AGOQ_ROW_THREADS / 32];
    __shared__ agoq_smem_table tab;
    if (QUANT && p.enc == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, ngroups = (cols + 7) / 8;
    const int B = QUANT ? p.block : 8, G = B >> 3, nbpr = (cols + B - 1) / B;
    const bool seg = !QUANT || (B <= 256 && (B & (B - 1)) == 0); /* G | 32: a block = G lanes of a warp */
    for (size_t r = blockIdx.x; r < (size_t)rows; r += gridDim.x) {
        const size_t o = r * (size_t)cols;
        float acc[1] = {0.0f};
        for (int g = tid; g < ngroups; g += AGOQ_ROW_THREADS) {
            const int nv = fz_nvalid(cols, 8 * g);
            float v[8];
            agoq_dev_load8(x, o + (size_t)(8 * g), nv, vec, v);
#pragma unroll
            for (int e = 0; e < 8; e++) /* a constant trip count keeps v[] in registers */
                if (e < nv) acc[0] = fz_sq_acc(acc[0], v[e]);
        }
        row_tree_sum<1>(acc, red);
        const float rstd = agoq_rms_rstd(acc[0], cols, eps);
        if (rstd_out && tid == 0) rstd_out[r] = rstd;
        if (seg) {
            const int gpad = nbpr * G; /* groups of the row's blocks, padding included */
            for (int base = 0; base < gpad; base += AGOQ_ROW_THREADS) { /* CTA-uniform: shuffles inside */
                const int g = base + tid, c = 8 * g, nv = g < gpad ? fz_nvalid(cols, c) : 0;
                float v[8], wf[8];
                agoq_dev_load8(x, o + (size_t)c, nv, vec, v);
                if (QUANT) {
                    float s, m, inv;
                    fz_params_seg(p, v, nv, G, g % G, &s, &m, &inv);
                    const size_t b = r * (size_t)nbpr + (size_t)(g / G);
                    if (g < gpad) {
                        agoq_dev_store_group(q.codes, b * (size_t)G + (size_t)(g % G), p.bits,
                                             fz_encode8(p, &tab, v, nv, inv, m, o + (size_t)c));
                        if (g % G == 0) agoq_dev_store_params(p, q, b, s, m);
                    }
                }
                if (nv == 0) continue;
                agoq_dev_load8(w, (size_t)c, nv, vec, wf);
#pragma unroll
                for (int e = 0; e < 8; e++) v[e] = agoq_rms_out(v[e], rstd, wf[e]);
                agoq_dev_store8(y, o + (size_t)c, nv, vec, v);
            }
        }
        for (int k = warp; !seg && k < nbpr; k += AGOQ_ROW_THREADS / 32) { /* a warp per block */
            const int c0 = k * B;
            const size_t b = r * (size_t)nbpr + (size_t)k;
            float amax = 0.0f, lo = __int_as_float(0x7f800000), hi = __int_as_float(0xff800000), s, m, inv;
            for (int gi = lane; gi < G; gi += 32) {
                const int nv = fz_nvalid(cols, c0 + 8 * gi);
                if (!nv) break;
                float v[8];
                agoq_dev_load8(x, o + (size_t)(c0 + 8 * gi), nv, vec, v);
                fz_range8(v, nv, amax, lo, hi);
            }
            fz_params_warp(p, amax, lo, hi, &s, &m, &inv);
            if (lane == 0) agoq_dev_store_params(p, q, b, s, m);
            for (int gi = lane; gi < G; gi += 32) {
                const int c = c0 + 8 * gi, nv = fz_nvalid(cols, c);
                float v[8], wf[8];
                agoq_dev_load8(x, o + (size_t)c, nv, vec, v);
                agoq_dev_store_group(q.codes, b * (size_t)G + (size_t)gi, p.bits,
                                     fz_encode8(p, &tab, v, nv, inv, m, o + (size_t)c));
                if (nv == 0) continue;
                agoq_dev_load8(w, (size_t)c, nv, vec, wf);
#pragma unroll
                for (int e = 0; e < 8; e++) v[e] = agoq_rms_out(v[e], rstd, wf[e]);
                agoq_dev_store8(y, o + (size_t)c, nv, vec, v);
            }
        }
    }
}

/* ---- general backward: CTA per row group, dweight partials in shared memory ---- */
template <bool DEQ>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS) rms_bwd_gen_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                                      const uint16_t *__restrict__ x,
                                                                      const uint16_t *__restrict__ dy,
                                                                      const uint16_t *__restrict__ w, int rows,
                                                                      int cols, float eps, int rpg,
                                                                      uint16_t *__restrict__ dx,
                                                                      uint16_t *__restrict__ y, float *dw_partial,
                                                                      int vec) {
    extern __shared__ float dw_acc[]; /* [cols]: column j owned by the thread owning group j/8 */
    __shared__ float red[2 * AGOQ_ROW_THREADS / 32];
    __shared__ agoq_smem_table tab;
    if (DEQ && p.dec == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int ngroups = (cols + 7) / 8;
    for (int g = threadIdx.x; g < ngroups; g += AGOQ_ROW_THREADS)
        for (int e = 0; e < fz_nvalid(cols, 8 * g); e++) dw_acc[8 * g + e] = 0.0f;
    const int r0 = blockIdx.x * rpg, r1 = min(rows, r0 + rpg);
    for (int ri = r0; ri < r1; ri++) {
        const size_t o = (size_t)ri * (size_t)cols;
        float acc[2] = {0.0f, 0.0f}; /* sum x^2, sum g*x */
        for (int pass = 0; pass < 2; pass++) {
            const float rstd = pass ? agoq_rms_rstd(acc[0], cols, eps) : 0.0f;
            const float coef = pass ? agoq_rms_coef(acc[1], cols, rstd) : 0.0f;
            for (int gr = threadIdx.x; gr < ngroups; gr += AGOQ_ROW_THREADS) {
                const int c = 8 * gr, nv = fz_nvalid(cols, c);
                float v[8], d[8], wf[8];
                if (DEQ) fz_decode_rowq(p, &tab, q, cols, (size_t)ri, c, v);
                else agoq_dev_load8(x, o + (size_t)c, nv, vec, v);
                agoq_dev_load8(dy, o + (size_t)c, nv, vec, d);
                agoq_dev_load8(w, (size_t)c, nv, vec, wf);
                if (!pass) {
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        if (e < nv) {
                            acc[0] = acc[0] + v[e] * v[e];
                            acc[1] = acc[1] + (d[e] * wf[e]) * v[e];
                        }
                    continue;
                }
                float dxv[8], yv[8];
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    dxv[e] = agoq_rms_dx(v[e], d[e] * wf[e], rstd, coef);
                    yv[e] = agoq_rms_out(v[e], rstd, wf[e]);
                    if (e < nv) dw_acc[c + e] = dw_acc[c + e] + d[e] * (v[e] * rstd);
                }
                agoq_dev_store8(dx, o + (size_t)c, nv, vec, dxv);
                agoq_dev_store8(y, o + (size_t)c, nv, vec, yv);
            }
            if (!pass) row_tree_sum<2>(acc, red);
        }
    }
    float *dst = dw_partial + (size_t)blockIdx.x * (size_t)cols;
    for (int g = threadIdx.x; g < ngroups; g += AGOQ_ROW_THREADS)
        for (int e = 0; e < fz_nvalid(cols, 8 * g); e++) dst[8 * g + e] = dw_acc[8 * g + e];
}

/* dw[j] = the sum of the groups' partials of column j in group order (a thread per column). B
 * partials are loaded before they are added (B = 16 in CTAs of 64 threads: AGOQ_DW_REDUCE=1;
 * B = 1 in CTAs of 256: =0; the same additions in the same order). */
template <int B>
__global__ void dw_reduce_kernel(const float *__restrict__ partial, int groups, int cols, float *__restrict__ dw) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    const float *col = partial + (size_t)j;
    float acc = 0.0f;
    int g = 0;
    for (; g + B <= groups; g += B) {
        float v[B];
#pragma unroll
        for (int i = 0; i < B; i++) v[i] = col[(size_t)(g + i) * (size_t)cols];
#pragma unroll
        for (int i = 0; i < B; i++) acc = acc + v[i];
    }
    for (; g < groups; g++) acc = acc + col[(size_t)g * (size_t)cols];
    dw[j] = acc;
}

/* The same sums staged through shared memory (AGOQ_DW_REDUCE=2, the default): a CTA of
 * DW_THREADS threads per 32 columns copies a chunk of up to DW_CHUNK groups x 32 columns into
 * shared memory with cp.async (the whole chunk in flight at once, no registers held), then warp 0
 * adds the chunk's rows column by column in group order (fz_dw_reduce_cols, fused_dev.cuh: the
 * same additions in the same order as dw_reduce_ref). Why: the partials of one wave of RMSNorm
 * CTAs (~400-530 groups x 4096 columns, 6-9 MB, mostly still in L2) were read by 16 CTAs (=0) or
 * 64 (=1) with 1 or 16 loads in flight a thread: 18 us at 391 groups x 4096 columns under ncu
 * (H100), against 161 us for the backward itself at 256 MiB; here 128 CTAs at 4096 columns with
 * up to 128 KB in flight each (6.4 us with 4-byte copies, the twenty-seventh session; 16-byte
 * ones where the columns allow since the twenty-eighth). */
#define DW_THREADS 512
#define DW_CHUNK 1024 /* groups a chunk: 128 KB of shared memory */
template <bool V16>
__global__ void __launch_bounds__(DW_THREADS)
    dw_reduce_staged_kernel(const float *__restrict__ partial, int groups, int cols, float *__restrict__ dw, int chunk) {
    extern __shared__ uint4 fz_dyn_smem[];
    fz_dw_reduce_cols<DW_THREADS, V16>(partial, groups, cols, dw, (int)blockIdx.x * 32, (float *)fz_dyn_smem, chunk);
}

/* ---- host side ---- */
extern "C" int agoq_rmsnorm_fwd_cuda(const agoq_fq *q, const uint16_t *x, const uint16_t *w, int rows, int cols,
                                     float eps, uint16_t *y, agoq_dqt xq, float *rstd, void *stream) {
    if (fz_check_shape("rmsnorm fwd", rows, cols)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const agoq_cuda_qtensor qt = fz_qt(xq, (size_t)rows * (size_t)cols);
    const size_t warps = (size_t)rows * (AGOQ_ROW_THREADS / 32);
    const bool fast = cols % 8 == 0 && cols <= RMS_MAX_COLS && fz_al16(x) && fz_al16(w) && fz_al16(y) && !fz_no_fast();
    const bool by_warp = fast && cols % (RMS_WARP_U * FZ_WVEC) == 0 && cols <= RMS_WARP_NV * FZ_WVEC;
    if (by_warp && fz_rms_fwd_pair(q, x, w, rows, cols, eps, y, xq, rstd, s)) {
        /* a row to a pair of warps (fused_rms_pair.cu: by default the quantized forwards of >= 24 rows an SM) */
    } else if (by_warp && !q) {
        constexpr auto k = rms_fwd_warp_kernel<false, 0, 0, 0>;
        k<<<fz_grid<k>((size_t)rows, false), AGOQ_ROW_THREADS, 0, s>>>(agoq_cuda_qparams{}, x, w, rows, cols, eps, y, qt, rstd);
    } else if (by_warp && fz_fast_quant(q->p, xq)) {
        fz_dispatch_quant(q->p, [&](auto enc, auto bits, auto lb) {
            constexpr int E = decltype(enc)::value;
            constexpr auto k = rms_fwd_warp_kernel<true, E, decltype(bits)::value, decltype(lb)::value>;
            k<<<fz_grid<k>((size_t)rows, E == AGOQ_ENC_TABLE), AGOQ_ROW_THREADS, 0, s>>>(q->p, x, w, rows, cols, eps, y, qt, rstd);
        });
    } else if (fast && !q) {
        constexpr auto k = rms_fwd_kernel<false, 0, 0, 0>;
        k<<<fz_grid<k>(warps, false), AGOQ_ROW_THREADS, 0, s>>>(agoq_cuda_qparams{}, x, w, rows, cols, eps, y, qt, rstd);
    } else if (fast && cols % FZ_WVEC == 0 && fz_fast_quant(q->p, xq)) {
        fz_dispatch_quant(q->p, [&](auto enc, auto bits, auto lb) {
            constexpr auto k = rms_fwd_kernel<true, decltype(enc)::value, decltype(bits)::value, decltype(lb)::value>;
            k<<<fz_grid<k>(warps, false), AGOQ_ROW_THREADS, 0, s>>>(q->p, x, w, rows, cols, eps, y, qt, rstd);
        });
    } else {
        const int vec = cols % 8 == 0 && fz_al16(x) && fz_al16(w) && fz_al16(y);
        if (q) {
            constexpr auto k = rms_fwd_gen_kernel<true>;
            k<<<fz_grid<k>(warps, false), AGOQ_ROW_THREADS, 0, s>>>(q->p, x, w, rows, cols, eps, y, qt, rstd, vec);
        } else {
            constexpr auto k = rms_fwd_gen_kernel<false>;
            k<<<fz_grid<k>(warps, false), AGOQ_ROW_THREADS, 0, s>>>(agoq_cuda_qparams{}, x, w, rows, cols, eps, y, qt, rstd, vec);
        }
    }
    cudaCheckLaunch();
    return 0;
}

/* agoq_rmsnorm_bwd_cuda, and with dw also agoq_rmsnorm_bwd_dw_cuda's reduction: inside the staged
 * kernel's launch where it takes the shape and fz_dw_fuse allows, else after it. */
static int rms_bwd(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, const uint16_t *w, int rows,
                   int cols, float eps, int rows_per_group, uint16_t *dx, uint16_t *y, float *dw_partial, float *dw,
                   void *stream) {
    if (fz_check_shape("rmsnorm bwd", rows, cols)) return -1;
    AGOQ_REQUIRE(rows_per_group >= 1, "rmsnorm bwd: rows_per_group %d must be >= 1", rows_per_group);
    const size_t smem = (size_t)cols * sizeof(float);
    AGOQ_REQUIRE(smem <= 200 * 1024, "rmsnorm bwd: cols %d too wide for the shared-memory dweight partials (max %d)",
                 cols, 200 * 1024 / 4);
    const cudaStream_t s = (cudaStream_t)stream;
    const int ngrp = (rows + rows_per_group - 1) / rows_per_group;
    const agoq_cuda_qtensor qt = fz_qt(xq, (size_t)rows * (size_t)cols);
    const size_t warps = (size_t)ngrp * (AGOQ_ROW_THREADS / 32);
    const bool fast = cols % 8 == 0 && cols <= RMS_MAX_COLS && (q || fz_al16(x)) && fz_al16(dy) && fz_al16(w) &&
                      fz_al16(dx) && fz_al16(y) && fz_al16(dw_partial) && !fz_no_fast();
    float *dw_in = dw && fz_dw_fuse() ? dw : nullptr; /* the reduction in the staged kernel's launch */
    if (fz_rms_bwd_staged(q, xq, x, dy, w, rows, cols, eps, rows_per_group, dx, y, dw_partial, dw_in, s)) {
        /* the staged kernel (fused_rms_bwd.cu) */
        if (dw_in) return 0;
    } else if (fast && !q) {
        constexpr auto k = rms_bwd_kernel<false, 0, 0>;
        k<<<fz_grid<k>(warps, false), AGOQ_ROW_THREADS, 0, s>>>(agoq_cuda_qparams{}, qt, x, dy, w, rows, cols, eps,
                                                        rows_per_group, dx, y, dw_partial, 0);
    } else if (fast && cols % q->p.block == 0 && fz_fast_dequant(q->p, xq)) {
        const int lb = __builtin_ctz((unsigned)q->p.block);
        fz_dispatch_dequant(q->p, [&](auto dec, auto bits) {
            constexpr auto k = rms_bwd_kernel<true, decltype(dec)::value, decltype(bits)::value>;
            k<<<fz_grid<k>(warps, false), AGOQ_ROW_THREADS, 0, s>>>(q->p, qt, x, dy, w, rows, cols, eps, rows_per_group, dx, y,
                                                            dw_partial, lb);
        });
    } else {
        const int vec = cols % 8 == 0 && fz_al16(x) && fz_al16(dy) && fz_al16(w) && fz_al16(dx) && fz_al16(y);
        auto go = [&](auto kernel, const agoq_cuda_qparams &p) {
            cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            kernel<<<(unsigned)ngrp, AGOQ_ROW_THREADS, smem, s>>>(p, qt, x, dy, w, rows, cols, eps, rows_per_group, dx,
                                                                  y, dw_partial, vec);
        };
        if (q) go(rms_bwd_gen_kernel<true>, q->p);
        else go(rms_bwd_gen_kernel<false>, agoq_cuda_qparams{});
    }
    cudaCheckLaunch();
    return dw ? agoq_dw_reduce_cuda(dw_partial, ngrp, cols, dw, stream) : 0;
}

extern "C" int agoq_rmsnorm_bwd_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy,
                                     const uint16_t *w, int rows, int cols, float eps, int rows_per_group,
                                     uint16_t *dx, uint16_t *y, float *dw_partial, void *stream) {
    return rms_bwd(q, xq, x, dy, w, rows, cols, eps, rows_per_group, dx, y, dw_partial, NULL, stream);
}

extern "C" int agoq_rmsnorm_bwd_dw_cuda(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy,
                                        const uint16_t *w, int rows, int cols, float eps, int rows_per_group,
                                        uint16_t *dx, uint16_t *y, float *dw_partial, float *dw, void *stream) {
    AGOQ_REQUIRE(dw != NULL, "rmsnorm bwd dw: no dw");
    return rms_bwd(q, xq, x, dy, w, rows, cols, eps, rows_per_group, dx, y, dw_partial, dw, stream);
}

extern "C" int agoq_dw_reduce_cuda(const float *partial, int groups, int cols, float *dw, void *stream) {
    if (fz_check_shape("dw reduce", groups, cols)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    switch (fz_dw_reduce()) {
    case 0: dw_reduce_kernel<1><<<(unsigned)((cols + 255) / 256), 256, 0, s>>>(partial, groups, cols, dw); break;
    case 1: dw_reduce_kernel<16><<<(unsigned)((cols + 63) / 64), 64, 0, s>>>(partial, groups, cols, dw); break;
    default: {
        static unsigned done[2] = {0, 0}; /* fz_smem_optin: the largest chunk's bytes, once per device */
        const int chunk = min(groups, DW_CHUNK);
        auto go = [&](auto kernel, unsigned *d) {
            fz_smem_optin((const void *)kernel, (size_t)DW_CHUNK * 32 * sizeof(float), d, NULL);
            kernel<<<(unsigned)((cols + 31) / 32), DW_THREADS, (size_t)chunk * 32 * sizeof(float), s>>>(partial, groups,
                                                                                                     cols, dw, chunk);
        };
        if (cols % 4 == 0 && fz_al16(partial)) go(dw_reduce_staged_kernel<true>, &done[1]);
        else go(dw_reduce_staged_kernel<false>, &done[0]);
    }
    }
    cudaCheckLaunch();
    return 0;
}
