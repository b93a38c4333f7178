/* Hostile input through the real binary (issue 14): every case is a bad input a user can give,
 * checked with agoq_test_expect_error: exit 1 or 2 (never a signal), exactly one line on stderr
 * naming the file or key, and no results file (JSON, TSV or temporary) written. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/test.h"

static void tmp_path(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", agoq_test_tmpdir(), name); }
/* A fixture: text written to the temporary file name, its path into buf. */
static void fixture(char *buf, size_t len, const char *name, const char *text) {
    tmp_path(buf, len, name);
    agoq_test_write(buf, text);
}
/* agoq_test_expect_error of `agoq ARGS -o out -q` (ARGS printf-style from fmt): one line
 * containing want, nothing written at out. */
__attribute__((format(printf, 3, 4)))
static int expect_error_q(const char *out, const char *want, const char *fmt, ...) {
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof args) return 0;
    snprintf(args + n, sizeof args - (size_t)n, " -o %s -q", out);
    return agoq_test_expect_error(args, want, out);
}

/* A small valid experiment: memory model, one point (runs in milliseconds). */
#define MEM_EXP "{\"kind\":\"memory\",\"tsv\":[\"model\",\"total_GB\"],\"config\":{\"models\":[\"llama2-7b\"]}}"

TEST(hostile_directory_where_a_json_file_is_expected) {
    char dir[512], out[512];
    tmp_path(dir, sizeof dir, "adir.json");
    mkdir(dir, 0755);
    tmp_path(out, sizeof out, "adir_out.json");
    CHECK(expect_error_q(out, "adir.json: is a directory", "run %s", dir));
    CHECK(expect_error_q(out, "adir.json: is a directory", "memory --model %s", dir));
    CHECK(expect_error_q(out, "key 'config.machines[0]': ",
                         "simulate --machine %s --model llama2-7b --methods agoq --seq 4K --gpus 8", dir));
    CHECK(expect_error_q(out, "adir.json: is a directory",
                         "simulate --machine %s --model llama2-7b --methods agoq --seq 4K --gpus 8", dir));
    /* a model name with a slash is a path, not models/<name>.json */
    CHECK(expect_error_q(out, "nosuch: cannot open", "memory --model %s/nosuch", agoq_test_tmpdir()));
}

TEST(hostile_empty_binary_and_nul_files) {
    char file[512], out[512];
    tmp_path(out, sizeof out, "bin_out.json");
    fixture(file, sizeof file, "empty.json", "");
    CHECK(expect_error_q(out, "empty.json: malformed JSON at line 1, column 1", "run %s", file));
    tmp_path(file, sizeof file, "binary.json");
    FILE *f = fopen(file, "wb");
    CHECK(f != NULL);
    for (int i = 0; i < 4096; i++) fputc((i * 7919 + 13) & 0xff, f);
    fclose(f);
    CHECK(expect_error_q(out, "binary.json: malformed JSON", "run %s", file));
    tmp_path(file, sizeof file, "nul.json");
    f = fopen(file, "wb");
    CHECK(f != NULL);
    fwrite("{\"kind\":\"memory\"}\0{", 1, 19, f);
    fclose(f);
    CHECK(expect_error_q(out, "nul.json: malformed JSON: NUL byte at offset 17", "run %s", file));
    CHECK(expect_error_q(out, "NUL byte", "memory --model %s", file));
}

/* A pipe (what `<(cat f)` gives) has no size to seek to: it is read to its end, not refused. */
TEST(hostile_pipe_input_is_read) {
    char file[512], cmd[2048], msg[4096];
    fixture(file, sizeof file, "piped.json", MEM_EXP);
    snprintf(cmd, sizeof cmd, "cat %s | %s run /dev/stdin --check 2>&1", file, agoq_test_bin());
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    size_t got = fread(msg, 1, sizeof msg - 1, p);
    msg[got] = '\0';
    CHECK_MSG(pclose(p) == 0 && strstr(msg, "/dev/stdin: ok"), "got: %s", msg);
}

TEST(hostile_duplicate_key) {
    char file[512], out[512];
    tmp_path(out, sizeof out, "dup_out.json");
    fixture(file, sizeof file, "dup.json",
            "{\"kind\":\"memory\",\"config\":{\"models\":[\"llama2-7b\"],\"tp\":[1],\"tp\":[2]}}");
    CHECK(expect_error_q(out, "dup.json: duplicate key 'config.tp'", "run %s", file));
    fixture(file, sizeof file, "dup_top.json", "{\"kind\":\"memory\",\"kind\":\"quant\",\"config\":{}}");
    CHECK(expect_error_q(out, "duplicate key 'kind'", "run %s", file));
    fixture(file, sizeof file, "dupcard.json",
            "{\"name\":\"x\",\"hidden\":64,\"hidden\":128,\"ffn\":256,\"heads\":4,\"layers\":2,\"vocab\":100}");
    CHECK(expect_error_q(out, "dupcard.json: duplicate key 'hidden'", "memory --model %s", file));
}

