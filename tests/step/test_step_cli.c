/* `agoq step` / kind "step" through the real binary, host-side: dry runs (the step's exact
 * allocation plan, no GPU) write records whose fields are present and consistent with each
 * other and with the memory model; min_fit picks the fewest recomputed layers that fit; fit
 * "record" writes "fits": false records; the repository's step experiments parse and plan;
 * bad input is one line naming the file and key, a non-zero exit and no results file.
 * Every dry run here is 2-4 layers at seq <= 4096 (milliseconds; 64K for step_seq.json). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/backend.h"
#include "core/results.h"
#include "tests/test.h"

static double num(const cJSON *o, const char *k) { return results_get_num(o, k); }

static const char *str(const cJSON *o, const char *k) { return results_get_str(o, k); }

static const cJSON *by_name(const cJSON *recs, const char *name) {
    const cJSON *r;
    cJSON_ArrayForEach(r, recs)
        if (strcmp(str(r, "name"), name) == 0) return r;
    return NULL;
}

/* Runs `agoq <args> -q -o OUT` and returns the parsed results (NULL on failure). */
static cJSON *run_ok(const char *name, const char *args) {
    char out[512], cmd[4096], msg[16384];
    snprintf(out, sizeof out, "%s/%s.out.json", agoq_test_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "%s -q -o %s", args, out);
    int rc = agoq_test_run_cli(cmd, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "    %s: exit %d: %.500s\n", name, rc, msg);
        return NULL;
    }
    return agoq_read_json(out);
}

/* A step experiment file with `config`; expects exit `want_rc`, `want` in the message, exactly
 * one line of output, and no results file. */
static int bad_step(const char *name, const char *config, int want_rc, const char *want) {
    char file[512], out[512], args[4096], msg[8192], json[4096];
    snprintf(file, sizeof file, "%s/step_%s.json", agoq_test_tmpdir(), name);
    snprintf(out, sizeof out, "%s/step_%s.out.json", agoq_test_tmpdir(), name);
    snprintf(json, sizeof json, "{\"kind\": \"step\", \"config\": %s}", config);
    agoq_test_write(file, json);
    snprintf(args, sizeof args, "run %s --out %s -q", file, out);
    int rc = agoq_test_run_cli(args, msg, sizeof msg);
    const char *nl = strchr(msg, '\n');
    int one_line = nl && nl[1] == '\0';
    if (rc != want_rc || !strstr(msg, want) || strncmp(msg, "agoq: ", 6) || !one_line || agoq_test_file_exists(out)) {
        fprintf(stderr, "    %s: rc %d (want %d), wanted one line with '%s', got: %s\n", name, rc, want_rc, want, msg);
        return 0;
    }
    return 1;
}

