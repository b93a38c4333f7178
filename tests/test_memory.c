/* Memory model: the paper's Table 1 exactly (PAPER accounting), Korthikanti et al.'s GPT layer
 * formula (34sbh + 5as^2b, with TP and SP), hand-computed LLaMA inventories, the pipeline
 * in-flight counts, parameter counts of released models, ZeRO sharding, quantized storage
 * against kernels/quant/formats.h, recomputation and the CLI's bad-input handling. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/results.h"
#include "models/memory.h"
#include "tests/test.h"

static agoq_model_card load(const char *name) {
    agoq_model_card m;
    memset(&m, 0, sizeof m);
    if (agoq_model_load(name, &m)) fprintf(stderr, "    cannot load model %s\n", name);
    return m;
}

static void setup(agoq_mem_setup *ms, const agoq_model_card *m, const char *policy, agoq_accounting acc, long b, long s) {
    agoq_mem_setup_default(ms, m);
    agoq_policy_by_name(policy, &ms->pol);
    ms->acc = acc;
    ms->par.micro_batch = b;
    ms->par.seq = s;
}

/* The paper's Table 1 (units of U = 2bsh bytes per layer; ../shared/paper/tables.json). */
TEST(memory_table1_paper_accounting) {
    static const char *const pols[3] = {"bf16", "coat", "agoq"};
    static const double want[3][7] = {{1, 5, 1, 4, 1, 12, 4}, {1, 5, 1, 1, 0.5, 6, 2}, {0, 5, 0.25, 0.5, 0, 2, 0}};
    static const double totals[3] = {28, 16.5, 7.75};
    agoq_model_card m = load("llama2-13b");
    for (int p = 0; p < 3; p++) {
        agoq_mem_setup ms;
        setup(&ms, &m, pols[p], AGOQ_ACCOUNT_PAPER, 2, 4096);
        double by[AGOQ_ROLE_COUNT], sc;
        double u = 2.0 * 2 * 4096 * 5120;
        double total = agoq_layer_act_bytes(&ms, 0, by, &sc);
        double got[7] = {by[AGOQ_ROLE_QKV_IN] / u, by[AGOQ_ROLE_ATTENTION] / u, by[AGOQ_ROLE_OUTPROJ_IN] / u,
                         by[AGOQ_ROLE_NORM_IN] / u, by[AGOQ_ROLE_FFN1_IN] / u,
                         (by[AGOQ_ROLE_FC1_OUT] + by[AGOQ_ROLE_ACT_OUT]) / u, by[AGOQ_ROLE_FFN2_IN] / u};
        for (int k = 0; k < 7; k++) CHECK_MSG(got[k] == want[p][k], "%s component %d: %g U, paper %g U", pols[p], k, got[k], want[p][k]);
        CHECK_MSG(total / u == totals[p], "%s: %g U, paper %g U", pols[p], total / u, totals[p]);
        CHECK(sc == 0.0); /* the paper does not count scales */
    }
}

/* Korthikanti et al. 2022, section 4: per layer sbh(34 + 5as/h) bytes; with TP t and no SP
 * sbh(10 + 24/t + 5as/(ht)); with SP sbh/t (34 + 5as/h); selective recomputation drops 5as/h. */
TEST(memory_korthikanti_gpt_layer) {
    agoq_model_card m = load("gpt3-175b");
    CHECK(m.layer == AGOQ_LAYER_GPT);
    const double s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
    agoq_mem_setup ms;
    setup(&ms, &m, "bf16", AGOQ_ACCOUNT_REAL, 1, 2048);
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL), sbh * (34 + 5 * a * s / h), 0);
    ms.par.tp = 8;
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL), sbh * (10 + 24 / 8.0 + 5 * a * s / (h * 8)), 1e-3);
    ms.par.sp = 1;
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL), sbh / 8 * (34 + 5 * a * s / h), 1e-3);
    ms.par.recompute_attn_core = 1;
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL), sbh / 8 * 34, 1e-3);
}

