/* `agoq collectives` through the real binary: a small cpu run writes JSON + TSV with the
 * nccl-tests fields; bad arguments (unknown algorithm, zero size, more ranks than GPUs, a
 * hierarchy that does not divide the ranks, bad experiment keys) exit non-zero with a one-line
 * message naming the flag or key, and write nothing. */
#include <stdio.h>
#include <string.h>

#include "core/backend.h"
#include "tests/test.h"

/* Runs `agoq collectives ARGS -o TMP/name.json` and checks exit code, message and no output. */
static int bad_cli(const char *name, const char *args, const char *want) {
    char out[512], cmd[2048], msg[8192];
    snprintf(out, sizeof out, "%s/coll_%s.json", agoq_test_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "collectives %s -o %s -q", args, out);
    int rc = agoq_test_run_cli(cmd, msg, sizeof msg);
    if (rc == 0) { fprintf(stderr, "    %s: exit 0\n", name); return 0; }
    if (!strstr(msg, want)) { fprintf(stderr, "    %s: message lacks '%s': %s\n", name, want, msg); return 0; }
    if (agoq_test_file_exists(out)) { fprintf(stderr, "    %s: results file written\n", name); return 0; }
    return 1;
}

TEST(coll_cli_small_run_writes_records) {
    char out[512], tsv[512], cmd[2048], msg[32768];
    snprintf(out, sizeof out, "%s/coll_ok.json", agoq_test_tmpdir());
    snprintf(tsv, sizeof tsv, "%s/coll_ok.tsv", agoq_test_tmpdir());
    snprintf(cmd, sizeof cmd, "collectives --backend cpu --ranks 2,3 -b 4K -e 4K -n 1 -w 0 --op allreduce,reduce_scatter -o %s", out);
    CHECK(agoq_test_run_cli(cmd, msg, sizeof msg) == 0);
    CHECK(agoq_test_file_exists(out) && agoq_test_file_exists(tsv));
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    static char json[1 << 20];
    size_t got = fread(json, 1, sizeof json - 1, f);
    json[got] = '\0';
    fclose(f);
    /* 6 algorithms x 2 ops x 2 rank counts, each with the nccl-tests and error fields */
    size_t recs = 0;
    for (const char *p = json; (p = strstr(p, "\"busbw_GBps\"")); p++) recs++;
    CHECK_MSG(recs == 24, "%zu records", recs);
    CHECK(strstr(json, "\"timing\":\t\"cpu-simulated\"") || strstr(json, "\"timing\": \"cpu-simulated\""));
    CHECK(strstr(json, "\"snr_db\"") && strstr(json, "\"wire_bytes\"") && strstr(json, "\"check_ok\":\ttrue"));
    CHECK(strstr(json, "\"check_ok\":\tfalse") == NULL);
}

TEST(coll_cli_bad_arguments) {
    CHECK(bad_cli("algo", "--backend cpu --algo teleport -b 4K -e 4K", "unknown value 'teleport'"));
    CHECK(bad_cli("zero", "--backend cpu -b 0 -e 4K", "min_bytes"));
    CHECK(bad_cli("ranks0", "--backend cpu --ranks 0 -b 4K -e 4K", "key 'config.ranks'"));
    CHECK(bad_cli("rpn", "--backend cpu --algo qgz --ranks 8 --rpn 3 -b 4K -e 4K", "ranks_per_node 3 does not divide"));
    CHECK(bad_cli("fmt", "--backend cpu --algo fp8lm --format int8 -b 4K -e 4K", "no selected algorithm accepts"));
    CHECK(bad_cli("op", "--backend cpu --op broadcast -b 4K -e 4K", "unknown value 'broadcast'"));
    char why[256];
    if (agoq_cuda_devices(why, sizeof why) == 0) /* no GPU here: asking for GPU ranks fails */
        CHECK(bad_cli("gpus", "--backend cuda -g 2 -b 4K -e 4K", "no usable GPU"));
    else /* more ranks than visible GPUs */
        CHECK(bad_cli("gpus", "--backend cuda -g 4096 -b 4K -e 4K", "visible"));
}

TEST(coll_experiment_file_errors_name_the_key) {
    char file[512], out[512], cmd[2048], msg[8192];
    snprintf(file, sizeof file, "%s/coll_bad.json", agoq_test_tmpdir());
    snprintf(out, sizeof out, "%s/coll_bad.out.json", agoq_test_tmpdir());
    agoq_test_write(file, "{\"kind\": \"collectives\", \"backend\": \"cpu\", \"config\": {\"algos\": [\"agoq\"], \"rankz\": [2]}}");
    snprintf(cmd, sizeof cmd, "run %s --out %s -q", file, out);
    CHECK(agoq_test_run_cli(cmd, msg, sizeof msg) != 0);
    CHECK(strstr(msg, "coll_bad.json: unknown key 'config.rankz'") != NULL);
    CHECK(!agoq_test_file_exists(out));
}