TEST(step_cli_dry_records_fields_and_consistency) {
    cJSON *doc = run_ok("step_dry7", "step --dry --layers 2 --seq 1024 --runs bf16,recompute,selective,coat,agoq,int8,int4");
    CHECK(doc != NULL);
    const cJSON *recs = cJSON_GetObjectItem(doc, "records"), *r;
    CHECK(strcmp(str(cJSON_GetObjectItem(doc, "meta"), "source"), "simulated") == 0);
    CHECK(cJSON_GetArraySize(recs) == 7);
    static const char *const fields[] = {"tp", "pp", "stage", "layers", "seq", "micro_batch", "micro_batches", "inflight",
                                         "recomputed_layers", "peak_bytes", "peak_live_bytes", "arena_bytes",
                                         "weights_bytes", "grads_bytes", "optimizer_bytes", "saved_bytes", "io_bytes",
                                         "workspace_bytes", "saved_activation_bytes", "model_total_bytes", "fwd_flops",
                                         "bwd_flops", "needed_bytes", "peak_vs_bf16", "saved_vs_bf16",
                                         "peak_vs_recompute"};
    cJSON_ArrayForEach(r, recs) {
        const char *nm = str(r, "name");
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
            CHECK_MSG(isfinite(num(r, fields[i])), "%s: field %s missing", nm, fields[i]);
        CHECK(strcmp(str(r, "source"), "simulated") == 0 && strcmp(str(r, "comm"), "omitted") == 0);
        CHECK(strstr(str(r, "note"), "dry run") && strcmp(str(r, "model"), "llama2-7b") == 0);
        CHECK_MSG(!cJSON_GetObjectItem(r, "step_ms") && !cJSON_GetObjectItem(r, "tokens_per_s"), "%s: timing in a dry record", nm);
        CHECK(cJSON_IsObject(cJSON_GetObjectItem(r, "memory_model")) && cJSON_IsObject(cJSON_GetObjectItem(r, "stores")));
        /* the engine's saved bytes per role are the memory model's, role by role */
        const cJSON *sb = cJSON_GetObjectItem(r, "saved_by_role"), *mb = cJSON_GetObjectItem(r, "model_saved_by_role"), *e;
        double per_layer = 0;
        const int all_recomputed = num(r, "recomputed_layers") == num(r, "layers");
        CHECK(cJSON_GetArraySize(sb) > 0 && cJSON_GetArraySize(sb) == cJSON_GetArraySize(mb));
        cJSON_ArrayForEach(e, sb) {
            /* per stored layer: a stack whose every layer is recomputed stores none (0) */
            CHECK_MSG(e->valuedouble == (all_recomputed ? 0 : num(mb, e->string)), "%s role %s: engine %.0f, model %.0f", nm, e->string,
                      e->valuedouble, num(mb, e->string));
            per_layer += e->valuedouble;
        }
        /* the at-peak classes add up to the live peak; the arena is the dry run's need */
        double sum = num(r, "weights_bytes") + num(r, "grads_bytes") + num(r, "optimizer_bytes") + num(r, "saved_bytes") +
                     num(r, "io_bytes") + num(r, "workspace_bytes");
        CHECK_NEAR(sum, num(r, "peak_live_bytes"), 0);
        CHECK(num(r, "peak_bytes") >= num(r, "peak_live_bytes"));
        CHECK(num(r, "arena_bytes") == num(r, "peak_bytes") && num(r, "needed_bytes") == num(r, "peak_bytes"));
        if (num(r, "recomputed_layers") == 0)
            CHECK_NEAR(num(r, "saved_activation_bytes"), 2 * per_layer, 0);
    }
    const cJSON *bf = by_name(recs, "bf16"), *rc = by_name(recs, "recompute"), *ag = by_name(recs, "agoq");
    CHECK(bf && rc && ag);
    CHECK(num(bf, "peak_vs_bf16") == 1 && num(rc, "recomputed_layers") == 2 && num(bf, "recomputed_layers") == 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(by_name(recs, "selective"), "selective")));
    CHECK_NEAR(num(ag, "saved_vs_bf16"), num(ag, "saved_activation_bytes") / num(bf, "saved_activation_bytes"), 1e-12);
    CHECK_NEAR(num(ag, "peak_vs_recompute"), num(ag, "peak_bytes") / num(rc, "peak_bytes"), 1e-12);
    CHECK(num(ag, "saved_vs_bf16") < 0.5 && num(rc, "saved_vs_bf16") < num(ag, "saved_vs_bf16"));
    const cJSON *st = cJSON_GetObjectItem(ag, "stores");
    CHECK(strcmp(str(st, "norm_in"), "fp4_e2m1/128") == 0 && strcmp(str(st, "ffn2_in"), "recompute") == 0);
    CHECK(strcmp(str(st, "attention"), "native") == 0 && strcmp(str(ag, "grad"), "dyn8/256") == 0);
    CHECK(strcmp(str(bf, "grad"), "fp32") == 0 && strcmp(str(bf, "moments"), "fp32") == 0);
    CHECK(strcmp(str(by_name(recs, "coat"), "policy"), "coat") == 0);
    cJSON_Delete(doc);
}

