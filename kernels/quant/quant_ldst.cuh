/* Cache hints of the tile kernels' loads. agoq_prefetch_l2: the issue-15 L2 prefetch of the
 * reduce core (grad8.cu, AGOQ_RED_PF; the RMSNorm forward's, AGOQ_RMS_PF, lost its A/B and was
 * removed in the twelfth session). The load and store cache operators that the tile dequantizer's A/B variants
 * used (.nc.L1::no_allocate, .L2::256B, .cs, .lu loads; .cs, .cg, .L1::no_allocate stores)
 * were removed in the eleventh session together with those variants (quant.cu). agoq_ld_once and
 * the cp.async helpers (moved here from fused_dev.cuh in the forty-fourth session): below. */
#ifndef AGOQ_QUANT_LDST_CUH
#define AGOQ_QUANT_LDST_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "core/knob.h"

/* An L2 prefetch of the 128-byte line holding a (prefetch.global.L2: moves no value). */
__device__ __forceinline__ void agoq_prefetch_l2(const void *a) { asm volatile("prefetch.global.L2 [%0];" ::"l"(a)); }

/* A read-once load of the tile sources' inputs (the quantizers' fp32 / bf16 x, the 8-bit
 * accumulation's new gradient): ld.global.cs (__ldcs: L2 evict-first) or, where the launcher
 * passes nc (warp-uniform), ld.global.nc (__ldg: L2 evict-normal). agoq_ld_nc picks nc for inputs
 * of at least AGOQ_LD_NC_MIB MiB (default 512; 0: every size). H100 A/B of the
 * twenty-sixth session (results/h100/logs/s26_f2086e5_ld/, s26_ldnc/; copy ratio): ld.global.nc
 * +0.016 .. +0.049 at 4 GiB and +0.002 .. +0.039 at 1 GiB for every quantizer and accumulation,
 * but -0.02 in the mean at 256 MiB (to -0.075, the 4-bit quantizers) and to -0.09 at 64 MiB (not
 * profiled; an L2 evict_first policy on ld.global.nc measured the same as .cs at every size, so
 * it is the inputs' L2 priority that decides). */
template <typename T>
__device__ __forceinline__ T agoq_ld_once(const T *p, int nc) {
    return nc ? __ldg(p) : __ldcs(p);
}
static inline int agoq_ld_nc(size_t input_bytes) {
    return input_bytes >= ((size_t)agoq_knob_int("AGOQ_LD_NC_MIB", 512, 0, 65536) << 20);
}
/* ---- cp.async: a thread copies 4, 8 or 16 bytes global -> shared and later waits for its own
 * copies (the staged RMSNorm backward, fused_rms_bwd.cu; the dweight reduction, fused_dev.cuh;
 * grad8.cu's staged reduce core under AGOQ_RED_SMEM) ---- */
__device__ __forceinline__ uint32_t agoq_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
/* to the shared-memory address dst (agoq_smem_addr: a caller that copies to many places computes
 * it once and adds offsets) */
template <int N>
__device__ __forceinline__ void agoq_cp_async_to(uint32_t dst, const void *src) {
    static_assert(N == 4 || N == 8 || N == 16, "cp.async: 4, 8 or 16 bytes");
    if constexpr (N == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
    else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(src), "n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void agoq_cp_async(void *dst, const void *src) {
    agoq_cp_async_to<N>(agoq_smem_addr(dst), src);
}
/* "memory": the stage's shared-memory reads stay between the wait and the next copy into it */
__device__ __forceinline__ void agoq_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void agoq_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
#endif
