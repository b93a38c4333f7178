/* Layer-aware bit allocation under a per-GPU memory budget.
 *
 * Saved activations are grouped into four layer types (the paper's per-layer error classes:
 * norm, GEMM inputs, activation function, attention). For every pipeline stage and type a
 * storage candidate (bf16 native, fp8, int8, 4-bit, ...) is chosen to minimise an error proxy
 *     E_stage = sum over types t of  sens[t] * err(candidate_t)
 * subject to the stage's total memory (memory.h, REAL accounting) fitting the budget. Stages
 * are independent (each must fit on its own GPU), so the optimum is per stage:
 *   exact   every combination of candidates per stage (K^T, at most max_exact); exact optimum
 *   greedy  start from the widest, repeatedly narrow the type with the smallest error increase
 *           per byte saved until the stage fits (fallback when K^T > max_exact, or asked for)
 * err() is a measured NMSE from an `agoq quant` results file, or the documented built-in proxy
 * (agoq_proxy_builtin) when none is given. sens[] defaults to the paper's per-layer gradient
 * error at 4 bits (Table 13: LayerNorm 0.003, GEMM 0.026, SiLU 0.051, attention mean of q/k/v
 * 0.116), so attention is kept wide unless memory forces it.
 *
 * The paper's DBCA-PP rule in activation units (memory of stage i = N_i * bits_i, budget
 * N_0 * 4): agoq_dbca_units compares its rounding with the exact widest-that-fits choice. */
#ifndef AGOQ_BITALLOC_H
#define AGOQ_BITALLOC_H
#include "models/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AGOQ_LTYPE_NORM, AGOQ_LTYPE_GEMM, AGOQ_LTYPE_ACTFN, AGOQ_LTYPE_ATTENTION, AGOQ_LTYPE_COUNT } agoq_layer_type;

const char *agoq_layer_type_name(agoq_layer_type t);
/* Layer type a role belongs to; -1 for statistics, masks and logits (never reallocated). */
int agoq_layer_type_of_role(agoq_role r);

#define AGOQ_BITALLOC_MAX_CAND 12

typedef struct {
    agoq_store st;
    double err;     /* error proxy (NMSE) of this storage; 0 for native bf16 (the reference) */
    char label[32]; /* "fp4_e2m1/128" */
} agoq_candidate;

typedef enum { AGOQ_ALLOC_EXACT, AGOQ_ALLOC_GREEDY } agoq_alloc_method;

typedef struct {
    agoq_candidate cand[AGOQ_BITALLOC_MAX_CAND];
    size_t ncand;
    double sens[AGOQ_LTYPE_COUNT];
    int pinned[AGOQ_LTYPE_COUNT]; /* 1: keep the base policy's storage (default: attention, as the paper) */
    double budget_bytes;
    agoq_alloc_method method; /* EXACT falls back to GREEDY when K^T > max_exact */
    double max_exact;         /* default 1e6 combinations per stage */
} agoq_bitalloc_problem;

typedef struct {
    int choice[AGOQ_MAX_STAGES][AGOQ_LTYPE_COUNT]; /* candidate index; -1 = type not stored */
    double total_bytes[AGOQ_MAX_STAGES];
    double err[AGOQ_MAX_STAGES];
    double min_budget_bytes;   /* smallest budget that fits every stage (narrowest candidates) */
    int stage_min_worst;       /* the stage that sets min_budget_bytes */
    agoq_alloc_method used;    /* what actually ran */
    int feasible;
} agoq_bitalloc_result;

/* Default problem: candidates native, fp8_e4m3/128, int8/128, fp4_e2m1/128 with built-in errors,
 * paper sensitivities, attention pinned, budget 0 (must be set), EXACT. */
void agoq_bitalloc_default(agoq_bitalloc_problem *pr);
/* Solves for ms (its policy is the base: recomputed roles stay recomputed). 0 solved, 1 budget
 * infeasible (min_budget_bytes says what fits), -1 bad setup. */
int agoq_bitalloc_solve(const agoq_mem_setup *ms, const agoq_bitalloc_problem *pr, agoq_bitalloc_result *out);
/* Writes the result's choices into ms->pol's per-stage overrides. */
void agoq_bitalloc_apply(agoq_mem_setup *ms, const agoq_bitalloc_problem *pr, const agoq_bitalloc_result *res);

/* Error proxies. builtin: native 0; k-bit integer and table formats: uniform rounding of step
 * s = absmax / (2^(k-1) - 1) has variance s^2 / 12, with absmax = 3 sigma (about E max|x| of a
 * block of 128 normal samples), NMSE (3 / (2^(k-1) - 1))^2 / 12; fp8 with M mantissa bits: relative
 * spacing 2^-M, NMSE 2^(-2M) / 12.
 * measured: the NMSE of the record of a `quant` results file with this format, block, fp32 scale,
 * nearest rounding and distribution `dist` (largest n); -1 and a message naming the file when
 * absent. */
double agoq_proxy_builtin(const agoq_store *st);
int agoq_proxy_measured(const char *quant_json, const char *dist, agoq_candidate *cand, size_t n);

/* DBCA-PP in activation units for the schedule of par (memory of stage i = N_i * bits_i, budget
 * N_0 * base_bits). paper[i] = min(max bits, rint(base_bits N_0 / N_i)); exact[i] = the widest of
 * bits[0..nbits) with N_i * bits <= budget. Returns the budget in units. */
double agoq_dbca_units(const agoq_parallel *par, int base_bits, const int *bits, size_t nbits, int *paper, int *exact);

#ifdef __cplusplus
}
#endif
#endif
