/* Minimal test framework: TEST(name) registers a test at load time (constructor), CHECK*
 * record a failure with file:line and return from the test; SKIP("why") ends a test that cannot
 * check anything in this configuration (it is counted as skipped, never as passed). The runner
 * (runner.c) runs every registered test (or those whose name contains argv[1]) and ends with
 * "N passed, N failed, N skipped". */
#ifndef AGOQ_TEST_H
#define AGOQ_TEST_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*agoq_test_fn)(void);
void agoq_test_register(const char *name, const char *file, agoq_test_fn fn);
void agoq_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void agoq_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Path of the agoq binary under test ($AGOQ_BIN, default build/agoq). */
const char *agoq_test_bin(void);
/* Runs `agoq <args>` with stdout+stderr captured into out (truncated to len); returns exit code
 * (128 + signal number when killed by a signal). */
int agoq_test_run_cli(const char *args, char *out, size_t len);
/* Runs `agoq <args>` with stdout discarded and stderr captured into err; returns the exit code,
 * or 128 + the signal number when a signal ended it. */
int agoq_test_run_cli_stderr(const char *args, char *err, size_t len);
/* The contract for bad input: `agoq <args>` exits 1 or 2 (not a signal), prints exactly one
 * line on stderr, "agoq: ..." containing want, and leaves neither out_path (if non-NULL), nor
 * its .tsv sibling, nor any temporary "out_path.tmp.*". Returns 1, or 0 after saying why. */
int agoq_test_expect_error(const char *args, const char *want, const char *out_path);
/* The contract for a bad setting read in-process (e.g. an environment knob, core/knob.h):
 * fn(arg), run in a forked child, exits 1 after exactly one line on stderr, "agoq: ..."
 * containing want. Returns 1, or 0 after saying why. */
int agoq_test_expect_die(void (*fn)(void *), void *arg, const char *want);
/* Runs fn(arg) in this process with its stderr captured into msg (NUL-terminated, truncated to
 * len); returns fn's result, or -2 when stderr could not be redirected. */
int agoq_test_capture_stderr(int (*fn)(void *), void *arg, char *msg, size_t len);
/* Environment variables a test switches (knobs): agoq_test_env_save copies the values of
 * names[0 .. n - 1] into saved (NULL: unset) and unsets them; agoq_test_env_restore sets them
 * back (or unsets them) and frees the copies. */
void agoq_test_env_save(const char *const *names, int n, char **saved);
void agoq_test_env_restore(const char *const *names, int n, char **saved);
/* Fresh temporary directory for a test's files (removed at exit). */
const char *agoq_test_tmpdir(void);
int agoq_test_file_exists(const char *path);
/* Writes text to path (for malformed-input fixtures). */
void agoq_test_write(const char *path, const char *text);

/* llm.c-style comparison: prints the first mismatches (index, both values), returns count. */
size_t agoq_validate_bytes(const char *what, const uint8_t *ref, const uint8_t *got, size_t n);
size_t agoq_validate_floats(const char *what, const float *ref, const float *got, size_t n); /* bit-exact */

#define TEST(name)                                                                     \
    static void name(void);                                                            \
    __attribute__((constructor)) static void agoq_reg_##name(void) {                   \
        agoq_test_register(#name, __FILE__, name);                                     \
    }                                                                                  \
    static void name(void)

#define SKIP(...)                                                                      \
    do {                                                                               \
        agoq_test_skip(__VA_ARGS__);                                                   \
        return;                                                                        \
    } while (0)

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            agoq_test_fail(__FILE__, __LINE__, "%s", #cond);                           \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define CHECK_MSG(cond, ...)                                                           \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            agoq_test_fail(__FILE__, __LINE__, __VA_ARGS__);                           \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                          \
    do {                                                                               \
        double a_ = (double)(a), b_ = (double)(b);                                     \
        if (!(fabs(a_ - b_) <= (tol))) {                                               \
            agoq_test_fail(__FILE__, __LINE__, "%s = %.9g, %s = %.9g, |diff| > %g", #a, a_, #b, b_, (double)(tol)); \
            return;                                                                    \
        }                                                                              \
    } while (0)
#endif
