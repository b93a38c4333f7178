/* Experiment kind "collectives" (collectives/bench.c; its config keys are listed there, its
 * CLI is runners/collectives.c). */
#ifndef AGOQ_COLL_BENCH_H
#define AGOQ_COLL_BENCH_H
#include "core/run.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const char *const agoq_coll_keys[]; /* its config keys, NULL-terminated */
int agoq_exp_collectives(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res);

#ifdef __cplusplus
}
#endif
#endif
