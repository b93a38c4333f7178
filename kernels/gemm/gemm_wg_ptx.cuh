/* PTX helpers of the Hopper GEMM (gemm_wg.cu): mbarriers, TMA tile loads, 16-byte cp.async,
 * 1-D bulk copies (the epilogue's AGOQ_WG_BULK), cluster multicast, remote arrivals and cluster
 * barriers (AGOQ_WG_CLUSTER=2), named barriers and the wgmma m64n256k16 /
 * m64n192k16 / m64n128k16 bf16 instructions with their shared-memory descriptor.
 * Only gemm_wg.cu includes it; the wgmma / setmaxnreg parts need sm_90a. */
#ifndef AGOQ_GEMM_WG_PTX_CUH
#define AGOQ_GEMM_WG_PTX_CUH
#include <cuda.h>
#include <stdint.h>

__device__ __forceinline__ uint32_t saddr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* ---- mbarrier and TMA ---- */
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* Waits until the phase with this parity has completed (parity 1 on a fresh barrier: at once).
 * A wait that outlives ~2^25 polls (seconds) traps: a broken pipeline fails loudly, not hangs.
 * The default .acquire.cta also serves AGOQ_WG_CLUSTER=2, where the barrier takes the partner's
 * arrivals and multicast copies (as CUTLASS's cluster barriers wait): the copies' bytes are made
 * visible by their complete_tx on this CTA's barrier. The .acquire.cluster form compiled to an L1
 * invalidation (CCTL.IVALL) after every successful poll. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    for (uint32_t polls = 0;; polls++) {
        uint32_t done;
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
        if (done) return;
        if (polls > (1u << 25)) __trap();
    }
}
/* 2-D tile copy global -> shared at coordinates (c0 inner, c1 outer), completing on bar. */
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

/* ---- thread-block clusters (AGOQ_WG_CLUSTER=2: two CTAs along M share the B tile) ---- */
/* The same 2-D copy multicast: the box lands at offset dst of the shared memory of every CTA in
 * cta_mask (bit i: cluster rank i) and completes its bytes on the mbarrier at offset bar of each. */
__device__ __forceinline__ void tma_load_mc(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar,
                                            uint16_t cta_mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
                 : "memory");
}
/* One arrival on the mbarrier at offset bar of cluster CTA `rank` (this one included), with the
 * default .release.cta semantics, as CUTLASS's ClusterBarrier::arrive(cta_id): what it orders is
 * a consumer's wgmma reads of a stage (complete at its wgmma.wait_group) before the partner
 * producer's TMA overwrites that stage. With .release.cluster nvcc 13.0 put MEMBAR.ALL.CTA,
 * MEMBAR.ALL.GPU, ERRBAR and CGAERRBAR before every arrival: two GPU-scope memory barriers per
 * consumer warp and k-tile, where ncu had found 40% of the cluster kernel's stalls waiting on a
 * memory barrier (docs/gemm.md). */
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
    asm volatile("{\n"
                 ".reg .b32 ra;\n"
                 "mapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [ra];\n"
                 "}\n" ::"r"(bar), "r"(rank)
                 : "memory");
}
/* This CTA's rank in its cluster. */
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
/* Every thread of every CTA of the cluster: none passes until all have arrived (release / acquire:
 * what each did before is visible after). Not .aligned: callers may be diverged warps. */
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

