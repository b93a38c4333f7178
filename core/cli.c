/* Strict number parsing; see cli.h. */
#include "core/cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

int cli_parse_size(const char *s, size_t *out_bytes) {
    if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I')) end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return -1;
    if (shift && v > (~0ULL >> shift)) return -1;
    *out_bytes = (size_t)(v << shift);
    return 0;
}

int cli_parse_long(const char *s, long *out) {
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

int cli_parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || isspace((unsigned char)*s) || *s == '-') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end) return -1;
    *out = (uint64_t)v;
    return 0;
}

int cli_parse_double(const char *s, double *out) {
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cli_size_arg(const char *cmd, const char *flag, const char *v, size_t *out) {
    if (cli_parse_size(v, out) == 0) return 0;
    agoq_error("%s: bad size '%s' for %s (expect e.g. 4096, 64K, 1M, 2G)", cmd, v ? v : "", flag);
    return -1;
}

int cli_long_arg(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out) {
    if (cli_parse_long(v, out) == 0 && *out >= lo && *out <= hi) return 0;
    agoq_error("%s: bad value '%s' for %s (expect an integer in [%ld, %ld])", cmd, v ? v : "", flag, lo,
               hi);
    return -1;
}

int cli_double_arg(const char *cmd, const char *flag, const char *v, double *out) {
    if (cli_parse_double(v, out) == 0) return 0;
    agoq_error("%s: bad value '%s' for %s (expect a finite number)", cmd, v ? v : "", flag);
    return -1;
}

const char *cli_fmt_bytes(size_t bytes, char *buf, size_t len) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) { v /= 1024.0; u++; }
    snprintf(buf, len, u ? "%.4g %s" : "%.0f %s", v, unit[u]);
    return buf;
}

size_t cli_sweep_count(const cli_sweep *sw) {
    size_t n = 0;
    for (double b = (double)sw->min_bytes; b <= (double)sw->max_bytes * (1 + 1e-12); b *= sw->factor) {
        n++;
        if (sw->factor <= 1.0) break;
    }
    return n;
}

size_t cli_sweep_bytes(const cli_sweep *sw, size_t i, size_t align) {
    double b = (double)sw->min_bytes * pow(sw->factor, (double)i);
    size_t v = (size_t)(b + 0.5);
    if (v > sw->max_bytes) v = sw->max_bytes;
    v -= v % align;
    return v < align ? align : v;
}

int cli_sweep_check(const char *cmd, const cli_sweep *sw) {
    if (sw->min_bytes == 0) { agoq_error("%s: -b must be > 0", cmd); return -1; }
    if (sw->max_bytes < sw->min_bytes) {
        agoq_error("%s: -e (%zu) is smaller than -b (%zu)", cmd, sw->max_bytes, sw->min_bytes);
        return -1;
    }
    if (!(sw->factor > 1.0) && sw->max_bytes != sw->min_bytes) {
        agoq_error("%s: -f must be > 1 (got %g)", cmd, sw->factor);
        return -1;
    }
    /* counted without looping: a factor of 1.0000001 would mean ~3e8 points (a hang, not a sweep) */
    double points = sw->factor > 1.0 ? floor(log((double)sw->max_bytes / (double)sw->min_bytes) / log(sw->factor)) + 1 : 1;
    if (points > CLI_SWEEP_MAX_POINTS) {
        agoq_error("%s: -b %zu -e %zu -f %.9g is %.0f sizes (at most %d)", cmd, sw->min_bytes, sw->max_bytes, sw->factor,
                   points, CLI_SWEEP_MAX_POINTS);
        return -1;
    }
    return 0;
}
