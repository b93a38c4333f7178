/* Experiment registry and the common execute path; see experiment.h. */
#include "runners/experiment.h"

#include <stdio.h>
#include <stdlib.h>
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

/* OUT.tsv beside OUT.json (a final ".json" replaced); malloc'd. */
static char *tsv_path_of(const char *out) {
    size_t n = strlen(out);
    char *tsv = malloc(n + 5);
    if (!tsv) return NULL;
    memcpy(tsv, out, n + 1);
    if (n >= 5 && strcmp(tsv + n - 5, ".json") == 0) tsv[n - 5] = '\0';
    strcat(tsv, ".tsv");
    return tsv;
}

/* Every column asked for in an experiment file's "tsv" must be a field of some record, or a field
 * the kind writes only in some configurations (r->tsv, r->optional_fields: a dry step plan has no
 * step_ms, yet the sweep's figure reads its columns by position, measured or planned). */
static int check_tsv_columns(const agoq_run_ctx *ctx, const agoq_runner *r, const agoq_results *res,
                             const char *const *cols, size_t n) {
    for (size_t c = 0; c < n; c++) {
        const cJSON *rec;
        int found = 0;
        for (size_t j = 0; j < r->ntsv && !found; j++) found = strcmp(r->tsv[j], cols[c]) == 0;
        for (const char *const *o = r->optional_fields; o && *o && !found; o++) found = strcmp(*o, cols[c]) == 0;
        cJSON_ArrayForEach(rec, res->records) if (cJSON_GetObjectItemCaseSensitive(rec, cols[c])) found = 1;
        if (!found && cJSON_GetArraySize(res->records) > 0) {
            const cJSON *f, *first = cJSON_GetArrayItem(res->records, 0);
            char have[1024] = "";
            size_t k = 0;
            cJSON_ArrayForEach(f, first) if (k + 40 < sizeof have)
                k += (size_t)snprintf(have + k, sizeof have - k, "%s%.32s", k ? ", " : "", f->string);
            agoq_error("%s: key 'tsv[%zu]': '%s' is not a record field (records have: %s); nothing written",
                       ctx->where.file, c, cols[c], have);
            return -1;
        }
    }
    return 0;
}

int agoq_experiment_execute(const char *kind, const agoq_run_ctx *ctx, cJSON *config, const char *out,
                            const char *const *tsv_cols, size_t ntsv, int argc, char **argv) {
    const agoq_runner *k = agoq_experiment_find(kind);
    if (!k) {
        agoq_error("%s: key 'kind': unknown experiment kind '%s'", ctx->where.file, kind ? kind : "");
        return -1;
    }
    /* The output location is checked before the run (which checks its config before computing),
     * so neither an unwritable -o nor a bad key costs any compute. */
    char *tsv = out && ntsv && !ctx->check_only ? tsv_path_of(out) : NULL;
    if (out && !ctx->check_only && (agoq_check_writable(out) || (tsv && agoq_check_writable(tsv)))) {
        free(tsv);
        return -1;
    }
    agoq_results *res = results_new(kind, agoq_backend_name(ctx->backend), "measured", argc, argv);
    cJSON *cfg = cJSON_Duplicate(config, 1);
    cJSON_AddNumberToObject(cfg, "seed", (double)ctx->seed);
    results_set_config(res, cfg);
    int rc = k->run(ctx, config, res);
    if (rc == 0 && ctx->check_only) {
        if (!ctx->quiet) fprintf(stderr, "agoq: %s: ok (kind %s; nothing run, nothing written)\n", ctx->where.file, kind);
        results_free(res);
        return 0;
    }
    if (rc == 0 && ctx->tsv_strict) rc = check_tsv_columns(ctx, k, res, tsv_cols, ntsv);
    if (rc == 0 && out) {
        rc = results_publish(res, out, tsv, tsv_cols, ntsv);
        if (rc == 0 && !ctx->quiet) fprintf(stderr, "agoq: wrote %s (%d records)\n", out, cJSON_GetArraySize(res->records));
    }
    free(tsv);
    results_free(res);
    return rc;
}
