/* The simulator calibrated by measured step records (issue 16), on synthetic records: a results
 * file of "measured" step records generated here from known rates (GEMM 600 TFLOP/s, attention
 * 450, 2 ns per token-layer of memory-bound ops, 0.01 ns per parameter of optimizer, a profile
 * 2% above the step) is read back by the machine file's "derive" specs (sim/machine.c) and by
 * the hold-out mode (sim/sim_holdout.c), which must recover those rates and predict held-out
 * seqs exactly (the synthetic times follow the model; real ones test the model). Written to
 * the test's temporary directory: no synthetic number is ever committed as a result. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "core/results.h"
#include "models/memory.h"
#include "sim/machine.h"
#include "sim/step_calib.h"
#include "sim/step_model.h"
#include "tests/test.h"

#define GEMM_TFLOPS 600.0
#define ATTN_TFLOPS 450.0

/* One synthetic measured record of `layers` LLaMA-2-7B layers (tp 1, 1 micro-batch). */
static cJSON *synth_record(const char *name, long seq, int layers, int recomputed) {
    agoq_model_card card;
    if (agoq_model_load("llama2-7b", &card)) return NULL;
    const double T = (double)seq, L = layers, k = recomputed;
    const double gemm_ms = (3 * L + k) * agoq_layer_gemm_flops_fwd(&card, T) / (GEMM_TFLOPS * 1e9);
    const double attn_ms = (3.5 * L + k) * agoq_layer_attn_flops_fwd(&card, 1, T) / (ATTN_TFLOPS * 1e9);
    const double params = L * agoq_model_layer_params(&card);
    const double other_ms = 2e-6 * (L + k) * T * (strcmp(name, "agoq") ? 1.0 : 1.5), opt_ms = 1e-8 * params;
    const double op_sum = gemm_ms + attn_ms + other_ms + opt_ms;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "policy", strcmp(name, "agoq") ? "bf16" : "agoq");
    cJSON_AddStringToObject(o, "model", "llama2-7b");
    cJSON_AddStringToObject(o, "source", "measured");
    const struct { const char *k; double v; } f[] = {
        {"tp", 1}, {"pp", 1}, {"stage", 0}, {"layers", L}, {"seq", T}, {"micro_batch", 1}, {"micro_batches", 1},
        {"recomputed_layers", k}, {"step_ms", op_sum / 1.02}, {"peak_bytes", 1e10}, {"model_total_bytes", 0.99e10},
        {"needed_bytes", 0.98e10}, {"attn_workspace_bytes", 0.02e10}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) cJSON_AddNumberToObject(o, f[i].k, f[i].v);
    cJSON_AddStringToObject(o, "grad", "fp32");
    cJSON_AddStringToObject(o, "moments", "fp32");
    cJSON_AddTrueToObject(o, "op_profile_complete");
    cJSON *ops = cJSON_AddObjectToObject(o, "op_ms");
    cJSON_AddNumberToObject(ops, "gemm_fwd", gemm_ms / 3);
    cJSON_AddNumberToObject(ops, "gemm_dgrad", gemm_ms / 3);
    cJSON_AddNumberToObject(ops, "gemm_wgrad", gemm_ms / 3);
    cJSON_AddNumberToObject(ops, "attn_fwd", attn_ms / 3.5);
    cJSON_AddNumberToObject(ops, "attn_bwd", attn_ms * 2.5 / 3.5);
    cJSON_AddNumberToObject(ops, "norm_fwd", other_ms / 2);
    cJSON_AddNumberToObject(ops, "swiglu_bwd", other_ms / 2);
    cJSON_AddNumberToObject(ops, "optimizer", opt_ms);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "memory_model"), "params", params);
    return o;
}

/* results file with bf16 and agoq at seq 2K..16K, plus a dry (simulated) record to be ignored */
static void write_synth(const char *path) {
    cJSON *root = cJSON_CreateObject(), *recs = cJSON_AddArrayToObject(root, "records");
    static const long seqs[] = {2048, 4096, 8192, 16384};
    for (size_t i = 0; i < 4; i++) {
        cJSON_AddItemToArray(recs, synth_record("bf16", seqs[i], 2, 0));
        cJSON_AddItemToArray(recs, synth_record("agoq", seqs[i], 2, 0));
    }
    cJSON *dry = synth_record("bf16", 4096, 2, 0);
    cJSON_ReplaceItemInObject(dry, "source", cJSON_CreateString("simulated"));
    cJSON_AddItemToArray(recs, dry);
    char *text = cJSON_Print(root);
    agoq_test_write(path, text);
    cJSON_free(text);
    cJSON_Delete(root);
}

