/* Step-time model (sim/step_model.c) against hand-computed FLOP counts and times, the limiting
 * network cases, monotonicity in GPU count, recompute selection through the memory model, and
 * the `simulate` experiment kind end to end (bad inputs write nothing; good runs are marked
 * "simulated" and carry the paper's numbers beside ours). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/results.h"
#include "sim/sim_experiment.h"
#include "sim/step_model.h"
#include "tests/test.h"

/* H = 1024, F = 4096 (so F = 4H and per-token GEMM work is 16 H^2), 8 layers, full MHA. */
static agoq_model_card tiny_model(void) {
    agoq_model_card m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny");
    snprintf(m.family, sizeof m.family, "llama");
    m.layer = AGOQ_LAYER_LLAMA;
    m.hidden = 1024, m.ffn = 4096, m.heads = 8, m.kv_heads = 8, m.head_dim = 128, m.layers = 8;
    m.vocab = 1000, m.max_seq = 1 << 20, m.norm_weights = 1;
    return m;
}

/* 100 TFLOPS GEMM, 200 fp8, 50 attention, 500 GB/s kernels, 80 GiB; network as given. */
static agoq_machine test_machine(double alpha_s, double bw_Bps) {
    agoq_machine mc;
    memset(&mc, 0, sizeof mc);
    snprintf(mc.name, sizeof mc.name, "test");
    mc.gpus_per_node = 8;
    double v[AGOQ_CAL_COUNT] = {80, 100, 200, 50, 500, bw_Bps / 1e9, alpha_s * 1e6, bw_Bps / 1e9, alpha_s * 1e6};
    for (int i = 0; i < AGOQ_CAL_COUNT; i++) mc.cal[i].value = v[i];
    mc.fabric.intra.alpha_s = mc.fabric.inter.alpha_s = alpha_s;
    mc.fabric.intra.bw_Bps = mc.fabric.inter.bw_Bps = bw_Bps;
    return mc;
}

static agoq_step_plan plan(agoq_method m, int tp, int pp, int dp, int gb, long seq, int R) {
    agoq_step_plan p;
    agoq_step_plan_defaults(&p, m);
    p.tp = tp, p.pp = pp, p.dp = dp, p.global_batch = gb, p.seq = seq, p.recompute = R;
    return p;
}

TEST(sim_step_flops_hand_computed) {
    agoq_model_card m = tiny_model();
    /* GEMMs: 2 T (3H^2 + H^2 + 3 H 4H) = 32 T H^2 = 2^35 at T = H = 1024; attention 2 S^2 H = 2^31 */
    CHECK(agoq_layer_gemm_flops_fwd(&m, 1024) == 34359738368.0);
    CHECK(agoq_layer_attn_flops_fwd(&m, 1, 1024) == 2147483648.0);
    m.kv_heads = 2; /* GQA: K and V shrink to H/4 each: 2 T (1.5 H^2 + H^2 + 12 H^2) */
    CHECK(agoq_layer_gemm_flops_fwd(&m, 1024) == 2.0 * 1024 * 14.5 * 1024 * 1024);
}

TEST(sim_step_time_hand_computed_single_gpu) {
    agoq_model_card m = tiny_model();
    agoq_machine mc = test_machine(0.0, INFINITY);
    agoq_step_plan p = plan(AGOQ_METHOD_MEGATRON, 1, 1, 1, 1, 1024, 0);
    agoq_step_result r;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == 0);
    double fwd = 34359738368.0 / 1e14 + 2147483648.0 / 5e13;
    double bwd = 2 * 34359738368.0 / 1e14 + 2.5 * 2147483648.0 / 5e13;
    double logits = 6.0 * 1024 * 1024 * 1000 / 1e14;
    CHECK_NEAR(r.compute_s, 8 * (fwd + bwd) + logits, 1e-15);
    CHECK(r.tp_comm_s == 0 && r.pp_comm_s == 0 && r.dp_comm_s == 0 && r.bubble_s == 0 && r.quant_s == 0);
    CHECK(r.recompute == 0 && r.recompute_s == 0);
    CHECK_NEAR(r.step_s, r.compute_s + r.optimizer_s, 1e-15);
    CHECK(r.optimizer_s > 0 && r.fits == 1);
    /* R = 3 fixed: three extra forwards per micro-batch, nothing else changes */
    agoq_step_result r3;
    p.recompute = 3;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r3) == 0);
    CHECK_NEAR(r3.recompute_s, 3 * fwd, 1e-15);
    CHECK_NEAR(r3.step_s - r.step_s, 3 * fwd, 1e-12);
}

