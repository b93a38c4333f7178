/* float64 reference of the layouts of gemm_wg.h, one output entry at a time, so the GPU test
 * checks every entry of small shapes and a seeded sample of large ones. The CUDA GEMM
 * accumulates in fp32 (tensor cores, its own order) and rounds once to bf16: the test compares
 * within a bound derived from sum |a||b| (tests/cuda/gemm/test_gemm_wg_cuda.c). */
#include "kernels/gemm/gemm_wg.h"
#include "kernels/quant/quant_math.h"

double agoq_wg_ref_entry(int m, int n, int k, const uint16_t *a, int a_mn, const uint16_t *b, int b_mn,
                         const uint16_t *r, int i, int j, double *mag) {
    double acc = 0.0, s = 0.0;
    for (int t = 0; t < k; t++) {
        const size_t ia = a_mn ? (size_t)t * (size_t)m + (size_t)i : (size_t)i * (size_t)k + (size_t)t;
        const size_t ib = b_mn ? (size_t)t * (size_t)n + (size_t)j : (size_t)j * (size_t)k + (size_t)t;
        const double x = (double)agoq_bf16_to_f32(a[ia]), y = (double)agoq_bf16_to_f32(b[ib]);
        acc += x * y;
        s += x * y < 0 ? -x * y : x * y;
    }
    if (r) {
        const double rv = (double)agoq_bf16_to_f32(r[(size_t)i * (size_t)n + (size_t)j]);
        acc += rv;
        s += rv < 0 ? -rv : rv;
    }
    if (mag) *mag = s;
    return acc;
}

double agoq_wg_ref_bound(double ref, int k, double mag) { return (ref < 0 ? -ref : ref) * 0x1p-8 + (double)k * 0x1p-23 * mag; }
