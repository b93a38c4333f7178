/* The "step" experiment's configuration (keys documented in runners/step.c): parsed and
 * checked key by key into a sweep of points (model x tp x seq) and runs (named policies with
 * their recomputation and per-role storage), and turned into the engine's agoq_step_config
 * (step/step.h) for one point and run. Errors name the file and the key, one line. */
#ifndef AGOQ_STEP_CFG_H
#define AGOQ_STEP_CFG_H
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "runners/experiment.h"
#include "step/step.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STEP_MAX_RUNS 16
#define STEP_MAX_AXIS 16 /* values per swept key (model, tp, seq, stage, micro_batches) */

typedef struct {
    char name[48];           /* the record's "name"; unique in the sweep */
    agoq_policy pol;         /* the memory model's policy with the run's overrides (grad FP32 for
                                policies whose default is native: Megatron's fp32 main gradients) */
    long recompute_layers;   /* Megatron full recomputation: layers of the stack, -1 = all */
    int min_fit;             /* recompute_layers "min_fit": fewest layers whose dry need fits */
    int selective;           /* Megatron selective recomputation (recompute_attn_core) */
    int adam_unfused;        /* "fused_optimizer": false: quantized moments by the chunked passes */
} step_run_spec;

/* One point of the sweep: a value of every swept key. */
typedef struct {
    size_t ci;               /* index into step_exp.cards */
    long tp, seq, stage, micro_batches;
} step_axes;

typedef struct {
    agoq_model_card cards[STEP_MAX_AXIS];
    size_t ncards;
    long tp[STEP_MAX_AXIS], seq[STEP_MAX_AXIS], stage[STEP_MAX_AXIS], micro_batches[STEP_MAX_AXIS];
    size_t ntp, nseq, nstage, nmb;
    long layers, pp, micro_batch, reps, warmup;
    double rope_base, norm_eps;
    double budget_gb;        /* 0: no budget */
    int fit_record;          /* over budget: a "fits": false record (1) or an error (0) */
    int grad_error, dry;
    agoq_step_gemm gemm;     /* "gemm": who writes the GEMM sites' quantized copies (step.h) */
    const char *dump; /* probe dumps of every measured run under this directory (or NULL) */
    uint64_t seed;
    step_run_spec runs[STEP_MAX_RUNS];
    size_t nruns;
} step_exp;

/* Names of the preset runs, "bf16, recompute, ..." (for help and messages). */
const char *step_preset_names(void);
/* Parses and checks every key (unknown keys are errors); 0 or -1 after one line. */
extern const char *const step_exp_keys[]; /* the config keys of kind "step" */
int step_exp_parse(const agoq_run_ctx *ctx, const cJSON *cfg, step_exp *x);
/* The engine's configuration of point a and run r with k fully recomputed layers (-1 = all).
 * Not yet checked: agoq_step_run checks it (agoq_step_config_fix). */
void step_exp_config(const step_exp *x, const step_axes *a, const step_run_spec *r, long k, int quiet,
                     agoq_step_config *c);

/* The record's "gemm": the key, each site's choice ("cublaslt", "fused", "cublaslt (fallback:
 * why)") and, for auto, the timed ms of both ways per site (a dry run: "not timed (dry)"). */
void step_gemm_record(cJSON *o, agoq_step_gemm key, const agoq_step_gemm_site *sites, int dry);

#ifdef __cplusplus
}
#endif
#endif