TEST(sim_calib_derive_rates_from_a_record) {
    cJSON *r = synth_record("bf16", 4096, 2, 1);
    CHECK_NEAR(agoq_step_meas_derive(r, "gemm_tflops"), GEMM_TFLOPS, 1e-9);
    CHECK_NEAR(agoq_step_meas_derive(r, "attention_tflops"), ATTN_TFLOPS, 1e-9);
    /* 30 bytes per parameter over 1e-8 ms per parameter = 3000 GB/s */
    CHECK_NEAR(agoq_step_meas_derive(r, "optimizer_GBps"), 3000.0, 1e-9);
    /* memory-bound ops: 2e-6 ms per token-layer (bf16) over (hidden + ffn) = 4096 + 11008 */
    CHECK_NEAR(agoq_step_meas_derive(r, "elementwise_ns"), 2.0 / (4096 + 11008), 1e-12);
    cJSON_ReplaceItemInObject(r, "moments", cJSON_CreateString("dyn8/256"));
    CHECK(isnan(agoq_step_meas_derive(r, "optimizer_GBps"))); /* no fp32 optimizer bytes */
    cJSON_ReplaceItemInObject(r, "op_profile_complete", cJSON_CreateFalse());
    CHECK(isnan(agoq_step_meas_derive(r, "gemm_tflops")));
    cJSON_Delete(r);
}

TEST(sim_calib_machine_file_reads_step_records) {
    char res[512], mach[512], text[4096];
    snprintf(res, sizeof res, "%s/synth_step.json", agoq_test_tmpdir());
    write_synth(res);
    snprintf(mach, sizeof mach, "%s/synth_machine.json", agoq_test_tmpdir());
    snprintf(text, sizeof text,
             "{\"name\": \"m\", \"gpu\": \"g\", \"gpus_per_node\": 8,"
             " \"gpu_memory_GiB\": {\"value\": 80, \"source\": \"assumed: x\"},"
             " \"gemm_bf16_tflops\": {\"value\": 1, \"source\": \"assumed: x\", \"measured\": ["
             "   {\"file\": \"/nonexistent.json\", \"derive\": \"gemm_tflops\"},"
             "   {\"file\": \"%s\", \"derive\": \"gemm_tflops\", \"reduce\": \"median\"}]},"
             " \"gemm_fp8_tflops\": {\"value\": 2, \"source\": \"assumed: x\"},"
             " \"attention_tflops\": {\"value\": 1, \"source\": \"assumed: x\","
             "   \"measured\": {\"file\": \"%s\", \"derive\": \"attention_tflops\", \"where\": {\"name\": \"agoq\"}}},"
             " \"kernel_GBps\": {\"value\": 1, \"source\": \"assumed: x\","
             "   \"measured\": {\"file\": \"%s\", \"derive\": \"optimizer_GBps\", \"reduce\": \"min\"}},"
             " \"intra_GBps\": {\"value\": 1, \"source\": \"assumed: x\"}, \"intra_latency_us\": {\"value\": 1, \"source\": \"assumed: x\"},"
             " \"inter_GBps_per_node\": {\"value\": 1, \"source\": \"assumed: x\"}, \"inter_latency_us\": {\"value\": 1, \"source\": \"assumed: x\"}}",
             res, res, res);
    agoq_test_write(mach, text);
    agoq_machine m;
    CHECK(agoq_machine_load(mach, &m) == 0);
    CHECK_NEAR(agoq_machine_val(&m, AGOQ_CAL_GEMM_BF16_TFLOPS), GEMM_TFLOPS, 1e-9);
    CHECK(m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].measured && strstr(m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].source, "over 8 records"));
    CHECK(strstr(m.cal[AGOQ_CAL_ATTN_TFLOPS].source, "over 4 records") != NULL);
    CHECK_NEAR(agoq_machine_val(&m, AGOQ_CAL_ATTN_TFLOPS), ATTN_TFLOPS, 1e-9);
    CHECK_NEAR(agoq_machine_val(&m, AGOQ_CAL_KERNEL_GBPS), 3000.0, 1e-9);
    CHECK(!m.cal[AGOQ_CAL_INTRA_GBPS].measured && strncmp(m.cal[AGOQ_CAL_INTRA_GBPS].source, "assumed", 7) == 0);
    /* an unknown derive is a one-line error naming the key */
    char *bad = strstr(text, "\"optimizer_GBps\"");
    memcpy(bad, "\"optimizer_GBpz\"", 16);
    agoq_test_write(mach, text);
    char why[512];
    agoq_error_capture(why, sizeof why);
    int rc = agoq_machine_load(mach, &m);
    agoq_error_capture(NULL, 0);
    CHECK_MSG(rc == -1 && strstr(why, "kernel_GBps.measured.derive"), "rc %d: %s", rc, why);
}

