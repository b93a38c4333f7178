/* Cache hints of the tile kernels' loads. agoq_prefetch_l2: the issue-15 L2 prefetch of the
 * reduce core (grad8.cu, AGOQ_RED_PF; the RMSNorm forward's, AGOQ_RMS_PF, lost its A/B and was
 * removed in the twelfth session). The load and store cache operators that the tile dequantizer's A/B variants
 * used (.nc.L1::no_allocate, .L2::256B, .cs, .lu loads; .cs, .cg, .L1::no_allocate stores)
 * were removed in the eleventh session together with those variants (quant.cu). */
#ifndef AGOQ_QUANT_LDST_CUH
#define AGOQ_QUANT_LDST_CUH

/* An L2 prefetch of the 128-byte line holding a (prefetch.global.L2: moves no value). */
__device__ __forceinline__ void agoq_prefetch_l2(const void *a) { asm volatile("prefetch.global.L2 [%0];" ::"l"(a)); }
#endif
