/* Bad input through the real binary: a one-line error naming the file and key (or the reason),
 * a non-zero exit, and no results file written. */
#include <stdio.h>
#include <string.h>

#include "core/backend.h"
#include "tests/test.h"

/* Writes `json` to an experiment file, runs `agoq run` on it with --out, and checks the bad-input
 * contract (agoq_test_expect_error: exit 1 or 2, one line naming `want`, nothing written). */
static int run_bad_experiment(const char *name, const char *json, const char *extra, const char *want) {
    char file[512], out[512], args[2048];
    snprintf(file, sizeof file, "%s/%s.json", agoq_test_tmpdir(), name);
    snprintf(out, sizeof out, "%s/%s.out.json", agoq_test_tmpdir(), name);
    agoq_test_write(file, json);
    snprintf(args, sizeof args, "run %s --out %s -q %s", file, out, extra ? extra : "");
    return agoq_test_expect_error(args, want, out);
}

TEST(malformed_experiment_json) {
    CHECK(run_bad_experiment("malformed", "{\"kind\": \"quant\", \"config\": {\n", NULL, "malformed JSON at line"));
}

TEST(missing_and_wrongly_typed_keys) {
    CHECK(run_bad_experiment("nocfg", "{\"kind\": \"quant\"}", NULL, "missing required key 'config'"));
    CHECK(run_bad_experiment("nokind", "{\"config\": {}}", NULL, "missing required key 'kind'"));
    CHECK(run_bad_experiment("wrongtype", "{\"kind\": \"quant\", \"config\": {\"iters\": \"three\"}}", NULL,
                             "key 'config.iters': expected an integer"));
    CHECK(run_bad_experiment("typo", "{\"kind\": \"quant\", \"config\": {\"itres\": 3}}", NULL,
                             "unknown key 'config.itres'"));
    CHECK(run_bad_experiment("toplevel", "[1, 2]", NULL, "top level"));
}

TEST(unknown_names) {
    CHECK(run_bad_experiment("fmt", "{\"kind\": \"quant\", \"config\": {\"formats\": [\"int9\"]}}", NULL,
                             "unknown value 'int9'"));
    CHECK(run_bad_experiment("kind", "{\"kind\": \"teleport\", \"config\": {}}", NULL, "unknown experiment kind 'teleport'"));
    CHECK(run_bad_experiment("dist", "{\"kind\": \"quant\", \"config\": {\"distributions\": [\"cauchy\"]}}", NULL,
                             "key 'config.distributions[0]': unknown value 'cauchy'"));
    CHECK(run_bad_experiment("backend", "{\"kind\": \"quant\", \"backend\": \"tpu\", \"config\": {}}", NULL,
                             "unknown backend 'tpu'"));
}

TEST(cuda_backend_without_gpu_is_an_error) {
    char why[256];
    if (agoq_cuda_devices(why, sizeof why) > 0) SKIP("a GPU is visible here");
    CHECK(run_bad_experiment("cuda", "{\"kind\": \"quant\", \"config\": {\"formats\": [\"int4\"]}}", "--backend cuda",
                             "backend 'cuda': no usable GPU"));
}

TEST(bad_flags_exit_2) {
    char msg[4096];
    CHECK(agoq_test_run_cli("quant -b 12x", msg, sizeof msg) == 2 && strstr(msg, "bad size '12x' for -b"));
    CHECK(agoq_test_run_cli("quant --no-such-flag", msg, sizeof msg) == 2);
    CHECK(agoq_test_run_cli("frobnicate", msg, sizeof msg) == 2 && strstr(msg, "unknown command"));
    CHECK(agoq_test_run_cli("run", msg, sizeof msg) == 2);
    CHECK(agoq_test_run_cli("quant --help", msg, sizeof msg) == 0 && strstr(msg, "usage: agoq quant"));
}

TEST(good_experiment_writes_json_and_tsv) {
    char file[512], out[512], tsv[512], args[2048], msg[16384];
    snprintf(file, sizeof file, "%s/good.json", agoq_test_tmpdir());
    snprintf(out, sizeof out, "%s/good.out.json", agoq_test_tmpdir());
    snprintf(tsv, sizeof tsv, "%s/good.out.tsv", agoq_test_tmpdir());
    agoq_test_write(file, "{\"kind\": \"quant\", \"tsv\": [\"format\", \"snr_db\"], \"config\": {\"formats\": [\"int4\", \"fp4_e2m1\"],"
                          " \"distributions\": [\"normal\"], \"min_bytes\": 4096, \"max_bytes\": 4096, \"iters\": 1}}");
    snprintf(args, sizeof args, "run %s --out %s --backend cpu -q", file, out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 0);
    CHECK(agoq_test_file_exists(out) && agoq_test_file_exists(tsv));
    CHECK(strstr(msg, "fp4_e2m1") != NULL);
}
