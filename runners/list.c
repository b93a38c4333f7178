/* agoq list: formats (from the traits table), model cards (models/NAME.json), experiment kinds,
 * and which backends this build and machine can use.
 * agoq list --experiments: one line per experiments/NAME.json, tab-separated:
 *   NAME  KIND  OUT  FIGURE_SCRIPT  FIGURE_VARS
 * OUT is the file's "out" or the results path rule (machine cpu for backend cpu or a host-only
 * kind, else this machine's GPU); empty fields are "-". tools/figures.sh reads this. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/common.h"
#include "runners/commands.h"
#include "runners/experiment.h"
#include "kernels/quant/formats.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static const char *str_or(const cJSON *o, const char *key, const char *dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && *v->valuestring ? v->valuestring : dflt;
}

static int list_experiments(void) {
    DIR *d = opendir("experiments");
    if (!d) {
        agoq_error("list: no experiments/ here (run from the repository root)");
        return 1;
    }
    char *names[512];
    int nn = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nn < 512) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) names[nn++] = strndup(e->d_name, l - 5);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof names[0], cmp_str);
    for (int i = 0; i < nn; i++) {
        char path[512], out[512];
        snprintf(path, sizeof path, "experiments/%s.json", names[i]);
        cJSON *doc = agoq_read_json(path);
        const char *kind = str_or(doc, "kind", NULL);
        const agoq_runner *r = agoq_experiment_find(kind);
        if (!doc || !r) {
            if (doc) agoq_error("%s: key 'kind': unknown experiment kind '%s'", path, kind ? kind : "");
            rc = 1;
        } else {
            const char *o = str_or(doc, "out", NULL);
            agoq_backend b = AGOQ_BACKEND_CPU;
            if (!o && strcmp(str_or(doc, "backend", "auto"), "cpu") != 0 && agoq_backend_resolve("auto", &b) != 0)
                b = AGOQ_BACKEND_CPU;
            if (!o) o = agoq_results_default_out(r, b, names[i], out, sizeof out);
            const cJSON *fig = cJSON_GetObjectItemCaseSensitive(doc, "figure");
            printf("%s\t%s\t%s\t%s\t%s\n", names[i], kind, o, str_or(fig, "script", "-"), str_or(fig, "vars", "-"));
        }
        cJSON_Delete(doc);
        free(names[i]);
    }
    return rc;
}

int cmd_list(int argc, char **argv) {
    if (argc > 1) {
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            printf("usage: agoq list [--experiments]\nPrints the quantization formats, model cards, experiment kinds and backends;\n"
                   "--experiments: one line per experiments/NAME.json: name, kind, results path, figure script, figure vars\n"
                   "(tab-separated, \"-\" when empty).\n");
            return 0;
        }
        if (strcmp(argv[1], "--experiments") == 0 && argc == 2) return list_experiments();
        fprintf(stderr, "agoq: list: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    printf("# formats (name bits default_block kind: description)\n");
    for (int f = 0; f < AGOQ_FMT_COUNT; f++) {
        const agoq_format_traits *t = &agoq_formats[f];
        const char *kind = t->kind == AGOQ_CODE_INT_SYM ? "int" : t->kind == AGOQ_CODE_INT_ASYM ? "int+zero" : "table";
        printf("%-12s %d %4d %-8s %s\n", t->name, t->bits, t->default_block, kind, t->desc);
    }
    printf("\n# models (models/*.json)\n");
    DIR *d = opendir("models");
    char *names[256];
    int nn = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) && nn < 256) {
            size_t l = strlen(e->d_name);
            if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) names[nn++] = strndup(e->d_name, l - 5);
        }
        closedir(d);
    }
    qsort(names, (size_t)nn, sizeof names[0], cmp_str);
    for (int i = 0; i < nn; i++) {
        printf("%s\n", names[i]);
        free(names[i]);
    }
    if (!nn) printf("(none found: run from the repository root)\n");
    printf("\n# experiment kinds (agoq run)\n");
    int nk;
    const agoq_runner *const *k = agoq_runners(&nk);
    for (int i = 0; i < nk; i++) printf("%-12s %s\n", k[i]->kind, k[i]->what);
    char why[256] = "";
    int ndev = agoq_cuda_devices(why, sizeof why);
    printf("\n# backends\ncpu          available (simulated ranks for collectives)\n");
    if (ndev > 0) {
        agoq_gpu_info g;
        agoq_gpu_query(0, &g);
        printf("cuda         available: %d x %s (driver %s)\n", ndev, g.name, g.driver);
    } else {
        printf("cuda         not available: %s\n", why);
    }
    return 0;
}
