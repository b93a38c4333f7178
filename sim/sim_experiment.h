/* Internals shared by the "simulate" experiment runner (sim_experiment.c: config, machines,
 * variants, paper numbers) and its two modes (sim_runs.c: step and comm). */
#ifndef AGOQ_SIM_EXPERIMENT_H
#define AGOQ_SIM_EXPERIMENT_H
#include <cjson/cJSON.h>

#include "core/run.h"
#include "sim/machine.h"
#include "sim/step_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGOQ_SIM_MAX_VARIANTS 32

/* The config keys of mode "step" and of mode "comm" (NULL-terminated). */
extern const char *const agoq_sim_step_keys[], *const agoq_sim_comm_keys[];

/* "native" | "bf16" | "fp32" | "recompute" | "<format>[/block]" -> store; -1 when malformed. */
int agoq_sim_parse_store(const char *s, agoq_store *out);
/* The config's variants applied to base (or one "default" variant); labels point into cfg. */
int agoq_sim_variants(jconf c, const cJSON *cfg, const agoq_policy *base, agoq_policy *out, const char **labels,
                      size_t max, size_t *n);
/* The config's "paper" block: the paper's reported rows (pointers into the config). */
typedef struct {
    const cJSON *cols, *rows, *map; /* map: label -> {record field: paper column}; NULL = none */
    const char *key, *source;       /* key: the paper column matched against the record */
    double key_scale;               /* paper key x key_scale = record value (seq_k -> tokens) */
} agoq_sim_paper;

/* Adds paper_<field> columns of the paper row whose key equals key_value, using the map entry
 * of `label` (method or machine name). 0 or -1 (a mapped column missing from the rows). */
int agoq_sim_paper_attach(const agoq_sim_paper *p, const char *label, double key_value, cJSON *rec);

/* Experiment kind "simulate" (sim_experiment.c; CLI runners/simulate.c). */
int agoq_exp_simulate(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);

int agoq_sim_run_step(const agoq_run_ctx *ctx, const cJSON *cfg, const agoq_machine *machines, size_t nm,
                      agoq_allreduce_algo algo, const agoq_sim_paper *paper, agoq_results *res);
/* mode "holdout" (sim_holdout.c): the step model calibrated on measured step records of some
 * seqs, predicting the others; needs no machine file. */
int agoq_sim_run_holdout(const agoq_run_ctx *ctx, const cJSON *cfg, agoq_results *res);
int agoq_sim_run_comm(const agoq_run_ctx *ctx, const cJSON *cfg, const agoq_machine *machines, size_t nm,
                      agoq_allreduce_algo algo, const agoq_sim_paper *paper, agoq_results *res);

#ifdef __cplusplus
}
#endif
#endif
