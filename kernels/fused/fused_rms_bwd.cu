/* CUDA fused RMSNorm backward, staged through shared memory (issue 15; the register-prefetch
 * kernel rms_bwd_kernel of fused_rmsnorm.cu takes the shapes this one does not). Its products
 * and sums by FMA (AGOQ_RMS_BWD_FMA, below): dx, the recomputed y and the dweight within the
 * bounds fused_tol.c derives against rmsnorm_ref.c (tests/cuda/fused/test_fused_cuda.c).
 *
 * Why: rms_bwd_kernel kept the next row's inputs (codes + scale, dy) in registers, 111 / 96
 * registers per thread, 2 CTAs (16 warps) per SM, so about one row per CTA was in flight:
 * ~20 KB of loads per SM, where the H200 needs ~35 KB per SM in flight to stream at full
 * bandwidth (ncu: 0.70 of copy, DRAM 60%, 23% occupancy). Here each thread copies its own
 * 16-byte groups of the next RMS_STAGES - 1 rows (dy, and x or its codes + scale words) with
 * cp.async into a ring of shared-memory stages: nothing of the in-flight rows lives in
 * registers, each thread waits only for its own copies (cp.async.wait_group; no extra
 * barrier), the row's two passes read the stage (w through L1), and the dweight partials stay in registers
 * (8 NG floats: the thread owning a column sums it over the group's rows, in row order).
 *
 * Same work split and order as rms_bwd_kernel (the specification, fused_math.h): a CTA of
 * AGOQ_ROW_THREADS threads per row group (grid-stride), rows of a group in order, thread t owns
 * the 8-column groups t + T j (j < NG), row_tree_sum for the two row sums. NG = 2 for rows of
 * <= 4096 columns, 4 for <= 8192. Shapes: cols % 8 == 0, 16-byte aligned tensors; with a
 * stored copy, rows of whole power-of-two blocks of 4/8-bit codes (fz_fast_dequant) and scale
 * (zero) planes aligned to 4 bytes (a bf16 scale is taken from its aligned 4-byte word, which
 * for the last block of an odd count reaches 2 bytes past the plane, inside its allocation).
 * AGOQ_F6=1 (A/B): the two row sums with one barrier per row instead of three
 * (row_tree_sum_1bar, the same bits). AGOQ_F8=1 (A/B, issue 15's fourth round): the same, and
 * the rows pipelined: row r + 1's first pass and warp trees run before row r's second pass, so
 * the shuffle latency and the barrier's wait for the slowest warp overlap with independent work
 * (the CTA-per-row-group structure leaves ~4 CTAs per SM at ~512 groups, each a chain of
 * rows: the latency per row, not the ~25-30 instructions per element, is the limit; 0.85 of
 * copy allows ~60). AGOQ_RMS_KEEP (nineteenth and twentieth sessions; 0 never, 1 always, 2 the
 * default: with a stored copy, not from bf16): the second pass reuses the first's decoded inputs
 * (kept in registers across the row sums), w loaded once, F6's one-barrier row sums; it takes
 * precedence over AGOQ_F8 / AGOQ_F6. On the H200 at 44fd46e (FP4 E2M1/128, 4096 columns) it
 * took the fused backward from 0.63 / 0.70 / 0.72 to 0.69 / 0.78 / 0.81 of copy at 256 MiB / 1
 * / 4 GiB and the bf16 one from 0.79 / 0.84 / 0.87 down to 0.73 / 0.80 / 0.82, hence 2; its first
 * form (645e9e1) changed nothing on an H100, where the kernel is memory-bound (docs/kernels.md). */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <utility>

#include "core/check.h"
#include "core/common.h"
#include "kernels/fused/fused_dev.cuh"

#define RMS_STAGES 3 /* shared-memory stages: RMS_STAGES - 1 rows in flight per CTA */
/* AGOQ_RMS_KEEP_STAGES (compile time, 3 or 4; default 3): the stages of the kernels that keep a row's
 * inputs at NG = 2 (the FP4 default's shape), three rows in flight a CTA at 4 (64 KB a CTA, three
 * still resident an SM by 80 registers); for the H200, where this backward is latency-bound at
 * 0.79-0.85 of copy (thirty-second session), a variant build for the A/B. The other kernels keep
 * RMS_STAGES (4 stages would cost them a resident CTA). */
