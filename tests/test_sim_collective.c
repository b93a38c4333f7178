/* Alpha-beta collective model (sim/collective_model.c) against hand-computed cases, the
 * limiting cases (zero latency, infinite bandwidth, one rank) and monotonicity in group size
 * and message size; and the machine-file loader (sources, measured overrides, bad keys). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/results.h"
#include "sim/collective_model.h"
#include "sim/machine.h"
#include "tests/test.h"

/* 10 GB/s, 10 us inside a node; 25 GB/s per node, 5 us between nodes. */
static agoq_fabric test_fabric(void) {
    agoq_fabric f = {{1e-5, 1e10}, {5e-6, 2.5e10}};
    return f;
}

TEST(sim_collective_hand_computed_single_node) {
    agoq_fabric f = test_fabric();
    agoq_group g = {4, 4, 1};
    /* ring: 2*3*10us + 2*(3/4)*1e9/1e10 = 60us + 0.15 s */
    CHECK_NEAR(agoq_t_allreduce(&f, &g, 1e9, AGOQ_AR_RING), 0.15006, 1e-12);
    CHECK_NEAR(agoq_t_reduce_scatter(&f, &g, 1e9), 0.07503, 1e-12);
    CHECK_NEAR(agoq_t_allgather(&f, &g, 1e9), 0.07503, 1e-12);
    /* tree: 2*ceil(log2 4)*10us + 2*1e9/1e10 = 40us + 0.2 s; auto takes the ring here */
    CHECK_NEAR(agoq_t_allreduce(&f, &g, 1e9, AGOQ_AR_TREE), 0.20004, 1e-12);
    CHECK_NEAR(agoq_t_allreduce(&f, &g, 1e9, AGOQ_AR_AUTO), 0.15006, 1e-12);
    /* tiny message: tree latency 40us + 2e-7 beats ring 60us + 1.5e-7 */
    CHECK_NEAR(agoq_t_allreduce(&f, &g, 1e3, AGOQ_AR_AUTO), 4.02e-5, 1e-15);
    /* all-to-all inside a node: 3*10us + 3*(1e9/4)/1e10 */
    CHECK_NEAR(agoq_t_alltoall(&f, &g, 1e9), 3e-5 + 0.075, 1e-12);
    CHECK_NEAR(agoq_t_sendrecv(&f, 1e9, 0, 1), 1e-5 + 0.1, 1e-12);
}

TEST(sim_collective_hand_computed_multi_node) {
    agoq_fabric f = test_fabric();
    /* TP=8 x DP=8: one DP rank per node, 8 DP groups share each node's 25 GB/s -> 3.125 GB/s. */
    agoq_group dp = {8, 1, 8};
    agoq_link l = agoq_ring_link(&f, &dp);
    CHECK_NEAR(l.bw_Bps, 3.125e9, 1e-3);
    CHECK_NEAR(l.alpha_s, 1e-5, 1e-18);
    CHECK_NEAR(agoq_t_allreduce(&f, &dp, 1e9, AGOQ_AR_RING), 2 * 7 * 1e-5 + 2 * 0.875 * 1e9 / 3.125e9, 1e-12);
    /* a2a: each rank sends 7/8 of 1e9 out of its node; 8 groups share the NIC: 8*7*1.25e8/2.5e10 */
    CHECK_NEAR(agoq_t_alltoall(&f, &dp, 1e9), 7e-5 + 0.28, 1e-12);
    /* 2 nodes x 8 ranks, alone on the NIC: ring bw min(10, 25) GB/s; a2a intra 7/16, inter 8*8/16 */
    agoq_group g16 = {16, 8, 1};
    CHECK_NEAR(agoq_t_reduce_scatter(&f, &g16, 1.6e9), 15e-5 + (15.0 / 16.0) * 1.6e9 / 1e10, 1e-12);
    CHECK_NEAR(agoq_t_alltoall(&f, &g16, 1.6e9), 15e-5 + fmax(7 * 1e8 / 1e10, 8.0 * 8 * 1e8 / 2.5e10), 1e-12);
    CHECK_NEAR(agoq_t_sendrecv(&f, 1e9, 1, 8), 5e-6 + 8e9 / 2.5e10, 1e-12);
}