/* LLaMA-2-13B layer, b = 1, s = 4096, hand-summed from the inventory's comment. */
TEST(memory_llama_inventory_by_hand) {
    agoq_model_card m = load("llama2-13b");
    const double b = 1, s = 4096, h = 5120, f = 13824, a = 40;
    agoq_mem_setup ms;
    setup(&ms, &m, "bf16", AGOQ_ACCOUNT_REAL, 1, 4096);
    /* flash + fused: x, qkv_in, q, k, v, out (= o_proj input), x2, ffn1_in bf16; 2 rstd; lse; 4 x bsf */
    double flash = 2 * b * s * h * 8 + 4 * b * s * 2 + 4 * b * a * s + 2 * b * s * f * 4;
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL), flash, 0);
    /* eager attention: no out/lse, a separate o_proj input, fp32 softmax + bf16 probs */
    ms.impl.flash_attn = 0;
    double eager = flash - 4 * b * a * s + 6 * b * a * s * s;
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL), eager, 0);
    /* eager RMSNorm: x.float() (4 bytes) + normalized bf16 instead of the bf16 input: +4 bsh per norm */
    ms.impl.fused_norm = 0;
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL), eager + 2 * 4 * b * s * h, 0);
}

TEST(memory_gqa_kv_heads) {
    agoq_model_card m = load("llama2-70b");
    CHECK(m.kv_heads == 8 && m.heads == 64);
    agoq_mem_setup ms;
    setup(&ms, &m, "bf16", AGOQ_ACCOUNT_REAL, 1, 1024);
    double native = agoq_layer_act_bytes(&ms, 0, NULL, NULL);
    ms.impl.gqa_repeat = 1; /* k, v at 64 heads instead of 8: + 2 * 2bs * (64 - 8) * 128 */
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, NULL) - native, 2.0 * 2 * 1024 * (64 - 8) * 128, 0);
    /* TP 16 > 8 KV heads: each rank keeps one KV head; q is split 16 ways */
    ms.impl.gqa_repeat = 0;
    ms.par.tp = 16;
    agoq_saved_tensor inv[AGOQ_INVENTORY_MAX];
    size_t n = agoq_inventory(AGOQ_LAYER_LLAMA, &ms.impl, inv);
    double by[AGOQ_ROLE_COUNT];
    agoq_layer_act_bytes(&ms, 0, by, NULL);
    CHECK(n == 16);
    /* attention role on a rank: q + out at 4 heads, k + v at 1 head, lse fp32 is a statistic */
    CHECK_NEAR(by[AGOQ_ROLE_ATTENTION], 2.0 * 1024 * 128 * (4 + 4 + 1 + 1), 0);
}

TEST(memory_inflight_schedules) {
    agoq_parallel p = {.tp = 1, .pp = 4, .dp = 1, .vpp = 1, .schedule = AGOQ_SCHED_1F1B, .num_microbatches = 8};
    static const long f1[4] = {4, 3, 2, 1}, il[4] = {11, 9, 7, 5};
    for (int i = 0; i < 4; i++) CHECK(agoq_inflight_microbatches(&p, i) == f1[i]);
    p.num_microbatches = 2; /* fewer micro-batches than stages: all of them */
    CHECK(agoq_inflight_microbatches(&p, 0) == 2 && agoq_inflight_microbatches(&p, 3) == 1);
    p.schedule = AGOQ_SCHED_INTERLEAVED;
    p.vpp = 2;
    p.num_microbatches = 8;
    for (int i = 0; i < 4; i++) CHECK(agoq_inflight_microbatches(&p, i) == il[i]);
    p.num_microbatches = 4; /* 8 chunk micro-batches in all: rank 0 warms up with every one */
    CHECK(agoq_inflight_microbatches(&p, 0) == 8);
    p.pp = 8; /* N_i = 2(p - i - 1) + (v - 1)p + 1 = 3p - 2i - 1 for v = 2 */
    p.num_microbatches = 64;
    for (int i = 0; i < 8; i++) CHECK(agoq_inflight_microbatches(&p, i) == 3 * 8 - 2 * i - 1);
}