#ifndef AGOQ_RMS_KEEP_STAGES
#define AGOQ_RMS_KEEP_STAGES 3
#endif
template <int NG, bool KEEP>
constexpr int rms_stages = (KEEP && NG == 2) ? AGOQ_RMS_KEEP_STAGES : RMS_STAGES;
static_assert(AGOQ_RMS_KEEP_STAGES == 3 || AGOQ_RMS_KEEP_STAGES == 4, "3 or 4 stages");
/* AGOQ_RMS_BWD_FMA (compile time; 1 the default since the thirty-second session, 0 for the A/B
 * build, tools/variant_build.sh nofma=-DAGOQ_RMS_BWD_FMA=0 with VARIANT_HEADERS=fused_rms_bwd.cu):
 * the row sums' terms (x x, (dy w) x), dx = rstd (g - x coef) and the dweight terms dy (x rstd)
 * each by one fused multiply-add, four instructions and four roundings fewer an element; 0: the
 * reference's operations (bit for bit). The same order either way. */
#ifndef AGOQ_RMS_BWD_FMA
#define AGOQ_RMS_BWD_FMA 1
#endif
__device__ __forceinline__ float rb_mac(float acc, float a, float b) { /* acc + a b */
    if constexpr (AGOQ_RMS_BWD_FMA) return __fmaf_rn(a, b, acc);
    else return acc + a * b;
}
__device__ __forceinline__ float rb_dx(float x, float g, float rstd, float coef) {
    if constexpr (AGOQ_RMS_BWD_FMA) return rstd * __fmaf_rn(-x, coef, g);
    else return agoq_rms_dx(x, g, rstd, coef);
}
/* CTAs per SM the kernel is register-bounded for (AGOQ_RMS_STAGED_CTAS, fused.h): 4 (<= 64
 * registers) at NG = 2, where 4 CTAs fit the shared memory (4 x 48 KB); 2 at NG = 4 (2 x 96 KB);
 * the NG = 2 kernels that keep a row's inputs 3 (<= 80 registers: at 64 they spilled 8 bytes) */

/* One stage (one row): per owned group j and thread t, dy's 16 bytes and x's 16 bytes (bf16),
 * or in their place the group's codes (4 / 8 bytes in an 8-byte slot), its scale word and
 * zero-point word (32 NG T bytes either way: 16 KB for NG = 2). */
template <int NG>
struct rms_stage {
    static constexpr int T = AGOQ_ROW_THREADS;
    uint4 dy[NG][T];
    union {
        uint4 x[NG][T];
        struct {
            uint2 c[NG][T];
            uint32_t s[NG][T], z[NG][T];
        } q;
    };
};

/* The aligned 4-byte word of a scale plane holding block blk's scale, and the scale from it. */
__device__ __forceinline__ const uint32_t *fz_scale_word(const uint8_t *plane, size_t blk, int bf16) {
    return bf16 ? (const uint32_t *)(plane + ((blk * 2) & ~(size_t)3)) : (const uint32_t *)(plane + blk * 4);
}
__device__ __forceinline__ float fz_scale_of(uint32_t word, size_t blk, int bf16) {
    return bf16 ? __uint_as_float((blk & 1 ? word >> 16 : word & 0xffffu) << 16) : __uint_as_float(word);
}

