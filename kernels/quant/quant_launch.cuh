/* Host-side launch helpers shared by kernels/quant/quant.cu and kernels/grad8/grad8.cu: grid sizing,
 * runtime-to-template dispatch of the encoders (also used inside kernels), and the launch of the
 * generic block-quantize kernels of quant_device.cuh. */
#ifndef AGOQ_QUANT_LAUNCH_CUH
#define AGOQ_QUANT_LAUNCH_CUH
#include <cuda_runtime.h>

#include <type_traits>

#include "core/check.h"
#include "kernels/quant/quant_device.cuh"
#include "kernels/quant/quant_tile.cuh"

/* Plane checks shared by every entry point: 0, or -1 after a one-line message naming fn. */
int agoq_cuda_check_qtensor(const char *fn, const agoq_qconfig *c, const agoq_cuda_qtensor *q);

/* CTAs of AGOQ_QUANT_THREADS for `threads` work items, capped at 8 per SM (the grid-stride
 * loops cover the rest): at least 1. */
static inline unsigned agoq_grid_for(size_t threads) {
    const size_t want = (threads + AGOQ_QUANT_THREADS - 1) / AGOQ_QUANT_THREADS;
    const size_t cap = (size_t)agoq_cuda_sm_count() * 8;
    return (unsigned)(want < 1 ? 1 : (want < cap ? want : cap));
}

template <int V>
using agoq_enc_t = std::integral_constant<int, V>;

/* Calls f(agoq_enc_t<enc>()) for a runtime encoder / decoder kind: on the host, the launch of
 * the kernel for that kind; in a kernel, the encoder or decoder of a kind that is a kernel
 * parameter (warp-uniform). nv_exec_check_disable: f is a host lambda on the host and a device
 * one in kernels, and nvcc would otherwise warn about calling the former from __host__ __device__
 * code (each instantiation only ever runs on f's side). */
#pragma nv_exec_check_disable
template <class F>
__host__ __device__ __forceinline__ void agoq_dispatch_enc(int enc, F f) {
    switch (enc) {
    case AGOQ_ENC_INT_SYM: f(agoq_enc_t<AGOQ_ENC_INT_SYM>()); break;
    case AGOQ_ENC_INT_ASYM: f(agoq_enc_t<AGOQ_ENC_INT_ASYM>()); break;
    case AGOQ_ENC_FP4: f(agoq_enc_t<AGOQ_ENC_FP4>()); break;
    case AGOQ_ENC_FP8_E4M3: f(agoq_enc_t<AGOQ_ENC_FP8_E4M3>()); break;
    case AGOQ_ENC_FP8_E5M2: f(agoq_enc_t<AGOQ_ENC_FP8_E5M2>()); break;
    default: f(agoq_enc_t<AGOQ_ENC_TABLE>()); break;
    }
}

/* Calls f(enc, dec) for the (encoder, decoder) pairs qparams can hold (quant.cu,
 * agoq_cuda_qparams_make): equal kinds; fp4 nearest (arithmetic encoder, table decoder);
 * fp8 stochastic (table encoder, hardware decoder). */
template <class F>
static void agoq_dispatch_pair(int enc, int dec, F f) {
    if (enc == AGOQ_ENC_FP4 && dec == AGOQ_ENC_TABLE) f(agoq_enc_t<AGOQ_ENC_FP4>(), agoq_enc_t<AGOQ_ENC_TABLE>());
    else if (enc == AGOQ_ENC_TABLE && dec == AGOQ_ENC_FP8_E4M3)
        f(agoq_enc_t<AGOQ_ENC_TABLE>(), agoq_enc_t<AGOQ_ENC_FP8_E4M3>());
    else if (enc == AGOQ_ENC_TABLE && dec == AGOQ_ENC_FP8_E5M2)
        f(agoq_enc_t<AGOQ_ENC_TABLE>(), agoq_enc_t<AGOQ_ENC_FP8_E5M2>());
    else agoq_dispatch_enc(dec, [&](auto d) { f(d, d); });
}