TEST(sim_calib_holdout_predicts_held_out_seqs) {
    char res[512], exp[512], out[600], args[1400], msg[16384], text[1024];
    snprintf(res, sizeof res, "%s/synth_holdout_step.json", agoq_test_tmpdir());
    write_synth(res);
    snprintf(exp, sizeof exp, "%s/holdout.json", agoq_test_tmpdir());
    snprintf(text, sizeof text,
             "{\"kind\": \"simulate\", \"config\": {\"mode\": \"holdout\", \"measured\": [\"%s\", \"/nonexistent.json\"],"
             " \"calibrate_seqs\": [2048, 16384], \"skip_seqs\": [8192]}}", res);
    agoq_test_write(exp, text);
    snprintf(out, sizeof out, "%s/holdout.out.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "run %s -q -o %s", exp, out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0, "%s", msg);
    cJSON *doc = agoq_read_json(out);
    CHECK(doc != NULL);
    if (!doc) return;
    const cJSON *meta = cJSON_GetObjectItem(doc, "meta"), *h = cJSON_GetObjectItem(meta, "holdout");
    CHECK(strcmp(cJSON_GetObjectItem(meta, "source")->valuestring, "simulated") == 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(h, "missing")) == 1);
    const cJSON *cal = cJSON_GetObjectItem(h, "calibration");
    CHECK_NEAR(cJSON_GetObjectItem(cJSON_GetObjectItem(cal, "gemm_tflops"), "value")->valuedouble, GEMM_TFLOPS, 1e-6);
    CHECK_NEAR(cJSON_GetObjectItem(cJSON_GetObjectItem(cal, "attention_tflops"), "value")->valuedouble, ATTN_TFLOPS, 1e-6);
    const cJSON *recs = cJSON_GetObjectItem(doc, "records"), *r;
    int held = 0;
    CHECK(cJSON_GetArraySize(recs) == 6); /* the dry record is not a measurement; seq 8192 skipped */
    cJSON_ArrayForEach(r, recs) {
        const char *role = cJSON_GetObjectItem(r, "role")->valuestring;
        const double seq = cJSON_GetObjectItem(r, "seq")->valuedouble;
        CHECK(strcmp(role, seq == 2048 || seq == 16384 ? "calibration" : "held_out") == 0);
        held += strcmp(role, "held_out") == 0;
        CHECK_NEAR(cJSON_GetObjectItem(r, "time_err")->valuedouble, 0.0, 1e-9);
        CHECK_NEAR(cJSON_GetObjectItem(r, "peak_err")->valuedouble, -0.01, 1e-12);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "time_within_tolerance")));
    }
    CHECK(held == 2 && cJSON_GetObjectItem(h, "held_out_time_within_tolerance")->valuedouble == 2);
    cJSON_Delete(doc);
    /* no measured record at the calibration seqs: one line, no results file */
    snprintf(text, sizeof text,
             "{\"kind\": \"simulate\", \"config\": {\"mode\": \"holdout\", \"measured\": [\"/nonexistent.json\"],"
             " \"calibrate_seqs\": [4096]}}");
    agoq_test_write(exp, text);
    snprintf(out, sizeof out, "%s/holdout_bad.out.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "run %s -q -o %s", exp, out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 1 && strstr(msg, "key 'config.calibrate_seqs'") &&
          !agoq_test_file_exists(out));
}

/* The step model adds elementwise_ns x T (H + F) / tp per layer and micro-batch (1/3 in forward,
 * 2/3 in backward): with R = 0 and one micro-batch the step grows by exactly layers x that. */
TEST(sim_calib_elementwise_term_in_the_step_model) {
    agoq_model_card m;
    CHECK(agoq_model_load("llama2-7b", &m) == 0);
    agoq_machine mc;
    memset(&mc, 0, sizeof mc);
    snprintf(mc.name, sizeof mc.name, "t");
    mc.gpus_per_node = 8;
    double v[AGOQ_CAL_COUNT] = {1000, 100, 200, 50, 500, 100, 1, 100, 1, 0};
    for (int i = 0; i < AGOQ_CAL_COUNT; i++) mc.cal[i].value = v[i];
    mc.fabric.intra.bw_Bps = mc.fabric.inter.bw_Bps = INFINITY; /* no communication time */
    agoq_step_plan p;
    agoq_step_plan_defaults(&p, AGOQ_METHOD_MEGATRON);
    p.tp = 2, p.seq = 4096, p.recompute = 0;
    agoq_step_result r0, r1;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r0) == 0);
    mc.cal[AGOQ_CAL_ELEM_NS].value = 0.5;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r1) == 0);
    const double want = (double)m.layers * 0.5e-9 * 4096.0 * (double)(m.hidden + m.ffn) / 2.0;
    CHECK_NEAR(r1.step_s - r0.step_s, want, 1e-9 * want);
    CHECK_NEAR(r1.compute_s - r0.compute_s, want, 1e-9 * want);
}