/* Released parameter counts (the models' own configs). */
TEST(memory_model_param_counts) {
    static const struct { const char *name; double params; } want[] = {
        {"llama2-7b", 6738415616.0}, {"llama2-13b", 13015864320.0}, {"llama2-70b", 68976648192.0},
        {"llama3-8b", 8030261248.0}, {"llama3.2-1b", 1235814400.0}, {"llama-65b", 65285660672.0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        agoq_model_card m = load(want[i].name);
        CHECK_MSG(agoq_model_params(&m) == want[i].params, "%s: %.0f params, released %.0f", want[i].name,
                  agoq_model_params(&m), want[i].params);
    }
}

TEST(memory_zero_stages) {
    agoq_model_card m = load("llama2-7b");
    agoq_mem_setup ms;
    setup(&ms, &m, "bf16", AGOQ_ACCOUNT_REAL, 1, 2048);
    ms.par.dp = 8;
    double P = agoq_model_params(&m);
    static const double w[4] = {2, 2, 2, 2 / 8.0}, g[4] = {2, 2, 2 / 8.0, 2 / 8.0}, o[4] = {12, 12 / 8.0, 12 / 8.0, 12 / 8.0};
    for (int z = 0; z < 4; z++) {
        agoq_mem_breakdown bd;
        ms.par.zero = z;
        CHECK(agoq_memory_stage(&ms, 0, &bd) == 0);
        CHECK(bd.params == P);
        CHECK_NEAR(bd.weights_bytes, w[z] * P, 1);
        CHECK_NEAR(bd.grads_bytes, g[z] * P, 1);
        CHECK_NEAR(bd.optimizer_bytes, o[z] * P, 1);
        CHECK_NEAR(bd.total_bytes, bd.weights_bytes + bd.grads_bytes + bd.optimizer_bytes + bd.activations_bytes + bd.comm_bytes, 1e-3);
    }
    /* AGoQ: 8-bit gradients and moments, dyn8 block 256 + fp32 scale = 260 bytes per 256 */
    agoq_policy_by_name("agoq", &ms.pol);
    ms.par.zero = 0;
    agoq_mem_breakdown bd;
    agoq_memory_stage(&ms, 0, &bd);
    CHECK_NEAR(bd.grads_bytes, ceil(P / 256) * 260, 0);
    CHECK_NEAR(bd.optimizer_bytes, 4 * P + 2 * ceil(P / 256) * 260, 0);
}

/* A quantized saved tensor costs exactly what formats.h says for its element count. */
TEST(memory_quant_storage_matches_formats) {
    agoq_model_card m = load("llama2-13b");
    agoq_mem_setup ms;
    setup(&ms, &m, "agoq", AGOQ_ACCOUNT_REAL, 1, 1000); /* 1000*5120 and 1000*13824 are not multiples of 128 */
    double by[AGOQ_ROLE_COUNT], sc;
    agoq_layer_act_bytes(&ms, 0, by, &sc);
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_FP4_E2M1);
    q.block = 128;
    size_t nh = 1000 * 5120, nf = 1000 * 13824;
    CHECK_NEAR(by[AGOQ_ROLE_NORM_IN], 2.0 * (double)agoq_qtensor_bytes(&q, nh), 0);
    CHECK_NEAR(by[AGOQ_ROLE_FC1_OUT], 2.0 * (double)agoq_qtensor_bytes(&q, nf), 0);
    CHECK(by[AGOQ_ROLE_OUTPROJ_IN] == 0); /* reuses attention's bf16 output (same storage) */
    CHECK(by[AGOQ_ROLE_QKV_IN] == 0 && by[AGOQ_ROLE_FFN1_IN] == 0 && by[AGOQ_ROLE_FFN2_IN] == 0 && by[AGOQ_ROLE_ACT_OUT] == 0);
    CHECK_NEAR(sc, 2.0 * (double)agoq_scales_bytes(&q, nh) + 2.0 * (double)agoq_scales_bytes(&q, nf), 0);
    /* eager attention has no shared storage: the out-projection input is quantized on its own */
    ms.impl.flash_attn = 0;
    agoq_layer_act_bytes(&ms, 0, by, NULL);
    CHECK_NEAR(by[AGOQ_ROLE_OUTPROJ_IN], (double)agoq_qtensor_bytes(&q, nh), 0);
}

