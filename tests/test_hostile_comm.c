/* Communicator failures (issue 14): agoq_comm_wait (collectives/watchdog.h) with fake probes,
 * and the cpu backend's injected faults through the real binary. A rank reporting an
 * asynchronous error, or still busy at the timeout, aborts the communicators and fails with one
 * line naming that rank, in bounded time, and no results are written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/watchdog.h"
#include "core/common.h"
#include "tests/test.h"

typedef struct {
    int hung, failed;  /* local rank that never completes / reports an error; -1 none */
    int busy_polls;    /* every rank reports pending this many polls, then done */
    int polls, aborts;
} fake_comm;

static agoq_rank_state fake_poll(void *ctx, int lr, const char **why) {
    fake_comm *f = ctx;
    f->polls++;
    if (lr == f->failed) {
        *why = "unhandled system error (fake)";
        return AGOQ_RANK_FAILED;
    }
    if (lr == f->hung || f->polls <= f->busy_polls) return AGOQ_RANK_PENDING;
    return AGOQ_RANK_DONE;
}
static void fake_abort(void *ctx) { ((fake_comm *)ctx)->aborts++; }

typedef struct {
    fake_comm *f;
    double timeout_s, elapsed;
} wait_call;

static int wait_fake(void *arg) {
    wait_call *w = arg;
    agoq_comm_waiter waiter = {fake_poll, fake_abort, w->f};
    double t0 = agoq_now_s();
    int rc = agoq_comm_wait(&waiter, "fake", 4, 8, w->timeout_s, "allreduce");
    w->elapsed = agoq_now_s() - t0;
    return rc;
}

/* Runs agoq_comm_wait with stderr captured into msg. */
static int wait_captured(fake_comm *f, double timeout_s, char *msg, size_t len, double *elapsed) {
    wait_call w = {f, timeout_s, 0.0};
    int rc = agoq_test_capture_stderr(wait_fake, &w, msg, len);
    *elapsed = w.elapsed;
    return rc;
}

TEST(watchdog_hung_rank_is_aborted_after_the_timeout) {
    fake_comm f = {.hung = 2, .failed = -1};
    char msg[1024];
    double el;
    CHECK(wait_captured(&f, 0.2, msg, sizeof msg, &el) == -1);
    CHECK_MSG(el >= 0.2 && el < 2.0, "waited %.3f s", el);
    CHECK(f.aborts == 1);
    /* global rank = rank0 (8) + local rank 2 */
    CHECK_MSG(strstr(msg, "collectives fake: rank 10: allreduce did not complete within 0.2 s") && strstr(msg, "aborted"),
              "%s", msg);
    CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1);
}

TEST(watchdog_async_error_aborts_at_once) {
    fake_comm f = {.hung = -1, .failed = 1};
    char msg[1024];
    double el;
    CHECK(wait_captured(&f, 100.0, msg, sizeof msg, &el) == -1);
    CHECK(el < 1.0 && f.aborts == 1);
    CHECK_MSG(strstr(msg, "rank 9: allreduce: unhandled system error (fake); communicators aborted"), "%s", msg);
}

TEST(watchdog_slow_but_healthy_ranks_complete) {
    fake_comm f = {.hung = -1, .failed = -1, .busy_polls = 40};
    char msg[1024];
    double el;
    CHECK(wait_captured(&f, 100.0, msg, sizeof msg, &el) == 0);
    CHECK(f.aborts == 0 && msg[0] == '\0' && f.polls > 40);
}

/* The cpu backend's injected faults go through the same wait as NCCL's. */
TEST(watchdog_cpu_backend_fault_fails_the_run_naming_the_rank) {
    char out[512], args[1024];
    snprintf(out, sizeof out, "%s/coll_fault.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "collectives --backend cpu --algo agoq --ranks 4 -b 4K -e 4K -n 1 -w 0 -q -o %s", out);
    setenv("AGOQ_COMM_TIMEOUT_S", "0.3", 1);
    setenv("AGOQ_TEST_COMM_FAULT", "hang:2", 1);
    double t0 = agoq_now_s();
    int ok = agoq_test_expect_error(args, "collectives cpu: rank 2: sync did not complete within 0.3 s", out);
    double el = agoq_now_s() - t0;
    setenv("AGOQ_TEST_COMM_FAULT", "error:3", 1);
    int ok2 = agoq_test_expect_error(args, "collectives cpu: rank 3: sync: asynchronous error", out);
    unsetenv("AGOQ_TEST_COMM_FAULT");
    unsetenv("AGOQ_COMM_TIMEOUT_S");
    CHECK(ok && ok2);
    CHECK_MSG(el < 10.0, "took %.1f s", el);
}

/* The watchdog's knobs set to values they do not accept: one line naming the variable, the
 * value and what is valid (core/knob.h), no results; before, the timeout fell back to 300 s
 * and a malformed fault to none, silently. */
TEST(watchdog_bad_knob_values_fail_the_run_in_one_line) {
    char out[512], args[1024];
    snprintf(out, sizeof out, "%s/coll_badknob.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "collectives --backend cpu --algo agoq --ranks 4 -b 4K -e 4K -n 1 -w 0 -q -o %s", out);
    static const char *const bad[][3] = {
        {"AGOQ_COMM_TIMEOUT_S", "0", "AGOQ_COMM_TIMEOUT_S=0: expected seconds, a number > 0 and < 1e7"},
        {"AGOQ_COMM_TIMEOUT_S", "5min", "AGOQ_COMM_TIMEOUT_S=5min: expected seconds"},
        {"AGOQ_TEST_COMM_FAULT", "hang", "AGOQ_TEST_COMM_FAULT=hang: expected hang:R or error:R"},
        {"AGOQ_TEST_COMM_FAULT", "error:x", "AGOQ_TEST_COMM_FAULT=error:x: expected hang:R or error:R"},
        {"AGOQ_TEST_COMM_FAULT", "crash:1", "AGOQ_TEST_COMM_FAULT=crash:1: expected hang:R or error:R"},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* the cpu backend reads the timeout where it waits: for an injected fault */
        if (!strcmp(bad[i][0], "AGOQ_COMM_TIMEOUT_S")) setenv("AGOQ_TEST_COMM_FAULT", "error:3", 1);
        setenv(bad[i][0], bad[i][1], 1);
        ok &= agoq_test_expect_error(args, bad[i][2], out);
        unsetenv(bad[i][0]);
        unsetenv("AGOQ_TEST_COMM_FAULT");
    }
    CHECK(ok);
}
