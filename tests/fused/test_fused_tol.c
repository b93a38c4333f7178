/* The bounds of the fused kernels' fast producer math (kernels/fused/fused_tol.c): bf16 ulp,
 * exact outputs, and one hand-computed GELU / SwiGLU bound each. */
#include <math.h>
#include <stdint.h>

#include "kernels/fused/fused_tol.h"
#include "kernels/quant/quant_math.h"
#include "tests/test.h"

TEST(fused_tol_bf16_ulp) {
    CHECK(agoq_bf16_ulp(1.0) == 0x1p-7 && agoq_bf16_ulp(-1.5) == 0x1p-7 && agoq_bf16_ulp(2.0) == 0x1p-6);
    CHECK(agoq_bf16_ulp(0.0) == 0x1p-133 && agoq_bf16_ulp(0x1p-130) == 0x1p-133);
}

TEST(fused_tol_exact_and_non_finite) {
    const uint16_t ref[] = {0x3f80, 0x7fc0, 0x7f80, 0x0000}, ok[] = {0x3f80, 0x7fc1, 0x7f80, 0x0000};
    const uint16_t off[] = {0x3f81, 0x3f80, 0xff80, 0x0001};
    const float x[] = {1, 1, 1, 1};
    CHECK(agoq_fused_cmp(AGOQ_OUT_EXACT, "t", x, NULL, 1, 4, ref, ok) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_EXACT, "t", x, NULL, 1, 4, ref, off) == 4);
    /* GELU at x = 1: 1 vs 1 + 2^-7 is one ulp, 0 vs the smallest denormal is inside 2^-15 |x|;
     * NaN must meet NaN and Inf the same Inf whatever the bound */
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x, NULL, 1, 4, ref, off) == 2);
}

TEST(fused_tol_gelu_and_swiglu_bounds) {
    /* GELU y at x = 1 (y = 0x3f58 = 0.84375): one bf16 ulp 2^-8 at 0.84 plus 2^-15 |x|. */
    const float x1[] = {1.0f};
    const uint16_t r1[] = {agoq_f32_to_bf16(0.84375f)}, up1[] = {agoq_f32_to_bf16(0.84375f + 0x1p-8f)};
    const uint16_t up2[] = {agoq_f32_to_bf16(0.84375f + 0x1p-7f)};
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x1, NULL, 1, 1, r1, up1) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x1, NULL, 1, 1, r1, up2) == 1);
    /* GELU y at x = -2^10: the absolute term 2^-15 * 2^10 = 2^-5 allows ref 0 vs got -2^-6. */
    const float x2[] = {-1024.0f};
    const uint16_t z[] = {0}, s6[] = {agoq_f32_to_bf16(-0x1p-6f)}, s4[] = {agoq_f32_to_bf16(-0x1p-4f)};
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x2, NULL, 1, 1, z, s6) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_GELU_Y, "t", x2, NULL, 1, 1, z, s4) == 1);
    /* SwiGLU dh, F = 1, h = [gate 3, up 2], dout 4: d_gate term 4 d |4 * 2| (1 + 3) = 2^-9,
     * d_up term 2 d |4 * 3| = 24 * 2^-16; 0 vs 2^-10 passes for d_gate, 0 vs 2^-8 does not. */
    const float h[] = {3.0f, 2.0f};
    const uint16_t dout[] = {agoq_f32_to_bf16(4.0f)}, zz[] = {0, 0};
    const uint16_t g1[] = {agoq_f32_to_bf16(0x1p-10f), 0}, g2[] = {agoq_f32_to_bf16(0x1p-8f), 0};
    CHECK(agoq_fused_cmp(AGOQ_OUT_SWIGLU_DH, "t", h, dout, 1, 1, zz, g1) == 0);
    CHECK(agoq_fused_cmp(AGOQ_OUT_SWIGLU_DH, "t", h, dout, 1, 1, zz, g2) == 1);
}
