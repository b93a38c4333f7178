/* AdamW with block-quantized moments in one pass (adamw_q.h). Shape of quant_device.cuh's
 * segment kernel: a block of B <= 256 elements is a warp segment of G = B/8 lanes, a lane owns one
 * group of 8 consecutive elements, 32/G blocks per warp. A lane decodes its gradient, m and v
 * groups, loads 8 master weights, runs adamw_dev.cuh's update, stores p (and bf16 w), and the
 * segment then requantizes m and v: block range by segment reduction, the reference's scale,
 * the shared encoders. Every read of a block precedes the writes of its planes (the reductions
 * come after all loads), so m and v are updated in place. Bytes per element with dyn8 g, m, v:
 * 1 + 2 x (1 + 1) codes + 4 + 4 master + 2 w (+ scales), against the chunked path's ~54. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/optim/adamw_dev.cuh"
#include "kernels/optim/adamw_q.h"
#include "kernels/quant/quant_device.cuh"
#include "kernels/quant/quant_launch.cuh"

namespace {
constexpr int kFp32Grad = -1; /* DECG: the gradient is fp32, not decoded */

/* Segment reduction, encode and store of one quantized moment group (all lanes take part). */
template <int ENC>
__device__ __forceinline__ void requant_group(const agoq_cuda_qparams &pm, const agoq_smem_table *t,
                                              agoq_cuda_qtensor q, const float x[8], int nv, int G, int pos, bool act,
                                              size_t blk, size_t e0) {
    float s, zm, inv;
    agoq_dev_params_seg<ENC>(pm, x, nv, G, pos, &s, &zm, &inv);
    if (!act) return;
    agoq_dev_store_group(q.codes, blk * (size_t)G + (size_t)pos, pm.bits, agoq_dev_encode8<ENC>(pm, t, x, nv, inv, zm, e0));
    if (pos == 0) agoq_dev_store_params(pm, q, blk, s, zm);
}

template <int ENCM, int DECM, int DECG>
__global__ void __launch_bounds__(AGOQ_QUANT_THREADS)
    adamw_q_kernel(agoq_adamw_dev_hp h, agoq_cuda_qparams pm, agoq_cuda_qparams pg, const float *g32,
                   agoq_cuda_qtensor g8, agoq_cuda_qtensor m, agoq_cuda_qtensor v, float *p, uint16_t *w, size_t n,
                   int vec) {
    __shared__ agoq_smem_table tm, tg;
    if constexpr (ENCM == AGOQ_ENC_TABLE || DECM == AGOQ_ENC_TABLE) agoq_dev_load_table(&tm, pm.table);
    if constexpr (DECG == AGOQ_ENC_TABLE) agoq_dev_load_table(&tg, pg.table);
    __syncthreads();
    const size_t B = (size_t)pm.block;
    const int G = pm.block >> 3, bpw = 32 / G, lane = (int)(threadIdx.x & 31u), seg = lane / G, pos = lane - seg * G;
    const size_t nblocks = (n + B - 1) / B, ntasks = (nblocks + (size_t)bpw - 1) / (size_t)bpw;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t task = warp; task < ntasks; task += nwarps) {
        const size_t blk = task * (size_t)bpw + (size_t)seg, e0 = blk * B + (size_t)pos * 8;
        const bool act = blk < nblocks;
        const int nv = act ? agoq_dev_group_valid(e0, n) : 0;
        float g[8] = {0}, mv[8] = {0}, vv[8] = {0}, pv[8] = {0};
        if (nv) {
            if constexpr (DECG == kFp32Grad) agoq_dev_load8(g32, e0, nv, vec, g);
            else agoq_dev_decode_group<DECG>(pg, &tg, g8.codes, g8.scales, g8.zeros, e0 / 8, e0 / (size_t)pg.block, g);
            agoq_dev_decode_group<DECM>(pm, &tm, m.codes, m.scales, m.zeros, blk * (size_t)G + (size_t)pos, blk, mv);
            agoq_dev_decode_group<DECM>(pm, &tm, v.codes, v.scales, v.zeros, blk * (size_t)G + (size_t)pos, blk, vv);
            agoq_dev_load8(p, e0, nv, vec, pv);
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (j < nv) agoq_adamw_elem(h, g[j], pv[j], mv[j], vv[j]);
            agoq_dev_store8(p, e0, nv, vec, pv);
            if (w) agoq_dev_store8(w, e0, nv, vec, pv);
        }
        requant_group<ENCM>(pm, &tm, m, mv, nv, G, pos, act, blk, e0);
        requant_group<ENCM>(pm, &tm, v, vv, nv, G, pos, act, blk, e0);
    }
}

