/* The tile kernels' decode side (quant_tile.cuh's layout: vector j of lane l of a tile at
 * element j*32*E + l*E): vector decoders, the block scales of a tile, code loads, and the
 * replicated value table of the 8-bit gradient kernels' table decoders. Bit-exact with
 * agoq_dev_decode (quant_device.cuh). Split from quant_tile.cuh (issue 15, q6) to keep files
 * under ~600 lines; used by quant.cu's tile dequantizer, grad8.cu's tile sources and the
 * fused kernels. */
#ifndef AGOQ_QUANT_TILE_DEC_CUH
#define AGOQ_QUANT_TILE_DEC_CUH
#include "kernels/quant/quant_device.cuh"

#include <type_traits>

#define AGOQ_TILE_U 8 /* 16-byte vectors per lane per tile: 128 bytes of loads in flight per lane */

/* ---- vector decoders: N codes of BITS packed LSB first -> N values (bit-exact with
 * agoq_dev_decode, without its shared-memory table or integer-to-float conversion) ----
 * fp4: two byte permutes look up bytes 2 and 3 of the fp32 magnitudes of 4 codes at once (the
 * other two bytes are zero for all eight), one permute and one mask assemble each value with
 * the code's sign bit, then * s (the reference's (+-v) * s).
 * int: the code lands exactly in 0x4b400000 | code = 1.5 * 2^23 + code, one subtract removes
 * 1.5 * 2^23 (+ the offset). fp8: the hardware pair conversion to fp16, then fp32.
 * RAW: the values before scaling (call with s = 1, m = 0: the integers skip the zero point's add;
 * the 8-bit gradient kernels add them with the scale in one FFMA, grad8.h agoq_dequant_add). */
template <int DEC, int BITS, int N, bool RAW = false>
__device__ __forceinline__ void agoq_tile_decode(const agoq_cuda_qparams &p, const agoq_smem_table *t, uint64_t packed,
                                                 float s, float m, float (&v)[N]) {
    if constexpr (DEC == AGOQ_ENC_FP4) {
#pragma unroll
        for (int q = 0; q < N / 4; q++) {
            const uint32_t c4 = (uint32_t)(packed >> (16 * q)) & 0xffffu, sel = c4 & 0x7777u;
            const uint32_t b3 = __byte_perm(0x3f3f3f00u, 0x40404040u, sel); /* 0, .5, 1, 1.5 | 2, 3, 4, 6 */
            const uint32_t b2 = __byte_perm(0xc0800000u, 0xc0804000u, sel);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const uint32_t hi = __byte_perm(b2, b3, (uint32_t)e << 8 | (4u + e) << 12); /* bytes 2, 3; 0, 1 junk */
                const uint32_t sv = (hi & 0xffff0000u) | ((c4 << (28 - 4 * e)) & 0x80000000u);  /* +- magnitude */
                v[4 * q + e] = __uint_as_float(sv) * s;
            }
        }
    } else if constexpr (DEC == AGOQ_ENC_INT_SYM || DEC == AGOQ_ENC_INT_ASYM) {
        constexpr float kBase = 12582912.0f + (DEC == AGOQ_ENC_INT_SYM ? (float)(1 << (BITS - 1)) : 0.0f);
#pragma unroll
        for (int e = 0; e < N; e++) {
            /* 8-bit codes: one byte permute places code byte e under 0x4b40 (bytes 5, 6, 7 of
             * the pair (word, 0x4b400000)) */
            const uint32_t w = BITS == 8 ? __byte_perm((uint32_t)(packed >> (e / 4 * 32)), 0x4b400000u,
                                                       (uint32_t)(e % 4) | 0x7650u)
                                         : 0x4b400000u | ((uint32_t)(packed >> (e * BITS)) & ((1u << BITS) - 1u));
            const float q = __uint_as_float(w) - kBase;
            v[e] = RAW ? q : DEC == AGOQ_ENC_INT_SYM ? q * s : q * s + m;
        }
    } else if constexpr (DEC == AGOQ_ENC_FP8_E4M3 || DEC == AGOQ_ENC_FP8_E5M2) {
        constexpr __nv_fp8_interpretation_t kind = DEC == AGOQ_ENC_FP8_E5M2 ? __NV_E5M2 : __NV_E4M3;
#pragma unroll
        for (int e = 0; e < N; e += 2) {
            const __half2 h = __half2(__nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(packed >> (8 * e)), kind));
            const float2 f = __half22float2(h);
            v[e] = f.x * s;
            v[e + 1] = f.y * s;
        }
    } else {
#pragma unroll
        for (int e = 0; e < N; e++)
            v[e] = agoq_dev_decode<DEC>(p, t, (uint32_t)(packed >> (e * BITS)) & ((1u << BITS) - 1u), s, m);
    }
}