TEST(sim_step_pipeline_bubble) {
    agoq_model_card m = tiny_model();
    agoq_machine mc = test_machine(0.0, INFINITY);
    /* pp = 4, 8 micro-batches: (m + p - 1) slots; interleaved v = 2: (m + (p - 1)/2) */
    agoq_step_plan p = plan(AGOQ_METHOD_MEGATRON, 1, 4, 1, 8, 1024, 0);
    agoq_step_result r;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == 0);
    CHECK(r.microbatches == 8);
    double stage = r.compute_s / 8;
    CHECK_NEAR(r.bubble_s, 3 * stage, 1e-12);
    p.vpp = 2;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == 0);
    CHECK_NEAR(r.bubble_s, 1.5 * stage, 1e-12);
}

TEST(sim_step_network_limits_and_grad_bits) {
    agoq_model_card m = tiny_model();
    agoq_machine ideal = test_machine(0.0, INFINITY), slow = test_machine(0.0, 1e9);
    agoq_step_result a, b;
    for (int k = 0; k < 2; k++) {
        agoq_step_plan p = plan(k ? AGOQ_METHOD_AGOQ : AGOQ_METHOD_MEGATRON, 2, 1, 4, 8, 1024, 0);
        CHECK(agoq_step_simulate(&m, &ideal, &p, &a) == 0);
        CHECK(a.tp_comm_s == 0 && a.dp_comm_total_s == 0);
    }
    /* One node, no latency: fp32 ring all-reduce vs 8-bit a2a + all-gather moves 32 / 8.125 x more. */
    agoq_step_plan pm = plan(AGOQ_METHOD_MEGATRON, 2, 1, 4, 8, 1024, 0), pa = plan(AGOQ_METHOD_AGOQ, 2, 1, 4, 8, 1024, 0);
    CHECK(agoq_step_simulate(&m, &slow, &pm, &a) == 0 && agoq_step_simulate(&m, &slow, &pa, &b) == 0);
    CHECK_NEAR(agoq_step_grad_wire_bits(&pa), 8.125, 1e-12);
    CHECK_NEAR(a.dp_comm_total_s / b.dp_comm_total_s, 32.0 / 8.125, 1e-9);
    /* Without overlap the whole DP time is exposed; with it, never more. */
    pm.overlap = 0;
    agoq_step_result c;
    CHECK(agoq_step_simulate(&m, &slow, &pm, &c) == 0);
    CHECK_NEAR(c.dp_comm_s, c.dp_comm_total_s, 1e-15);
    CHECK(a.dp_comm_s <= c.dp_comm_s && a.step_s <= c.step_s);
}

TEST(sim_step_monotonic_in_gpus) {
    agoq_model_card m = tiny_model();
    agoq_machine mc = test_machine(5e-6, 2e10);
    double prev_step = INFINITY, prev_tps = 0;
    /* Strong scaling (fixed global batch 256): faster steps; weak scaling: more tokens/s. */
    for (int dp = 1; dp <= 128; dp *= 2) {
        agoq_step_plan p = plan(AGOQ_METHOD_AGOQ, 8, 1, dp, 256, 2048, 0);
        agoq_step_result r;
        CHECK(agoq_step_simulate(&m, &mc, &p, &r) == 0);
        CHECK_MSG(r.step_s < prev_step, "step time not decreasing at dp = %d", dp);
        prev_step = r.step_s;
        agoq_step_plan w = plan(AGOQ_METHOD_ZERO1, 8, 1, dp, 4 * dp, 2048, 0);
        CHECK(agoq_step_simulate(&m, &mc, &w, &r) == 0);
        CHECK_MSG(r.tokens_per_s > prev_tps, "tokens/s not increasing at dp = %d", dp);
        prev_tps = r.tokens_per_s;
    }
}