TEST(sim_collective_limits) {
    agoq_fabric f = test_fabric();
    agoq_group g = {8, 8, 1}, one = {1, 1, 1};
    agoq_fabric nolat = f;
    nolat.intra.alpha_s = nolat.inter.alpha_s = 0.0;
    CHECK_NEAR(agoq_t_allreduce(&nolat, &g, 8e8, AGOQ_AR_RING), 2.0 * 7.0 / 8.0 * 8e8 / 1e10, 1e-15);
    CHECK_NEAR(agoq_t_allgather(&nolat, &g, 8e8), 7.0 / 8.0 * 8e8 / 1e10, 1e-15);
    agoq_fabric inf = f;
    inf.intra.bw_Bps = inf.inter.bw_Bps = INFINITY;
    CHECK_NEAR(agoq_t_allreduce(&inf, &g, 8e8, AGOQ_AR_RING), 14e-5, 1e-15);
    CHECK_NEAR(agoq_t_allreduce(&inf, &g, 8e8, AGOQ_AR_TREE), 6e-5, 1e-15);
    CHECK_NEAR(agoq_t_alltoall(&inf, &g, 8e8), 7e-5, 1e-15);
    CHECK(agoq_t_allreduce(&f, &one, 1e9, AGOQ_AR_AUTO) == 0.0);
    CHECK(agoq_t_alltoall(&f, &one, 1e9) == 0.0 && agoq_t_allgather(&f, &g, 0.0) == 0.0);
}

TEST(sim_collective_monotonic) {
    agoq_fabric f = test_fabric();
    double prev[4] = {0, 0, 0, 0};
    for (int p = 2; p <= 1024; p *= 2) {
        agoq_group g = {p, p < 8 ? p : 8, 1};
        double t[4] = {agoq_t_allreduce(&f, &g, 1e8, AGOQ_AR_RING), agoq_t_allreduce(&f, &g, 1e8, AGOQ_AR_TREE),
                       agoq_t_reduce_scatter(&f, &g, 1e8), agoq_t_alltoall(&f, &g, 1e8)};
        for (int k = 0; k < 4; k++) {
            CHECK_MSG(t[k] > prev[k], "collective %d not increasing at p = %d: %g <= %g", k, p, t[k], prev[k]);
            prev[k] = t[k];
        }
    }
    agoq_group g = {64, 8, 1};
    double last = 0.0;
    for (double n = 1e3; n <= 1e10; n *= 4) {
        double t = agoq_t_allreduce(&f, &g, n, AGOQ_AR_AUTO);
        CHECK(t > last);
        last = t;
    }
}

TEST(sim_group_check_rejects_bad_layouts) {
    agoq_group ok = {16, 8, 1}, bad1 = {0, 1, 1}, bad2 = {12, 8, 1}, bad3 = {8, 8, 0};
    CHECK(agoq_group_check(&ok) == 0);
    CHECK(agoq_group_check(&bad1) == -1 && agoq_group_check(&bad2) == -1 && agoq_group_check(&bad3) == -1);
    CHECK(agoq_allreduce_algo_by_name("tree") == AGOQ_AR_TREE && agoq_allreduce_algo_by_name("mesh") == -1);
}

static const char *machine_text(const char *extra_gemm) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"name\": \"t\", \"gpu\": \"G\", \"gpus_per_node\": 4,"
             " \"gpu_memory_GiB\": {\"value\": 10, \"source\": \"assumed: test\"},"
             " \"gemm_bf16_tflops\": {\"value\": 100, \"source\": \"assumed: test\"%s},"
             " \"gemm_fp8_tflops\": {\"value\": 200, \"source\": \"assumed: test\"},"
             " \"attention_tflops\": {\"value\": 50, \"source\": \"assumed: test\"},"
             " \"kernel_GBps\": {\"value\": 500, \"source\": \"assumed: test\"},"
             " \"intra_GBps\": {\"value\": 10, \"source\": \"assumed: test\"},"
             " \"intra_latency_us\": {\"value\": 10, \"source\": \"assumed: test\"},"
             " \"inter_GBps_per_node\": {\"value\": 25, \"source\": \"assumed: test\"},"
             " \"inter_latency_us\": {\"value\": 5, \"source\": \"assumed: test\"}}",
             extra_gemm);
    return buf;
}

