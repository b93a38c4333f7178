/* The flat dequantizer (issue 15, helper d7): an Inductor-style kernel beside the tile
 * dequantizer of quant.cu; the default for every format (AGOQ_DEQ_VAR=1; 0 runs the tile
 * kernel).
 *
 * Why: ncu found the tile dequantizer latency-bound (DRAM 81-82% of peak, SM 22-28%, 38% / 30%
 * achieved occupancy capped by 58 / 69 registers: a warp holds 8 vectors of codes and the
 * tile's scales, handed out by shuffles), while torch.compile's plain elementwise kernel
 * reaches ~0.95 of copy. This kernel keeps nothing live across vectors:
 *  - a one-shot grid of small CTAs (THREADS threads, one launch wave of many CTAs);
 *  - a "unit" is P adjacent output vectors of 16 bytes (P = 1: 4 fp32 / 8 bf16 elements;
 *    P = 2: 32 bytes); thread t of CTA b owns units b * THREADS * U + k * THREADS + t, k < U
 *    (every warp instruction one contiguous run of 32 units);
 *  - its codes as one load as narrow as they come (P * E * BITS / 8 bytes: int8 to fp32 4
 *    bytes, FP4 to bf16 4 bytes, int8 to bf16 pairs 16 bytes), its block's scale (and zero
 *    point) loaded by the thread itself (the lanes of a warp read the same one or two words:
 *    a broadcast, L1 hits after the first warp), all U units' loads issued first;
 *  - the table formats' values (NF4 16, dyn8 256) in a small shared array, staged while the
 *    code loads are in flight (divergent addresses: shared memory, not __constant__, which
 *    serializes them);
 *  - the decode of quant_tile_dec.cuh (agoq_tile_decode: the same statements as the tile
 *    kernel, so bit-identical with it and with quant_ref.c), the table formats value[c] * s
 *    (agoq_dev_decode's expression), bf16 output by agoq_f32x8_to_bf16 (round to nearest even),
 *    one 16-byte store per vector.
 * Configs: those of the tile kernel (blocks powers of two >= 32: a unit never
 * straddles two blocks; 2-, 4- or 8-bit codes), the output 16-byte aligned and the codes plane
 * aligned to a unit's code bytes; the elements past the last whole unit (rounded down to a
 * multiple of 8) go to quant.cu's group kernel. Index math is 64-bit. AGOQ_GRID=resident does
 * not apply (the grid is always one-shot). Checked bit for bit by make test-cuda's
 * cuda_quant_dequant_tile_variants (both kernels, every format, block 32..256, fp32 / bf16 scales
 * and outputs, a codes plane offset by 8 bytes). */
#ifndef AGOQ_QUANT_FLAT_CUH
#define AGOQ_QUANT_FLAT_CUH
#include <cuda_runtime.h>

#include <type_traits>

#include "core/check.h"
#include "kernels/quant/quant_tile.cuh"
#include "kernels/quant/quant_tile_dec.cuh"

/* The shape: THREADS threads a CTA, U units a thread (loads in flight), P 16-byte vectors a
 * unit, MINB CTAs per SM by __launch_bounds__ (16 x 128 threads: <= 32 registers), plain
 * stores. The seventh session's A/B (variants 18-22, results/h200/logs/s7_a16a6c6/)
 * picked this one, variant 21 then, over 4 units a thread (with and without the register bound
 * or streaming stores) and 32-byte units; one unit a thread (the shape of Inductor's elementwise
 * kernel) was tried in the eighth (128 and 256 threads, logs/s8_callB_ca17d3f/deq/) and ninth
 * sessions (256 threads at 8 CTAs, with the benchmark arena, logs/s9_callH_f9_deq23/): never
 * ahead, 0.03-0.14 of copy behind from 256 MiB (each warp's code load is 128 bytes or less,
 * and the loads in flight per SM too few). The losing shapes were removed in the eleventh
 * session. */