TEST(memory_recompute_and_budget) {
    agoq_model_card m = load("llama2-13b");
    agoq_mem_setup ms;
    setup(&ms, &m, "bf16", AGOQ_ACCOUNT_REAL, 1, 8192);
    ms.par.tp = 8;
    ms.par.sp = 1;
    ms.par.pp = 4;
    ms.par.num_microbatches = 8;
    agoq_mem_breakdown none, all, one;
    CHECK(agoq_memory_peak(&ms, NULL, &none) == 0);
    ms.par.recompute_layers = -1;
    agoq_memory_stage(&ms, 0, &all);
    /* every layer keeps its bf16 input (2bsh/t) for 4 micro-batches x 10 layers, plus one full layer */
    double ckpt = 2.0 * 8192 * 5120 / 8;
    CHECK_NEAR(all.activations_bytes, 4 * 10 * ckpt + all.layer_act_bytes, 1e-3);
    ms.par.recompute_layers = 1;
    agoq_memory_stage(&ms, 0, &one);
    CHECK_NEAR(one.activations_bytes, 4 * 9 * one.layer_act_bytes + 4 * ckpt + one.layer_act_bytes, 1e-3);
    long r;
    CHECK(agoq_memory_min_recompute(&ms, none.total_bytes, &r) == 0 && r == 0);
    CHECK(agoq_memory_min_recompute(&ms, 1e9, &r) == 1 && r == -1);
    double mid = 0.5 * (none.total_bytes + all.total_bytes);
    CHECK(agoq_memory_min_recompute(&ms, mid, &r) == 0 && r > 0 && r < 10);
    agoq_mem_breakdown at, below;
    ms.par.recompute_layers = r;
    agoq_memory_peak(&ms, NULL, &at);
    ms.par.recompute_layers = r - 1;
    agoq_memory_peak(&ms, NULL, &below);
    CHECK(at.total_bytes <= mid && below.total_bytes > mid);
}

TEST(memory_setup_checks) {
    agoq_model_card m = load("llama2-13b");
    agoq_mem_setup ms;
    setup(&ms, &m, "bf16", AGOQ_ACCOUNT_REAL, 1, 2048);
    ms.par.tp = 3; /* 40 heads */
    CHECK(agoq_mem_setup_check(&ms) == -1);
    ms.par.tp = 8;
    ms.par.pp = 3; /* 40 layers */
    CHECK(agoq_mem_setup_check(&ms) == -1);
    ms.par.pp = 4;
    ms.par.vpp = 2; /* 1F1B with two chunks */
    CHECK(agoq_mem_setup_check(&ms) == -1);
    ms.par.schedule = AGOQ_SCHED_INTERLEAVED;
    CHECK(agoq_mem_setup_check(&ms) == 0);
    agoq_store st;
    CHECK(agoq_store_parse("fp4_e2m1/64", &st) == 0 && st.kind == AGOQ_STORE_QUANT && st.q.block == 64);
    CHECK(agoq_store_parse("int9", &st) == -1 && agoq_store_parse("int8/12", &st) == -1);
}

static int bad_run(const char *name, const char *json, const char *want) {
    char file[512], out[512], args[2048], msg[8192];
    snprintf(file, sizeof file, "%s/%s.json", agoq_test_tmpdir(), name);
    snprintf(out, sizeof out, "%s/%s.out.json", agoq_test_tmpdir(), name);
    agoq_test_write(file, json);
    snprintf(args, sizeof args, "run %s --out %s -q", file, out);
    int rc = agoq_test_run_cli(args, msg, sizeof msg);
    if (rc == 0 || !strstr(msg, want) || !strstr(msg, file) || agoq_test_file_exists(out)) {
        fprintf(stderr, "    %s: rc %d, wanted '%s' and the file name, got: %s\n", name, rc, want, msg);
        return 0;
    }
    return 1;
}

