/* CUDA 8-bit gradient path (grad8.h): micro-batch accumulation and the AGoQ reduce core, each
 * ONE kernel, bit-exact with grad8_ref.c. Both are the generic block-quantize kernels of
 * quant_device.cuh over a value source that decodes the stored planes:
 *   accumulate: v = dequant(acc) + g                         (fp32 add; g fp32 or bf16)
 *   reduce:     v = sum_r dequant(in[r]), r = 0..N-1 in order (fp32, or bf16 after every add)
 * then v is requantized into the output planes (in place for accumulate). Bytes moved per
 * element: accumulate reads bits/8 + sizeof(g) and writes bits/8; reduce reads N*bits/8 and
 * writes bits/8 (+4 with sum_out), plus the scales. */
#include <cuda_runtime.h>
#include <string.h>

#include "harness/check.h"
#include "harness/common.h"
#include "kernels/quant_cuda.h"
#include "kernels/quant_device.cuh"
#include "kernels/quant_launch.cuh"

/* dequant(acc) + g for one group; acc planes are the kernel's output (in place). */
template <int DEC, typename TG>
struct src_accumulate {
    static constexpr bool kTable = DEC == AGOQ_ENC_TABLE;
    const uint8_t *codes, *scales, *zeros;
    const TG *g;
    int vec;
    __device__ __forceinline__ void load(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t grp, size_t blk,
                                         size_t e0, int nvalid, bool, float v[8]) const {
        float d[8], x[8];
        agoq_dev_decode_group<DEC>(p, t, codes, scales, zeros, grp, blk, d);
        agoq_dev_load8(g, e0, nvalid, vec, x);
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = d[j] + x[j];
    }
};

/* sum over the chunks in order; the views travel in the kernel's parameter space. */
struct chunk_view {
    const uint8_t *codes, *scales, *zeros;
};
template <int DEC>
struct src_reduce {
    static constexpr bool kTable = DEC == AGOQ_ENC_TABLE;
    chunk_view in[AGOQ_CUDA_MAX_CHUNKS];
    int nin, bf16_sum, vec_sum;
    float *sum_out;
    __device__ __forceinline__ void load(const agoq_cuda_qparams &p, const agoq_smem_table *t, size_t grp, size_t blk,
                                         size_t e0, int nvalid, bool last, float v[8]) const {
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = 0.0f;
        /* unrolled so several chunks' loads are in flight; the sum order stays r = 0..nin-1 */
#pragma unroll 4
        for (int r = 0; r < nin; r++) {
            float d[8];
            agoq_dev_decode_group<DEC>(p, t, in[r].codes, in[r].scales, in[r].zeros, grp, blk, d);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float s = v[j] + d[j];
                v[j] = bf16_sum ? agoq_round_bf16(s) : s;
            }
        }
        if (last && sum_out) agoq_dev_store8(sum_out, e0, nvalid, vec_sum, v);
    }
};

int agoq_cuda_grad_accumulate(const agoq_qconfig *c, agoq_cuda_qtensor *acc, const float *g_f32,
                              const uint16_t *g_bf16, void *stream) {
    static const char fn[] = "agoq_cuda_grad_accumulate";
    agoq_cuda_qparams p;
    if (agoq_cuda_qparams_make(c, &p) || agoq_cuda_check_qtensor(fn, c, acc)) return -1;
    AGOQ_REQUIRE(acc->n == 0 || g_f32 || g_bf16, "%s: both gradient pointers are NULL", fn);
    if (acc->n == 0) return 0;
    const agoq_cuda_qtensor out = *acc;
    agoq_dispatch_pair(p.enc, p.dec, [&](auto enc, auto dec) {
        constexpr int E = decltype(enc)::value, D = decltype(dec)::value;
        if (g_f32) {
            src_accumulate<D, float> src = {acc->codes, acc->scales, acc->zeros, g_f32, ((uintptr_t)g_f32 & 15u) == 0};
            agoq_launch_quant<E>(p, src, out, stream);
        } else {
            src_accumulate<D, uint16_t> src = {acc->codes, acc->scales, acc->zeros, g_bf16,
                                               ((uintptr_t)g_bf16 & 15u) == 0};
            agoq_launch_quant<E>(p, src, out, stream);
        }
    });
    return 0;
}

int agoq_cuda_grad_reduce(const agoq_qconfig *c, const agoq_cuda_qtensor *in, int nin, agoq_sum_precision prec,
                          agoq_cuda_qtensor *out, float *sum_out, void *stream) {
    static const char fn[] = "agoq_cuda_grad_reduce";
    agoq_cuda_qparams p;
    if (agoq_cuda_qparams_make(c, &p) || agoq_cuda_check_qtensor(fn, c, out)) return -1;
    AGOQ_REQUIRE(nin >= 1 && nin <= AGOQ_CUDA_MAX_CHUNKS, "%s: nin = %d, expected 1..%d", fn, nin, AGOQ_CUDA_MAX_CHUNKS);
    AGOQ_REQUIRE(in != NULL, "%s: input views are NULL", fn);
    AGOQ_REQUIRE(prec == AGOQ_SUM_FP32 || prec == AGOQ_SUM_BF16, "%s: sum precision %d unknown", fn, (int)prec);
    for (int r = 0; r < nin; r++) {
        AGOQ_REQUIRE(in[r].n == out->n, "%s: input %d has %zu elements, output %zu", fn, r, in[r].n, out->n);
        if (agoq_cuda_check_qtensor(fn, c, &in[r])) return -1;
    }
    if (out->n == 0) return 0;
    agoq_dispatch_pair(p.enc, p.dec, [&](auto enc, auto dec) {
        constexpr int E = decltype(enc)::value, D = decltype(dec)::value;
        src_reduce<D> src;
        memset(&src, 0, sizeof src);
        for (int r = 0; r < nin; r++) src.in[r] = {in[r].codes, in[r].scales, in[r].zeros};
        src.nin = nin;
        src.bf16_sum = prec == AGOQ_SUM_BF16;
        src.sum_out = sum_out;
        src.vec_sum = ((uintptr_t)sum_out & 15u) == 0;
        agoq_launch_quant<E>(p, src, *out, stream);
    });
    return 0;
}
