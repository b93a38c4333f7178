/* Stored-A prologue of the Hopper GEMM (gemm_wg.cu, agoq_wg_fwd_deqa), decoded off the consumers
 * by a fourth warpgroup (AGOQ_WG_DEQ_PRODUCER=1, kernel DQ 4; fortieth session). The smem
 * prologue (gemm_wg_deq.cuh's dqs_mainloop) has each consumer decode its k-tile between its
 * wgmma: about 200 instructions a k-tile, 9.3 cycles apart (ncu, H100, docs/gemm_prologue.md),
 * so the consumer's own instruction stream, not the tensor pipe, sets the k-tile's time. Here the
 * consumers run the plain kernel's mainloop (wait, 4 wgmma from shared memory, commit, wait for
 * the previous k-tile) on bf16 A tiles that 128 decoder threads write ahead of them:
 *   TMA codes + B -> full[s] -> decoders: wait for a free A slot (aempty[j]), decode, each thread
 *   fence.proxy.async (its generic writes visible to wgmma's async proxy), __syncwarp, a lane a
 *   warp arrives on afull[j] -> consumers: wait full[s] (B) and afull[j], wgmma -> once those are
 *   done (a k-tile later, or at the tile's end) free the stage (empty[s]) and the slot (aempty[j]).
 * Decoder thread dt (0..127) decodes row dt of the 128 x 64 k-tile (both halves, gemm_wg_deq.cuh's
 * dq_tile: FP4 by the row's bf16 table) into slot j = k-tile % DQP_SLOTS, the 128-byte-swizzled
 * K-major layout of the plain kernel's TMA A tile; its row's scales stream a block ahead
 * (dq_scale_run). The consumers may so be DQP_SLOTS - 1 k-tiles behind the decoders.
 * The 4-stage smem prologue's layout: 4 stages of 4-bit codes + B (36 KB), DQP_SLOTS = 3 A slots
 * of 16 KB where the smem prologue had three 8 KB tiles per consumer, C staged in halves; 4-bit
 * FP4 and integer codes only (the host's choice). 512 threads; setmaxnreg 80 (producer, epilogue
 * warps), 176 (consumers: the plain mainloop, as the ER = 8 kernels'), 72 (decoders).
 * The values are dq_tile's (the smem prologue's, bit-exact with the standalone decoder rounded
 * once to bf16) and the wgmma the plain kernel's in the same k order, so C is bit-identical to
 * the other prologues' and to the plain kernel on the dequantized A (tests/cuda/gemm/
 * test_gemm_wg_cuda.c). Before the fortieth session kernel 4 was the three epilogue warps
 * decoding 8-code groups by the generic decoder on 3 stages: 0.16x of dequantize + cuBLASLt
 * (H200, 11ce4b2). Measured (H100, results/h100/logs/s40_f2ec4889, docs/gemm_prologue.md): 0.66-0.74
 * of dequantize + cuBLASLt against the smem prologue's 0.87-0.94: the consumers wait for decoded
 * tiles, one decoder warp a scheduler does not keep up with 128 x 192 tiles. Off by default.
 * Included by gemm_wg.cu only (after gemm_wg_deq.cuh). */
#ifndef AGOQ_GEMM_WG_DQP_CUH
#define AGOQ_GEMM_WG_DQP_CUH

constexpr int DQP_SLOTS = AGOQ_WG_DQS_BUFS4;    /* bf16 A tiles [BM][BK], 16 KB each */
constexpr int DQP_THREADS = 512;               /* the decoders: warpgroup 3 */
/* The tile's width: 192 (wgmma m64n192k16, 96 accumulators a consumer thread). With 512 threads
 * a kernel gets 128 registers a thread at launch, and ptxas compiles every instruction within
 * that count whatever setmaxnreg gives a warpgroup later: m64n256k16 with its 128 accumulators
 * needs 154 (ptxas C7602). */
constexpr int DQP_TN = 192;
constexpr int DQP_REGS_WG0 = 80, DQP_REGS_CONSUMER = 176, DQP_REGS_DEC = 72;
static_assert(128 * DQP_REGS_WG0 + 256 * DQP_REGS_CONSUMER + 128 * DQP_REGS_DEC <= 65536,
              "setmaxnreg counts exceed the register file");
