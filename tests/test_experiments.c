/* The repository's experiment files against the results layout (README "Experiment files"):
 * every experiments/NAME.json has an "out" that follows the results path rule
 * (agoq_results_default_out: results/cpu/<name>.json for host runs, results/h200/<name>.json for
 * the H200 measurements), a "figure" whose script exists, and every committed results file
 * results/<machine>/<name>.json has an experiment file behind it (logs/ and the listed
 * exceptions aside). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "runners/experiment.h"
#include "tests/test.h"

/* Committed results that no experiment file writes, and why. */
static const char *const g_no_experiment[] = {
    "results/h200/saved_tensors.json", /* PyTorch's saved tensors: validation/saved_tensors.py */
    "results/h200/gemm_run1.json",     /* an earlier run of experiments/gemm.json, cited by docs/simulator.md */
    "results/h200/step_pytorch.json",  /* the PyTorch peer of agoq step: validation/hf_step.py (tools/device_step.sh) */
    /* the torch.compile peer of agoq kernels: validation/torch_kernels.py (tools/device_kernels.sh);
     * _dynamic: its first run, dynamic shapes only (README "Ours vs torch.compile"); _fused: the fused cases
     * alone (--only fused), timed in the ninth session's call K for kernels_fused.json */
    "results/h200/torch_kernels.json",
    "results/h200/torch_kernels_dynamic.json",
    "results/h200/torch_kernels_fused.json",
    NULL,
};

static int json_name(const char *f) {
    size_t l = strlen(f);
    return l > 5 && strcmp(f + l - 5, ".json") == 0;
}

TEST(experiment_files_follow_the_results_path_rule) {
    DIR *d = opendir("experiments");
    CHECK(d != NULL);
    struct dirent *e;
    int n = 0, bad = 0;
    while ((e = readdir(d))) {
        if (!json_name(e->d_name)) continue;
        char path[512], name[256], want[512];
        snprintf(path, sizeof path, "experiments/%s", e->d_name);
        snprintf(name, sizeof name, "%.*s", (int)strlen(e->d_name) - 5, e->d_name);
        cJSON *doc = agoq_read_json(path);
        if (!doc) { bad++; continue; }
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
        const cJSON *backend = cJSON_GetObjectItemCaseSensitive(doc, "backend");
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(doc, "out");
        const cJSON *fig = cJSON_GetObjectItemCaseSensitive(doc, "figure");
        const agoq_runner *r = agoq_experiment_find(cJSON_IsString(kind) ? kind->valuestring : NULL);
        int host = r && (r->host_only || (cJSON_IsString(backend) && strcmp(backend->valuestring, "cpu") == 0));
        if (host) agoq_results_default_out(r, AGOQ_BACKEND_CPU, name, want, sizeof want);
        else snprintf(want, sizeof want, "results/h200/%s.json", name);
        if (!r || !cJSON_IsString(out) || strcmp(out->valuestring, want) != 0) {
            fprintf(stderr, "  %s: \"out\" %s, the path rule gives %s\n", path,
                    cJSON_IsString(out) ? out->valuestring : "(none)", want);
            bad++;
        }
        const cJSON *script = cJSON_GetObjectItemCaseSensitive(fig, "script");
        if (fig && (!cJSON_IsString(script) || !agoq_test_file_exists(script->valuestring))) {
            fprintf(stderr, "  %s: figure script missing\n", path);
            bad++;
        }
        cJSON_Delete(doc);
        n++;
    }
    closedir(d);
    CHECK(n > 30);
    CHECK(bad == 0);
}

/* Is there an experiment file whose "out" is path? */
static int has_experiment(const char *path) {
    const char *base = strrchr(path, '/') + 1;
    char file[512];
    snprintf(file, sizeof file, "experiments/%s", base);
    cJSON *doc = agoq_test_file_exists(file) ? agoq_read_json(file) : NULL;
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(doc, "out");
    int ok = cJSON_IsString(out) && strcmp(out->valuestring, path) == 0;
    cJSON_Delete(doc);
    for (size_t i = 0; !ok && g_no_experiment[i]; i++) ok = strcmp(path, g_no_experiment[i]) == 0;
    return ok;
}

TEST(every_committed_result_has_an_experiment_file) {
    static const char *const machines[] = {"results/cpu", "results/h200"};
    int n = 0, bad = 0;
    for (size_t m = 0; m < 2; m++) {
        DIR *d = opendir(machines[m]);
        CHECK(d != NULL);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!json_name(e->d_name)) continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", machines[m], e->d_name);
            n++;
            if (!has_experiment(path)) {
                fprintf(stderr, "  %s: no experiments/%s writes it\n", path, e->d_name);
                bad++;
            }
        }
        closedir(d);
    }
    CHECK(n > 30);
    CHECK(bad == 0);
}

static int listed(const char *const *keys, const char *k, size_t len) {
    for (; keys && *keys; keys++)
        if (strlen(*keys) == len && strncmp(*keys, k, len) == 0) return 1;
    return 0;
}

/* Every flag of every runner sets a config key its runner reads (so a flag can neither be
 * parsed into nothing nor be documented apart from the config), and has help text or is a
 * hidden short-letter override. */
TEST(runner_flags_set_known_config_keys) {
    int n, bad = 0;
    const agoq_runner *const *r = agoq_runners(&n);
    CHECK(n == 8);
    for (int i = 0; i < n; i++) {
        CHECK(r[i]->keys && r[i]->flags && r[i]->run && r[i]->tsv && r[i]->ntsv);
        for (const agoq_flag *f = r[i]->flags; f->name || f->short_opt; f++) {
            if (!f->key) continue; /* a rejecting override (step -b/-e/-f) */
            if (strcmp(r[i]->kind, "step") == 0 && strcmp(f->key, "ready") == 0) continue; /* step_finish consumes it */
            const char *dot = strchr(f->key, '.');
            size_t len = dot ? (size_t)(dot - f->key) : strlen(f->key);
            if (!listed(r[i]->keys, f->key, len) && !listed(r[i]->more_keys, f->key, len)) {
                fprintf(stderr, "  agoq %s --%s sets '%s', not a config key of kind %s\n", r[i]->kind,
                        f->name ? f->name : "?", f->key, r[i]->kind);
                bad++;
            }
            if (f->name && !f->help) {
                fprintf(stderr, "  agoq %s --%s has no help text\n", r[i]->kind, f->name);
                bad++;
            }
        }
    }
    CHECK(bad == 0);
}