TEST(step_cli_run_objects_min_fit_and_fit_record) {
    /* llama2-7b, 4 layers, seq 4096: bf16 store-all needs 17.16 GB, one recomputed layer 16.67,
     * two 16.17: a 16.5 GB budget fits two, not one */
    char file[512], args[1024];
    snprintf(file, sizeof file, "%s/step_minfit.json", agoq_test_tmpdir());
    agoq_test_write(file, "{\"kind\": \"step\", \"tsv\": [\"name\", \"fits\", \"recomputed_layers\", \"needed_bytes\"],"
                          " \"config\": {\"dry\": true, \"layers\": 4, \"seq\": 4096, \"budget_gb\": 16.5, \"fit\": \"record\","
                          " \"runs\": [\"bf16\", {\"name\": \"fit\", \"policy\": \"bf16\", \"recompute_layers\": \"min_fit\"},"
                          " {\"name\": \"r1\", \"policy\": \"bf16\", \"recompute_layers\": 1},"
                          " {\"name\": \"r2\", \"policy\": \"bf16\", \"recompute_layers\": 2},"
                          " {\"name\": \"agoq_fp8attn\", \"policy\": \"agoq\", \"store\": {\"attention\": \"fp8_e4m3/128\"},"
                          " \"grad\": \"fp32\", \"moments\": \"fp32\"}]}}");
    snprintf(args, sizeof args, "run %s", file);
    cJSON *doc = run_ok("step_minfit", args);
    CHECK(doc != NULL);
    const cJSON *recs = cJSON_GetObjectItem(doc, "records");
    const cJSON *bf = by_name(recs, "bf16"), *fit = by_name(recs, "fit"), *r1 = by_name(recs, "r1"), *r2 = by_name(recs, "r2");
    const cJSON *aq = by_name(recs, "agoq_fp8attn");
    CHECK(bf && fit && r1 && r2 && aq);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(bf, "fits")) && num(bf, "needed_bytes") > 16.5e9);
    CHECK(num(bf, "budget_bytes") == 16.5e9 && !cJSON_GetObjectItem(bf, "peak_bytes"));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r1, "fits")) && cJSON_IsTrue(cJSON_GetObjectItem(r2, "fits")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(fit, "fits")) && num(fit, "recomputed_layers") == 2);
    CHECK(num(fit, "needed_bytes") == num(r2, "needed_bytes") && num(fit, "peak_bytes") <= 16.5e9);
    CHECK(!cJSON_GetObjectItem(fit, "peak_vs_bf16")); /* bf16 did not fit: no ratio against it */
    const cJSON *st = cJSON_GetObjectItem(aq, "stores");
    CHECK(strcmp(str(st, "attention"), "fp8_e4m3/128") == 0 && strcmp(str(st, "norm_in"), "fp4_e2m1/128") == 0);
    CHECK(strcmp(str(aq, "grad"), "fp32") == 0 && strcmp(str(aq, "policy"), "agoq") == 0);
    cJSON_Delete(doc);
    char tsv[512];
    snprintf(tsv, sizeof tsv, "%s/step_minfit.out.tsv", agoq_test_tmpdir());
    CHECK(agoq_test_file_exists(tsv));
}