#define AGOQ_DEQ_FLAT_THREADS 128
#define AGOQ_DEQ_FLAT_U 2
#define AGOQ_DEQ_FLAT_P 1
#define AGOQ_DEQ_FLAT_MINB 16

/* The codes of the P vectors of E elements at vector v0: one load of P * E * BITS / 8 bytes
 * (1-16, aligned), vector k's codes in c[k] from bit 0 (bits above them are ignored by the
 * decoders). */
template <int BITS, int E, int P>
__device__ __forceinline__ void agoq_flat_load_codes(const uint8_t *codes, size_t v0, uint64_t (&c)[P]) {
    constexpr int kB = E * BITS / 8; /* one vector's code bytes */
    static_assert(P * kB <= 16 && (P == 1 || P * kB < 16 || (P == 2 && kB == 8)), "codes of a unit: 1-16 bytes");
    if constexpr (P * kB == 16) {
        const uint4 w = *(const uint4 *)(codes + v0 * kB);
        c[0] = (uint64_t)w.x | ((uint64_t)w.y << 32);
        c[1] = (uint64_t)w.z | ((uint64_t)w.w << 32);
    } else {
        const uint64_t w = agoq_tile_load_codes<BITS, P * E>(codes, v0 * E);
#pragma unroll
        for (int k = 0; k < P; k++) c[k] = w >> (8 * kB * k);
    }
}

template <int DEC, int BITS, typename T, int THREADS, int U, int P, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) agoq_dequant_flat_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                                          T *__restrict__ y, int log2b, size_t nunits) {
    constexpr int E = 16 / (int)sizeof(T), UE = P * E; /* elements of a vector, of a unit */
    constexpr bool kTable = DEC == AGOQ_ENC_TABLE, kAsym = DEC == AGOQ_ENC_INT_ASYM;
    constexpr int NV = kTable ? 1 << BITS : 1, NT = (NV + THREADS - 1) / THREADS; /* table values; per thread */
    __shared__ float vals[NV];
    float tv[NT];
    if constexpr (kTable) /* issued first, stored after the code loads */
#pragma unroll
        for (int k = 0; k < NT; k++)
            if (NV % THREADS == 0 || k * THREADS + (int)threadIdx.x < NV) tv[k] = p.table->value[k * THREADS + threadIdx.x];
    const size_t u0 = (size_t)blockIdx.x * (THREADS * U) + threadIdx.x;
    const bool full = (size_t)blockIdx.x * (THREADS * U) + THREADS * U <= nunits; /* CTA-uniform */
    uint64_t c[U][P];
    float s[U], m[U];
#pragma unroll
    for (int k = 0; k < U; k++) {
        const size_t u = u0 + (size_t)k * THREADS;
        if (full || u < nunits) {
            agoq_flat_load_codes<BITS, E, P>(q.codes, u * P, c[k]);
            const size_t blk = (u * UE) >> log2b;
            s[k] = agoq_dev_load_scale(q.scales, blk, p.bf16_scale);
            m[k] = kAsym ? agoq_dev_load_scale(q.zeros, blk, p.bf16_scale) : 0.0f;
        }
    }
    if constexpr (kTable) {
#pragma unroll
        for (int k = 0; k < NT; k++)
            if (NV % THREADS == 0 || k * THREADS + (int)threadIdx.x < NV) vals[k * THREADS + threadIdx.x] = tv[k];
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < U; k++) {
        const size_t u = u0 + (size_t)k * THREADS;
        if (!full && u >= nunits) continue;
#pragma unroll
        for (int j = 0; j < P; j++) {
            float v[E];
            if constexpr (kTable) {
#pragma unroll
                for (int e = 0; e < E; e++) v[e] = vals[(uint32_t)(c[k][j] >> (e * BITS)) & (NV - 1u)] * s[k];
            } else {
                agoq_tile_decode<DEC, BITS, E>(p, nullptr, c[k][j], s[k], m[k], v);
            }
            T *dst = y + (u * P + (size_t)j) * E;
            if constexpr (std::is_same<T, float>::value)
                *(uint4 *)dst = make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                                           __float_as_uint(v[3]));
            else
                *(uint4 *)dst = agoq_f32x8_to_bf16(v);
        }
    }
}