template <bool DEQ, int DEC, int BITS, int NG, bool F6 = false, bool F8 = false, bool KEEP = false>
__global__ void __launch_bounds__(AGOQ_ROW_THREADS, AGOQ_RMS_STAGED_CTAS(NG, KEEP))
    rms_bwd_staged_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q, const uint16_t *__restrict__ x,
                          const uint16_t *__restrict__ dy, const uint16_t *__restrict__ w, int rows, int cols,
                          float eps, int rpg, uint16_t *__restrict__ dx, uint16_t *__restrict__ y,
                          float *__restrict__ dw_partial, int log2b, float *__restrict__ dw, int dw_wait) {
    constexpr bool ZEROS = DEQ && DEC == AGOQ_ENC_INT_ASYM;
    using stage_t = rms_stage<NG>;
    extern __shared__ uint4 fz_dyn_smem[];
    stage_t *st = (stage_t *)fz_dyn_smem;
    __shared__ float red[4 * AGOQ_ROW_THREADS / 32]; /* F6, F8: double-buffered (row_tree_sum_1bar) */
    int nrow = 0;                                    /* F6, F8: rows done by this CTA, the buffer's parity */
    (void)nrow;
    __shared__ agoq_smem_table tab;
    if constexpr (DEQ && DEC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int tid = (int)threadIdx.x, ngroups = cols >> 3, ngrp = (rows + rpg - 1) / rpg;
    /* this thread's copies of row r into stage k (one commit group, empty past the group's end) */
    auto issue = [&](int k, int r, int r1) {
        if (r < r1) {
            const size_t o = (size_t)r * (size_t)cols;
#pragma unroll
            for (int j = 0; j < NG; j++) {
                const int g = tid + j * AGOQ_ROW_THREADS;
                if (g >= ngroups) continue;
                const size_t e = o + (size_t)(8 * g);
                agoq_cp_async<16>(&st[k].dy[j][tid], dy + e);
                if constexpr (DEQ) {
                    agoq_cp_async<BITS>(&st[k].q.c[j][tid], q.codes + e * BITS / 8); /* 8 codes: BITS bytes */
                    const size_t blk = e >> log2b;
                    agoq_cp_async<4>(&st[k].q.s[j][tid], fz_scale_word(q.scales, blk, p.bf16_scale));
                    if constexpr (ZEROS) agoq_cp_async<4>(&st[k].q.z[j][tid], fz_scale_word(q.zeros, blk, p.bf16_scale));
                } else {
                    agoq_cp_async<16>(&st[k].x[j][tid], x + e);
                }
            }
        }
        agoq_cp_commit();
    };
    /* group j's 8 input values of the row in stage k */
    auto input = [&](int k, int j, size_t e, float(&v)[8]) {
        if constexpr (DEQ) {
            const size_t blk = e >> log2b;
            const uint2 c = st[k].q.c[j][tid];
            fz_codes cd;
            cd.c = BITS == 4 ? (uint64_t)c.x : ((uint64_t)c.x | (uint64_t)c.y << 32);
            cd.s = fz_scale_of(st[k].q.s[j][tid], blk, p.bf16_scale);
            cd.m = ZEROS ? fz_scale_of(st[k].q.z[j][tid], blk, p.bf16_scale) : 0.0f;
            fz_decode<DEC, BITS>(p, &tab, cd, v);
        } else {
            agoq_bf16x8_to_f32(st[k].x[j][tid], v);
        }
    };
    /* w of group j: an L1 hit after the first row, or (KEEP) loaded once into wq */
    uint4 wq[NG] = {}; /* set below when KEEP (= {}: no nvcc warning 549 where it is not; same PTX) */
    if constexpr (KEEP)
#pragma unroll
        for (int j = 0; j < NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            wq[j] = g < ngroups ? __ldg((const uint4 *)(w + 8 * g)) : make_uint4(0, 0, 0, 0);
        }
    auto weight = [&](int j, int g, float(&wf)[8]) {
        agoq_bf16x8_to_f32(KEEP ? wq[j] : __ldg((const uint4 *)(w + 8 * g)), wf);
    };
    /* the row's first pass: this thread's partials of sum x^2 and sum (dy w) x (row in stage k),
     * its inputs left in v */
    auto pass1 = [&](int k, size_t o, float(&acc)[2], float(&v)[NG][8]) {
        acc[0] = acc[1] = 0.0f;
#pragma unroll
        for (int j = 0; j < NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g >= ngroups) continue;
            float dd[8], wf[8];
            input(k, j, o + (size_t)(8 * g), v[j]);
            agoq_bf16x8_to_f32(st[k].dy[j][tid], dd);
            weight(j, g, wf);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                acc[0] = rb_mac(acc[0], v[j][e], v[j][e]);
                acc[1] = rb_mac(acc[1], dd[e] * wf[e], v[j][e]);
            }
        }
    };
    /* the second pass: dx, y and the dweight partials dw of the row, given its rstd and coef; its
     * inputs decoded again, or (KEEP) the first pass's v */
    auto pass2 = [&](int k, size_t o, float rstd, float coef, float(&dw)[NG][8], float(&v)[NG][8]) {
#pragma unroll
        for (int j = 0; j < NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g >= ngroups) continue;
            float dd[8], wf[8], dxv[8];
            if constexpr (!KEEP) input(k, j, o + (size_t)(8 * g), v[j]);
            agoq_bf16x8_to_f32(st[k].dy[j][tid], dd);
            weight(j, g, wf);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                dxv[e] = rb_dx(v[j][e], dd[e] * wf[e], rstd, coef);
                dw[j][e] = rb_mac(dw[j][e], dd[e], v[j][e] * rstd);
                v[j][e] = agoq_rms_out(v[j][e], rstd, wf[e]);
            }
            fz_store(dx + o + (size_t)(8 * g), agoq_f32x8_to_bf16(dxv));
            fz_store(y + o + (size_t)(8 * g), agoq_f32x8_to_bf16(v[j]));
        }
    };
    auto row_of = [&](int r) { return (size_t)r * (size_t)cols; };
    constexpr int S = rms_stages<NG, KEEP>;
    auto next = [](int k) { return k == S - 1 ? 0 : k + 1; };
    for (int grp = blockIdx.x; grp < ngrp; grp += gridDim.x) { /* CTA-uniform */
        const int r0 = grp * rpg, r1 = min(rows, r0 + rpg);
        float dw[NG][8];
#pragma unroll
        for (int j = 0; j < NG; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) dw[j][e] = 0.0f;
#pragma unroll
        for (int i = 0; i < S - 1; i++) issue(i, r0 + i, r1);
        if constexpr (F8) {
            /* Rows pipelined: while row r + 1's warp sums are in flight (shuffles, the barrier),
             * the CTA runs row r's second pass; one barrier per row. Stages: r (second pass), r + 1
             * (first pass), r + 2 (in flight, into the stage row r - 1 used: only this thread
             * read it). Same operations in the same order per row: the same bits. */
            static_assert(S == 3, "F8: stages of rows r, r + 1, r + 2");
            static_assert(!KEEP, "F8 decodes a row again in its second pass");
            float acc[2], rstd, coef, v[NG][8]; /* v: scratch (pass2 decodes again) */
            agoq_cp_wait<S - 2>(); /* row r0 has landed */
            pass1(0, row_of(r0), acc, v);
            row_sum_post<2>(acc, red, nrow & 1);
            row_sum_finish<2>(acc, red, nrow++ & 1);
            rstd = agoq_rms_rstd(acc[0], cols, eps);
            coef = agoq_rms_coef(acc[1], cols, rstd);
            int k = 0; /* stage of row r */
            for (int r = r0; r < r1; r++) {
                const int kn = next(k);
                issue(next(kn), r + 2, r1);
                agoq_cp_wait<S - 2>(); /* row r + 1 has landed (an empty group past the end) */
                const bool more = r + 1 < r1; /* CTA-uniform */
                if (more) {
                    pass1(kn, row_of(r + 1), acc, v);
                    row_sum_post<2>(acc, red, nrow & 1);
                }
                pass2(k, row_of(r), rstd, coef, dw, v);
                if (more) {
                    row_sum_finish<2>(acc, red, nrow++ & 1);
                    rstd = agoq_rms_rstd(acc[0], cols, eps);
                    coef = agoq_rms_coef(acc[1], cols, rstd);
                }
                k = kn;
            }
        } else {
            int k = 0; /* stage of row r */
            for (int r = r0; r < r1; r++) {
                issue(k == 0 ? S - 1 : k - 1, r + S - 1, r1); /* the stage row r - 1 used */
                agoq_cp_wait<S - 1>(); /* this thread's copies of row r have landed */
                float acc[2], v[NG][8]; /* sum x^2, sum (dy w) x; the row's inputs (KEEP: kept) */
                pass1(k, row_of(r), acc, v);
                if constexpr (F6 || KEEP) row_tree_sum_1bar<2>(acc, red, nrow++ & 1);
                else row_tree_sum<2>(acc, red);
                const float rstd = agoq_rms_rstd(acc[0], cols, eps), coef = agoq_rms_coef(acc[1], cols, rstd);
                pass2(k, row_of(r), rstd, coef, dw, v);
                k = next(k);
            }
        }
        agoq_cp_wait<0>(); /* only empty groups are left; nothing outlives the group */
        float *dst = dw_partial + (size_t)grp * (size_t)cols;
#pragma unroll
        for (int j = 0; j < NG; j++) {
            const int g = tid + j * AGOQ_ROW_THREADS;
            if (g >= ngroups) continue;
            *(float4 *)(dst + 8 * g) = make_float4(dw[j][0], dw[j][1], dw[j][2], dw[j][3]);
            *(float4 *)(dst + 8 * g + 4) = make_float4(dw[j][4], dw[j][5], dw[j][6], dw[j][7]);
        }
    }
    /* The fused dweight reduction (dw set: a cooperative launch, every CTA resident): once every
     * group's partial row is stored, each CTA sums 16-column slices of them in group order into
     * dw through its (now idle) stages, agoq_dw_reduce_cuda's bits (fz_dw_reduce_cols): 256
     * slices at 4096 columns, each CTA's stages holding up to 768 (NG = 2) or 1536 groups at once.
     * Only the CTAs with a slice wait at the grid barrier (AGOQ_DW_FUSE_WAIT=owners): with every
     * CTA polling the barrier word (all), the early finishers of the one wave (its SMs end up to
     * 30% apart) slowed the others' streaming, the bf16 backward at 1 GiB 748 + 7.6 us of
     * reduction -> 772 us under ncu (H100, results/h100/logs/s28_b9580c2_diag/); owners 757 us
     * (s28_31d3537/).
     * Measured there (three rounds, copy ratio at 16 / 64 / 256 MiB / 1 / 4 GiB, fused against
     * after): FP4 backward +0.068 / +0.045 / +0.006 / -0.003 / +0.001, bf16 +0.035 / +0.024 /
     * +0.009 / 0.000 / 0.000. */
    if (dw) {
        constexpr int CW = 16;
        const auto grid = cooperative_groups::this_grid();
        if (dw_wait == 0) {
            grid.sync(); /* every CTA waits (each polls the barrier word) */
        } else { /* only the CTAs with a slice wait; the others arrive and leave */
            auto token = grid.barrier_arrive();
            if (CW * (int)blockIdx.x >= cols) return;
            grid.barrier_wait(std::move(token));
        }
        constexpr int chunk = (int)(rms_stages<NG, KEEP> * sizeof(stage_t) / (CW * sizeof(float)));
        for (int c0 = CW * (int)blockIdx.x; c0 < cols; c0 += CW * (int)gridDim.x)
            fz_dw_reduce_cols<AGOQ_ROW_THREADS, true, CW>(dw_partial, ngrp, cols, dw, c0, (float *)fz_dyn_smem, chunk);
    }
}