/* Every repository step experiment plans: step_dry.json as it is, the GPU ones with "dry": true. */
TEST(step_cli_repository_experiments_plan) {
    static const char *const files[] = {"step_dry", "step_quick", "step_llama2_7b", "step_seq",
                                        "step_plan_seq_budget", "step_16_act_bits", "step_16_grad_bits",
                                        "step_16_placement", "step_16_seq_13b_48gb", "step_16_seq_13b_80gb",
                                        "step_16_seq_7b_48gb", "step_16_table8", "step_16_dbca_pp"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char src[256], file[512], args[1024];
        snprintf(src, sizeof src, "experiments/%s.json", files[i]);
        cJSON *exp = agoq_read_json(src);
        CHECK_MSG(exp != NULL, "%s", src);
        cJSON *cfg = cJSON_GetObjectItem(exp, "config");
        CHECK(strcmp(str(exp, "kind"), "step") == 0 && cfg);
        const int dry = cJSON_IsTrue(cJSON_GetObjectItem(cfg, "dry"));
        CHECK_MSG(dry ? strcmp(str(exp, "backend"), "cpu") == 0 : strcmp(str(exp, "backend"), "cuda") == 0,
                  "%s: the dry plans run on a CPU; the measured ones ask for cuda", src);
        CHECK_MSG(strncmp(files[i], "step_16_", 8) || strncmp(str(exp, "out"), "results/h200/", 13) == 0,
                  "%s: the sweeps' measured results go to results/h200/ (tools/device_step.sh sweeps)", src);
        cJSON_ReplaceItemInObject(exp, "backend", cJSON_CreateString("cpu"));
        cJSON_DeleteItemFromObject(cfg, "dry");
        cJSON_AddTrueToObject(cfg, "dry");
        char *text = cJSON_Print(exp);
        snprintf(file, sizeof file, "%s/repo_%s.json", agoq_test_tmpdir(), files[i]);
        agoq_test_write(file, text);
        cJSON_free(text);
        cJSON_Delete(exp);
        snprintf(args, sizeof args, "run %s", file);
        char name[64];
        snprintf(name, sizeof name, "repo_%s", files[i]);
        cJSON *doc = run_ok(name, args);
        CHECK_MSG(doc != NULL, "%s", src);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "records")) >= 3);
        cJSON_Delete(doc);
    }
}

/* stage and micro_batches as lists: one point each, 1F1B's in-flight count per stage, ratios
 * only against bf16 at the same stage and micro-batch count. */
TEST(step_cli_stage_and_microbatch_lists) {
    cJSON *doc = run_ok("step_stages", "step --dry --layers 2 --seq 1024 --pp 4 --runs bf16,agoq");
    CHECK(doc && cJSON_GetArraySize(cJSON_GetObjectItem(doc, "records")) == 2);
    cJSON_Delete(doc);
    char file[512], args[600];
    snprintf(file, sizeof file, "%s/stages.json", agoq_test_tmpdir());
    agoq_test_write(file, "{\"kind\": \"step\", \"config\": {\"dry\": true, \"layers\": 2, \"seq\": 1024, \"pp\": 4, "
                          "\"stage\": [0, 3], \"micro_batches\": [1, 4], \"runs\": [\"bf16\", \"agoq\"]}}");
    snprintf(args, sizeof args, "run %s", file);
    doc = run_ok("stages", args);
    const cJSON *recs = doc ? cJSON_GetObjectItem(doc, "records") : NULL, *r;
    CHECK(cJSON_GetArraySize(recs) == 8);
    double peak[2][2] = {{0}};
    cJSON_ArrayForEach(r, recs) {
        const double st = num(r, "stage"), mb = num(r, "micro_batches");
        CHECK((st == 0 || st == 3) && (mb == 1 || mb == 4));
        /* 1F1B: stage i holds min(pp - i, micro_batches) micro-batches */
        CHECK_MSG(num(r, "inflight") == (st == 0 && mb == 4 ? 4 : 1), "stage %g mb %g inflight %g", st, mb,
                  num(r, "inflight"));
        CHECK(num(r, "peak_vs_bf16") > 0 && (strcmp(str(r, "name"), "bf16") || num(r, "peak_vs_bf16") == 1));
        if (strcmp(str(r, "name"), "bf16") == 0) peak[st == 3][mb == 4] = num(r, "peak_bytes");
    }
    CHECK(peak[0][1] > peak[0][0] && peak[0][1] > peak[1][1]); /* 4 in flight on stage 0 */
    cJSON_Delete(doc);
    CHECK(bad_step("stage", "{\"dry\": true, \"pp\": 2, \"stage\": [0, 2]}", 1,
                   "key 'config.stage': 2 is not a stage of pp 2"));
}

