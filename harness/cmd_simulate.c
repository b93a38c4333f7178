/* agoq simulate: placeholder until its module lands (it exits 1, never fakes a result). */
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"

int agoq_exp_simulate(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res) {
    agoq_error("experiment kind 'simulate' is not implemented in this build");
    return -1;
}

int cmd_simulate(int argc, char **argv) {
    agoq_error("simulate: not implemented in this build");
    return 1;
}
