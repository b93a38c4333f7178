/* agoq run FILE.json [--backend B] [--out F] [--seed N] [--check] [--quiet]
 * Runs one experiment file (format in experiment.h); --check validates it and runs nothing.
 * Every key is checked before anything runs;
 * a bad file exits 1 with "FILE: key 'K': ..." and writes no results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/cmdline.h"
#include "runners/commands.h"
#include "core/common.h"
#include "runners/experiment.h"

static void help(void) {
    int n;
    const agoq_runner *const *k = agoq_runners(&n);
    printf("usage: agoq run FILE.json [--backend cpu|cuda|auto] [-o OUT] [--seed N] [--check] [-q]\n"
           "Experiment file keys: kind (required), config (required), description, backend, seed,\n"
           "out (default results/<machine>/<file name>.json), tsv (record columns for OUT.tsv),\n"
           "figure {\"script\": \"plots/X.gp\", \"vars\": \"gnuplot assignments\"} (make figures draws OUT.png).\nkinds:\n");
    for (int i = 0; i < n; i++) printf("  %-12s %s\n", k[i]->kind, k[i]->what);
}

int cmd_run(int argc, char **argv) {
    struct option longopts[16];
    size_t nc;
    const struct option *common = agoq_common_longopts(&nc);
    memcpy(longopts, common, nc * sizeof *common);
    longopts[nc] = (struct option){0, 0, 0, 0};
    agoq_common_opts o;
    agoq_common_init(&o, "run");
    int c, seed_given = 0, backend_given = 0;
    while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        if (c == AGOQ_OPT_SEED) seed_given = 1;
        if (c == AGOQ_OPT_BACKEND) backend_given = 1;
        int r = agoq_common_opt(&o, c, optarg);
        if (r < 0) return 2;
        if (r == 0) return agoq_cmd_usage_error("run");
    }
    cJSON_Delete(o.sweep);
    if (o.help) { help(); return 0; }
    if (optind != argc - 1) {
        agoq_error("run: expected exactly one experiment file (agoq run experiments/NAME.json)");
        return 2;
    }
    const char *file = argv[optind];
    cJSON *doc = agoq_read_json(file);
    if (!doc) return 1;
    jconf top = {file, ""};
    static const char *const keys[] = {"kind", "description", "backend", "seed", "out", "figure", "tsv", "config", NULL};
    static const char *const figure_keys[] = {"script", "vars", NULL};
    const char *kind, *backend, *out, **tsv = NULL, *desc;
    const cJSON *config, *figure;
    long seed;
    size_t ntsv = 0;
    int rc = 1;
    if (!cJSON_IsObject(doc)) {
        agoq_error("%s: expected a JSON object at the top level", file);
        goto done;
    }
    if (jconf_only(top, doc, keys) || jconf_str(top, doc, "kind", 1, NULL, &kind) ||
        jconf_str(top, doc, "description", 0, "", &desc) || jconf_str(top, doc, "backend", 0, "auto", &backend) ||
        jconf_long(top, doc, "seed", 0, 0, 0x7fffffffL, 1, &seed) || jconf_str(top, doc, "out", 0, NULL, &out) ||
        jconf_strs(top, doc, "tsv", 0, &tsv, &ntsv) || jconf_obj(top, doc, "config", 1, &config) ||
        jconf_obj(top, doc, "figure", 0, &figure))
        goto done;
    if (figure) { /* drawn by tools/figures.sh: gnuplot SCRIPT with in=OUT.tsv, out=OUT.png and VARS */
        jconf fc = {file, "figure"};
        const char *script, *vars;
        if (jconf_only(fc, figure, figure_keys) || jconf_str(fc, figure, "script", 1, NULL, &script) ||
            jconf_str(fc, figure, "vars", 0, "", &vars))
            goto done;
    }
    const agoq_runner *runner = agoq_experiment_find(kind);
    if (!runner) {
        agoq_error("%s: key 'kind': unknown experiment kind '%s' (agoq run --help lists them)", file, kind);
        goto done;
    }
    agoq_run_ctx ctx = {{file, "config"}, AGOQ_BACKEND_CPU, seed_given ? o.seed : (uint64_t)seed, o.quiet, o.check, 1};
    if (agoq_backend_resolve(backend_given ? o.backend : backend, &ctx.backend) != 0) goto done;
    char defout[4096];
    if (!out) { /* the results path rule: results/<machine>/<file name> */
        const char *base = strrchr(file, '/');
        char name[4096];
        snprintf(name, sizeof name, "%s", base ? base + 1 : file);
        char *dot = strrchr(name, '.');
        if (dot && strcmp(dot, ".json") == 0) *dot = '\0';
        out = agoq_results_default_out(runner, ctx.backend, name, defout, sizeof defout);
    }
    if (!o.quiet && !o.check) fprintf(stderr, "agoq run: %s (kind %s, backend %s, seed %llu)\n", file, kind,
                          agoq_backend_name(ctx.backend), (unsigned long long)ctx.seed);
    rc = agoq_experiment_execute(kind, &ctx, (cJSON *)config, o.out ? o.out : out, tsv, ntsv, argc, argv) == 0 ? 0 : 1;
done:
    free(tsv);
    cJSON_Delete(doc);
    return rc;
}