TEST(hostile_model_card_heads_must_divide_hidden) {
    char file[512], out[512];
    tmp_path(out, sizeof out, "card_out.json");
    fixture(file, sizeof file, "card_2_4.json",
            "{\"name\":\"x\",\"hidden\":2,\"ffn\":8,\"heads\":4,\"layers\":2,\"vocab\":100}");
    CHECK(expect_error_q(out, "card_2_4.json: key 'heads': 4 heads do not divide hidden 2", "memory --model %s", file));
    CHECK(expect_error_q(out, "key 'config.models[0]': ",
                         "simulate --machine experiments/machines/h200-8x.json --model %s --methods agoq --seq 4K --gpus 8",
                         file));
    fixture(file, sizeof file, "card_100_3.json",
            "{\"name\":\"x\",\"hidden\":100,\"ffn\":8,\"heads\":3,\"layers\":2,\"vocab\":100}");
    CHECK(expect_error_q(out, "3 heads do not divide hidden 100", "memory --model %s", file));
}

TEST(hostile_unknown_model_bad_card_bad_layout_one_line) {
    char file[512], out[512];
    tmp_path(out, sizeof out, "one_out.json");
    CHECK(expect_error_q(out, "unknown model 'llama-9b'", "memory --model llama-9b"));
    CHECK(expect_error_q(out, "key 'config.models[0]': unknown model 'llama-9b'",
                         "simulate --machine experiments/machines/h200-8x.json --model llama-9b --methods agoq --seq 4K --gpus 8"));
    fixture(file, sizeof file, "badcard.json",
            "{\"name\":\"x\",\"hidden\":64,\"ffn\":256,\"heads\":4,\"layers\":2,\"vocab\":100,\"layer\":\"rnn\"}");
    CHECK(expect_error_q(out, "badcard.json: key 'layer': unknown layer 'rnn'", "memory --model %s", file));
    CHECK(expect_error_q(out, "key 'config.model': ", "bitalloc --model %s", file));
    CHECK(expect_error_q(out, "tp 3 does not divide", "memory --model llama2-13b --tp 3"));
    CHECK(expect_error_q(out, "point machine h200-8x, model llama2-13b, seq 4096, dp 8: simulate: heads = 40",
                         "simulate --machine experiments/machines/h200-8x.json --model llama2-13b --methods agoq "
                         "--seq 4K --gpus 24 --tp 3"));
}

TEST(hostile_unknown_tsv_column) {
    char file[512], out[512];
    tmp_path(out, sizeof out, "tsvcol_out.json");
    fixture(file, sizeof file, "tsvcol.json",
            "{\"kind\":\"memory\",\"tsv\":[\"model\",\"totl_GB\"],\"config\":{\"models\":[\"llama2-7b\"]}}");
    CHECK(expect_error_q(out, "tsvcol.json: key 'tsv[1]': 'totl_GB' is not a record field", "run %s", file));
}

TEST(hostile_bitalloc_budget) {
    char out[512];
    tmp_path(out, sizeof out, "ba_out.json");
    CHECK(expect_error_q(out, "key 'config.budget_gb': applies only with 'model'", "bitalloc --units --budget 3"));
    CHECK(expect_error_q(out, "bad value 'nan' for --budget", "bitalloc --units --budget nan"));
    CHECK(expect_error_q(out, "bad value 'inf' for --tp", "bitalloc --model llama2-7b --tp inf"));
}

/* -o longer than any fixed buffer: the results land at exactly that path (JSON and TSV). */
TEST(hostile_long_output_path_is_not_truncated) {
    char dir[2048], out[2200], tsv[2200], args[4096], msg[4096];
    int n = snprintf(dir, sizeof dir, "%s/", agoq_test_tmpdir());
    for (int i = 0; i < 6; i++) n += snprintf(dir + n, sizeof dir - (size_t)n, "%0120d/", i);
    snprintf(out, sizeof out, "%sr.json", dir);
    snprintf(tsv, sizeof tsv, "%sr.tsv", dir);
    CHECK(strlen(out) > 700);
    snprintf(args, sizeof args, "memory --model llama2-7b -o %s -q", out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0, "%s", msg);
    CHECK(agoq_test_file_exists(out) && agoq_test_file_exists(tsv));
}