/* CTAs for `warps` warps of work, capped at what the kernel keeps resident (grid-stride loops
 * cover the rest): at least 1. */
template <auto Kernel>
static unsigned agoq_grid_resident(size_t warps) {
    static int per_sm = 0; /* one per kernel */
    if (!per_sm) cudaCheck(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, AGOQ_QUANT_THREADS, 0));
    const size_t want = (warps * 32 + AGOQ_QUANT_THREADS - 1) / AGOQ_QUANT_THREADS;
    const size_t cap = (size_t)agoq_cuda_sm_count() * (size_t)(per_sm > 0 ? per_sm : 1);
    return (unsigned)(want < 1 ? 1 : (want < cap ? want : cap));
}

/* 1 when AGOQ_GRID=resident: every agoq_grid_units launch takes agoq_grid_resident's grid (the
 * launch before issue 15's grid measurement, kept for A/B runs). */
int agoq_grid_resident_only(void);

/* CTAs for `warps` warps of work of a tile / unit kernel: one unit per warp, every warp done
 * after its unit (the SMs refill as CTAs retire). Kernels that stage the 22 KB encode LUT
 * (AGOQ_STAGE_TABLE_LUT: table encoders in the quantizers and fused forwards) take the resident
 * grid instead and loop, staging it once per resident CTA. Measured on the H200 (64 MiB-4 GiB,
 * results/h200/logs/grid_ab_s4.log): the fused kernels up to 10% of copy faster in one call
 * (RMSNorm forward + FP4 0.75 -> 0.85 at 4 GiB); against the previous call's resident run the
 * non-table quantizers 1-7% and the dequantizers 2-12% faster (the latter within their
 * run-to-run spread), the NF4 / dyn8 quantizers 1-12% slower. */
template <auto Kernel>
static unsigned agoq_grid_units(size_t warps, bool stages_lut) {
    if (stages_lut || agoq_grid_resident_only()) return agoq_grid_resident<Kernel>(warps);
    const size_t want = (warps * 32 + AGOQ_QUANT_THREADS - 1) / AGOQ_QUANT_THREADS;
    return (unsigned)(want < 1 ? 1 : want);
}

/* q8's contract for a table encoder (quant_q8.h): an identity code map, qmax 1, a LUT that needs
 * no upper clamp */
static inline bool agoq_q8_table_ok(const agoq_cuda_qparams &p) {
    return p.tab_ident && p.qmax == 1.0f && agoq_q8_lut_ok(p.tab_shift, p.tab_hi);
}
/* The 8-bit gradient kernels' dyn8 encoder through q8's 32-bit LUT: AGOQ_G8_LUT32 and q8's contract */
static inline bool agoq_g8_lut32_ok(const agoq_cuda_qparams &p) { return agoq_cuda_g8_lut32() && agoq_q8_table_ok(p); }
/* The tile kernel (quant_tile.cuh) over the whole tiles of q, when the config has a fast path
 * (round to nearest, block 32/64/128/256, 4- or 8-bit codes, the codes plane aligned to one
 * vector's codes). Returns the elements it quantized (0: none, all go to the other kernels).
 * TileSrc::kBits: the only code width the source is used with (0: 4 and 8). */
