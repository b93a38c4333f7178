/* The one test runner: runs every TEST registered by the linked test files.
 *   build/agoq_test [substring...]   -- only tests whose name contains one of the substrings
 * Each test's line ends with its wall seconds (how the GPU suite's device limits are set).
 * Last line: "N passed, N failed, N skipped" (a skipped test checked nothing: SKIP in test.h);
 * exit status 1 when any test failed. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/common.h"
#include "tests/test.h"

#define MAX_TESTS 4096
static struct { const char *name, *file; agoq_test_fn fn; } g_tests[MAX_TESTS];
static int g_ntests, g_failed_current, g_skipped_current;
static char g_skip_why[512];
static char g_tmpdir[256];

void agoq_test_register(const char *name, const char *file, agoq_test_fn fn) {
    if (g_ntests < MAX_TESTS) {
        g_tests[g_ntests].name = name;
        g_tests[g_ntests].file = file;
        g_tests[g_ntests].fn = fn;
        g_ntests++;
    }
}

void agoq_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    FAIL %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    g_failed_current = 1;
}

void agoq_test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_skip_why, sizeof g_skip_why, fmt, ap);
    va_end(ap);
    g_skipped_current = 1;
}

void agoq_test_env_save(const char *const *names, int n, char **saved) {
    for (int i = 0; i < n; i++) {
        saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
        unsetenv(names[i]);
    }
}
void agoq_test_env_restore(const char *const *names, int n, char **saved) {
    for (int i = 0; i < n; i++) {
        if (saved[i]) setenv(names[i], saved[i], 1);
        else unsetenv(names[i]);
        free(saved[i]);
    }
}

const char *agoq_test_bin(void) {
    const char *b = getenv("AGOQ_BIN");
    return b && *b ? b : "build/agoq";
}

int agoq_test_run_cli(const char *args, char *out, size_t len) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", agoq_test_bin(), args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t got = 0;
    if (out && len) {
        got = fread(out, 1, len - 1, p);
        out[got] = '\0';
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int agoq_test_run_cli_stderr(const char *args, char *err, size_t len) {
    char cmd[16384];
    if ((size_t)snprintf(cmd, sizeof cmd, "%s %s 2>&1 >/dev/null", agoq_test_bin(), args) >= sizeof cmd) return -1;
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t got = fread(err, 1, len - 1, p);
    err[got] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    int st = pclose(p);
    /* the shell reports a signal-killed child as 128 + signal */
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int has_temporaries(const char *path) {
    char cmd[9000], line[64];
    snprintf(cmd, sizeof cmd, "ls -d '%s'.tmp.* 2>/dev/null | wc -l", path);
    FILE *p = popen(cmd, "r");
    int n = p && fgets(line, sizeof line, p) ? atoi(line) : -1;
    if (p) pclose(p);
    return n != 0;
}

int agoq_test_expect_error(const char *args, const char *want, const char *out_path) {
    char err[16384];
    int rc = agoq_test_run_cli_stderr(args, err, sizeof err);
    size_t lines = 0, len = strlen(err);
    for (size_t i = 0; i < len; i++) lines += err[i] == '\n';
    const char *why = NULL;
    if (rc != 1 && rc != 2) why = rc > 128 ? "killed by a signal" : "exit status not 1 or 2";
    else if (lines != 1 || err[len - 1] != '\n') why = "not exactly one line on stderr";
    else if (strncmp(err, "agoq: ", 6) != 0) why = "no 'agoq: ' prefix";
    else if (want && !strstr(err, want)) why = "message lacks the expected text";
    if (!why && out_path) {
        char tsv[8192];
        size_t n = strlen(out_path);
        snprintf(tsv, sizeof tsv, "%.*s.tsv", (int)(n > 5 && !strcmp(out_path + n - 5, ".json") ? n - 5 : n), out_path);
        if (agoq_test_file_exists(out_path)) why = "results JSON written";
        else if (agoq_test_file_exists(tsv)) why = "results TSV written";
        else if (has_temporaries(out_path) || has_temporaries(tsv)) why = "temporary file left behind";
    }
    if (!why) return 1;
    fprintf(stderr, "    agoq %.200s%s\n    -> exit %d, %s (want '%s'); stderr:\n%s", args, strlen(args) > 200 ? "..." : "",
            rc, why, want ? want : "", err);
    return 0;
}

/* In expect_die's child: exit with fn's status before the leak checker's exit handler runs
 * (handlers run in reverse order of registration). The child dies mid-work by design, and
 * with SAN=1 the leak checker also copies the parent's threads (OpenMP's workers after the
 * train tests) and warns about them on stderr, which the one-line check would count. */