TEST(sim_machine_file_sources_and_overrides) {
    char path[512], meas[512], spec[1024];
    agoq_machine m;
    snprintf(path, sizeof path, "%s/m.json", agoq_test_tmpdir());
    agoq_test_write(path, machine_text(""));
    CHECK(agoq_machine_load(path, &m) == 0);
    CHECK_NEAR(m.fabric.intra.bw_Bps, 1e10, 0);
    CHECK_NEAR(m.fabric.inter.alpha_s, 5e-6, 1e-18);
    CHECK(!m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].measured && strncmp(m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].source, "assumed", 7) == 0);
    /* A measured file: the max of matching records, scaled; non-matching records ignored. */
    snprintf(meas, sizeof meas, "%s/gemm.json", agoq_test_tmpdir());
    agoq_test_write(meas, "{\"records\": [{\"impl\": \"cublas\", \"tflops\": 600}, {\"impl\": \"cublas\", \"tflops\": 650},"
                          " {\"impl\": \"agoq\", \"tflops\": 900}]}");
    snprintf(spec, sizeof spec, ", \"measured\": {\"file\": \"%s\", \"key\": \"tflops\", \"where\": {\"impl\": \"cublas\"}, \"scale\": 0.5}", meas);
    agoq_test_write(path, machine_text(spec));
    CHECK(agoq_machine_load(path, &m) == 0);
    CHECK(m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].measured);
    CHECK_NEAR(agoq_machine_val(&m, AGOQ_CAL_GEMM_BF16_TFLOPS), 325.0, 0);
    CHECK(strstr(m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].source, "measured: ") != NULL);
    /* Candidate list: an absent file is skipped, the next one that has a value is used. */
    snprintf(spec, sizeof spec, ", \"measured\": [{\"file\": \"%s/none.json\", \"key\": \"tflops\"},"
             " {\"file\": \"%s\", \"key\": \"tflops\", \"reduce\": \"median\"}]", agoq_test_tmpdir(), meas);
    agoq_test_write(path, machine_text(spec));
    CHECK(agoq_machine_load(path, &m) == 0);
    CHECK(m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].measured && agoq_machine_val(&m, AGOQ_CAL_GEMM_BF16_TFLOPS) == 650.0);
    /* A rate from a time: TFLOPS = 4000 GFLOP / min median_ms of the records with n = 64 (2 ms). */
    agoq_test_write(meas, "{\"records\": [{\"case\": \"g\", \"n\": 64, \"median_ms\": 2.0}, {\"case\": \"g\", \"n\": 64,"
                          " \"median_ms\": 4.0}, {\"case\": \"g\", \"n\": 32, \"median_ms\": 1.0}]}");
    snprintf(spec, sizeof spec, ", \"measured\": {\"file\": \"%s\", \"key\": \"median_ms\", \"where\": {\"case\": \"g\", \"n\": 64},"
             " \"reduce\": \"min\", \"inverse\": true, \"scale\": 4000}", meas);
    agoq_test_write(path, machine_text(spec));
    CHECK(agoq_machine_load(path, &m) == 0);
    CHECK_NEAR(agoq_machine_val(&m, AGOQ_CAL_GEMM_BF16_TFLOPS), 2000.0, 0);
    /* Absent file: the assumed value, and the source says the measurement was not there. */
    snprintf(spec, sizeof spec, ", \"measured\": {\"file\": \"%s/none.json\", \"key\": \"tflops\"}", agoq_test_tmpdir());
    agoq_test_write(path, machine_text(spec));
    CHECK(agoq_machine_load(path, &m) == 0);
    CHECK(!m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].measured && agoq_machine_val(&m, AGOQ_CAL_GEMM_BF16_TFLOPS) == 100.0);
    CHECK(strstr(m.cal[AGOQ_CAL_GEMM_BF16_TFLOPS].source, "no measured value") != NULL);
}

TEST(sim_machine_file_rejects_unsourced_and_bad_values) {
    char path[512];
    agoq_machine m;
    snprintf(path, sizeof path, "%s/bad.json", agoq_test_tmpdir());
    char text[4096];
    snprintf(text, sizeof text, "%s", machine_text(""));
    char *src = strstr(text, "\"assumed: test\"");
    memcpy(src, "\"datasht: test\"", 15); /* a source that does not say "assumed" */
    agoq_test_write(path, text);
    CHECK(agoq_machine_load(path, &m) == -1);
    snprintf(text, sizeof text, "%s", machine_text(""));
    char *v = strstr(text, "\"value\": 100");
    memcpy(v, "\"value\": -10", 12);
    agoq_test_write(path, text);
    CHECK(agoq_machine_load(path, &m) == -1);
    agoq_test_write(path, "{\"name\": \"t\"}");
    CHECK(agoq_machine_load(path, &m) == -1);
}

TEST(sim_repository_machine_files_load) {
    static const char *const files[] = {"experiments/machines/a6000-8x8-ib200.json", "experiments/machines/a6000-8x8-ib10.json",
                                        "experiments/machines/rtxpro6000-2x8-ib200.json", "experiments/machines/h200-8x.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        agoq_machine m;
        CHECK_MSG(agoq_machine_load(files[i], &m) == 0, "%s does not load", files[i]);
        for (int k = 0; k < AGOQ_CAL_COUNT; k++)
            CHECK_MSG(m.cal[k].source[0], "%s: %s has no source", files[i], agoq_calib_keys[k]);
    }
}
