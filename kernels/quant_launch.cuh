/* Host-side launch helpers shared by kernels/quant.cu and kernels/grad8.cu: grid sizing,
 * runtime-to-template dispatch of the encoders, and the launch of the generic block-quantize
 * kernels of quant_device.cuh. */
#ifndef AGOQ_QUANT_LAUNCH_CUH
#define AGOQ_QUANT_LAUNCH_CUH
#include <cuda_runtime.h>

#include <type_traits>

#include "harness/check.h"
#include "kernels/quant_device.cuh"

/* SM count of the current device (cached). */
int agoq_cuda_sm_count(void);
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

/* Calls f(agoq_enc_t<enc>()) for a runtime encoder / decoder kind. */
template <class F>
static void agoq_dispatch_enc(int enc, F f) {
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

/* Quantizes the values of src into q (q.n elements) on stream: the segment kernel for blocks
 * of <= 256 elements (4 tasks of loads in flight per warp), the warp-per-block kernel above. */
#define AGOQ_SEG_UNROLL 4
template <int ENC, class Src>
static void agoq_launch_quant(const agoq_cuda_qparams &p, const Src &src, agoq_cuda_qtensor q, void *stream) {
    const size_t nblocks = (q.n + (size_t)p.block - 1) / (size_t)p.block;
    if (p.block <= 256) {
        const size_t bpw = (size_t)(32 / (p.block / 8));
        const size_t tasks = (nblocks + bpw - 1) / bpw, warps = (tasks + AGOQ_SEG_UNROLL - 1) / AGOQ_SEG_UNROLL;
        agoq_quant_seg_kernel<ENC, AGOQ_SEG_UNROLL, Src>
            <<<agoq_grid_for(warps * 32), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(p, src, q);
    } else {
        agoq_quant_warp_kernel<ENC, Src>
            <<<agoq_grid_for(nblocks * 32), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(p, src, q);
    }
    cudaCheckLaunch();
}
#endif