/* The block scales (and zero points) of one tile, for lanes that decode it: lane l loads
 * those of blocks blk_first + l and, when a tile holds more than 32 blocks (bf16 blocks of
 * 32), blk_first + 32 + l; vector j takes its block's with a shuffle. A tile of U vectors
 * must hold at most 64 blocks (32 * U * E <= 64 * B: the launchers check).  One load per lane and
 * tile instead of one per vector, which kept the load/store queue full. Blocks are powers of
 * two >= 32 (then a vector's lanes never straddle two 32-block halves). */
template <int E, bool ZEROS, int U = AGOQ_TILE_U>
struct agoq_tile_scales {
    static constexpr int NK = (U * E + 31) / 32; /* 32-block halves a tile can hold (blocks >= 32): 1 or 2 */
    float s[NK], m[NK];
    size_t blk_first;
    int log2b;
    __device__ __forceinline__ void load(const agoq_cuda_qparams &p, const uint8_t *scales, const uint8_t *zeros,
                                         size_t e_tile, int log2b_, size_t nblocks, int lane) {
        log2b = log2b_;
        blk_first = e_tile >> log2b;
        constexpr int kTile = 32 * U * E;
        const int tile_blocks = (kTile >> log2b) > 1 ? kTile >> log2b : 1; /* no reads past the tile */
#pragma unroll
        for (int k = 0; k < NK; k++) {
            const size_t blk = blk_first + (size_t)(32 * k + lane);
            const bool need = blk < nblocks && 32 * k + lane < tile_blocks;
            s[k] = need ? agoq_dev_load_scale(scales, blk, p.bf16_scale) : 0.0f;
            m[k] = ZEROS && need ? agoq_dev_load_scale(zeros, blk, p.bf16_scale) : 0.0f;
        }
    }
    /* Scale and zero point of vector j of this lane (every lane of the warp must call it). */
    __device__ __forceinline__ void get(int j, int lane, float &sj, float &mj) const {
        const int rel = (j * 32 * E + lane * E) >> log2b;
        const bool hi = NK > 1 && ((j * 32 * E) >> log2b) >= 32; /* the same for every lane */
        sj = __shfl_sync(0xffffffffu, hi ? s[NK - 1] : s[0], rel & 31);
        mj = ZEROS ? __shfl_sync(0xffffffffu, hi ? m[NK - 1] : m[0], rel & 31) : 0.0f;
    }
};

/* Codes of the vector of N elements at element e0 (N * BITS / 8 bytes, aligned). */
template <int BITS, int N>
__device__ __forceinline__ uint64_t agoq_tile_load_codes(const uint8_t *codes, size_t e0) {
    constexpr int kBytes = N * BITS / 8;
    const uint8_t *src = codes + e0 * BITS / 8;
    if constexpr (kBytes == 1) return *src;
    else if constexpr (kBytes == 2) return *(const uint16_t *)src;
    else if constexpr (kBytes == 4) return *(const uint32_t *)src;
    else {
        const uint2 w = *(const uint2 *)src;
        return (uint64_t)w.x | ((uint64_t)w.y << 32);
    }
}

/* The value table of a table decoder (dyn8: 256 codes) replicated R = AGOQ_VREP times in shared
 * memory, entry c of lane l at [c * R + l % R]. R = 16: the lanes of a half
 * warp read 16 different banks whatever their codes, but lanes l and l + 16 share a bank, so a
 * warp's 32-bit load conflicts 2-way unless their codes have different parities or are equal
 * (on random codes nearly every load takes 2 wavefronts: the reduce core decodes 8 chunks per
 * element, 0.5 shared-memory cycles per element). R = 32 (32 KB: bank = lane, one wavefront
 * whatever the codes) measured slower in the eighth session (issue 15 g8, with the 32-bit LUT:
 * grad8.cu) and was removed in the eleventh; tried again beside the carry form of the 32-bit
 * encode LUT (AGOQ_G8_LUT32; only there: 32 KB beside the 22 KB 8-byte LUT exceed the 48 KB of
 * static shared memory) in the twenty-second session, AGOQ_G8_VREP=16 / 32 / 32 / 16 on an H100
 * (ab051fe, results/h100/logs/s22_ab051fe/): geomean 0.997 over the dyn8 bf16 accumulation and
 * reduce core at 64 MiB .. 4 GiB, so the bank conflicts no longer limit them; removed again.
 * Values are copies: decoding is unchanged bit for bit. Sources with kVrep = AGOQ_VREP (0: none)
 * use it and the CTA's own encode LUT (quant_tile.cuh); the tile kernel stages both (16 KB + the
 * LUT). */
