/* Strict command-line number parsing shared by every subcommand.
 * Each parser accepts the whole string or fails: "12x", "", " 3" and overflow are errors.
 * Sizes take binary suffixes K, M, G, T (case-insensitive, optional trailing B/iB). */
#ifndef AGOQ_CLI_H
#define AGOQ_CLI_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int cli_parse_size(const char *s, size_t *out_bytes); /* "64M" -> 67108864 */
int cli_parse_long(const char *s, long *out);
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);
/* Parse option value for flag `flag` or print "agoq <cmd>: bad value 'v' for -x" and return -1. */
int cli_size_arg(const char *cmd, const char *flag, const char *v, size_t *out);
int cli_long_arg(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out);
int cli_double_arg(const char *cmd, const char *flag, const char *v, double *out);
/* "1.5 MiB"-style label into buf (for tables). */
const char *cli_fmt_bytes(size_t bytes, char *buf, size_t len);

/* The nccl-tests-like size sweep shared by quant/kernels/collectives: -b min -e max -f factor. */
typedef struct {
    size_t min_bytes, max_bytes; /* inclusive range of logical (fp32 input) bytes */
    double factor;               /* multiplicative step, > 1 */
} cli_sweep;
/* Number of points and the i-th size (rounded down to a multiple of `align` bytes, >= align). */
size_t cli_sweep_count(const cli_sweep *sw);
size_t cli_sweep_bytes(const cli_sweep *sw, size_t i, size_t align);
/* min > 0, max >= min, factor > 1 (unless one size), at most CLI_SWEEP_MAX_POINTS sizes. */
#define CLI_SWEEP_MAX_POINTS 4096
int cli_sweep_check(const char *cmd, const cli_sweep *sw);

#ifdef __cplusplus
}
#endif
#endif
