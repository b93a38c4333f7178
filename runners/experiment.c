/* Experiment registry and the common execute path; see experiment.h. */
#include "runners/experiment.h"

#include <stdio.h>
#include <string.h>

#include "core/common.h"

static const agoq_runner *const g_kinds[] = {
    &agoq_runner_quant,    &agoq_runner_kernels,  &agoq_runner_collectives, &agoq_runner_memory,
    &agoq_runner_bitalloc, &agoq_runner_simulate, &agoq_runner_train,       &agoq_runner_step,
};

const agoq_runner *const *agoq_runners(int *count) {
    *count = (int)(sizeof g_kinds / sizeof g_kinds[0]);
    return g_kinds;
}

const agoq_runner *agoq_experiment_find(const char *kind) {
    int n;
    const agoq_runner *const *k = agoq_runners(&n);
    for (int i = 0; i < n; i++)
        if (kind && strcmp(kind, k[i]->kind) == 0) return k[i];
    return NULL;
}

int agoq_experiment_execute(const char *kind, const agoq_run_ctx *ctx, cJSON *config, const char *out,
                            const char *const *tsv_cols, size_t ntsv, int argc, char **argv) {
    const agoq_runner *k = agoq_experiment_find(kind);
    if (!k) {
        agoq_error("%s: key 'kind': unknown experiment kind '%s'", ctx->where.file, kind ? kind : "");
        return -1;
    }
    agoq_results *res = results_new(kind, agoq_backend_name(ctx->backend), "measured", argc, argv);
    cJSON *cfg = cJSON_Duplicate(config, 1);
    cJSON_AddNumberToObject(cfg, "seed", (double)ctx->seed);
    results_set_config(res, cfg);
    int rc = k->run(ctx, config, res);
    if (rc == 0 && out) {
        rc = results_write(res, out);
        if (rc == 0 && ntsv) {
            char tsv[4096];
            snprintf(tsv, sizeof tsv, "%s", out);
            char *dot = strrchr(tsv, '.');
            if (dot && strcmp(dot, ".json") == 0) *dot = '\0';
            strncat(tsv, ".tsv", sizeof tsv - strlen(tsv) - 1);
            rc = results_write_tsv(res, tsv, tsv_cols, ntsv);
        }
        if (rc == 0 && !ctx->quiet) fprintf(stderr, "agoq: wrote %s (%d records)\n", out, cJSON_GetArraySize(res->records));
    }
    results_free(res);
    return rc;
}