/* ---- host side ---- */
template <bool DEQ, int DEC, int BITS, int NG, bool F6, bool F8, bool KEEP>
static void rms_bwd_staged_launch(const agoq_cuda_qparams &p, const agoq_cuda_qtensor &qt, const uint16_t *x,
                                  const uint16_t *dy, const uint16_t *w, int rows, int cols, float eps, int rpg,
                                  uint16_t *dx, uint16_t *y, float *dw_partial, int log2b, float *dw, cudaStream_t s) {
    constexpr auto k = rms_bwd_staged_kernel<DEQ, DEC, BITS, NG, F6, F8, KEEP>;
    constexpr size_t smem = rms_stages<NG, KEEP> * sizeof(rms_stage<NG>); /* 16 KB a stage (NG = 2), 32 KB */
    static unsigned done = 0; /* per instantiation (fz_smem_optin) */
    static int per_sm[32];    /* its resident CTAs an SM per device, queried once (the fused reduction's grid) */
    const unsigned ngrp = (unsigned)((rows + rpg - 1) / rpg);
    if (!dw) {
        fz_smem_optin((const void *)k, smem, &done, NULL);
        k<<<fz_grid_cap(ngrp), AGOQ_ROW_THREADS, smem, s>>>(p, qt, x, dy, w, rows, cols, eps, rpg, dx, y, dw_partial,
                                                            log2b, nullptr, 0);
        return;
    }
    /* one cooperative launch of at most the resident CTAs (the grid-stride loop takes the rest of
     * the groups) */
    const unsigned res = (unsigned)fz_smem_optin((const void *)k, smem, &done, per_sm) * (unsigned)agoq_cuda_sm_count();
    cudaLaunchAttribute coop[1];
    coop[0].id = cudaLaunchAttributeCooperative;
    coop[0].val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(min(fz_grid_cap(ngrp), res));
    cfg.blockDim = dim3(AGOQ_ROW_THREADS);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = coop;
    cfg.numAttrs = 1;
    cudaCheck(cudaLaunchKernelEx(&cfg, k, p, qt, x, dy, w, rows, cols, eps, rpg, dx, y, dw_partial, log2b, dw,
                                 fz_dw_fuse_wait()));
}
/* The launch of <DEQ, DEC, BITS> for NG (ng2: 2, else 4) and the round (AGOQ_RMS_KEEP, then AGOQ_F8,
 * then AGOQ_F6). */
