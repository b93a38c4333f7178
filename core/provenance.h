/* What every results file records about where it came from. */
#ifndef AGOQ_PROVENANCE_H
#define AGOQ_PROVENANCE_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
const char *agoq_git_commit(void); /* build-time commit (short hash, "-dirty" if modified) */
void agoq_utc_now(char *buf, size_t len); /* ISO 8601 UTC, e.g. 2026-12-02T13:30:00Z */
void agoq_hostname(char *buf, size_t len);
#ifdef __cplusplus
}
#endif
#endif