/* "gemm" (step/gemm_site.c): dry records carry the key and each site's choice; auto is "not timed
 * (dry)"; fused takes every site AGoQ quantizes, in every build (a dry run plans what a GPU run
 * would: the shape rules are plain C, kernels/gemm/gemm_wg_check.c), with the same saved bytes; a site whose block the fused GEMM refuses falls back with the reason;
 * policies that quantize nothing keep cuBLASLt. */
TEST(step_cli_gemm_key_dry_records) {
    static const char *const keys[] = {"auto", "cublaslt", "fused"};
    static const char *const sites[] = {"out_proj", "fc2", "fc1"};
    double saved[3] = {0}, peak[3] = {0}, copy = 0;
    for (int k = 0; k < 3; k++) {
        char args[256], name[64];
        snprintf(args, sizeof args, "step --dry --layers 2 --seq 1024 --runs bf16,agoq%s%s", k ? " --gemm " : "", k ? keys[k] : "");
        snprintf(name, sizeof name, "step_gemm_%s", keys[k]);
        cJSON *doc = run_ok(name, args);
        CHECK(doc != NULL);
        const cJSON *recs = cJSON_GetObjectItem(doc, "records");
        const cJSON *ag = cJSON_GetObjectItem(by_name(recs, "agoq"), "gemm"), *bf = cJSON_GetObjectItem(by_name(recs, "bf16"), "gemm");
        CHECK(cJSON_IsObject(ag) && cJSON_IsObject(bf));
        CHECK(strcmp(str(ag, "key"), keys[k]) == 0 && strcmp(str(bf, "key"), keys[k]) == 0);
        for (int s = 0; s < 3; s++) {
            CHECK_MSG(strcmp(str(bf, sites[s]), "cublaslt") == 0, "bf16 %s: %s", sites[s], str(bf, sites[s]));
            const char *want = k < 2 ? "cublaslt" : "fused";
            CHECK_MSG(strncmp(str(ag, sites[s]), want, strlen(want)) == 0, "gemm %s, agoq %s: %s", keys[k], sites[s],
                      str(ag, sites[s]));
        }
        CHECK(k == 0 ? strcmp(str(ag, "timed_ms"), "not timed (dry)") == 0 : !cJSON_GetObjectItem(ag, "timed_ms"));
        saved[k] = num(by_name(recs, "agoq"), "saved_activation_bytes");
        peak[k] = num(by_name(recs, "agoq"), "peak_bytes");
        copy = num(cJSON_GetObjectItem(by_name(recs, "agoq"), "saved_by_role"), "norm_in") / 2; /* x's, or x2's */
        cJSON_Delete(doc);
    }
    /* the same tensors stored; the fused plan allocates a copy's planes before its GEMM, while the
       GEMM's inputs are live (cuBLASLt's path allocates them after some are freed): its peak may
       hold one more norm-input copy (its two planes, 256-byte aligned, 8 bytes of slack each) */
    printf("    agoq peak bytes: auto (dry: cuBLASLt) %.0f, cublaslt %.0f, fused %.0f (one norm_in copy %.0f)\n", peak[0],
           peak[1], peak[2], copy);
    CHECK(saved[0] == saved[1] && saved[1] == saved[2] && peak[0] == peak[1]);
    CHECK(peak[2] >= peak[1] && peak[2] - peak[1] <= copy + 2 * 512);
#if AGOQ_HAVE_CUDA
    /* a block the fused epilogue cannot take (it must divide 256): that site falls back, named */
    char file[512], args[600];
    snprintf(file, sizeof file, "%s/step_gemm_fallback.json", agoq_test_tmpdir());
    agoq_test_write(file, "{\"kind\": \"step\", \"config\": {\"dry\": true, \"layers\": 2, \"seq\": 1024, \"gemm\": \"fused\","
                          " \"runs\": [{\"name\": \"agoq\", \"store\": {\"fc1_out\": \"fp4_e2m1/512\"}}]}}");
    snprintf(args, sizeof args, "run %s", file);
    cJSON *doc = run_ok("step_gemm_fallback", args);
    const cJSON *g = doc ? cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "records"), 0), "gemm") : NULL;
    CHECK(g && strcmp(str(g, "out_proj"), "fused") == 0 && strcmp(str(g, "fc2"), "fused") == 0);
    CHECK_MSG(strstr(str(g, "fc1"), "cublaslt (fallback: ") && strstr(str(g, "fc1"), "block 512"), "fc1: %s", str(g, "fc1"));
    cJSON_Delete(doc);
