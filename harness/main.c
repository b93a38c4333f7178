/* agoq: the agoq-bench command line. `agoq help` lists the subcommands; `agoq CMD --help`
 * explains each. Exit status: 0 success, 1 runtime failure, 2 usage error.
 * Dispatch only: `list` and `run` (runners/list.c, runners/run.c), then one subcommand per
 * experiment kind, each an agoq_runner descriptor (runners/<kind>.c) run by agoq_runner_main. */
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "runners/commands.h"
#include "runners/experiment.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} g_cmds[] = {
    {"list", cmd_list, "formats, models, experiment kinds and backends available"},
    {"run", cmd_run, "run an experiment file: agoq run experiments/NAME.json"},
};
#define NCMDS (sizeof g_cmds / sizeof g_cmds[0])

static void usage(FILE *f) {
    int nk;
    const agoq_runner *const *k = agoq_runners(&nk);
    fprintf(f, "agoq-bench %s: activation and gradient quantization for distributed LLM training\n"
               "usage: agoq COMMAND [options]   (agoq COMMAND --help for each)\n\ncommands:\n",
            AGOQ_VERSION);
    for (size_t i = 0; i < NCMDS; i++) fprintf(f, "  %-12s %s\n", g_cmds[i].name, g_cmds[i].what);
    for (int i = 0; i < nk; i++) fprintf(f, "  %-12s %s\n", k[i]->kind, k[i]->what);
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("agoq-bench %s\n", AGOQ_VERSION);
        return 0;
    }
    for (size_t i = 0; i < NCMDS; i++)
        if (strcmp(argv[1], g_cmds[i].name) == 0) return g_cmds[i].fn(argc - 1, argv + 1);
    const agoq_runner *r = agoq_experiment_find(argv[1]);
    if (r) return agoq_runner_main(r, argc - 1, argv + 1);
    agoq_error("unknown command '%s' (agoq help lists them)", argv[1]);
    return 2;
}
