/* Build and run provenance for results files; see provenance.h. */
#include "core/provenance.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#ifndef AGOQ_GIT_COMMIT
#define AGOQ_GIT_COMMIT "unknown"
#endif

const char *agoq_git_commit(void) { return AGOQ_GIT_COMMIT; }

void agoq_utc_now(char *buf, size_t len) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void agoq_hostname(char *buf, size_t len) {
    if (gethostname(buf, len - 1) != 0) snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
}