#ifndef AGOQ_VREP /* -DAGOQ_VREP=32: the forty-third session's H200 A/B (vars/vr32), the 32 KB table */
#define AGOQ_VREP 16
#endif
static_assert(AGOQ_VREP == 16 || AGOQ_VREP == 32, "AGOQ_VREP: 16 or 32 replicas");
__device__ __forceinline__ float *agoq_tile_vrep() {
    __shared__ float vrep[256 * AGOQ_VREP];
    return vrep;
}
/* The replicated table staged from one load a code (twenty-second session): warp w loads codes
 * 32 w .. 32 w + 31 (__ldg, one word a lane), then stores their R replicas, 32 consecutive words a
 * store (no bank conflict), each word's value shuffled from the lane that loaded its code. Every
 * CTA of a resident grid stages it at once: the copy it replaces (dst[i] = value[i / R], 16 loads
 * a thread) asked the 32 lines of the 1 KB table for 128 sectors a CTA, this 32. Warp-uniform
 * loop (blockDim.x a multiple of 32); the caller synchronises the CTA before use. */
__device__ __forceinline__ void agoq_tile_stage_vrep(float *vrep, const float *__restrict__ value) {
    constexpr int R = AGOQ_VREP;
    const int lane = (int)(threadIdx.x & 31u);
    for (int c0 = (int)(threadIdx.x & ~31u); c0 < 256; c0 += (int)blockDim.x) {
        const float v = __ldg(value + c0 + lane);
#pragma unroll
        for (int k = 0; k < R; k++) /* word c0 R + 32 k + lane: code c0 + (32 k + lane) / R */
            vrep[c0 * R + 32 * k + lane] = __shfl_sync(0xffffffffu, v, (32 * k + lane) / R);
    }
}
template <class S, class = void>
struct agoq_src_vrep : std::integral_constant<int, 0> {};
template <class S>
struct agoq_src_vrep<S, std::void_t<decltype(S::kVrep)>> : std::integral_constant<int, (int)S::kVrep> {};
/* v = a (+) 8 codes of 8 bits through the replicated table: fmaf(value[c], s, a) each (grad8.h
 * agoq_dequant_add; before the twenty-fourth session value[c] * s, then a separate add: 5
 * instructions a code, now 4). The lane's replica as a 32-bit shared byte address t, then each
 * entry at t + c * 4R: a byte permute and one LEA a code (twenty-third session; from the element
 * index c * R + l % R ptxas made a permute, a shift, a LOP3 and an IMAD: 7 instructions a code
 * with the load, multiply and add, then 5). The dyn8 reduce core on an H100 (8b14893, AGOQ_G8_VDEC 1 / 0 / 2 / 2 / 0 / 1,
 * results/h100/logs/s23_8b14893/): 0.64 / 0.73 / 0.77 / 0.77 -> 0.72 / 0.84 / 0.90 / 0.91 of copy
 * at 64 MiB .. 4 GiB (ncu at 256 MiB: 187M -> 153M instructions, DRAM 64% -> 75%); the bf16
 * accumulation within 0.01. Its A/B's third form (2: the table and the LUT in the rows of a
 * 64 KB dynamic shared region, one permute a code from row 256 c + 4 l, the base folded into
 * LDS [R + UR]) ran 140M instructions but 0.65 / 0.75 / 0.78 / 0.77 (more short-scoreboard
 * stalls, issue slots 51% busy against 63%) and was removed with the knob. */
__device__ __forceinline__ void agoq_tile_vrep8_add(uint64_t packed, float s, int lane, const float (&a)[8],
                                                    float (&v)[8]) {
    constexpr int R = AGOQ_VREP;
    const uint32_t t = (uint32_t)__cvta_generic_to_shared(agoq_tile_vrep() + (lane & (R - 1)));
#pragma unroll
    for (int e = 0; e < 8; e++) {
        const uint32_t c = __byte_perm((uint32_t)(packed >> (e / 4 * 32)), 0u, (uint32_t)(e % 4) | 0x4440u);
        float x;
        asm("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(t + c * (4u * R)));
        v[e] = fmaf(x, s, a[e]); /* grad8.h agoq_dequant_add: one FFMA, the value never rounded alone */
    }
}

#endif
