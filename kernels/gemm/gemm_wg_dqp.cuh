/* Stored-A prologue of the Hopper GEMM (gemm_wg.cu, agoq_wg_fwd_deqa), decoded off the consumers
 * (AGOQ_WG_DEQ_PRODUCER=1, kernel DQ 4; off by default): the epilogue warps (warps 1-3 of
 * warpgroup 0, 96 threads) decode each stage's codes into a bf16 A tile in shared memory, in the
 * 128-byte-swizzled K-major layout that the plain kernel's TMA writes, and the consumers run the
 * plain kernel's wgmma mainloop (both operands from shared memory) on it. Per k-tile:
 *   TMA codes + B -> full[s] -> decoders: wait for a free bf16 slot (aempty[j]), decode, each
 *   thread fence.proxy.async (its generic writes visible to wgmma's async proxy) and arrive on
 *   afull[j] -> consumers: wait full[s] (B) and afull[j], wgmma -> once those are done (one
 *   k-tile later, or at the tile's end) free the stage (empty[s]) and the slot (aempty[j]).
 * Shared memory: 3 stages of codes + B (40 KB each: the register prologue's ring), 2 bf16 A
 * slots (16 KB each, j = k-tile % 2, so the decoders work one k-tile ahead of the tensor core),
 * the full 128 x 256 C staging tile, 4 mbarriers: 223,264 B (+ 1024 of alignment slack + 3,408
 * static: 227,696 of 232,448); a third slot or a fourth stage does not fit beside the staging
 * tile. Registers: setmaxnreg 136 for warpgroup 0 (producer, decoders), 184 for the consumers.
 * The decoders also remain the epilogue warps: the C of tile t (residual before, store after) is
 * handed over as in the plain kernel, but only once they have decoded the first DQP_SLOTS
 * k-tiles of the next tile, so the consumers start it while C is stored.
 * Values: the standalone decoder's (agoq_dev_load_group, agoq_dev_decode8 with the block's scale
 * and zero point), each rounded once to bf16 by cvt.rn (dqr_pack, as the register prologue: the
 * same bits as agoq_f32_to_bf16 except a NaN's payload); the wgmma are the plain kernel's in the
 * same k order, so C is bit-identical to the other prologues' and to the plain kernel on the
 * dequantized A (tests/cuda/gemm/test_gemm_wg_cuda.c). Decoder thread et (0..95) decodes groups
 * g = et + 96 i of the k-tile (row g / 8, columns 8 (g % 8) .. + 7; 11 or 10 groups), the row's
 * scale loaded a k-tile ahead. Included by gemm_wg.cu only (after gemm_wg_deq.cuh). */
#ifndef AGOQ_GEMM_WG_DQP_CUH
#define AGOQ_GEMM_WG_DQP_CUH

constexpr int DQP_SLOTS = 2;                               /* bf16 A tiles [BM][BK], 16 KB each */
constexpr int DQP_A_OFF = STAGES * DQ_STAGE_BYTES;         /* byte offsets from the ring's start */
constexpr int DQP_C_OFF = DQP_A_OFF + DQP_SLOTS * A_BYTES; /* the C staging tile */
constexpr int DQP_BAR_OFF = DQP_C_OFF + C_BYTES;           /* afull[DQP_SLOTS], aempty[DQP_SLOTS] */
constexpr int DQP_SMEM_BYTES = DQP_BAR_OFF + 2 * DQP_SLOTS * 8 + 1024;
constexpr int DQP_GROUPS = BM * BK / 8;                                  /* 8-code groups a k-tile */
constexpr int DQP_ITERS = (DQP_GROUPS + EPI_THREADS - 1) / EPI_THREADS; /* groups a decoder thread */
/* setmaxnreg counts of this kernel: at the other kernels' 104 the decoders spill (11 groups a
 * thread, unrolled: 12-40 B of spill stores with a single decoder instantiated); at 136 / 184
 * ptxas reports no spills for the kernel (every decoder; the consumers' plain mainloop). */
constexpr int DQP_REGS_WG0 = 136, DQP_REGS_CONSUMER = 184;
static_assert(128 * DQP_REGS_WG0 + 256 * DQP_REGS_CONSUMER <= 384 * 168, "setmaxnreg counts exceed the launch's registers");
static_assert(DQP_SMEM_BYTES + sizeof(agoq_smem_table) + 256 <= 232448, "decoder prologue exceeds 227 KB");
static_assert(DQP_A_OFF % 1024 == 0 && A_BYTES % 1024 == 0, "bf16 A slots must start on 1024 B (swizzle)");