template <bool DEQ, int DEC, int BITS>
static void rms_bwd_staged_pick(bool ng2, const agoq_cuda_qparams &p, const agoq_cuda_qtensor &qt, const uint16_t *x,
                                const uint16_t *dy, const uint16_t *w, int rows, int cols, float eps, int rpg,
                                uint16_t *dx, uint16_t *y, float *dw_partial, int log2b, float *dw, cudaStream_t s) {
    const bool keep = agoq_rmsnorm_bwd_keep(DEQ), f8 = !keep && fz_f8(), f6 = !keep && !f8 && fz_f6();
    auto go = [&](auto ng, auto r6, auto r8, auto kp) {
        rms_bwd_staged_launch<DEQ, DEC, BITS, decltype(ng)::value, decltype(r6)::value != 0, decltype(r8)::value != 0,
                              decltype(kp)::value != 0>(p, qt, x, dy, w, rows, cols, eps, rpg, dx, y, dw_partial, log2b, dw, s);
    };
    using no = agoq_enc_t<0>;
    using yes = agoq_enc_t<1>;
    auto with_ng = [&](auto ng) {
        if (keep) go(ng, no(), no(), yes());
        else if (f8) go(ng, no(), yes(), no());
        else if (f6) go(ng, yes(), no(), no());
        else go(ng, no(), no(), no());
    };
    if (ng2) with_ng(agoq_enc_t<2>());
    else with_ng(agoq_enc_t<4>());
}

