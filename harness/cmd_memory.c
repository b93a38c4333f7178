/* agoq memory: placeholder until its module lands (it exits 1, never fakes a result). */
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"

int agoq_exp_memory(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res) {
    agoq_error("experiment kind 'memory' is not implemented in this build");
    return -1;
}

int cmd_memory(int argc, char **argv) {
    agoq_error("memory: not implemented in this build");
    return 1;
}
