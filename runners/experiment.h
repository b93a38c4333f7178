/* Experiments: every measurement of agoq-bench is an experiment kind with one runner that takes
 * a JSON config. `agoq run FILE.json` reads the kind and config from a file; each subcommand
 * (`agoq quant`, `agoq kernels`, ...) builds the same config object from its flags and calls the
 * same runner, so a sweep file and a command line can never disagree.
 *
 * Experiment file (experiments/NAME.json):
 *   { "kind": "quant",                 required: one of agoq_experiment_kinds()
 *     "description": "...",            optional
 *     "backend": "auto",               optional: cpu | cuda | auto (the CLI flag wins)
 *     "seed": 1,                       optional, default 1
 *     "out": "results/NAME.json",      optional (the CLI --out wins; default results/NAME.json)
 *     "tsv": ["col", ...],             optional: also write OUT.tsv with these record columns
 *     "config": { ... } }              required: the kind's own keys, documented by each runner */
#ifndef AGOQ_EXPERIMENT_H
#define AGOQ_EXPERIMENT_H
#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/run.h"
#include "runners/cmdline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds: one runner descriptor each (runners/<kind>.c, cmdline.h), in `agoq help` order. */
extern const agoq_runner agoq_runner_quant, agoq_runner_kernels, agoq_runner_collectives, agoq_runner_memory,
    agoq_runner_bitalloc, agoq_runner_simulate, agoq_runner_train, agoq_runner_step;
const agoq_runner *const *agoq_runners(int *count);
const agoq_runner *agoq_experiment_find(const char *kind);

/* Checks that out can be written, runs config under kind (which checks config first), then
 * publishes out (JSON) and, if tsv_cols, OUT.tsv together (results_publish); nothing is written
 * when anything fails. With ctx->check_only only the config is checked. Shared by `agoq run`
 * and the subcommands. */
int agoq_experiment_execute(const char *kind, const agoq_run_ctx *ctx, cJSON *config, const char *out,
                            const char *const *tsv_cols, size_t ntsv, int argc, char **argv);

/* The runners of runners/, one per kind (runners/<kind>.c). The collectives and simulate runners
 * live beside their models and declare themselves there: collectives/bench.h, sim/sim_experiment.h. */
int agoq_exp_quant(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_kernels(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_memory(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_bitalloc(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_train(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
/* The train runner's fair gap when runs stop at different steps (time_limit_s): over the "curve"
 * records, the last step <= max_step at which both `run` and `base` (same seed) were evaluated;
 * *gap = held-out(run) - held-out(base) there. Returns the step, or -1 (gap NAN) if none. */
long agoq_train_gap_at_common_step(const cJSON *records, const char *run, const char *base, uint64_t seed,
                                   long max_step, double *gap);
int agoq_exp_step(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);

#ifdef __cplusplus
}
#endif
#endif