TEST(sim_step_recompute_chosen_by_memory_model) {
    agoq_model_card m = tiny_model();
    agoq_machine mc = test_machine(0.0, INFINITY);
    agoq_step_plan p = plan(AGOQ_METHOD_MEGATRON, 1, 1, 1, 1, 16384, -1);
    agoq_mem_setup ms;
    agoq_mem_breakdown bd0, bd8;
    agoq_step_mem_setup(&m, &p, 0, &ms);
    CHECK(agoq_memory_peak(&ms, NULL, &bd0) == 0);
    ms.par.recompute_layers = 8;
    CHECK(agoq_memory_peak(&ms, NULL, &bd8) == 0);
    CHECK(bd8.total_bytes < bd0.total_bytes);
    /* A capacity between R = 8 and R = 0: the baseline picks the smallest R that fits. */
    mc.cal[AGOQ_CAL_GPU_MEM_GIB].value = 0.5 * (bd0.total_bytes + bd8.total_bytes) / 1073741824.0;
    agoq_step_result r;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == 0);
    CHECK(r.recompute > 0 && r.recompute < 8 && r.fits);
    agoq_step_mem_setup(&m, &p, r.recompute - 1, &ms);
    agoq_mem_breakdown bd;
    CHECK(agoq_memory_peak(&ms, NULL, &bd) == 0 && bd.total_bytes > r.capacity_bytes);
    /* Nothing fits: full recompute, flagged. AGoQ never recomputes, and says whether it fits. */
    mc.cal[AGOQ_CAL_GPU_MEM_GIB].value = 1e-3;
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == 0 && r.recompute == 8 && !r.fits);
    agoq_step_plan pa = plan(AGOQ_METHOD_AGOQ, 1, 1, 1, 1, 16384, -1);
    CHECK(agoq_step_simulate(&m, &mc, &pa, &r) == 0 && r.recompute == 0 && !r.fits);
    /* AGoQ quantizes activations: kernel time > 0 unless fused. */
    mc.cal[AGOQ_CAL_GPU_MEM_GIB].value = 80;
    CHECK(agoq_step_simulate(&m, &mc, &pa, &r) == 0 && r.quant_s > 0 && r.qact_elems > 0);
    pa.fused_quant = 1;
    agoq_step_result rf;
    CHECK(agoq_step_simulate(&m, &mc, &pa, &rf) == 0 && rf.step_s < r.step_s);
}

TEST(sim_step_rejects_bad_layouts) {
    agoq_model_card m = tiny_model();
    agoq_machine mc = test_machine(0.0, 1e10);
    agoq_step_result r;
    agoq_step_plan p = plan(AGOQ_METHOD_AGOQ, 3, 1, 1, 1, 1024, 0); /* 8 heads % 3 */
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == -1);
    p = plan(AGOQ_METHOD_AGOQ, 1, 3, 1, 1, 1024, 0); /* 8 layers % 3 */
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == -1);
    p = plan(AGOQ_METHOD_AGOQ, 1, 1, 4, 6, 1024, 0); /* batch 6 % (1 * 4) */
    CHECK(agoq_step_simulate(&m, &mc, &p, &r) == -1);
}

TEST(sim_store_labels_parse) {
    agoq_store s;
    CHECK(agoq_sim_parse_store("fp4_e2m1/64", &s) == 0 && s.kind == AGOQ_STORE_QUANT && s.q.block == 64);
    CHECK(agoq_sim_parse_store("bf16", &s) == 0 && s.kind == AGOQ_STORE_NATIVE);
    CHECK(agoq_sim_parse_store("recompute", &s) == 0 && s.kind == AGOQ_STORE_RECOMPUTE);
    CHECK(agoq_sim_parse_store("int9", &s) == -1 && agoq_sim_parse_store("int8/12", &s) == -1);
}

static const char *const k_machine = "experiments/machines/a6000-8x8-ib200.json";