struct agoq_no_tile_src {
    static constexpr int kVec = 0, kBits = 0, kU = 0, kMinCtas = 0;
};
template <int ENC, class TileSrc>
static size_t agoq_launch_quant_tiles(const agoq_cuda_qparams &p, const TileSrc &src, agoq_cuda_qtensor q,
                                      void *stream) {
    constexpr int E = TileSrc::kVec;
    const int lb = p.block == 32 ? 5 : p.block == 64 ? 6 : p.block == 128 ? 7 : p.block == 256 ? 8 : 0;
    const size_t tile = (size_t)32 * TileSrc::kU * E, ntiles = q.n / tile;
    const size_t vec_code_bytes = (size_t)E * (size_t)p.bits / 8;
    if (p.stochastic || !lb || (p.bits != 4 && p.bits != 8) || (TileSrc::kBits && p.bits != TileSrc::kBits) || ntiles == 0 ||
        ((uintptr_t)q.codes & (vec_code_bytes - 1)) != 0)
        return 0;
    /* 32 replicas of the value table (-DAGOQ_VREP=32, 32 KB) fit the 48 KB of static shared memory
     * only beside the 32-bit LUT (11 KB), not the 8-byte one (22 KB): without it, no tile kernel */
    constexpr bool kVrep32 = agoq_src_vrep<TileSrc>::value > 16;
    if (kVrep32 && !agoq_g8_lut32_ok(p)) return 0;
    auto launch = [&](auto bits, auto log2b) {
        constexpr int BITS = decltype(bits)::value, LOG2B = decltype(log2b)::value;
        /* fp4 / fp8 encoders have one width: skip the instantiations that cannot occur */
        if constexpr ((ENC == AGOQ_ENC_FP4 && BITS != 4) ||
                      ((ENC == AGOQ_ENC_FP8_E4M3 || ENC == AGOQ_ENC_FP8_E5M2) && BITS != 8)) {
            return;
        } else {
            auto go = [&](auto opt) {
                constexpr auto kernel = agoq_quant_tile_kernel<ENC, BITS, LOG2B, TileSrc, decltype(opt)::value>;
                /* resident grids: the CTAs that stage the LUT, and pf's warps (they loop over tiles) */
                constexpr bool kResident = ENC == AGOQ_ENC_TABLE || (decltype(opt)::value & AGOQ_TILE_OPT_PF) != 0;
                kernel<<<agoq_grid_units<kernel>(ntiles, kResident), AGOQ_QUANT_THREADS, 0,
                         (cudaStream_t)stream>>>(p, src, q, ntiles);
            };
            /* The encoders of issue 15's q6 / q7, fixed since the eleventh session (their A/Bs, H200,
             * results/h200/logs/s6_callB_11ce4b2/ and s7_a16a6c6/q7/: faster or equal on every format
             * and size; the knobs AGOQ_Q6_ASYM / _NF4 / _PACK and AGOQ_Q7 that turned them off were
             * removed): asymmetric integers by the magic add for every source; the uniform grid for
             * the quantizers' 4-bit tables that have one (NF4), not for the gradient sources;
             * packed bf16 tiles with q7 for the quantizers' bf16 source. The options still chosen
             * at run time (agoq_cuda_tile_opts_enc): q8, pf and q8's 32-bit LUT. */
            const int opts = agoq_cuda_tile_opts_enc(ENC, BITS);
            constexpr bool kPackable = std::is_same<TileSrc, agoq_tile_src_bf16>::value;
            auto with_pack = [&](auto enc_opt) {
                if constexpr (kPackable) {
                    constexpr int kOpt = decltype(enc_opt)::value | AGOQ_TILE_OPT_PACK | AGOQ_TILE_OPT_Q7;
                    /* q8: asym integers; ident tables off the grid whose LUT needs no upper clamp.
                     * pf: for the asymmetric integer, table and FP4 encoders */
                    constexpr bool kQ8 = ENC == AGOQ_ENC_INT_ASYM || (ENC == AGOQ_ENC_TABLE && !(kOpt & AGOQ_TILE_OPT_GRID));
                    constexpr bool kPf = ENC == AGOQ_ENC_INT_ASYM || ENC == AGOQ_ENC_TABLE || ENC == AGOQ_ENC_FP4;
                    const bool q8 = kQ8 && (opts & AGOQ_TILE_OPT_Q8) &&
                                    (ENC == AGOQ_ENC_INT_ASYM || agoq_q8_table_ok(p));
                    auto with_pf = [&](auto o) {
                        if constexpr (kPf)
                            if (opts & AGOQ_TILE_OPT_PF) return go(agoq_enc_t<decltype(o)::value | AGOQ_TILE_OPT_PF>());
                        go(o);
                    };
                    auto q8_lut = [&](auto o, auto next) { /* the table q8's 32-bit LUT (AGOQ_Q8_LUT32) */
                        if constexpr (ENC == AGOQ_ENC_TABLE)
                            if (opts & AGOQ_TILE_OPT_LUT32) return next(agoq_enc_t<decltype(o)::value | AGOQ_TILE_OPT_LUT32>());
                        next(o);
                    };
                    if constexpr (kQ8)
                        if (q8) return q8_lut(agoq_enc_t<kOpt | AGOQ_TILE_OPT_Q8>(), with_pf);
                    with_pf(agoq_enc_t<kOpt>());
                } else {
                    /* the gradient kernels' dyn8 encoder by q8's 32-bit LUT (AGOQ_G8_LUT32) */
                    if constexpr (ENC == AGOQ_ENC_TABLE && BITS == 8 && agoq_src_vrep<TileSrc>::value != 0)
                        if (agoq_g8_lut32_ok(p))
                            return go(agoq_enc_t<decltype(enc_opt)::value | AGOQ_TILE_OPT_Q8 | AGOQ_TILE_OPT_LUT32>());
                    if constexpr (!kVrep32) go(enc_opt);
                }
            };
            if constexpr (ENC == AGOQ_ENC_INT_ASYM) {
                with_pack(agoq_enc_t<AGOQ_TILE_OPT_ASYM>());
            } else {
                if constexpr (ENC == AGOQ_ENC_TABLE && BITS == 4 && TileSrc::kBits == 0 && !agoq_src_vrep<TileSrc>::value)
                    if (p.tab_gk != 0.0f && p.tab_ident) return with_pack(agoq_enc_t<AGOQ_TILE_OPT_GRID>());
                with_pack(agoq_enc_t<0>());
            }
        }
    };
    auto with_bits = [&](auto bits) {
        if constexpr (TileSrc::kBits != 0 && TileSrc::kBits != decltype(bits)::value) { /* e.g. 8-bit only: */
            return;                                                                    /* not instantiated */
        } else {
            switch (lb) {
            case 5: launch(bits, agoq_enc_t<5>()); break;
            case 6: launch(bits, agoq_enc_t<6>()); break;
            case 7: launch(bits, agoq_enc_t<7>()); break;
            default: launch(bits, agoq_enc_t<8>()); break;
            }
        }
    };
    if (p.bits == 4) with_bits(agoq_enc_t<4>());
    else with_bits(agoq_enc_t<8>());
    cudaCheckLaunch();
    return ntiles * tile;
}

