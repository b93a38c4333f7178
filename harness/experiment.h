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

#include "harness/backend.h"
#include "harness/jconf.h"
#include "harness/results.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    jconf where;          /* file + key prefix for error messages ("config") */
    agoq_backend backend; /* resolved */
    uint64_t seed;
    int quiet;            /* no progress on stderr */
    int check_only;       /* validate the config completely, then return 0 without running */
    int tsv_strict;       /* tsv columns come from an experiment file: each must be a record field */
} agoq_run_ctx;

/* A runner validates config completely before measuring anything (and stops there, returning 0,
 * when ctx->check_only), appends records to res,
 * and may set res meta.source to "simulated". Returns 0 or -1 (error already printed). */
typedef int (*agoq_experiment_fn)(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);

typedef struct {
    const char *kind;
    agoq_experiment_fn run;
    const char *what; /* one line for `agoq list` */
} agoq_experiment_kind;

const agoq_experiment_kind *agoq_experiment_kinds(int *count);
const agoq_experiment_kind *agoq_experiment_find(const char *kind);

/* Checks that out can be written, runs config under kind (which checks config first), then
 * publishes out (JSON) and, if tsv_cols, OUT.tsv together (results_publish); nothing is written
 * when anything fails. With ctx->check_only only the config is checked. Shared by `agoq run`
 * and the subcommands. */
int agoq_experiment_execute(const char *kind, const agoq_run_ctx *ctx, cJSON *config, const char *out,
                            const char *const *tsv_cols, size_t ntsv, int argc, char **argv);

/* The runners, one per kind (each in its module). */
int agoq_exp_quant(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_kernels(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_collectives(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_memory(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_bitalloc(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_simulate(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);
int agoq_exp_train(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);

void results_set_source(agoq_results *r, const char *source); /* "measured" | "simulated" */

#ifdef __cplusplus
}
#endif
#endif
