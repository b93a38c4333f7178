/* Producer and backward math of the fused CUDA kernels, built for speed (issue 15).
 *
 * What AGoQ stores is the quantized copy of the producer's INPUT (RMSNorm input, SwiGLU input
 * h, GELU input): its codes and scales do not depend on this math and stay bit-exact with the
 * C references. The math here (SiLU, GELU, their derivatives) only makes the bf16 outputs (y,
 * dx, the recomputed y), which are compared with the references within the bounds of
 * kernels/fused/fused_tol.c, derived there from the precision.
 *
 * Why explicit intrinsics instead of per-file nvcc flags: the same translation unit inlines
 * the quantizer (x * (1/s), rintf, the FP4 magic add), which must stay without FMA contraction
 * and with IEEE division; --fmad=true for the file would contract the quantizer too. So every
 * file keeps the Makefile's exact flags and this header asks for FMA (__fmaf_rn) and the fast
 * unit (__expf = ex2.approx of x*log2(e); __fdividef = a * rcp.approx(b)) explicitly, only here.
 *
 * The formulas keep the references' structure where it decides NaN/Inf (x * sigmoid(x), the
 * products of the backward in the same order), so both sides give NaN and +-Inf at the same
 * inputs (fused_tol.c requires non-finite results to match exactly):
 *   sigmoid(x)  = 1 / (1 + e^-x)                            (reference: agoq_exp_det, IEEE /)
 *   GELU(x)     = x * sigmoid(2u), u = c (x + a x^3)        (= 0.5 x (1 + tanh u): no cancellation
 *                                                            in 1 + tanh u for x << 0)
 *   GELU'(x)    = s + x (2 s (1 - s) u'),  s = sigmoid(2u), u' = c (1 + 3 a x^2)
 *                                                           (= 0.5 (1 + t) + 0.5 x (1 - t^2) u')
 *   SwiGLU bwd  = agoq_swiglu_bwd with the fast sigmoid. */
#ifndef AGOQ_FUSED_FAST_CUH
#define AGOQ_FUSED_FAST_CUH
#include "kernels/fused/fused_math.h"

/* 1 / (1 + e^-x). __expf(-x) = +Inf for x < -88.7 gives 0 (rcp(Inf) = 0), as the reference
 * does; for 1 + e^-x in (2^126, 2^128) __fdividef returns 0 where the reference gives a
 * value < 2^-126 (an absolute difference fused_tol.c allows). */
__device__ __forceinline__ float agoq_fast_sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }
__device__ __forceinline__ float agoq_fast_silu(float x) { return x * agoq_fast_sigmoid(x); }
/* sigmoid(2u) of GELU: u = c * (x + a x^3) with x + a x^3 = fma(a x^2, x, x). */
__device__ __forceinline__ float agoq_fast_gelu_sig(float x) {
    const float u = AGOQ_GELU_C * __fmaf_rn(AGOQ_GELU_A * (x * x), x, x);
    return agoq_fast_sigmoid(2.0f * u);
}
__device__ __forceinline__ float agoq_fast_gelu_of(float x, float s) { return x * s; }
__device__ __forceinline__ float agoq_fast_gelu_grad_of(float x, float s) {
    const float du = AGOQ_GELU_C * __fmaf_rn(3.0f * AGOQ_GELU_A, x * x, 1.0f);
    return __fmaf_rn(x, (2.0f * (s * (1.0f - s))) * du, s);
}
__device__ __forceinline__ float agoq_fast_gelu(float x) { return x * agoq_fast_gelu_sig(x); }
/* d_gate = dout * up * silu'(gate), d_up = dout * silu(gate), out = silu(gate) * up. */
__device__ __forceinline__ void agoq_fast_swiglu_bwd(float gate, float up, float dout, float *dgate, float *dup,
                                                     float *out) {
    const float s = agoq_fast_sigmoid(gate), silu = gate * s;
    *dgate = (dout * up) * (s * __fmaf_rn(gate, 1.0f - s, 1.0f));
    *dup = dout * silu;
    *out = silu * up;
}
#endif
