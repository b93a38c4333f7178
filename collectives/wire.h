/* The native reductions' element arithmetic, shared by the cpu backend (comm_cpu.c) and the
 * GPU ring kernels (comm_cuda_local.cu) and the encode / decode kernels (comm_cuda.cu), so that
 * every backend that simulates NCCL's ring computes the same bits by construction.
 *   agoq_dt_load / agoq_dt_store: one element of a wire dtype (fp8: OCP, RNE, saturating, as
 *     quant_math.h defines)
 *   agoq_ring_sum: element i of chunk j's ring sum over N ranks' send buffers: the partial sum
 *     starts at rank j+1, visits j+2, ..., ends at rank j, and is rounded to the wire dtype after
 *     every add (agoq_dt_round: stored and loaded back, what the next hop reads), as NCCL loads,
 *     adds in fp32 and stores in the dtype. */
#ifndef AGOQ_COLL_WIRE_H
#define AGOQ_COLL_WIRE_H
#include <stddef.h>
#include <stdint.h>

#include "collectives/driver.h"
#include "kernels/quant/quant_math.h"

AGOQ_HD float agoq_dt_load(agoq_dtype dt, const void *p, size_t i) {
    if (dt == AGOQ_DT_F32) return ((const float *)p)[i];
    if (dt == AGOQ_DT_BF16) return agoq_bf16_to_f32(((const uint16_t *)p)[i]);
    return agoq_fp8_decode(((const uint8_t *)p)[i], dt == AGOQ_DT_FP8_E5M2);
}

AGOQ_HD void agoq_dt_store(agoq_dtype dt, void *p, size_t i, float v) {
    if (dt == AGOQ_DT_F32) ((float *)p)[i] = v;
    else if (dt == AGOQ_DT_BF16) ((uint16_t *)p)[i] = agoq_f32_to_bf16(v);
    else ((uint8_t *)p)[i] = (uint8_t)agoq_fp8_encode_rne(v, dt == AGOQ_DT_FP8_E5M2);
}

/* v rounded to dt: what agoq_dt_store then agoq_dt_load give back */
AGOQ_HD float agoq_dt_round(agoq_dtype dt, float v) {
    if (dt == AGOQ_DT_F32) return v;
    if (dt == AGOQ_DT_BF16) return agoq_round_bf16(v);
    return agoq_fp8_decode(agoq_fp8_encode_rne(v, dt == AGOQ_DT_FP8_E5M2), dt == AGOQ_DT_FP8_E5M2);
}

AGOQ_HD float agoq_ring_sum(agoq_dtype dt, const void *const *send, int N, int j, size_t i) {
    float acc = agoq_dt_load(dt, send[(j + 1) % N], i);
    for (int k = 2; k <= N; k++) acc = agoq_dt_round(dt, acc + agoq_dt_load(dt, send[(j + k) % N], i));
    return acc;
}
#endif