#endif
}

TEST(step_cli_bad_input_one_line_no_results) {
    CHECK(bad_step("model", "{\"dry\": true, \"model\": \"llama9\"}", 1, "key 'config.model': unknown model 'llama9'"));
    CHECK(bad_step("run", "{\"dry\": true, \"runs\": [\"bf16\", \"fast\"]}", 1, "key 'config.runs[1]': unknown run 'fast'"));
    CHECK(bad_step("policy", "{\"dry\": true, \"runs\": [{\"name\": \"x\", \"policy\": \"bf17\"}]}", 1,
                   "key 'config.runs[0].policy': unknown policy 'bf17'"));
    CHECK(bad_step("noname", "{\"dry\": true, \"runs\": [{\"name\": \"mine\"}]}", 1, "'mine' is not a preset run"));
    CHECK(bad_step("dup", "{\"dry\": true, \"runs\": [\"bf16\", \"bf16\"]}", 1, "names must be unique"));
    CHECK(bad_step("role", "{\"dry\": true, \"runs\": [{\"name\": \"agoq\", \"store\": {\"logits\": \"int8\"}}]}", 1,
                   "key 'config.runs[0].store.logits': unknown role 'logits'"));
    CHECK(bad_step("store", "{\"dry\": true, \"runs\": [{\"name\": \"agoq\", \"store\": {\"norm_in\": \"int9/128\"}}]}", 1,
                   "key 'config.runs[0].store.norm_in': bad store 'int9/128'"));
    CHECK(bad_step("grad", "{\"dry\": true, \"runs\": [{\"name\": \"bf16\", \"grad\": \"fp3\"}]}", 1,
                   "key 'config.runs[0].grad': bad store 'fp3'"));
    /* the engine's own refusal, re-reported with the key */
    CHECK(bad_step("engine", "{\"dry\": true, \"layers\": 2, \"seq\": 1024, \"runs\": [{\"name\": \"agoq\", \"store\":"
                   " {\"attention\": \"recompute\"}}]}", 1, "key 'config.runs[0]' (run 'agoq', llama2-7b, tp 1, seq 1024): "
                   "step: policy agoq stores role attention as recompute, which the step engine cannot produce"));
    CHECK(bad_step("tp", "{\"dry\": true, \"tp\": 3}", 1, "tp 3 does not divide llama2-7b's 32 heads"));
    CHECK(bad_step("stage", "{\"dry\": true, \"pp\": 2, \"stage\": 2}", 1, "key 'config.stage'"));
    CHECK(bad_step("seq0", "{\"dry\": true, \"seq\": 0}", 1, "key 'config.seq'"));
    CHECK(bad_step("seqlist0", "{\"dry\": true, \"seq\": [1024, 0]}", 1, "key 'config.seq'"));
    CHECK(bad_step("rl", "{\"dry\": true, \"layers\": 2, \"runs\": [{\"name\": \"recompute\", \"recompute_layers\": 3}]}", 1,
                   "key 'config.runs[0].recompute_layers'"));
    CHECK(bad_step("nobudget", "{\"dry\": true, \"runs\": [{\"name\": \"recompute\", \"recompute_layers\": \"min_fit\"}]}", 1,
                   "\"min_fit\" needs a budget"));
    CHECK(bad_step("fit", "{\"dry\": true, \"fit\": \"maybe\"}", 1, "key 'config.fit': unknown value 'maybe'"));
    CHECK(bad_step("gemm", "{\"dry\": true, \"gemm\": \"cublas\"}", 1,
                   "key 'config.gemm': unknown value 'cublas' (auto, cublaslt or fused)"));
    CHECK(bad_step("gemmnum", "{\"dry\": true, \"gemm\": 1}", 1, "key 'config.gemm'"));
    CHECK(bad_step("typo", "{\"dry\": true, \"layer\": 2}", 1, "unknown key 'config.layer'"));
    CHECK(bad_step("runkey", "{\"dry\": true, \"runs\": [{\"name\": \"bf16\", \"recompute\": 1}]}", 1,
                   "unknown key 'config.runs[0].recompute'"));
    /* a budget no run fits: the smallest need is named (agoq, 4.26 GB here) */
    CHECK(bad_step("budget", "{\"dry\": true, \"layers\": 2, \"seq\": 1024, \"budget_gb\": 3, \"runs\": [\"bf16\", \"agoq\"]}",
                   1, "the smallest need at this point is 4.255 GB (run 'agoq', llama2-7b, tp 1, seq 1024): no run fits"));
    char file[512], out[512], args[2048], msg[4096];
    snprintf(file, sizeof file, "%s/step_malformed.json", agoq_test_tmpdir());
    snprintf(out, sizeof out, "%s/step_malformed.out.json", agoq_test_tmpdir());
    agoq_test_write(file, "{\"kind\": \"step\", \"config\": {\"dry\": true,\n");
    snprintf(args, sizeof args, "run %s --out %s -q", file, out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 1 && strstr(msg, "malformed JSON at line 2") &&
          !agoq_test_file_exists(out));
}

