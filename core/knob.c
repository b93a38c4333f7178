/* Environment knobs; see knob.h. */
#include "core/knob.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

void agoq_knob_bad(const char *name, const char *value, const char *valid) {
    agoq_die("environment %s=%s: expected %s", name, value, valid);
}

const char *agoq_knob_str(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int agoq_knob_int(const char *name, int def, int min, int max) {
    const char *v = agoq_knob_str(name);
    if (!v) return def;
    char *end = NULL;
    errno = 0;
    const long x = (*v == '-' || (*v >= '0' && *v <= '9')) ? strtol(v, &end, 10) : 0;
    if (end && end != v && *end == '\0' && errno == 0 && x >= min && x <= max) return (int)x;
    char valid[96];
    if (min == 0 && max == 1) snprintf(valid, sizeof valid, "0 or 1");
    else if (max == INT_MAX) snprintf(valid, sizeof valid, "an integer >= %d", min);
    else snprintf(valid, sizeof valid, "an integer in %d..%d", min, max);
    agoq_knob_bad(name, v, valid);
}

int agoq_knob_choice(const char *name, int def, const char *const choices[]) {
    const char *v = agoq_knob_str(name);
    if (!v) return def;
    for (int i = 0; choices[i]; i++)
        if (!strcmp(v, choices[i])) return i;
    char valid[256] = "one of";
    size_t len = strlen(valid);
    for (int i = 0; choices[i] && len < sizeof valid; i++)
        len += (size_t)snprintf(valid + len, sizeof valid - len, "%s %s", i ? "," : "", choices[i]);
    agoq_knob_bad(name, v, valid);
}
