/* Error reporting and small utilities; see common.h. */
#include "core/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1; /* process identity for error messages only */
static char g_context[512]; /* agoq_error_context: prefix of error lines, "" when none */

void agoq_error_context(const char *fmt, ...) {
    g_context[0] = '\0';
    if (!fmt) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_context, sizeof g_context, fmt, ap);
    va_end(ap);
}

void agoq_set_rank(int rank) { g_rank = rank; }

static void vreport(const char *fmt, va_list ap) {
    fputs("agoq: ", stderr);
    fputs(g_context, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static char *g_capture;   /* agoq_error_capture's buffer, or NULL */
static size_t g_capture_len;

void agoq_error_capture(char *buf, size_t len) {
    g_capture = buf && len ? buf : NULL;
    g_capture_len = len;
    if (g_capture) g_capture[0] = '\0';
}

void agoq_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (g_capture) {
        if (!g_capture[0]) vsnprintf(g_capture, g_capture_len, fmt, ap);
    } else {
        vreport(fmt, ap);
    }
    va_end(ap);
}

void agoq_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    exit(1);
}

void agoq_check_fail(const char *api, const char *expr, const char *msg, const char *file, int line) {
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    fprintf(stderr, "agoq: %s error '%s' in %s at %s:%d (host %s, rank %d)\n", api, msg, expr, file,
            line, host, g_rank);
    exit(1);
}

double agoq_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void agoq_progress(int quiet, const char *label, size_t done, size_t total, double start_s) {
    if (quiet || total == 0) return;
    double el = agoq_now_s() - start_s;
    double eta = done ? el * (double)(total - done) / (double)done : 0.0;
    fprintf(stderr, "\r[%s] %zu/%zu points, %.1fs elapsed, ETA %.1fs   %s", label, done, total, el, eta,
            done == total ? "\n" : "");
    fflush(stderr);
}