static_assert(DQP_SLOTS * A_BYTES == 2 * AGOQ_WG_DQS_BUFS4 * DQ_TILE_BYTES, "the A slots take the smem prologue's tiles' room");

/* By thread 0 before the kernel's fence.mbarrier_init: afull[j] (a lane of each decoder warp
 * arrives), aempty[j] (a lane of each consumer warp). */
__device__ __forceinline__ void dqp_init(uint32_t bars) {
    for (int j = 0; j < DQP_SLOTS; j++) {
        mbar_init(bars + 8u * j, 4);
        mbar_init(bars + 8u * (DQP_SLOTS + j), 8);
    }
}
/* Consumer: waits until k-tile `it` (counted over the CTA's tiles) is decoded; its slot's address. */
__device__ __forceinline__ uint32_t dqp_acquire(uint32_t bars, uint32_t slots, int it) {
    const int j = it % DQP_SLOTS;
    mbar_wait(bars + 8u * j, (uint32_t)((it / DQP_SLOTS) & 1));
    return slots + (uint32_t)(j * A_BYTES);
}
/* Consumer warp (one lane), after wgmma.wait: k-tile it's wgmma have read its slot. */
__device__ __forceinline__ void dqp_release(uint32_t bars, int it) {
    mbar_arrive(bars + 8u * (DQP_SLOTS + it % DQP_SLOTS));
}

/* The decoders' whole work, thread dt (0..127), decoder DEC on 4-bit codes; stages of SB bytes
 * from ring_s, their full barriers at full_s; `it` counts k-tiles over the CTA's tiles, as the
 * producer's and the consumers'. */
template <int DEC, int ST, int SB, int TN>
__device__ void dqp_decoders(const wg_params &p, const agoq_smem_table *tab, uint32_t ring_s, uint32_t full_s,
                             uint32_t bars, uint32_t slots, int dt, int tiles_m, int tiles_n, int ntiles, int ktiles) {
    const tile_walk<TN, 1, false> w(tiles_m, tiles_n, ntiles, p.sk);
    int it = 0;
    for (int t = w.first(); t < w.count; t += w.step()) {
        int m0, n0;
        w.origin(t, p.group_m, &m0, &n0);
        dq_scale_run<DEC> rs(p, m0 + dt);
        for (int kt = 0; kt < ktiles; kt++, it++) {
            const int s = it % ST, j = it % DQP_SLOTS;
            mbar_wait(full_s + 8u * (uint32_t)s, (uint32_t)((it / ST) & 1));
            if (it >= DQP_SLOTS) mbar_wait(bars + 8u * (uint32_t)(DQP_SLOTS + j), (uint32_t)((it / DQP_SLOTS - 1) & 1));
            dq_tile<DEC, 4, 2>(p, tab, ring_s + (uint32_t)(s * SB), slots + (uint32_t)(j * A_BYTES), dt, rs.s, rs.z);
            fence_proxy_async(); /* this thread's bf16 writes visible to the consumers' wgmma */
            rs.next();
            __syncwarp();
            if ((dt & 31) == 0) mbar_arrive(bars + 8u * (uint32_t)j);
        }
    }
}
/* Kernel DQ 4 only (nothing is instantiated for the others): the decoders for A's 4-bit decoder. */
template <int DQ, int ST, int SB, int TN>
__device__ __forceinline__ void dqp_run(const wg_params &p, const agoq_smem_table *tab, uint32_t ring_s, uint32_t full_s,
                                        uint32_t bars, uint32_t slots, int dt, int tiles_m, int tiles_n, int ntiles,
                                        int ktiles) {
    if constexpr (DQ == 4) {
        auto run = [&](auto dec) {
            dqp_decoders<decltype(dec)::value, ST, SB, TN>(p, tab, ring_s, full_s, bars, slots, dt, tiles_m, tiles_n,
                                                           ntiles, ktiles);
        };
        if (p.qa.enc == AGOQ_ENC_FP4) run(agoq_enc_t<AGOQ_ENC_FP4>());
        else if (p.qa.dec == AGOQ_ENC_INT_SYM) run(agoq_enc_t<AGOQ_ENC_INT_SYM>());
        else run(agoq_enc_t<AGOQ_ENC_INT_ASYM>());
    }
}
#endif
