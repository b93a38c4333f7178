/* Harness foundation: number parsing, metrics (hand-computed), results writers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/metrics.h"
#include "core/results.h"
#include "tests/test.h"

TEST(cli_parse_size_strict) {
    size_t v;
    CHECK(cli_parse_size("4096", &v) == 0 && v == 4096);
    CHECK(cli_parse_size("64K", &v) == 0 && v == 65536);
    CHECK(cli_parse_size("1M", &v) == 0 && v == 1048576);
    CHECK(cli_parse_size("2GiB", &v) == 0 && v == (size_t)2 << 30);
    CHECK(cli_parse_size("3mb", &v) == 0 && v == (size_t)3 << 20);
    CHECK(cli_parse_size("12x", &v) != 0);
    CHECK(cli_parse_size("", &v) != 0);
    CHECK(cli_parse_size(" 3", &v) != 0);
    CHECK(cli_parse_size("-1", &v) != 0);
    CHECK(cli_parse_size("99999999999T", &v) != 0); /* overflow */
    long l;
    double d;
    CHECK(cli_parse_long("-17", &l) == 0 && l == -17);
    CHECK(cli_parse_long("1.5", &l) != 0);
    CHECK(cli_parse_double("1.5", &d) == 0 && d == 1.5);
    CHECK(cli_parse_double("nan", &d) != 0);
}

TEST(cli_sweep_points) {
    cli_sweep sw = {1024, 1 << 20, 4};
    CHECK(cli_sweep_count(&sw) == 6); /* 1K 4K 16K 64K 256K 1M */
    CHECK(cli_sweep_bytes(&sw, 0, 4) == 1024 && cli_sweep_bytes(&sw, 5, 4) == 1 << 20);
    cli_sweep one = {1000, 1000, 2};
    CHECK(cli_sweep_count(&one) == 1 && cli_sweep_bytes(&one, 0, 16) == 992);
    cli_sweep bad = {0, 10, 2};
    CHECK(cli_sweep_check("t", &bad) != 0);
}

TEST(metrics_hand_computed) {
    float r[4] = {1, -2, 3, 0}, a[4] = {1.5f, -2, 2, 0};
    agoq_error_stats s = agoq_compare(r, a, 4);
    /* errors .5, 0, -1, 0: se = 1.25, sr = 14 */
    CHECK_NEAR(s.mse, 1.25 / 4, 1e-12);
    CHECK_NEAR(s.nmse, 1.25 / 14, 1e-12);
    CHECK_NEAR(s.snr_db, -10 * log10(1.25 / 14), 1e-9);
    CHECK_NEAR(s.max_abs, 1.0, 0);
    CHECK_NEAR(s.max_rel, 0.5, 1e-12); /* .5/1 beats 1/3 */
    CHECK_NEAR(s.cosine, (1.5 + 4 + 6) / (sqrt(14.0) * sqrt(2.25 + 4 + 4)), 1e-12);
    CHECK_NEAR(agoq_norm_l2(&s), sqrt(1.25 / 14), 1e-12);
    float z[3] = {0, 0, 0}, n[3] = {NAN, 0, 0};
    s = agoq_compare(z, z, 3);
    CHECK(s.nmse == 0 && isinf(s.snr_db) && s.cosine == 1 && s.max_rel == 0);
    s = agoq_compare(z, r, 3);
    CHECK(isinf(s.nmse) && s.cosine == 0);
    s = agoq_compare(n, z, 3);
    CHECK(s.nonfinite == 1 && s.n == 2);
}

/* The writers' output and that no temporary stays behind; interrupted and failing writes are
 * tested through the binary in test_hostile_results.c. A TSV column absent from every record
 * is refused before writing (experiment.c); one null in a record is written as nan. */
TEST(results_json_and_tsv_writers) {
    char *argv[] = {"agoq", "test"};
    agoq_results *r = results_new("test", "cpu", "measured", 2, argv);
    cJSON *rec = results_add_record(r);
    cJSON_AddStringToObject(rec, "name", "a");
    results_num(rec, "x", 1.5);
    results_num(rec, "bad", NAN);
    char path[512], tsv[512];
    snprintf(path, sizeof path, "%s/sub/dir/r.json", agoq_test_tmpdir());
    snprintf(tsv, sizeof tsv, "%s/sub/dir/r.tsv", agoq_test_tmpdir());
    CHECK(results_write(r, path) == 0);
    const char *cols[] = {"name", "x", "bad"};
    CHECK(results_write_tsv(r, tsv, cols, 3) == 0);
    results_free(r);
    cJSON *j = agoq_read_json(path);
    CHECK(j != NULL);
    const cJSON *meta = cJSON_GetObjectItem(j, "meta");
    CHECK(strcmp(cJSON_GetObjectItem(meta, "source")->valuestring, "measured") == 0);
    CHECK(cJSON_GetObjectItem(meta, "commit") && cJSON_GetObjectItem(meta, "date_utc"));
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "records"), 0);
    CHECK(cJSON_GetObjectItem(r0, "x")->valuedouble == 1.5);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(r0, "bad"))); /* NaN is written as null */
    cJSON_Delete(j);
    FILE *f = fopen(tsv, "r");
    char line[256];
    CHECK(f && fgets(line, sizeof line, f) && strcmp(line, "# name x bad\n") == 0);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "a\t1.5\tnan\n") == 0);
    fclose(f);
    /* no temp files left behind */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/sub/dir | grep -c tmp", agoq_test_tmpdir());
    FILE *p = popen(cmd, "r");
    CHECK(p && fgets(line, sizeof line, p) && atoi(line) == 0);
    pclose(p);
}

TEST(read_json_reports_line_and_column) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad.json", agoq_test_tmpdir());
    agoq_test_write(path, "{\n  \"a\": 1,\n  \"b\": ]\n}\n");
    CHECK(agoq_read_json(path) == NULL);
    snprintf(path, sizeof path, "%s/absent.json", agoq_test_tmpdir());
    CHECK(agoq_read_json(path) == NULL);
}
