/* Host reference of the linear ops of blaslt.h (fwd, dgrad, wgrad): each output element is a
 * double sum of the products of the bf16 inputs (exact products, one rounding per add in double),
 * plus acc_in in double, rounded once to fp32. Row-major; shapes in blaslt.h. */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/blaslt/blaslt.h"
#include "kernels/quant/quant_math.h"

void agoq_linear_ref(int op, int M, int N, int K, const uint16_t *A, const uint16_t *B, const float *acc_in,
                     float *out) {
    /* out [rows, cols], element (r, c) = sum_l a(r, l) b(c, l) with strides per op */
    int rows, cols, len;
    size_t ar, al, bc, bl; /* strides of A over (r, l) and of B over (c, l) */
    switch (op) {
    case AGOQ_LT_FWD: /* out [M, N] = X [M, K] W [N, K]^T */
        rows = M, cols = N, len = K, ar = (size_t)K, al = 1, bc = (size_t)K, bl = 1;
        break;
    case AGOQ_LT_DGRAD: /* out [M, K] = dY [M, N] W [N, K] */
        rows = M, cols = K, len = N, ar = (size_t)N, al = 1, bc = 1, bl = (size_t)K;
        break;
    case AGOQ_LT_WGRAD: /* out [N, K] = dY [M, N]^T X [M, K] */
        rows = N, cols = K, len = M, ar = 1, al = (size_t)N, bc = 1, bl = (size_t)K;
        break;
    default:
        fprintf(stderr, "agoq_linear_ref: op %d is not 0 (fwd), 1 (dgrad) or 2 (wgrad)\n", op);
        abort();
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double s = 0.0;
            for (int l = 0; l < len; l++)
                s += (double)agoq_bf16_to_f32(A[(size_t)r * ar + (size_t)l * al]) *
                     (double)agoq_bf16_to_f32(B[(size_t)c * bc + (size_t)l * bl]);
            const size_t o = (size_t)r * (size_t)cols + (size_t)c;
            if (acc_in) s += (double)acc_in[o];
            out[o] = (float)s;
        }
}