/* Launches the flat kernel of decoder D with B-bit codes on the whole units of q (the config
 * checked by agoq_dequantize_flat). Returns the elements done (a multiple of 8), or 0. */
template <int D, int B, typename T>
static size_t agoq_launch_dequant_flat(const agoq_cuda_qparams &p, const agoq_cuda_qtensor *q, T *y, int log2b, void *stream) {
    constexpr int THREADS = AGOQ_DEQ_FLAT_THREADS, U = AGOQ_DEQ_FLAT_U, P = AGOQ_DEQ_FLAT_P;
    constexpr size_t kUE = (size_t)P * (16 / sizeof(T)), kL = kUE > 8 ? kUE : 8; /* done: a multiple of 8 */
    const size_t nunits = q->n / kL * kL / kUE, nctas = (nunits + (THREADS * U) - 1) / (THREADS * U);
    const uintptr_t code_align = (uintptr_t)(kUE * (size_t)B / 8) - 1u;
    if (nunits == 0 || nctas > 0x7fffffffu || ((uintptr_t)q->codes & code_align) != 0) return 0;
    agoq_dequant_flat_kernel<D, B, T, THREADS, U, P, AGOQ_DEQ_FLAT_MINB>
        <<<(unsigned)nctas, THREADS, 0, (cudaStream_t)stream>>>(p, *q, y, log2b, nunits);
    cudaCheckLaunch();
    return nunits * kUE;
}

/* The flat kernel of decoder DEC on q when the config allows (see the top of this file): the
 * elements done (a multiple of 8, from element 0), or 0: the caller's kernels do everything. */
template <int DEC, typename T>
static size_t agoq_dequantize_flat(const agoq_cuda_qparams &p, const agoq_cuda_qtensor *q, T *y, void *stream) {
    const bool pow2 = (p.block & (p.block - 1)) == 0;
    if (!pow2 || p.block < 32 || (p.bits != 2 && p.bits != 4 && p.bits != 8) || ((uintptr_t)y & 15u) != 0) return 0;
    const int log2b = __builtin_ctz((unsigned)p.block);
    /* the decoders and widths the formats have (fp4: the byte-permute decoder, as the tile kernel) */
    if constexpr (DEC == AGOQ_ENC_TABLE)
        if (agoq_formats[p.fmt].enc == AGOQ_ENC_FP4)
            return p.bits == 4 ? agoq_launch_dequant_flat<AGOQ_ENC_FP4, 4>(p, q, y, log2b, stream) : 0;
    if constexpr (DEC == AGOQ_ENC_FP8_E4M3 || DEC == AGOQ_ENC_FP8_E5M2)
        return p.bits == 8 ? agoq_launch_dequant_flat<DEC, 8>(p, q, y, log2b, stream) : 0;
    else if constexpr (DEC == AGOQ_ENC_FP4)
        return p.bits == 4 ? agoq_launch_dequant_flat<DEC, 4>(p, q, y, log2b, stream) : 0;
    else if constexpr (DEC == AGOQ_ENC_TABLE)
        return p.bits == 4 ? agoq_launch_dequant_flat<DEC, 4>(p, q, y, log2b, stream)
               : p.bits == 8 ? agoq_launch_dequant_flat<DEC, 8>(p, q, y, log2b, stream)
                             : 0;
    else
        return p.bits == 2 ? agoq_launch_dequant_flat<DEC, 2>(p, q, y, log2b, stream)
               : p.bits == 4 ? agoq_launch_dequant_flat<DEC, 4>(p, q, y, log2b, stream)
                             : agoq_launch_dequant_flat<DEC, 8>(p, q, y, log2b, stream);
}
#endif
