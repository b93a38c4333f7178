/* agoq list: formats (from the traits table), model cards (models/NAME.json), experiment kinds,
 * and which backends this build and machine can use. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "runners/commands.h"
#include "runners/experiment.h"
#include "kernels/quant/formats.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cmd_list(int argc, char **argv) {
    if (argc > 1) {
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            printf("usage: agoq list\nPrints the quantization formats, model cards, experiment kinds and backends.\n");
            return 0;
        }
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
