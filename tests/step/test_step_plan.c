/* Host-side tests of the step engine: the dry run (every allocation of a real step, no kernel)
 * against the memory model, the arena's bookkeeping, the plan's checks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "step/step.h"
#include "tests/test.h"

static int setup(agoq_step_config *c, const char *model, const char *policy, long seq, long layers) {
    static agoq_model_card card;
    if (agoq_model_load(model, &card)) return -1;
    agoq_step_config_default(c, &card);
    if (agoq_policy_by_name(policy, &c->ms.pol)) return -1;
    if (c->ms.pol.grad.kind == AGOQ_STORE_NATIVE) c->ms.pol.grad.kind = AGOQ_STORE_FP32;
    c->ms.par.seq = seq;
    c->layers = layers;
    c->dry = 1;
    return 0;
}

/* The saved bytes per role the dry step allocates equal the memory model's, exactly. */
TEST(step_dry_saved_bytes_equal_memory_model) {
    const char *pols[] = {"bf16", "agoq", "coat", "int8", "int4"};
    const char *models[] = {"llama2-7b", "llama3-8b", "llama2-13b"};
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t pi = 0; pi < 5; pi++) {
            agoq_step_config c;
            CHECK(setup(&c, models[mi], pols[pi], 1024, 2) == 0);
            if (mi == 2) c.ms.par.tp = 8; /* 13B per-rank shapes at TP = 8: F = 1728, not a block multiple */
            agoq_step_result r;
            CHECK_MSG(agoq_step_run(&c, &r) == 0, "%s %s", models[mi], pols[pi]);
            for (int k = 0; k < AGOQ_ROLE_COUNT; k++)
                CHECK_MSG(r.saved_by_role[k] == r.model_saved_by_role[k], "%s %s role %s: engine %.0f, model %.0f",
                          models[mi], pols[pi], agoq_role_name(k), r.saved_by_role[k], r.model_saved_by_role[k]);
            double per_layer = 0;
            for (int k = 0; k < AGOQ_ROLE_COUNT; k++) per_layer += r.model_saved_by_role[k];
            CHECK_NEAR(r.saved_activation_bytes, 2 * per_layer, 0);
            CHECK_NEAR(r.model.activations_bytes, 2 * per_layer, 0);
            agoq_step_result_free(&r);
        }
}

TEST(step_dry_print_llama2_7b) {
    const char *pols[] = {"bf16", "agoq", "coat"};
    for (size_t pi = 0; pi < 3; pi++) {
        agoq_step_config c;
        CHECK(setup(&c, "llama2-7b", pols[pi], 4096, 4) == 0);
        agoq_step_result r;
        CHECK(agoq_step_run(&c, &r) == 0);
        fprintf(stderr, "    %s: peak %.3f GB (live %.3f) model total %.3f GB; saved %.3f GB (model %.3f); w %.3f g %.3f o %.3f s %.3f io %.3f ws %.3f\n",
                pols[pi], r.peak_bytes / 1e9, r.peak_live_bytes / 1e9, r.model.total_bytes / 1e9,
                r.saved_activation_bytes / 1e9, r.model.activations_bytes / 1e9, r.at_peak[0] / 1e9,
                r.at_peak[1] / 1e9, r.at_peak[2] / 1e9, r.at_peak[3] / 1e9, r.at_peak[4] / 1e9, r.at_peak[5] / 1e9);
        agoq_step_result_free(&r);
    }
}