static int bad_sim(const char *name, const char *config, const char *want) {
    char file[512], out[512], args[2048], msg[8192], json[4096];
    snprintf(file, sizeof file, "%s/%s.json", agoq_test_tmpdir(), name);
    snprintf(out, sizeof out, "%s/%s.out.json", agoq_test_tmpdir(), name);
    snprintf(json, sizeof json, "{\"kind\": \"simulate\", \"config\": %s}", config);
    agoq_test_write(file, json);
    snprintf(args, sizeof args, "run %s --out %s -q", file, out);
    int rc = agoq_test_run_cli(args, msg, sizeof msg);
    if (rc == 0 || !strstr(msg, want) || !strstr(msg, "agoq: ") || agoq_test_file_exists(out)) {
        fprintf(stderr, "    %s: rc %d, wanted '%s', got: %s\n", name, rc, want, msg);
        return 0;
    }
    return 1;
}

TEST(sim_cli_bad_inputs_write_nothing) {
    CHECK(bad_sim("nomach", "{\"models\": [\"llama2-13b\"], \"methods\": [\"agoq\"], \"seqs\": [4096], \"global_batch\": 1}",
                  "missing required key 'config.machines'"));
    CHECK(bad_sim("method", "{\"machines\": [\"experiments/machines/a6000-8x8-ib200.json\"], \"models\": [\"llama2-13b\"],"
                  " \"methods\": [\"deepspeed\"], \"seqs\": [4096], \"global_batch\": 1}",
                  "key 'config.methods[0]': unknown value 'deepspeed'"));
    CHECK(bad_sim("mode", "{\"mode\": \"fast\", \"machines\": []}", "key 'config.mode'"));
    CHECK(bad_sim("machfile", "{\"machines\": [\"/nonexistent/m.json\"], \"models\": [\"llama2-13b\"], \"methods\": [\"agoq\"],"
                  " \"seqs\": [4096], \"global_batch\": 1}", "config.machines[0]"));
    CHECK(bad_sim("model", "{\"machines\": [\"experiments/machines/a6000-8x8-ib200.json\"], \"models\": [\"llama9\"],"
                  " \"methods\": [\"agoq\"], \"seqs\": [4096], \"global_batch\": 1}", "config.models[0]"));
    CHECK(bad_sim("batch", "{\"machines\": [\"experiments/machines/a6000-8x8-ib200.json\"], \"models\": [\"llama2-13b\"],"
                  " \"methods\": [\"agoq\"], \"seqs\": [4096]}", "exactly one of 'global_batch'"));
    CHECK(bad_sim("variant", "{\"machines\": [\"experiments/machines/a6000-8x8-ib200.json\"], \"models\": [\"llama2-13b\"],"
                  " \"methods\": [\"agoq\"], \"seqs\": [4096], \"global_batch\": 1, \"variants\": [{\"label\": \"x\", \"act\": \"int9\"}]}",
                  "key 'config.variants[0].act': bad store 'int9'"));
    CHECK(bad_sim("policy", "{\"machines\": [\"experiments/machines/a6000-8x8-ib200.json\"], \"models\": [\"llama2-13b\"],"
                  " \"methods\": [\"agoq\"], \"seqs\": [4096], \"global_batch\": 1, \"variants\": [{\"label\": \"x\", \"policy\": \"fp2\"}]}",
                  "key 'config.variants[0].policy': unknown value 'fp2'"));
    CHECK(bad_sim("layout", "{\"machines\": [\"experiments/machines/a6000-8x8-ib200.json\"], \"models\": [\"llama2-13b\"],"
                  " \"methods\": [\"agoq\"], \"seqs\": [4096], \"tp\": 3, \"global_batch\": 1}", "tp = 3"));
    CHECK(bad_sim("paper", "{\"machines\": [\"experiments/machines/a6000-8x8-ib200.json\"], \"models\": [\"llama2-13b\"],"
                  " \"methods\": [\"agoq\"], \"seqs\": [4096], \"global_batch\": 1, \"paper\": {\"source\": \"ours\","
                  " \"columns\": [], \"rows\": [], \"key\": \"seq\", \"map\": {}}}", "must start with \"paper\""));
    char msg[4096];
    CHECK(agoq_test_run_cli("simulate --seq 12x", msg, sizeof msg) == 2 && strstr(msg, "bad value '12x' for --seq"));
    CHECK(agoq_test_run_cli("simulate --help", msg, sizeof msg) == 0 && strstr(msg, "usage: agoq simulate"));
}

