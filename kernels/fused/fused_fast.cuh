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
 * unit (ex2.approx, rcp.approx: agoq_fast_ex2 / agoq_fast_rcp) explicitly, only here.
 *
 * The formulas keep the references' structure where it decides NaN/Inf (x * sigmoid(x), the
 * products of the backward in the same order), so both sides give NaN and +-Inf at the same
 * inputs (fused_tol.c requires non-finite results to match exactly):
 *   sigmoid(x)  = 1 / (1 + 2^(-x log2 e))                   (reference: agoq_exp_det, IEEE /)
 *   GELU(x)     = x * sigmoid(2u), u = c (x + a x^3)        (= 0.5 x (1 + tanh u): no cancellation
 *                                                            in 1 + tanh u for x << 0)
 *   GELU'(x)    = s + x (2 s (1 - s) u'),  s = sigmoid(2u), u' = c (1 + 3 a x^2)
 *                                                           (= 0.5 (1 + t) + 0.5 x (1 - t^2) u')
 *   SwiGLU bwd  = agoq_swiglu_bwd with the fast sigmoid. */
#ifndef AGOQ_FUSED_FAST_CUH
#define AGOQ_FUSED_FAST_CUH
#include "kernels/fused/fused_math.h"

/* The special-function unit, one instruction each (ex2.approx.ftz, rcp.approx.ftz: what
 * __expf and __fdividef use, without the denormal fix-ups --ftz=false adds around them; the
 * denormals they would produce only arise where the sigmoid is 0 or 1 to fp32 precision). */
__device__ __forceinline__ float agoq_fast_ex2(float w) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(w));
    return r;
}
__device__ __forceinline__ float agoq_fast_rcp(float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    return r;
}
#define AGOQ_FAST_NLOG2E (-1.4426950408889634f) /* -log2(e) */
/* 1 / (1 + 2^w) with w = -z log2(e): sigmoid(z). w = +Inf (z < -88.7) gives 0 (rcp(Inf) =
 * 0), as the reference does; for 1 + 2^w in (2^126, 2^128) the rcp flushes to 0 where the
 * reference gives a value < 2^-126 (an absolute difference fused_tol.c allows). */
__device__ __forceinline__ float agoq_fast_sigmoid_w(float w) { return agoq_fast_rcp(1.0f + agoq_fast_ex2(w)); }
__device__ __forceinline__ float agoq_fast_sigmoid(float x) { return agoq_fast_sigmoid_w(x * AGOQ_FAST_NLOG2E); }
__device__ __forceinline__ float agoq_fast_silu(float x) { return x * agoq_fast_sigmoid(x); }
/* sigmoid(2u) of GELU, u = c (x + a x^3): w = -2u log2(e) = x (k1 + k2 x^2), k1 = -2 c log2(e),
 * k2 = k1 a (3 instructions; the argument's few extra roundings change e^-2u by a relative
 * |w| 2^-23 at most, far inside fused_tol.c's 2^-16). x = -Inf gives w = +Inf, s = 0 and
 * y = x s = NaN, x = +Inf s = 1, as the reference's 0.5 x (1 + tanh u). */
#define AGOQ_FAST_GELU_K1 (-2.0f * AGOQ_GELU_C * 1.4426950408889634f)
#define AGOQ_FAST_GELU_K2 (AGOQ_FAST_GELU_K1 * AGOQ_GELU_A)
__device__ __forceinline__ float agoq_fast_gelu_sig(float x) {
    return agoq_fast_sigmoid_w(x * __fmaf_rn(AGOQ_FAST_GELU_K2, x * x, AGOQ_FAST_GELU_K1));
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
