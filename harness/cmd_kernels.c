/* agoq kernels: placeholder until its module lands (it exits 1, never fakes a result). */
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"

int agoq_exp_kernels(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res) {
    agoq_error("experiment kind 'kernels' is not implemented in this build");
    return -1;
}

int cmd_kernels(int argc, char **argv) {
    agoq_error("kernels: not implemented in this build");
    return 1;
}