TEST(sim_cli_step_and_comm_runs) {
    char out[512], args[2048], msg[16384];
    snprintf(out, sizeof out, "%s/sim_step.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "simulate --machine %s --model llama2-13b --methods megatron,agoq --seq 32K --tp 8 --pp 4"
             " --vpp 2 --gpus 64 --global-batch 16 --baseline megatron -q -o %s", k_machine, out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 0);
    cJSON *doc = agoq_read_json(out);
    CHECK(doc != NULL);
    const cJSON *meta = cJSON_GetObjectItem(doc, "meta"), *recs = cJSON_GetObjectItem(doc, "records");
    CHECK(strcmp(cJSON_GetObjectItem(meta, "source")->valuestring, "simulated") == 0);
    const cJSON *cal = cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "calibration"), "a6000-8x8-ib200");
    CHECK(cal && strncmp(cJSON_GetObjectItem(cJSON_GetObjectItem(cal, "gemm_bf16_tflops"), "source")->valuestring, "assumed", 7) == 0);
    CHECK(cJSON_GetArraySize(recs) == 2);
    const cJSON *agoq = cJSON_GetArrayItem(recs, 1);
    CHECK(strcmp(cJSON_GetObjectItem(agoq, "method")->valuestring, "agoq") == 0);
    CHECK(cJSON_GetObjectItem(agoq, "recompute")->valuedouble == 0);
    CHECK(cJSON_GetObjectItem(agoq, "step_ms")->valuedouble > 0 && cJSON_GetObjectItem(agoq, "speedup")->valuedouble > 0);
    cJSON_Delete(doc);
    snprintf(out, sizeof out, "%s/sim_comm.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "simulate --mode comm --machine %s --tp 8 --dp 8 -b 1M -e 4M -f 2 -q -o %s", k_machine, out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 0);
    doc = agoq_read_json(out);
    CHECK(doc && cJSON_GetArraySize(cJSON_GetObjectItem(doc, "records")) == 3);
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "records"), 0);
    CHECK(cJSON_GetObjectItem(r0, "allreduce_ms")->valuedouble > cJSON_GetObjectItem(r0, "a2a_ms")->valuedouble);
    cJSON_Delete(doc);
}

TEST(sim_repository_experiments_run_and_carry_paper_numbers) {
    static const char *const files[] = {"table2_llama2_13b", "table2_llama2_13b_paper_accounting", "table3_olmo1b_coat",
                                        "table4_comm", "throughput_h200", "throughput_h200_long", "throughput_a6000", "ablation_act_bits",
                                        "ablation_layer_placement", "ablation_grad_bits"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char args[1024], out[512], msg[65536];
        snprintf(out, sizeof out, "%s/repo_%s.json", agoq_test_tmpdir(), files[i]);
        snprintf(args, sizeof args, "run experiments/%s.json -q --out %s", files[i], out);
        CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0, "%s failed: %.300s", files[i], msg);
        cJSON *doc = agoq_read_json(out);
        CHECK(doc != NULL);
        const cJSON *src = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "meta"), "source");
        CHECK_MSG(cJSON_IsString(src) && strcmp(src->valuestring, "simulated") == 0, "%s not marked simulated", files[i]);
        /* The table experiments carry the paper's value at every point, beside ours. */
        if (strncmp(files[i], "table", 5) == 0) {
            const cJSON *r;
            cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "records")) {
                const cJSON *paper = cJSON_GetObjectItem(r, strcmp(files[i], "table4_comm") == 0 ? "paper_allreduce_ms" : "paper_step_ms");
                CHECK_MSG(cJSON_IsNumber(paper), "%s: a record without its paper value", files[i]);
            }
        }
        cJSON_Delete(doc);
    }
}