/* ---- 1-D bulk copies (16-byte aligned addresses, sizes a multiple of 16) ---- */
/* global -> shared, completing `bytes` of the transaction on mbarrier bar */
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
/* shared -> global in this thread's current bulk group (bulk_commit, bulk_wait_read / bulk_wait) */
__device__ __forceinline__ void bulk_s2g(void *dst, uint32_t src, uint32_t bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* this thread's bulk groups have read their shared memory (it may be overwritten) */
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
/* ... and completed their writes */
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
/* orders this thread's generic-proxy shared-memory accesses before later async-proxy ones */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/* ---- wgmma ---- */
/* Shared-memory matrix descriptor: start, LBO, SBO (bytes, stored >> 4), 128-byte swizzle. */
__device__ __forceinline__ uint64_t sdesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 | 1ull << 62;
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* Keeps the compiler from moving accumulator reads or writes across a wgmma wait. */
template <int N>
__device__ __forceinline__ void acc_fence(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}
/* The fp32 accumulator registers of an m64n128 (64), m64n192 (96) and m64n256 (128) wgmma: their operand
 * numbers %0.. in the instruction string and the matching read-write operand list (the array d
 * of each caller). */
#define AGOQ_WG_ACC64_REGS \
    "%0, %1, %2, %3, %4, %5, %6, %7," \
    "%8, %9, %10, %11, %12, %13, %14, %15," \
    "%16, %17, %18, %19, %20, %21, %22, %23," \
    "%24, %25, %26, %27, %28, %29, %30, %31," \
    "%32, %33, %34, %35, %36, %37, %38, %39," \
    "%40, %41, %42, %43, %44, %45, %46, %47," \
    "%48, %49, %50, %51, %52, %53, %54, %55," \
    "%56, %57, %58, %59, %60, %61, %62, %63"
#define AGOQ_WG_ACC96_REGS AGOQ_WG_ACC64_REGS "," \
    "%64, %65, %66, %67, %68, %69, %70, %71," \
    "%72, %73, %74, %75, %76, %77, %78, %79," \
    "%80, %81, %82, %83, %84, %85, %86, %87," \
    "%88, %89, %90, %91, %92, %93, %94, %95"
#define AGOQ_WG_ACC_REGS AGOQ_WG_ACC96_REGS "," \
    "%96, %97, %98, %99, %100, %101, %102, %103," \
    "%104, %105, %106, %107, %108, %109, %110, %111," \
    "%112, %113, %114, %115, %116, %117, %118, %119," \
    "%120, %121, %122, %123, %124, %125, %126, %127"
/* "+f"(d[i]) .. "+f"(d[i + 15]): sixteen read-write fp32 operands (the index is a constant). */
#define AGOQ_WG_ACC4(d, i) "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#define AGOQ_WG_ACC16(d, i) AGOQ_WG_ACC4(d, i), AGOQ_WG_ACC4(d, (i) + 4), AGOQ_WG_ACC4(d, (i) + 8), AGOQ_WG_ACC4(d, (i) + 12)
#define AGOQ_WG_ACC64_OPERANDS(d) AGOQ_WG_ACC16(d, 0), AGOQ_WG_ACC16(d, 16), AGOQ_WG_ACC16(d, 32), AGOQ_WG_ACC16(d, 48)
#define AGOQ_WG_ACC96_OPERANDS(d) AGOQ_WG_ACC64_OPERANDS(d), AGOQ_WG_ACC16(d, 64), AGOQ_WG_ACC16(d, 80)
#define AGOQ_WG_ACC_OPERANDS(d) AGOQ_WG_ACC96_OPERANDS(d), AGOQ_WG_ACC16(d, 96), AGOQ_WG_ACC16(d, 112)

/* wgmma_N: d[64 x N fragment] += A(64 x 16) B(16 x N), N = 256, 192 (AGOQ_WG_TILE_N=192) or 128
 * (AGOQ_WG_TILE_N=128); TA / TB: the operand is MN-major in shared memory. In the instruction
 * string the NACC accumulators are %0 .., the descriptors %A and %B, the MN-major flags %TAI and
 * %TBI, and %P the scale-d source (1: accumulate). */
#define AGOQ_WG_DEFINE_WGMMA(N, NACC, REGS, OPERANDS, A, B, TAI, TBI, P)                           \
    template <int TA, int TB>                                                                      \
    __device__ __forceinline__ void wgmma_##N(float (&d)[NACC], uint64_t da, uint64_t db) {        \
        asm volatile("{\n"                                                                         \
                     ".reg .pred p;\n"                                                             \
                     "setp.ne.b32 p, %" #P ", 0;\n"                                                \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" REGS             \
                     "}, %" #A ", %" #B ", p, 1, 1, %" #TAI ", %" #TBI ";\n"                       \
                     "}\n"                                                                         \
                     : OPERANDS(d)                                                                 \
                     : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1));                                \
    }
AGOQ_WG_DEFINE_WGMMA(256, 128, AGOQ_WG_ACC_REGS, AGOQ_WG_ACC_OPERANDS, 128, 129, 130, 131, 132)
AGOQ_WG_DEFINE_WGMMA(192, 96, AGOQ_WG_ACC96_REGS, AGOQ_WG_ACC96_OPERANDS, 96, 97, 98, 99, 100)
AGOQ_WG_DEFINE_WGMMA(128, 64, AGOQ_WG_ACC64_REGS, AGOQ_WG_ACC64_OPERANDS, 64, 65, 66, 67, 68)

/* ---- 16-byte asynchronous copies (the residual tile) and named barriers ---- */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
/* Named barrier `id` of `count` threads (a multiple of 32): sync waits, arrive does not. */
__device__ __forceinline__ void nbar_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void nbar_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}
#endif
