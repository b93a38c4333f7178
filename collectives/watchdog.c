/* Bounded waits on communicators; see watchdog.h. */
#include "collectives/watchdog.h"

#include <stdlib.h>
#include <time.h>

#include "core/common.h"
#include "core/knob.h"

double agoq_comm_timeout_s(void) {
    const char *s = agoq_knob_str("AGOQ_COMM_TIMEOUT_S");
    if (!s) return 300.0;
    char *end = NULL;
    const double t = strtod(s, &end);
    if (end == s || *end != '\0' || !(t > 0 && t < 1e7))
        agoq_knob_bad("AGOQ_COMM_TIMEOUT_S", s, "seconds, a number > 0 and < 1e7");
    return t;
}

int agoq_comm_wait(const agoq_comm_waiter *w, const char *backend, int nlocal, int rank0, double timeout_s,
                   const char *what) {
    const double t0 = agoq_now_s();
    long sleep_ns = 1000; /* 1 us, doubling to 1 ms: short collectives return fast, long ones cost little CPU */
    for (;;) {
        int pending = -1;
        for (int lr = 0; lr < nlocal; lr++) {
            const char *why = "unknown error";
            agoq_rank_state s = w->poll(w->ctx, lr, &why);
            if (s == AGOQ_RANK_FAILED) {
                w->abort_all(w->ctx);
                agoq_error("collectives %s: rank %d: %s: %s; communicators aborted", backend, rank0 + lr, what, why);
                return -1;
            }
            if (s == AGOQ_RANK_PENDING && pending < 0) pending = lr;
        }
        if (pending < 0) return 0;
        double el = agoq_now_s() - t0;
        if (el > timeout_s) {
            w->abort_all(w->ctx);
            agoq_error("collectives %s: rank %d: %s did not complete within %g s (a peer hung or died; "
                       "AGOQ_COMM_TIMEOUT_S sets the limit); communicators aborted",
                       backend, rank0 + pending, what, timeout_s);
            return -1;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000) sleep_ns *= 2;
    }
}
