/* `agoq kernels` bad input through the real binary (CPU CI): every bad experiment key or flag
 * stops the run with a one-line error naming the key, a non-zero exit and no results file;
 * the CPU backend is refused (the benchmark only measures GPUs). */
#include <stdio.h>
#include <string.h>

#include "tests/test.h"

/* agoq run on `json` (written to a temp file) or, when json is NULL, `agoq kernels <args>`. */
static int fails_with(const char *name, const char *json, const char *args, int want_rc, const char *want) {
    char file[512], out[512], cmd[2048], msg[8192];
    snprintf(file, sizeof file, "%s/k_%s.json", agoq_test_tmpdir(), name);
    snprintf(out, sizeof out, "%s/k_%s.out.json", agoq_test_tmpdir(), name);
    if (json) {
        agoq_test_write(file, json);
        snprintf(cmd, sizeof cmd, "run %s --out %s -q %s", file, out, args ? args : "");
    } else {
        snprintf(cmd, sizeof cmd, "kernels %s -o %s -q", args, out);
    }
    int rc = agoq_test_run_cli(cmd, msg, sizeof msg);
    if (rc != want_rc) { fprintf(stderr, "    %s: exit %d, want %d: %s\n", name, rc, want_rc, msg); return 0; }
    if (!strstr(msg, want)) { fprintf(stderr, "    %s: message lacks '%s': %s\n", name, want, msg); return 0; }
    if (agoq_test_file_exists(out)) { fprintf(stderr, "    %s: results file was written\n", name); return 0; }
    return 1;
}

TEST(kernels_bad_experiment_keys_name_the_key) {
    CHECK(fails_with("fmt", "{\"kind\": \"kernels\", \"config\": {\"formats\": [\"int9\"]}}", NULL, 1,
                     "key 'config.formats': unknown value 'int9'"));
    CHECK(fails_with("typo", "{\"kind\": \"kernels\", \"config\": {\"itres\": 3}}", NULL, 1, "unknown key 'config.itres'"));
    CHECK(fails_with("block", "{\"kind\": \"kernels\", \"config\": {\"blocks\": [12]}}", NULL, 1,
                     "key 'config.blocks[0]': 12 is not a multiple of 8"));
    CHECK(fails_with("scale", "{\"kind\": \"kernels\", \"config\": {\"scales\": [\"fp16\"]}}", NULL, 1,
                     "key 'config.scales[0]': unknown value 'fp16'"));
    CHECK(fails_with("chunks", "{\"kind\": \"kernels\", \"config\": {\"nchunks\": 65}}", NULL, 1, "config.nchunks"));
    CHECK(fails_with("sweep", "{\"kind\": \"kernels\", \"config\": {\"min_bytes\": 4096, \"max_bytes\": 1024}}", NULL, 1,
                     "is smaller than -b"));
}

TEST(kernels_bad_flags_exit_2) {
    CHECK(fails_with("b", NULL, "-b 12x", 2, "bad size '12x' for -b"));
    CHECK(fails_with("c", NULL, "--chunks 0", 2, "bad value '0' for --chunks"));
    CHECK(fails_with("bl", NULL, "--blocks 32,x", 2, "bad value '32,x' for --blocks"));
    CHECK(fails_with("arg", NULL, "extra", 2, "unexpected argument 'extra'"));
    char msg[4096];
    CHECK(agoq_test_run_cli("kernels --help", msg, sizeof msg) == 0 && strstr(msg, "usage: agoq kernels"));
}

TEST(kernels_refuses_the_cpu_backend) {
    CHECK(fails_with("cpu", NULL, "--backend cpu -b 1M -e 1M", 1, "kernels: needs the cuda backend"));
}
