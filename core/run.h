/* What every experiment runner receives: the run context (where the config came from, the
 * resolved backend, the seed, quiet) and the runner signature. Runners live above core/
 * (runners/, collectives/bench.c, sim/sim_experiment.c); the registry of kinds and the execute
 * path are runners/experiment.h. */
#ifndef AGOQ_RUN_H
#define AGOQ_RUN_H
#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/backend.h"
#include "core/jconf.h"
#include "core/results.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    jconf where;          /* file + key prefix for error messages ("config") */
    agoq_backend backend; /* resolved */
    uint64_t seed;
    int quiet;            /* no progress on stderr */
    int check_only;       /* --check: validate the config completely, then return 0 without running */
    int tsv_strict;       /* tsv columns come from an experiment file: each must be a record field
                           * (or one the kind writes only sometimes: agoq_runner.optional_fields) */
} agoq_run_ctx;

/* A runner validates config completely before measuring anything (and stops there, returning 0,
 * when ctx->check_only), appends records to res, and may set res meta.source to "simulated"
 * (results_set_source). Returns 0 or -1 (error already printed). */
typedef int (*agoq_experiment_fn)(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);

#ifdef __cplusplus
}
#endif
#endif