static void exit_now(int status, void *arg) {
    (void)arg;
    fflush(NULL);
    _exit(status);
}

int agoq_test_expect_die(void (*fn)(void *), void *arg, const char *want) {
    int fd[2];
    if (pipe(fd) != 0) return 0;
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) { /* the child: its stderr into the pipe; fn should not return */
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        on_exit(exit_now, NULL);
        fn(arg);
        _exit(0);
    }
    close(fd[1]);
    char err[4096];
    size_t len = 0;
    for (ssize_t got; len + 1 < sizeof err && (got = read(fd[0], err + len, sizeof err - 1 - len)) > 0;)
        len += (size_t)got;
    err[len] = '\0';
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += err[i] == '\n';
    const char *why = NULL;
    if (!WIFEXITED(st)) why = "killed by a signal";
    else if (WEXITSTATUS(st) != 1) why = "exit status not 1";
    else if (lines != 1 || err[len - 1] != '\n') why = "not exactly one line on stderr";
    else if (strncmp(err, "agoq: ", 6) != 0) why = "no 'agoq: ' prefix";
    else if (want && !strstr(err, want)) why = "message lacks the expected text";
    if (!why) return 1;
    fprintf(stderr, "    -> exit %d, %s (want '%s'); stderr:\n%s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, why,
            want ? want : "", err);
    return 0;
}

const char *agoq_test_tmpdir(void) { return g_tmpdir; }

int agoq_test_capture_stderr(int (*fn)(void *), void *arg, char *msg, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/captured_stderr.txt", g_tmpdir);
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = fopen(path, "w");
    if (!cap || saved < 0) {
        if (cap) fclose(cap);
        if (saved >= 0) close(saved);
        msg[0] = '\0';
        return -2;
    }
    dup2(fileno(cap), 2);
    int rc = fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(cap);
    FILE *in = fopen(path, "r");
    size_t got = in ? fread(msg, 1, len - 1, in) : 0;
    msg[got] = '\0';
    if (in) fclose(in);
    return rc;
}

int agoq_test_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

void agoq_test_write(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static size_t report(const char *what, size_t i, size_t *shown, const char *fmt_ref, double r, double g) {
    if ((*shown)++ < 5) {
        fprintf(stderr, "    mismatch %s[%zu]: ref ", what, i);
        fprintf(stderr, fmt_ref, r);
        fprintf(stderr, " got ");
        fprintf(stderr, fmt_ref, g);
        fputc('\n', stderr);
    }
    return 1;
}

size_t agoq_validate_bytes(const char *what, const uint8_t *ref, const uint8_t *got, size_t n) {
    size_t bad = 0, shown = 0;
    for (size_t i = 0; i < n; i++)
        if (ref[i] != got[i]) bad += report(what, i, &shown, "0x%02.0f", ref[i], got[i]);
    if (bad) fprintf(stderr, "    %s: %zu of %zu bytes differ\n", what, bad, n);
    return bad;
}

size_t agoq_validate_floats(const char *what, const float *ref, const float *got, size_t n) {
    size_t bad = 0, shown = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&ref[i], &got[i], sizeof(float)) != 0) bad += report(what, i, &shown, "%.9g", ref[i], got[i]);
    if (bad) fprintf(stderr, "    %s: %zu of %zu floats differ\n", what, bad, n);
    return bad;
}

static pid_t g_main_pid; /* forked children (agoq_test_expect_die) leave the directory alone */

static void cleanup(void) {
    if (!g_tmpdir[0] || getpid() != g_main_pid) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmpdir);
}

/* No filter, or the name contains one of argv[1..]. */
static int selected(const char *name, int argc, char **argv) {
    for (int k = 1; k < argc; k++)
        if (strstr(name, argv[k])) return 1;
    return argc < 2;
}

int main(int argc, char **argv) {
    snprintf(g_tmpdir, sizeof g_tmpdir, "/tmp/agoq_test.XXXXXX");
    if (!mkdtemp(g_tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    g_main_pid = getpid();
    atexit(cleanup);
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < g_ntests; i++) {
        if (!selected(g_tests[i].name, argc, argv)) continue;
        g_failed_current = g_skipped_current = 0;
        const double t0 = agoq_now_s();
        g_tests[i].fn();
        const double dt = agoq_now_s() - t0;
        if (g_failed_current) {
            printf("FAIL %s (%s) %.1f s\n", g_tests[i].name, g_tests[i].file, dt);
            failed++;
        } else if (g_skipped_current) {
            printf("skip %s (%s): %s\n", g_tests[i].name, g_tests[i].file, g_skip_why);
            skipped++;
        } else {
            printf("ok   %s (%s) %.1f s\n", g_tests[i].name, g_tests[i].file, dt);
            passed++;
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
