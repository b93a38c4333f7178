/* Cache hints of the tile kernels' loads. agoq_prefetch_l2: the issue-15 L2 prefetch of the
 * reduce core (grad8.cu, AGOQ_RED_PF; the RMSNorm forward's, AGOQ_RMS_PF, lost its A/B and was
 * removed in the twelfth session). The load and store cache operators that the tile dequantizer's A/B variants
 * used (.nc.L1::no_allocate, .L2::256B, .cs, .lu loads; .cs, .cg, .L1::no_allocate stores)
 * were removed in the eleventh session together with those variants (quant.cu). agoq_ld_once:
 * below. */
#ifndef AGOQ_QUANT_LDST_CUH
#define AGOQ_QUANT_LDST_CUH

/* An L2 prefetch of the 128-byte line holding a (prefetch.global.L2: moves no value). */
__device__ __forceinline__ void agoq_prefetch_l2(const void *a) { asm volatile("prefetch.global.L2 [%0];" ::"l"(a)); }

/* A read-once load of the tile sources' inputs (the quantizers' fp32 / bf16 x, the 8-bit
 * accumulation's new gradient, the fused backward's stored codes). AGOQ_TILE_LD (compile time, an
 * A/B build flag of the twenty-sixth session; no value changes): 0 (default) ld.global.cs
 * (__ldcs), 1 ld.global.nc (__ldg). */
#ifndef AGOQ_TILE_LD
#define AGOQ_TILE_LD 0
#endif
template <typename T>
__device__ __forceinline__ T agoq_ld_once(const T *p) {
    if constexpr (AGOQ_TILE_LD == 1) return __ldg(p);
    else return __ldcs(p);
}
#endif