bool fz_rms_bwd_staged(const agoq_fq *q, agoq_dqt xq, const uint16_t *x, const uint16_t *dy, const uint16_t *w,
                       int rows, int cols, float eps, int rpg, uint16_t *dx, uint16_t *y, float *dw_partial,
                       float *dw, cudaStream_t s) {
    if (cols % 8 || cols > 4 * AGOQ_ROW_THREADS * 8 || !fz_al16(dy) || !fz_al16(w) || !fz_al16(dx) || !fz_al16(y) ||
        !fz_al16(dw_partial) || fz_no_fast())
        return false;
    const agoq_cuda_qtensor qt = fz_qt(xq, (size_t)rows * (size_t)cols);
    const bool ng2 = AGOQ_RMS_STAGED_NG(cols) == 2;
    if (!q) {
        if (!fz_al16(x)) return false;
        rms_bwd_staged_pick<false, 0, 0>(ng2, agoq_cuda_qparams{}, qt, x, dy, w, rows, cols, eps, rpg, dx, y, dw_partial, 0,
                                         dw, s);
        return true;
    }
    if (cols % q->p.block || !fz_fast_dequant(q->p, xq) || ((uintptr_t)xq.scales & 3u) ||
        (q->p.kind == AGOQ_CODE_INT_ASYM && ((uintptr_t)xq.zeros & 3u)))
        return false;
    const int lb = __builtin_ctz((unsigned)q->p.block);
    fz_dispatch_dequant(q->p, [&](auto dec, auto bits) {
        rms_bwd_staged_pick<true, decltype(dec)::value, decltype(bits)::value>(ng2, q->p, qt, x, dy, w, rows, cols, eps,
                                                                               rpg, dx, y, dw_partial, lb, dw, s);
    });
    return true;
}