__device__ __forceinline__ uint64_t *dqp_bars(uint8_t *ring) { return reinterpret_cast<uint64_t *>(ring + DQP_BAR_OFF); }
/* By thread 0 before the kernel's fence.mbarrier_init: afull (every decoder thread arrives),
 * aempty (one arrival per consumer warp). */
__device__ __forceinline__ void dqp_init(uint8_t *ring) {
    uint64_t *b = dqp_bars(ring);
    for (int j = 0; j < DQP_SLOTS; j++) {
        mbar_init(saddr(&b[j]), EPI_THREADS);
        mbar_init(saddr(&b[DQP_SLOTS + j]), 8);
    }
}
/* Consumer: waits until k-tile `it` (counted over the CTA's tiles) is decoded; its slot's address. */
__device__ __forceinline__ uint32_t dqp_acquire(uint8_t *ring, uint32_t ring_s, int it) {
    const int j = it % DQP_SLOTS;
    mbar_wait(saddr(&dqp_bars(ring)[j]), (uint32_t)((it / DQP_SLOTS) & 1));
    return ring_s + DQP_A_OFF + j * A_BYTES;
}
/* Consumer warp (one lane), after wgmma.wait: k-tile it's wgmma have read its slot. */
__device__ __forceinline__ void dqp_release(uint8_t *ring, int it) {
    mbar_arrive(saddr(&dqp_bars(ring)[DQP_SLOTS + it % DQP_SLOTS]));
}

/* Scales (and, INT_ASYM, zero points) of decoder thread et's rows of the tile at m0, k-tile at k0
 * (one block per row per k-tile: block >= 64); rows past M keep what they had (zero-fill codes,
 * rows of C never stored). */
template <int DEC>
__device__ __forceinline__ void dqp_scales(const wg_params &p, int m0, int k0, size_t nbpr, int et,
                                           float (&sc)[DQP_ITERS], float (&zc)[DQP_ITERS]) {
#pragma unroll
    for (int i = 0; i < DQP_ITERS; i++) {
        const int g = et + EPI_THREADS * i, row = m0 + (g >> 3);
        if (g >= DQP_GROUPS || row >= p.m) continue;
        const size_t blk = (size_t)row * nbpr + (size_t)(k0 / p.qa.block);
        sc[i] = agoq_dev_load_scale(p.aq.scales, blk, p.qa.bf16_scale);
        if constexpr (DEC == AGOQ_ENC_INT_ASYM) zc[i] = agoq_dev_load_scale(p.aq.zeros, blk, p.qa.bf16_scale);
    }
}
/* Decoder thread et's groups of one k-tile: codes (row pitch BK BITS / 8 bytes) -> bf16 slot.
 * qa: A's parameters with bits = BITS (constant shifts in the shared decoder). */
template <int DEC, int BITS>
__device__ __forceinline__ void dqp_tile(const agoq_cuda_qparams &qa, const agoq_smem_table *tab, const uint8_t *codes,
                                         uint8_t *buf, int et, const float (&sc)[DQP_ITERS], const float (&zc)[DQP_ITERS]) {
#pragma unroll
    for (int i = 0; i < DQP_ITERS; i++) {
        const int g = et + EPI_THREADS * i;
        if (g >= DQP_GROUPS) continue;
        const uint64_t packed = agoq_dev_load_group(codes, (size_t)g, BITS);
        float v[8];
        agoq_dev_decode8<DEC>(qa, tab, packed, sc[i], zc[i], v);
        uint32_t h[4];
#pragma unroll
        for (int e = 0; e < 4; e++) h[e] = dqr_pack(v[2 * e], v[2 * e + 1]);
        dq_put8(saddr(buf), g >> 3, g & 7, h);
    }
}
/* Epilogue of the tile at (m0, n0): wait for the consumers' staged C, store it, free the staging. */
__device__ __forceinline__ void dqp_store(const wg_params &p, const agoq_smem_table *tab, uint16_t *stage, int et,
                                          int m0, int n0) {
    nbar_sync(BAR_FULL, BAR_HANDOFF);
    store_rows<false, BN, 1, true>(p, tab, stage, et >> 5, et & 31, m0, n0, BM);
    nbar_sync(BAR_EPI, EPI_THREADS); /* every epilogue thread is done reading the staging */
}
/* The decoder (= epilogue) warps' whole work, thread et (0..95), decoder DEC on BITS-bit codes.
 * `it` counts k-tiles over the CTA's tiles, as the producer's and the consumers'. */