TEST(memory_cli_bad_input) {
    CHECK(bad_run("mem_model", "{\"kind\":\"memory\",\"config\":{\"models\":[\"llama-9b\"]}}", "key 'config.models[0]'"));
    CHECK(bad_run("mem_policy", "{\"kind\":\"memory\",\"config\":{\"models\":[\"llama2-7b\"],\"policies\":[\"fp2\"]}}",
                  "key 'config.policies[0]': unknown policy 'fp2'"));
    CHECK(bad_run("mem_typo", "{\"kind\":\"memory\",\"config\":{\"models\":[\"llama2-7b\"],\"tpp\":2}}", "config.tpp"));
    CHECK(bad_run("mem_gpus", "{\"kind\":\"memory\",\"config\":{\"models\":[\"llama2-7b\"],\"tp\":8,\"gpus\":[12]}}",
                  "key 'config.gpus'"));
    CHECK(bad_run("mem_store", "{\"kind\":\"memory\",\"config\":{\"models\":[\"llama2-7b\"],\"policies\":[{\"base\":\"bf16\",\"grads\":\"int9\"}]}}",
                  "key 'config.policies[0].grads': bad storage 'int9'"));
    char msg[4096];
    CHECK(agoq_test_run_cli("memory --model llama2-7b --tp x", msg, sizeof msg) == 2 && strstr(msg, "--tp"));
}

TEST(memory_cli_writes_simulated) {
    char out[512], args[1024], msg[8192];
    snprintf(out, sizeof out, "%s/mem_ok.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "memory --model llama2-13b --tp 8 --seq 12288 --sp --policy bf16,agoq -q -o %s", out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 0);
    cJSON *j = agoq_read_json(out);
    CHECK(j);
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "meta"), "source");
    const cJSON *recs = cJSON_GetObjectItemCaseSensitive(j, "records");
    int ok = cJSON_IsString(src) && strcmp(src->valuestring, "simulated") == 0 && cJSON_GetArraySize(recs) == 2;
    cJSON_Delete(j);
    CHECK(ok);
}

/* The per-entry view sums to the layer total and names every tensor once. */
TEST(memory_layer_entries) {
    agoq_model_card m = load("llama3-8b");
    agoq_mem_setup ms;
    setup(&ms, &m, "agoq", AGOQ_ACCOUNT_REAL, 1, 4096);
    ms.par.tp = 4;
    ms.par.sp = 1;
    agoq_layer_entry e[AGOQ_INVENTORY_MAX];
    int n = agoq_layer_entries(&ms, 0, e);
    CHECK(n == 16);
    double sum = 0, sc = 0, scales;
    for (int i = 0; i < n; i++) {
        sum += e[i].stored_bytes;
        sc += e[i].scale_bytes;
        for (int j = 0; j < i; j++) CHECK(strcmp(e[i].t.name, e[j].t.name) != 0);
        if (strcmp(e[i].t.name, "attn.k") == 0) CHECK(e[i].elems == 4096.0 * 2 * 128); /* 8 KV heads / tp 4 */
        if (strcmp(e[i].t.name, "norm1.x") == 0) CHECK(e[i].elems == 4096.0 / 4 * 4096); /* SP splits s */
        if (e[i].t.alias_of >= 0) CHECK(e[i].stored_bytes == 0);
    }
    CHECK_NEAR(agoq_layer_act_bytes(&ms, 0, NULL, &scales), sum, 0);
    CHECK_NEAR(scales, sc, 0);
    char out[512], args[1024], msg[16384];
    snprintf(out, sizeof out, "%s/mem_inv.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "memory --model llama3-8b --policy agoq --inventory -q -o %s", out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 0 && strstr(msg, "attn.outproj_in") && strstr(msg, "shares attn.out"));
}
