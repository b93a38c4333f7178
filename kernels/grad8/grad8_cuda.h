/* C-callable CUDA kernels of the 8-bit gradient path (grad8.h): micro-batch accumulation and the
 * AGoQ reduce core, on the device qtensors of kernels/quant/quant_cuda.h, bit-exact with
 * grad8_ref.c. Implemented in kernels/grad8/grad8.cu (CUDA=1 builds only). */
#ifndef AGOQ_GRAD8_CUDA_H
#define AGOQ_GRAD8_CUDA_H
#include "kernels/grad8/grad8.h"
#include "kernels/quant/quant_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Micro-batch accumulation in place: acc = Q(dequant(acc) + g), g fp32 (g_f32) or bf16 (g_bf16
 * when g_f32 is NULL), acc->n elements. One kernel. Matches agoq_grad_accumulate_ref. */
int agoq_cuda_grad_accumulate(const agoq_qconfig *c, agoq_cuda_qtensor *acc, const float *g_f32,
                              const uint16_t *g_bf16, void *stream);

/* The AGoQ reduce core, one kernel: out = Q(sum_r dequant(in[r])) over nin <= AGOQ_CUDA_MAX_CHUNKS
 * device views (a host array of views, each of out->n elements; they may point into one
 * receive buffer). sum_out (device fp32, may be NULL) receives the sum. `out` may alias one of
 * the inputs (in-place reduction). Matches agoq_grad_reduce_ref with the same precision. */
#define AGOQ_CUDA_MAX_CHUNKS 64
int agoq_cuda_grad_reduce(const agoq_qconfig *c, const agoq_cuda_qtensor *in, int nin, agoq_sum_precision prec,
                          agoq_cuda_qtensor *out, float *sum_out, void *stream);

#ifdef __cplusplus
}
#endif
#endif
