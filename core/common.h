/* Error reporting shared by every part of agoq-bench.
 * Library code reports with agoq_error() and returns -1; only the CLI layer exits.
 * Messages are one line: "agoq: <where>: <what>" so tests and users can grep them. */
#ifndef AGOQ_COMMON_H
#define AGOQ_COMMON_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGOQ_VERSION "0.1.0"

/* printf-style one-line error to stderr, prefixed "agoq: ". */
void agoq_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Capture: while buf is set, agoq_error writes the first message (no prefix, no newline) into
 * buf[len] instead of stderr, so a caller can re-report a library's one line with its own
 * context (file, key). agoq_error_capture(NULL, 0) restores stderr. Not thread-safe. */
void agoq_error_capture(char *buf, size_t len);
/* Context for the errors of a nested load (a model card or machine file named by an experiment
 * key): "exp.json: key 'config.models[0]': " is put before each agoq_error line until cleared
 * with NULL, so the one line names both the key and what was wrong in the named file. */
void agoq_error_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* agoq_error + exit(1): for setup failures in the CLI layer only. */
void agoq_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Progress on stderr unless quiet: "[label] done/total, elapsed, ETA". */
void agoq_progress(int quiet, const char *label, size_t done, size_t total, double start_s);
double agoq_now_s(void); /* monotonic seconds */

/* Failure of an external API call (CUDA, NCCL, MPI, cuBLAS): names the expression, file:line,
 * host and rank, then exits. Used by the check macros in check.h. */
void agoq_check_fail(const char *api, const char *expr, const char *msg, const char *file, int line)
    __attribute__((noreturn));
/* Rank shown in check failures; set once by the MPI launcher (default -1: single process). */
void agoq_set_rank(int rank);

/* Contract check that stays on in release builds and names the argument and its value. */
#define AGOQ_REQUIRE(cond, ...)                                                    \
    do {                                                                           \
        if (!(cond)) {                                                             \
            agoq_error(__VA_ARGS__);                                               \
            return -1;                                                             \
        }                                                                          \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
