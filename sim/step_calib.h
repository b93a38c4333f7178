/* The simulator's inputs read from measured `agoq step` records (results/h200/step_*.json,
 * docs/step.md): what one profiled training step executed, counted the way the step-time model
 * (sim/step_model.h) counts it, and how long each part took.
 *
 * From one record (model card by name, tp, micro_batch, seq, micro_batches, layers,
 * recomputed_layers, op_ms of the profiled step, memory_model.params, grad, moments):
 *   tokens        T = micro_batch x seq per micro-batch
 *   gemm_flops    m (3 L + k) G(T) / tp    G = agoq_layer_gemm_flops_fwd: forward, dgrad + wgrad
 *                                           (2x), and the forward again for k recomputed layers
 *   attn_flops    m (3.5 L + k) A / tp     A = agoq_layer_attn_flops_fwd (causal); flash backward
 *                                           counted as 2.5x forward, the simulator's convention
 *   gemm_ms       op_ms gemm_fwd + gemm_dgrad + gemm_wgrad
 *   attn_ms       op_ms attn_fwd + attn_bwd
 *   opt_ms        op_ms optimizer;  opt_bytes = params x 30 when gradients and moments are fp32
 *                 (fp32 master r/w 8, moments r/w 16, gradient read 4, bf16 weight write 2; the
 *                 simulator's Megatron optimizer pass), else 0 (no bandwidth derived)
 *   other_ms      every other op (norms, RoPE, SwiGLU, quantize/dequantize, gradient storage,
 *                 residuals, stage input): memory-bound, linear in token-layers
 *   token_layers  m (L + k) T: the units other_ms scales with
 *   elem_units    token_layers x (hidden + ffn) / tp: the same, per rank width
 *   op_sum_ms     all ops of the profiled step (a little above step_ms: event pairs)
 * Rates derived from it (the machine file's "derive" specs, sim/machine.h):
 *   gemm_tflops = gemm_flops / gemm_ms / 1e9,  attention_tflops = attn_flops / attn_ms / 1e9,
 *   optimizer_GBps = opt_bytes / opt_ms / 1e6,  elementwise_ns = 1e6 other_ms / elem_units
 *   (take it from bf16 store-all records: the simulator adds quantization traffic on top). */
#ifndef AGOQ_SIM_STEP_CALIB_H
#define AGOQ_SIM_STEP_CALIB_H
#include <cjson/cJSON.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double tokens, token_layers, elem_units, params;
    double gemm_flops, attn_flops, opt_bytes;         /* executed in one profiled step */
    double gemm_ms, attn_ms, opt_ms, other_ms, op_sum_ms, step_ms;
} agoq_step_meas;

/* Reads one measured step record. 0, or -1 when it is not a complete measured record (not
 * measured, did not fit, no or incomplete op profile; an unknown model card also prints why). */
int agoq_step_meas_read(const cJSON *rec, agoq_step_meas *m);

/* derive: "gemm_tflops" | "attention_tflops" | "optimizer_GBps" | "elementwise_ns". The rate of one record, or NaN
 * when the record does not give it (no profile, no fp32 optimizer bytes). */
double agoq_step_meas_derive(const cJSON *rec, const char *derive);
int agoq_step_meas_derive_known(const char *derive); /* 1 for the four names above */

#ifdef __cplusplus
}
#endif
#endif