TEST(step_cli_flags_and_no_gpu) {
    char msg[8192], args[1024], out[512];
    CHECK(agoq_test_run_cli("step --help", msg, sizeof msg) == 0 && strstr(msg, "usage: agoq step") &&
          strstr(msg, "min_fit") && strstr(msg, "budget_gb"));
    CHECK(agoq_test_run_cli("step -b 1M", msg, sizeof msg) == 2 && strstr(msg, "-b does not apply"));
    CHECK(agoq_test_run_cli("step --seq 4k2", msg, sizeof msg) == 2 && strstr(msg, "bad value '4k2' for --seq"));
    CHECK(agoq_test_run_cli("step --dry extra", msg, sizeof msg) == 2 && strstr(msg, "unexpected argument 'extra'"));
    snprintf(out, sizeof out, "%s/step_badgemm.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "step --dry --gemm fast -q -o %s", out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 1 && strstr(msg, "key 'config.gemm': unknown value 'fast'") &&
          strchr(msg, '\n') == msg + strlen(msg) - 1 && !agoq_test_file_exists(out));
    char why[256];
    if (agoq_cuda_devices(why, sizeof why) > 0) {
        printf("    no-GPU cases skipped: a GPU is visible here\n");
        return;
    }
    CHECK(agoq_test_run_cli("step --ready", msg, sizeof msg) == 1 && strstr(msg, "agoq: step --ready: no GPU"));
    snprintf(out, sizeof out, "%s/step_nogpu.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "step --layers 2 --seq 1024 -q -o %s", out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 1);
    const char *nl = strchr(msg, '\n');
    CHECK_MSG(strstr(msg, "key 'config.dry': false, but the step cannot run here: no GPU") && nl && nl[1] == '\0',
              "got: %s", msg);
    CHECK(!agoq_test_file_exists(out));
}
