/* Shared subcommand flags; see cmdline.h. */
#include "harness/cmdline.h"

#include <stdio.h>
#include <string.h>

#include "harness/common.h"
#include "harness/experiment.h"

void agoq_common_init(agoq_common_opts *o, const char *cmd) {
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->backend = "auto";
    o->seed = 1;
    o->sweep = cJSON_CreateObject();
    optind = 0; /* glibc: 0 re-initializes getopt fully (1 keeps a half-read "-abc" cluster) */
}

int agoq_common_opt(agoq_common_opts *o, int c, const char *arg) {
    char flag[8] = {'-', (char)c, 0};
    size_t sz;
    long l;
    double d;
    switch (c) {
    case AGOQ_OPT_BACKEND: o->backend = arg; return 1;
    case AGOQ_OPT_SEED:
        if (cli_parse_u64(arg, &o->seed) != 0) {
            agoq_error("%s: bad value '%s' for --seed", o->cmd, arg);
            return -1;
        }
        return 1;
    case AGOQ_OPT_CHECK: o->check = 1; return 1;
    case 'o': o->out = arg; return 1;
    case 'q': o->quiet = 1; return 1;
    case 'h': o->help = 1; return 1;
    case 'b':
    case 'e':
        if (cli_size_arg(o->cmd, flag, arg, &sz)) return -1;
        cJSON_AddNumberToObject(o->sweep, c == 'b' ? "min_bytes" : "max_bytes", (double)sz);
        return 1;
    case 'f':
        if (cli_double_arg(o->cmd, flag, arg, &d)) return -1;
        cJSON_AddNumberToObject(o->sweep, "factor", d);
        return 1;
    case 'n':
    case 'w':
        if (cli_long_arg(o->cmd, flag, arg, c == 'n' ? 1 : 0, 1000000, &l)) return -1;
        cJSON_AddNumberToObject(o->sweep, c == 'n' ? "iters" : "warmup", (double)l);
        return 1;
    default: return 0;
    }
}

void agoq_common_apply_sweep(const agoq_common_opts *o, cJSON *config) {
    const cJSON *e;
    cJSON_ArrayForEach(e, o->sweep) {
        cJSON_DeleteItemFromObjectCaseSensitive(config, e->string);
        cJSON_AddItemToObject(config, e->string, cJSON_Duplicate(e, 1));
    }
}

int agoq_cmd_execute(agoq_common_opts *o, const char *kind, cJSON *config, const char *const *tsv,
                     size_t ntsv, int argc, char **argv) {
    agoq_common_apply_sweep(o, config);
    agoq_run_ctx ctx = {{"command line", "config"}, AGOQ_BACKEND_CPU, o->seed, o->quiet, o->check, 0};
    char defout[64];
    snprintf(defout, sizeof defout, "results/%s.json", o->cmd);
    const char *out = o->out ? o->out : defout;
    int rc = -1;
    if (agoq_backend_resolve(o->backend, &ctx.backend) == 0)
        rc = agoq_experiment_execute(kind, &ctx, config, out, tsv, ntsv, argc, argv);
    cJSON_Delete(config);
    cJSON_Delete(o->sweep);
    o->sweep = NULL;
    return rc == 0 ? 0 : 1;
}

int agoq_cmd_usage_error(const char *cmd) {
    fprintf(stderr, "agoq %s: try 'agoq %s --help'\n", cmd, cmd);
    return 2;
}
