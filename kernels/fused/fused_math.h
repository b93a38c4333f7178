/* Scalar math of the fused forward/backward ops (RMSNorm, SwiGLU, GELU): the specification,
 * used by the C references (kernels/fused/<op>_ref.c), the CPU and CUDA training paths
 * (train/), and by the CUDA fused kernels for RMSNorm (same IEEE operations in the same order;
 * built as the Makefile says: -ffp-contract=off; nvcc --fmad=false --prec-div --prec-sqrt
 * --ftz=false; but the forwards' sum of squares and the staged backward's sums, dx and dweight
 * terms by explicit FMA: fused_dev.cuh's fz_sq_acc, fused_rms_bwd.cu's rb_mac). The CUDA fused
 * kernels compute SiLU and GELU with the fast math of fused_fast.cuh instead (issue 15); those
 * and RMSNorm are tested against these within the bounds of fused_tol.c.
 *
 * Why a hand-written exp: CUDA's expf/__expf are not correctly rounded and differ from glibc,
 * so SiLU/GELU built on them cannot be bit-exact with a C reference. agoq_exp_det uses only
 * +, -, *, rintf and exact power-of-two scaling, which are IEEE-exact on both sides. Its error
 * against the true exp is <= 2 ulp for normal results (tests/test_fused_math.c checks it).
 *
 * Reduction order (RMSNorm sums): AGOQ_ROW_THREADS threads per row; thread t owns the 8-column
 * groups g = t, t + T, t + 2T, ... and adds x*x (or a product) for its columns in ascending
 * order into one fp32 partial; the T partials are then summed by agoq_tree_sum: within each
 * warp of 32 a halving tree (p[i] += p[i + 16], then 8, 4, 2, 1: what __shfl_down_sync does),
 * then the same halving tree over the T/32 warp sums. */
#ifndef AGOQ_FUSED_MATH_H
#define AGOQ_FUSED_MATH_H
#include "kernels/quant/quant_math.h"

#define AGOQ_ROW_THREADS 256 /* threads per row in the RMSNorm kernels (a power of two, >= 32) */
#define AGOQ_GROUP 8         /* columns per thread step: one 16-byte bf16 load */

#define AGOQ_GELU_C 0.7978845608f /* sqrt(2/pi) */
#define AGOQ_GELU_A 0.044715f

/* 2^e for e in [-126, 127] (a normal float), by its bits. */
AGOQ_HD float agoq_pow2i(int e) { return agoq_bits_f32((uint32_t)(e + 127) << 23); }

/* exp(x) from basic IEEE operations: x = k ln2 + r (Cody-Waite, ln2 split so k*ln2_hi is
 * exact), exp(r) by a degree-7 Taylor polynomial (|r| <= 0.347: truncation < 0.1 ulp), then
 * times 2^k in two exact steps (the second may round once into the denormal range). */
AGOQ_HD float agoq_exp_det(float x) {
    if (agoq_isnan(x)) return x;
    if (x > 88.72283935546875f) return agoq_bits_f32(0x7f800000u);
    if (x < -103.97208404541015625f) return 0.0f;
    float kf = rintf(x * 1.44269502162933349609f);
    float r = (x - kf * 0.693145751953125f) - kf * 1.42860676533018704e-06f;
    float p = 1.98412701e-04f;     /* 1/7! */
    p = p * r + 1.38888892e-03f;   /* 1/6! */
    p = p * r + 8.33333377e-03f;   /* 1/5! */
    p = p * r + 4.16666679e-02f;   /* 1/4! */
    p = p * r + 1.66666672e-01f;   /* 1/3! */
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int k = (int)kf, k1 = k / 2, k2 = k - k1; /* k in [-150, 128]: both halves are normal exponents */
    return (p * agoq_pow2i(k1)) * agoq_pow2i(k2);
}

AGOQ_HD float agoq_sigmoid(float x) { return 1.0f / (1.0f + agoq_exp_det(-x)); }
AGOQ_HD float agoq_silu(float x) { return x * agoq_sigmoid(x); }
/* d/dx x*s(x) = s + x s (1 - s) = s (1 + x (1 - s)) */
AGOQ_HD float agoq_silu_grad(float x) {
    float s = agoq_sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}
/* tanh(u) = 1 - 2 / (exp(2u) + 1): saturates to +-1 through exp's overflow/underflow. */
AGOQ_HD float agoq_tanh_det(float u) { return 1.0f - 2.0f / (agoq_exp_det(2.0f * u) + 1.0f); }
/* GELU, tanh approximation (Megatron/GPT-2): 0.5 x (1 + tanh(c (x + a x^3))), split at its
 * tanh t = agoq_gelu_tanh(x) so that a backward needing both GELU and its derivative computes
 * t once (agoq_gelu_of / agoq_gelu_grad_of: the same operations as agoq_gelu / agoq_gelu_grad). */
AGOQ_HD float agoq_gelu_tanh(float x) { return agoq_tanh_det(AGOQ_GELU_C * (x + AGOQ_GELU_A * (x * x * x))); }
AGOQ_HD float agoq_gelu_of(float x, float t) { return 0.5f * x * (1.0f + t); }
AGOQ_HD float agoq_gelu_grad_of(float x, float t) {
    float du = AGOQ_GELU_C * (1.0f + 3.0f * AGOQ_GELU_A * (x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * ((1.0f - t * t) * du);
}
AGOQ_HD float agoq_gelu(float x) { return agoq_gelu_of(x, agoq_gelu_tanh(x)); }
AGOQ_HD float agoq_gelu_grad(float x) { return agoq_gelu_grad_of(x, agoq_gelu_tanh(x)); }

/* RMSNorm per-row scalars: rstd = 1 / sqrt(sum_sq / C + eps) (IEEE sqrt and division, not
 * rsqrtf), and the backward coefficient (dot / C) * rstd^2 with dot = sum_j g_j x_j. */
AGOQ_HD float agoq_rms_rstd(float sum_sq, int cols, float eps) { return 1.0f / sqrtf(sum_sq / (float)cols + eps); }
AGOQ_HD float agoq_rms_coef(float dot, int cols, float rstd) { return (dot / (float)cols) * (rstd * rstd); }
/* Elementwise RMSNorm pieces: y = (x * rstd) * w; dx = rstd * (g - x * coef) with g = dy * w. */
AGOQ_HD float agoq_rms_out(float x, float rstd, float w) { return (x * rstd) * w; }
AGOQ_HD float agoq_rms_dx(float x, float g, float rstd, float coef) { return rstd * (g - x * coef); }

/* SwiGLU backward for one element: d_gate = dout * up * silu'(gate), d_up = dout * silu(gate). */
AGOQ_HD void agoq_swiglu_bwd(float gate, float up, float dout, float *dgate, float *dup, float *out) {
    float s = agoq_sigmoid(gate), silu = gate * s;
    *dgate = (dout * up) * (s * (1.0f + gate * (1.0f - s)));
    *dup = dout * silu;
    *out = silu * up;
}
#endif