template <int DEC, int BITS>
__device__ void dqp_decoders(const wg_params &p, const agoq_smem_table *tab, uint8_t *ring, uint64_t *full,
                             uint16_t *stage, int et, int tiles_m, int tiles_n, int ntiles, int ktiles) {
    agoq_cuda_qparams qa = p.qa;
    qa.bits = BITS;
    uint64_t *bars = dqp_bars(ring);
    const size_t nbpr = (size_t)(p.k / p.qa.block);
    float sc[DQP_ITERS], zc[DQP_ITERS];
#pragma unroll
    for (int i = 0; i < DQP_ITERS; i++) sc[i] = zc[i] = 0.0f;
    int it = 0, pm0 = -1, pn0 = 0; /* the tile whose C is stored next (pm0 < 0: none yet) */
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        int m0, n0;
        tile_origin<BN>(t, tiles_m, tiles_n, p.group_m, &m0, &n0);
        dqp_scales<DEC>(p, m0, 0, nbpr, et, sc, zc);
        const int hk = pm0 < 0 ? 0 : min(DQP_SLOTS, ktiles); /* the hand-off: before k-tile hk */
        for (int kt = 0; kt <= ktiles; kt++) {
            if (kt == hk) { /* the previous tile's C out, this tile's residual in, staging free */
                if (pm0 >= 0) dqp_store(p, tab, stage, et, pm0, pn0);
                if (p.r) load_residual<BN>(p, stage, et, m0, n0, BM);
                nbar_arrive(BAR_EMPTY, BAR_HANDOFF);
            }
            if (kt == ktiles) break;
            const int s = it % STAGES, j = it % DQP_SLOTS;
            mbar_wait(saddr(&full[s]), (uint32_t)((it / STAGES) & 1));
            if (it >= DQP_SLOTS) mbar_wait(saddr(&bars[DQP_SLOTS + j]), (uint32_t)((it / DQP_SLOTS - 1) & 1));
            dqp_tile<DEC, BITS>(qa, tab, ring + s * DQ_STAGE_BYTES, ring + DQP_A_OFF + j * A_BYTES, et, sc, zc);
            if (kt + 1 < ktiles) dqp_scales<DEC>(p, m0, (kt + 1) * BK, nbpr, et, sc, zc);
            fence_proxy_async(); /* this thread's bf16 writes visible to the consumers' wgmma */
            mbar_arrive(saddr(&bars[j]));
            it++;
        }
        pm0 = m0;
        pn0 = n0;
    }
    if (pm0 >= 0) dqp_store(p, tab, stage, et, pm0, pn0);
}
/* Kernel DQ 4 only (nothing is instantiated for the others): the decoders for A's decoder and
 * code width (FP4: 4 bits, FP8: 8, the others either). */
template <int DQ>
__device__ __forceinline__ void dqp_run(const wg_params &p, const agoq_smem_table *tab, uint8_t *ring, uint64_t *full,
                                        uint16_t *stage, int et, int tiles_m, int tiles_n, int ntiles, int ktiles) {
    if constexpr (DQ == 4) {
        agoq_dispatch_enc(p.qa.dec, [&](auto k) {
            constexpr int D = decltype(k)::value;
            if constexpr (D == AGOQ_ENC_FP4) dqp_decoders<D, 4>(p, tab, ring, full, stage, et, tiles_m, tiles_n, ntiles, ktiles);
            else if constexpr (D == AGOQ_ENC_FP8_E4M3 || D == AGOQ_ENC_FP8_E5M2)
                dqp_decoders<D, 8>(p, tab, ring, full, stage, et, tiles_m, tiles_n, ntiles, ktiles);
            else if (p.qa.bits == 4) dqp_decoders<D, 4>(p, tab, ring, full, stage, et, tiles_m, tiles_n, ntiles, ktiles);
            else dqp_decoders<D, 8>(p, tab, ring, full, stage, et, tiles_m, tiles_n, ntiles, ktiles);
        });
    }
}
#endif
