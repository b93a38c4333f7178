/* Global loads and stores with a chosen cache operator, for the A/B variants of the tile
 * dequantizer (quant.cu, AGOQ_DEQ_VAR). The value moved is the same whatever the operator:
 * only where the line is allocated (L1, L2) and how soon it is evicted differ.
 *
 * Loads (codes and scales; the planes are not written during the kernel):
 *   AGOQ_LD_PLAIN   *p (ld.global; the kernels' loads before issue 15's variants)
 *   AGOQ_LD_NC_NA   ld.global.nc.L1::no_allocate: read-only path, no L1 line allocated
 *   AGOQ_LD_CS      __ldcs (ld.global.cs: streaming, evict first)
 *   AGOQ_LD_LU      __ldlu (ld.global.lu: last use)
 *   AGOQ_LD_NC_256  ld.global.nc.L1::no_allocate.L2::256B: as NC_NA, and L2 fetches the
 *                   whole 256-byte pair of lines around the address (a prefetch of the
 *                   warp's neighbouring code bytes)
 * Stores (16 bytes a lane; the output is written once):
 *   AGOQ_ST_CS      __stcs (st.global.cs: the default)
 *   AGOQ_ST_PLAIN   *p = v (st.global.wb)
 *   AGOQ_ST_NA      st.global.L1::no_allocate
 *   AGOQ_ST_CG      __stcg (st.global.cg: cache in L2, not L1) */
#ifndef AGOQ_QUANT_LDST_CUH
#define AGOQ_QUANT_LDST_CUH
#include <stdint.h>

#include <type_traits>

enum { AGOQ_LD_PLAIN, AGOQ_LD_NC_NA, AGOQ_LD_CS, AGOQ_LD_LU, AGOQ_LD_NC_256 };
enum { AGOQ_ST_CS, AGOQ_ST_PLAIN, AGOQ_ST_NA, AGOQ_ST_CG };

/* One load of T (uint8_t, uint16_t, uint32_t, uint2, uint4 or float) at p with operator LD. */
template <int LD, typename T>
__device__ __forceinline__ T agoq_ld(const T *p) {
    if constexpr (LD == AGOQ_LD_PLAIN) {
        return *p;
    } else if constexpr (LD == AGOQ_LD_CS) {
        return __ldcs(p);
    } else if constexpr (LD == AGOQ_LD_LU) {
        return __ldlu(p);
    } else {
/* the asm string is a literal: one statement per prefix */
#define AGOQ_LD_NC(SFX, ...)                                                          \
    do {                                                                              \
        if constexpr (LD == AGOQ_LD_NC_256) asm("ld.global.nc.L1::no_allocate.L2::256B" SFX : __VA_ARGS__); \
        else asm("ld.global.nc.L1::no_allocate" SFX : __VA_ARGS__);                   \
    } while (0)
        if constexpr (sizeof(T) == 1 || sizeof(T) == 2) {
            unsigned short r;
            if constexpr (sizeof(T) == 1) AGOQ_LD_NC(".u8 %0, [%1];", "=h"(r) : "l"(p));
            else AGOQ_LD_NC(".u16 %0, [%1];", "=h"(r) : "l"(p));
            return (T)r;
        } else if constexpr (sizeof(T) == 4) {
            uint32_t r;
            AGOQ_LD_NC(".b32 %0, [%1];", "=r"(r) : "l"(p));
            if constexpr (std::is_same<T, float>::value) return __uint_as_float(r);
            else return r;
        } else if constexpr (sizeof(T) == 8) {
            uint2 r;
            AGOQ_LD_NC(".v2.b32 {%0, %1}, [%2];", "=r"(r.x), "=r"(r.y) : "l"(p));
            return r;
        } else {
            static_assert(sizeof(T) == 16, "agoq_ld: 1, 2, 4, 8 or 16 bytes");
            uint4 r;
            AGOQ_LD_NC(".v4.b32 {%0, %1, %2, %3}, [%4];", "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
            return r;
        }
#undef AGOQ_LD_NC
    }
}

/* One 16-byte store at p with operator ST (p 16-byte aligned). */
template <int ST>
__device__ __forceinline__ void agoq_st16(void *p, uint4 v) {
    if constexpr (ST == AGOQ_ST_CS) __stcs((uint4 *)p, v);
    else if constexpr (ST == AGOQ_ST_PLAIN) *(uint4 *)p = v;
    else if constexpr (ST == AGOQ_ST_CG) __stcg((uint4 *)p, v);
    else
        asm volatile("st.global.L1::no_allocate.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                     "r"(v.w)
                     : "memory");
}
/* An L2 prefetch of the 128-byte line holding a (prefetch.global.L2: moves no value). */
__device__ __forceinline__ void agoq_prefetch_l2(const void *a) { asm volatile("prefetch.global.L2 [%0];" ::"l"(a)); }
#endif