/* Calls f(dec) for the gradient decoders the fused pass instantiates (adamw_q.h's kinds). */
template <class F>
void dispatch_grad(const agoq_qconfig *gc, const agoq_cuda_qparams &pg, F f) {
    if (!gc) f(agoq_enc_t<kFp32Grad>());
    else if (pg.dec == AGOQ_ENC_INT_SYM) f(agoq_enc_t<AGOQ_ENC_INT_SYM>());
    else if (pg.dec == AGOQ_ENC_FP8_E4M3) f(agoq_enc_t<AGOQ_ENC_FP8_E4M3>());
    else f(agoq_enc_t<AGOQ_ENC_TABLE>());
}
} // namespace

extern "C" int agoq_adamw_q_cuda(const agoq_adamw_hp *hp, const agoq_qconfig *gc, const float *g32,
                                 const agoq_cuda_qtensor *g8, const agoq_qconfig *mc, agoq_cuda_qtensor *m,
                                 agoq_cuda_qtensor *v, float *p, uint16_t *w, size_t n, void *stream) {
    const char *fn = "agoq_adamw_q_cuda";
    AGOQ_REQUIRE(hp && hp->step >= 1, "%s: step %d (1-based)", fn, hp ? hp->step : -1);
    AGOQ_REQUIRE(agoq_adamw_q_supported(gc, mc), "%s: unsupported config (moments %s, gradient %s): use the unfused path",
                 fn, mc ? agoq_formats[mc->fmt].name : "none", gc ? agoq_formats[gc->fmt].name : "fp32");
    AGOQ_REQUIRE(m && v && m->n == n && v->n == n && (gc ? g8 && g8->n == n : g32 != NULL),
                 "%s: moments/gradient missing or not of %zu elements", fn, n);
    if (n == 0) return 0;
    AGOQ_REQUIRE(p != NULL, "%s: master weights are NULL", fn);
    if (agoq_cuda_check_qtensor(fn, mc, m) || agoq_cuda_check_qtensor(fn, mc, v) ||
        (gc && agoq_cuda_check_qtensor(fn, gc, g8)))
        return -1;
    agoq_cuda_qparams pm, pg;
    memset(&pg, 0, sizeof pg);
    if (agoq_cuda_qparams_make(mc, &pm) || (gc && agoq_cuda_qparams_make(gc, &pg))) return -1;
    const agoq_cuda_qtensor none = {NULL, NULL, NULL, 0}, gq = gc ? *g8 : none;
    const int vec = (((uintptr_t)p | (uintptr_t)g32) & 15u) == 0 && ((uintptr_t)w & 15u) == 0;
    const agoq_adamw_dev_hp h = agoq_adamw_dev_hp_make(hp);
    const size_t G = (size_t)mc->block / 8, blocks = (n + (size_t)mc->block - 1) / (size_t)mc->block;
    const size_t warps = (blocks + 32 / G - 1) / (32 / G);
    dispatch_grad(gc, pg, [&](auto dg) {
        agoq_dispatch_enc(pm.enc, [&](auto enc) {
            constexpr int E = decltype(enc)::value, D = decltype(dg)::value;
            if constexpr (E == AGOQ_ENC_INT_SYM || E == AGOQ_ENC_FP8_E4M3 || E == AGOQ_ENC_TABLE)
                adamw_q_kernel<E, E, D><<<agoq_grid_for(warps * 32), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(
                    h, pm, pg, g32, gq, *m, *v, p, w, n, vec);
        });
    });
    cudaCheckLaunch();
    return 0;
}