TEST(hostile_output_path_too_long_or_unwritable) {
    char out[6000], args[7000], file[512];
    int n = snprintf(out, sizeof out, "%s/", agoq_test_tmpdir());
    while (n < 4200) n += snprintf(out + n, sizeof out - (size_t)n, "%0100d/", n);
    snprintf(out + n, sizeof out - (size_t)n, "r.json");
    snprintf(args, sizeof args, "memory --model llama2-7b -o %s -q", out);
    CHECK(agoq_test_expect_error(args, "File name too long", NULL));
    /* a parent that is a regular file, a target that is a directory, a TSV that is a directory */
    fixture(file, sizeof file, "plainfile", "x");
    snprintf(out, sizeof out, "%s/plainfile/r.json", agoq_test_tmpdir());
    CHECK(expect_error_q(out, "plainfile/r.json: cannot", "memory --model llama2-7b"));
    snprintf(out, sizeof out, "%s/outdir.json", agoq_test_tmpdir());
    mkdir(out, 0755);
    snprintf(args, sizeof args, "memory --model llama2-7b -o %s -q", out);
    CHECK(agoq_test_expect_error(args, "outdir.json: cannot write: is a directory", NULL));
    snprintf(out, sizeof out, "%s/tsvdir.tsv", agoq_test_tmpdir());
    mkdir(out, 0755);
    snprintf(out, sizeof out, "%s/tsvdir.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "memory --model llama2-7b -o %s -q", out);
    CHECK(agoq_test_expect_error(args, "tsvdir.tsv: cannot write: is a directory", NULL));
    CHECK(!agoq_test_file_exists(out));
}

TEST(hostile_check_mode_runs_and_writes_nothing) {
    char file[512], out[512], args[2048], msg[4096];
    tmp_path(file, sizeof file, "check.json");
    tmp_path(out, sizeof out, "check_out.json");
    agoq_test_write(file, "{\"kind\":\"train\",\"config\":{\"steps\":100000}}");
    snprintf(args, sizeof args, "run %s --check -o %s", file, out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0 && strstr(msg, "check.json: ok"), "%s", msg);
    CHECK(!agoq_test_file_exists(out));
    snprintf(args, sizeof args, "quant --check --formats int9 -o %s", out);
    CHECK(agoq_test_expect_error(args, "int9", out));
    /* the step runner: --check plans every point (no GPU needed) and stops before measuring;
     * its own --ready is the GPU probe */
    snprintf(args, sizeof args, "step --check --runs bf16,agoq --seq 4K -o %s", out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0 && strstr(msg, "ok (kind step"), "%s", msg);
    CHECK(!agoq_test_file_exists(out));
    snprintf(args, sizeof args, "run experiments/step_quick.json --check --backend cpu -o %s", out);
    CHECK_MSG(agoq_test_run_cli(args, msg, sizeof msg) == 0 && strstr(msg, "step_quick.json: ok"), "%s", msg);
    CHECK(!agoq_test_file_exists(out));
    snprintf(args, sizeof args, "step --check --runs bf16 --seq 4K --budget 0.001 -o %s", out);
    CHECK(agoq_test_expect_error(args, "budget", out));
}

/* A long list flag is read to its end (it was cut at 1024 characters: a bad last entry passed). */
TEST(hostile_long_list_flag_is_read_to_its_end) {
    char args[8192], out[512];
    tmp_path(out, sizeof out, "longlist_out.json");
    int n = snprintf(args, sizeof args, "simulate --machine experiments/machines/h200-8x.json --model llama2-7b --methods agoq --gpus 8 -o %s -q --seq ", out);
    for (int i = 0; i < 400; i++) n += snprintf(args + n, sizeof args - (size_t)n, "4K,");
    snprintf(args + n, sizeof args - (size_t)n, "8X");
    CHECK(agoq_test_expect_error(args, "--seq", out));
}

/* -o that is not a file name, or names a FIFO/device (a rename would replace it); and a failed
 * check or config leaves no directory behind. */
TEST(hostile_output_not_a_regular_file) {
    char out[1024], args[2048], dir[600];
    CHECK(agoq_test_expect_error("memory --model llama2-7b -o '' -q", "expected a file name", NULL));
    snprintf(dir, sizeof dir, "%s/newdir", agoq_test_tmpdir());
    snprintf(args, sizeof args, "memory --model llama2-7b -o %s/ -q", dir);
    CHECK(agoq_test_expect_error(args, "expected a file name", NULL));
    CHECK(!agoq_test_file_exists(dir));
    snprintf(out, sizeof out, "%s/fifo.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "mkfifo %s", out);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "memory --model llama2-7b -o %s -q", out);
    CHECK(agoq_test_expect_error(args, "fifo.json: cannot write: exists and is not a regular file", NULL));
    snprintf(out, sizeof out, "%s/a/b/r.json", dir);
    CHECK(expect_error_q(out, "unknown model 'llama-9b'", "memory --model llama-9b"));
    CHECK(!agoq_test_file_exists(dir));
}

/* A step factor barely above 1 is hundreds of millions of sizes: refused at once, not a hang. */
TEST(hostile_sweep_with_too_many_sizes) {
    char out[512];
    tmp_path(out, sizeof out, "sweep_out.json");
    CHECK(expect_error_q(out, "-f 1.0000001 is 263395942 sizes (at most 4096)",
                         "simulate --mode comm --machine experiments/machines/h200-8x.json --tp 8 --dp 8 -b 4 -e 1T "
                         "-f 1.0000001"));
    CHECK(expect_error_q(out, "sizes (at most 4096)", "collectives --backend cpu -b 4 -e 1T -f 1.0000001"));
}
