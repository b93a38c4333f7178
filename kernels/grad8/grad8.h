/* 8-bit gradient path (the paper's "local dequantize, sum in fp32, requantize"):
 *   reduce:     N quantized chunks of the same n elements -> dequantize -> sum -> requantize.
 *               This is the core of the AGoQ reduce-scatter: after the all-to-all, rank r holds
 *               N quantized copies of its shard, one from every rank.
 *   accumulate: stored 8-bit gradient + new bf16/fp32 micro-batch gradient -> dequantize, add,
 *               requantize, in place (micro-batch gradient accumulation).
 * Any format of formats.h works (int8, fp8_e4m3, dyn8 are the ones the paper uses).
 * Summation order is fixed so CUDA kernels can match bit for bit: acc = 0; for r in 0..N-1:
 * acc = acc (+) dequant(chunk_r)[i], in fp32, or with AGOQ_SUM_BF16 rounding acc to bf16 after
 * every add (what the paper's released code did). (+) is agoq_dequant_add: the dequantized value
 * is added with the scale in one fused multiply-add, never rounded on its own (the accumulation
 * likewise: dequant(acc) (+) g). */
#ifndef AGOQ_GRAD8_H
#define AGOQ_GRAD8_H
#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AGOQ_SUM_FP32, AGOQ_SUM_BF16 } agoq_sum_precision;

/* The exact sum of element i (what the fused kernels reproduce). */
static inline float agoq_sum_step(float acc, float v, agoq_sum_precision p);

/* out = Q(sum_r dequant(in[r])); also writes the fp32 sum to sum_out when non-NULL. */
void agoq_grad_reduce_ref(const agoq_qconfig *c, const agoq_qtensor *const *in, int nin, size_t n,
                          agoq_sum_precision p, agoq_qtensor *out, float *sum_out);
/* acc = Q(dequant(acc) + g): g is fp32 (g_f32) or bf16 (g_bf16, when g_f32 is NULL). */
void agoq_grad_accumulate_ref(const agoq_qconfig *c, agoq_qtensor *acc, const float *g_f32,
                              const uint16_t *g_bf16, size_t n);

#include "kernels/quant/quant_math.h"
static inline float agoq_sum_step(float acc, float v, agoq_sum_precision p) {
    float s = acc + v;
    return p == AGOQ_SUM_BF16 ? agoq_round_bf16(s) : s;
}

/* x + dequant(code), the step of both kernels (twenty-fourth session; before it the dequantized
 * value v * s (+ m) was rounded, then added): v is the code's value before scaling (the integer,
 * the FP4 / FP8 / table value: agoq_decode_ref with scale 1 and zero point 0, exact), s its
 * block's scale, m its zero point. Symmetric, FP and table formats: fmaf(v, s, x), one rounding;
 * asymmetric integers: fmaf(v, s, x + m). fmaf is exact-then-round in C and on the GPU (FFMA,
 * whatever --fmad says), so the references and the kernels agree bit for bit; on the GPU it
 * saves the multiply of every decoded code (the reduce core decodes 8 an element). */
AGOQ_HD float agoq_dequant_add(float x, float v, float s, float m, int asym) {
    return asym ? fmaf(v, s, x + m) : fmaf(v, s, x);
}

/* The reduce's fp32 sum of asymmetric codes keeps the zero points apart (twenty-fifth session):
 * acc = 0, M = 0; for r in 0..N-1: acc = fmaf(v_r, s_r, acc), M = M + m_r; sum = acc + M. A zero
 * point is one per block, so on the GPU M is one add a vector of 8 codes and chunk instead of one
 * a code (int8_asym's reduce core: 3 instructions a decoded code, as int8's). Both chains are
 * fp32 sums of at most AGOQ_CUDA_MAX_CHUNKS terms: the error stays within 2^-24 of the chains'
 * magnitudes a step (tests/grad8/test_grad8_ref.c). The bf16 sum (every step rounded, the paper's
 * released code) and the accumulation keep fmaf(v, s, x + m). */
AGOQ_HD int agoq_reduce_zeros_apart(int asym, agoq_sum_precision p) { return asym && p == AGOQ_SUM_FP32; }

#ifdef __cplusplus
}
#endif
#endif
