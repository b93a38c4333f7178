/* Experiment registry and the common execute path; see experiment.h. */
#include "runners/experiment.h"

#include <stdio.h>
#include <string.h>

#include "collectives/bench.h"
#include "core/common.h"
#include "sim/sim_experiment.h"

static const agoq_experiment_kind g_kinds[] = {
    {"quant", agoq_exp_quant, "error and CPU throughput of every format over sizes and input distributions"},
    {"kernels", agoq_exp_kernels, "CUDA quantize/fused kernels vs the copy bandwidth of the same run"},
    {"collectives", agoq_exp_collectives, "quantized reduce-scatter/all-reduce vs NCCL, error vs fp32"},
    {"memory", agoq_exp_memory, "per-GPU memory model: ZeRO stages, parallelism, activation policies"},
    {"bitalloc", agoq_exp_bitalloc, "per-stage bit widths under a memory budget (exact + greedy)"},
    {"simulate", agoq_exp_simulate, "step time at scale from measured calibration (simulated)"},
    {"train", agoq_exp_train, "small LLaMA-style model trained under activation/gradient policies"},
    {"step", agoq_exp_step, "measured training step of LLaMA layers on one GPU per policy (or its dry plan)"},
};

const agoq_experiment_kind *agoq_experiment_kinds(int *count) {
    *count = (int)(sizeof g_kinds / sizeof g_kinds[0]);
    return g_kinds;
}

const agoq_experiment_kind *agoq_experiment_find(const char *kind) {
    int n;
    const agoq_experiment_kind *k = agoq_experiment_kinds(&n);
    for (int i = 0; i < n; i++)
        if (kind && strcmp(kind, k[i].kind) == 0) return &k[i];
    return NULL;
}

int agoq_experiment_execute(const char *kind, const agoq_run_ctx *ctx, cJSON *config, const char *out,
                            const char *const *tsv_cols, size_t ntsv, int argc, char **argv) {
    const agoq_experiment_kind *k = agoq_experiment_find(kind);
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
