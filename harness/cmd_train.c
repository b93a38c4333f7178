/* agoq train: placeholder until its module lands (it exits 1, never fakes a result). */
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"

int agoq_exp_train(const agoq_run_ctx *ctx, const cJSON *config, agoq_results *res) {
    agoq_error("experiment kind 'train' is not implemented in this build");
    return -1;
}

int cmd_train(int argc, char **argv) {
    agoq_error("train: not implemented in this build");
    return 1;
}
