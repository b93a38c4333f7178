/* float64 reference of the GEMM layout of gemm.h: C[M,N] = A[M,K] * B[N,K]^T from bf16 inputs.
 * The CUDA GEMM accumulates in fp32 in its own order, so it is compared with a tolerance
 * derived from sum |a||b| (tests/cuda/gemm/test_gemm_cuda.c); its quantized epilogue is exact. */
#include <math.h>

#include "kernels/gemm/gemm.h"
#include "kernels/quant/quant_math.h"

void agoq_gemm_ref(const uint16_t *a, const uint16_t *b, int m, int n, int k, double *c, double *abs_out) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0, mag = 0.0;
            for (int p = 0; p < k; p++) {
                double v = (double)agoq_bf16_to_f32(a[(size_t)i * k + p]) * (double)agoq_bf16_to_f32(b[(size_t)j * k + p]);
                acc += v;
                mag += fabs(v);
            }
            c[(size_t)i * n + j] = acc;
            if (abs_out) abs_out[(size_t)i * n + j] = mag;
        }
}