/* Quantizes the values of src into q (q.n elements) on stream: whole tiles through the tile
 * kernel when a tile source is given and the config allows (above), the rest (or everything)
 * through the segment kernel for blocks of <= 256 elements (4 tasks of loads in flight per
 * warp) or the warp-per-block kernel above. */
#define AGOQ_SEG_UNROLL 4
template <int ENC, class Src, class TileSrc = agoq_no_tile_src>
static void agoq_launch_quant(const agoq_cuda_qparams &p, const Src &src, agoq_cuda_qtensor q, void *stream,
                              const TileSrc *tile_src = nullptr) {
    size_t done = 0;
    if constexpr (TileSrc::kVec > 0)
        if (tile_src) done = agoq_launch_quant_tiles<ENC>(p, *tile_src, q, stream);
    if (done == q.n) return;
    const size_t nblocks = (q.n + (size_t)p.block - 1) / (size_t)p.block, blk0 = done / (size_t)p.block;
    if (p.block <= 256) {
        const size_t bpw = (size_t)(32 / (p.block / 8));
        const size_t tasks = (nblocks - blk0 + bpw - 1) / bpw, warps = (tasks + AGOQ_SEG_UNROLL - 1) / AGOQ_SEG_UNROLL;
        agoq_quant_seg_kernel<ENC, AGOQ_SEG_UNROLL, Src>
            <<<agoq_grid_for(warps * 32), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(p, src, q, blk0);
    } else {
        agoq_quant_warp_kernel<ENC, Src>
            <<<agoq_grid_for((nblocks - blk0) * 32), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(p, src, q, blk0);
    }
    cudaCheckLaunch();
}
#endif
