/* The trainer's GPU path: the model of train/model.h run by the step engine (step/model.h) in
 * bf16 with real activation storage, instead of the CPU's fp32 arithmetic. The math is the
 * same model: tied embedding / LM head, the same decoder layers and final norm, the same initial
 * weights (train_weights_draw), mapped onto the engine's layouts:
 *   - weights (in, out) here are (out, in) there: every GEMM weight is transposed;
 *   - RoPE pairs: the CPU rotates interleaved pairs (2i, 2i+1) of a head, the engine's kernel the
 *     halves (i, i + d/2). Permuting each q and k head's output features (CPU feature 2i ->
 *     engine i, 2i+1 -> i + d/2) makes the two rotations the same function; attention scores
 *     are sums over the features of q and k, which the common permutation leaves unchanged;
 *     v and everything after it keep their order.
 * Gradients come back through the inverse map, so everything above the model (the all-reduce,
 * clipping, the learning-rate schedule, the records) is the CPU trainer's code. */
#ifndef AGOQ_TRAIN_ENGINE_H
#define AGOQ_TRAIN_ENGINE_H
#include <stddef.h>
#include <stdint.h>

#include "step/model.h"
#include "train/model.h"
#include "train/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The engine's model of shape c under activation policy p, weights train_weights_draw(c, seed).
 * 0, or -1 after one line (no GPU or cuDNN, a policy the engine cannot store, ...). */
int train_engine_open(const train_cfg *c, const train_act_policy *p, uint64_t seed, agoq_lm **out);
/* Index into the CPU's flat parameter layout (train_tensors, P_* order) of element j of engine
 * tensor i (step/model.h's order). A bijection between the two layouts. */
size_t train_engine_cpu_index(const train_cfg *c, size_t i, size_t j);
/* Layout conversions of a whole parameter set: cpu flat <-> engine tensors (host arrays). */
void train_engine_from_cpu(const train_cfg *c, const agoq_lm *lm, const float *cpu, float *const *eng);
void train_engine_to_cpu(const train_cfg *c, const agoq_lm *lm, float *const *eng, float *cpu);

#ifdef __cplusplus
}
#endif
#endif
