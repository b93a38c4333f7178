/* agoq: the agoq-bench command line. `agoq help` lists the subcommands; `agoq CMD --help`
 * explains each. Exit status: 0 success, 1 runtime failure, 2 usage error. */
#include <stdio.h>
#include <string.h>

#include "runners/commands.h"
#include "core/common.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} g_cmds[] = {
    {"list", cmd_list, "formats, models, experiment kinds and backends available"},
    {"quant", cmd_quant, "quantization error and throughput of every format (-b -e -f sweep)"},
    {"run", cmd_run, "run an experiment file: agoq run experiments/NAME.json"},
    {"kernels", cmd_kernels, "benchmark the CUDA kernels against the copy bandwidth"},
    {"collectives", cmd_collectives, "quantized collectives vs NCCL baselines (-b -e -f -g)"},
    {"memory", cmd_memory, "per-GPU memory model for a model, parallel layout and policy"},
    {"bitalloc", cmd_bitalloc, "choose per-stage bit widths under a memory budget"},
    {"simulate", cmd_simulate, "step-time simulator at scale (simulated results)"},
    {"train", cmd_train, "train a small LLaMA-style model under quantization policies"},
    {"step", cmd_step, "measured training step of LLaMA layers on one GPU: policies side by side"},
};

static void usage(FILE *f) {
    fprintf(f, "agoq-bench %s: activation and gradient quantization for distributed LLM training\n"
               "usage: agoq COMMAND [options]   (agoq COMMAND --help for each)\n\ncommands:\n",
            AGOQ_VERSION);
    for (size_t i = 0; i < sizeof g_cmds / sizeof g_cmds[0]; i++)
        fprintf(f, "  %-12s %s\n", g_cmds[i].name, g_cmds[i].what);
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
    for (size_t i = 0; i < sizeof g_cmds / sizeof g_cmds[0]; i++)
        if (strcmp(argv[1], g_cmds[i].name) == 0) return g_cmds[i].fn(argc - 1, argv + 1);
    agoq_error("unknown command '%s' (agoq help lists them)", argv[1]);
    return 2;
}
