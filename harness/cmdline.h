/* Flags every measuring subcommand shares, and the path from flags to an experiment run:
 *   --backend cpu|cuda|auto   -o/--out FILE   --seed N   --check   -q/--quiet   -h/--help
 *   -b MIN -e MAX -f FACTOR   (nccl-tests letters: sizes in bytes, K/M/G suffixes)
 *   -n ITERS -w WARMUP
 * A subcommand lists AGOQ_COMMON_LONGOPTS in its getopt_long table, passes unknown-to-it option
 * characters to agoq_common_opt(), turns its own flags into a config object and calls
 * agoq_cmd_execute(). */
#ifndef AGOQ_CMDLINE_H
#define AGOQ_CMDLINE_H
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdint.h>

#include "harness/cli.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { AGOQ_OPT_BACKEND = 1000, AGOQ_OPT_SEED, AGOQ_OPT_CHECK, AGOQ_OPT_FIRST_PRIVATE = 1100 };

#define AGOQ_COMMON_SHORTOPTS "b:e:f:n:w:o:qh"
#define AGOQ_COMMON_LONGOPTS                                                           \
    {"backend", required_argument, 0, AGOQ_OPT_BACKEND},                               \
    {"seed", required_argument, 0, AGOQ_OPT_SEED},                                     \
    {"check", no_argument, 0, AGOQ_OPT_CHECK},                                         \
    {"out", required_argument, 0, 'o'}, {"quiet", no_argument, 0, 'q'},                \
    {"help", no_argument, 0, 'h'}, {"minbytes", required_argument, 0, 'b'},            \
    {"maxbytes", required_argument, 0, 'e'}, {"stepfactor", required_argument, 0, 'f'}, \
    {"iters", required_argument, 0, 'n'}, {"warmup_iters", required_argument, 0, 'w'}

#define AGOQ_COMMON_HELP                                                               \
    "common options:\n"                                                                \
    "  --backend cpu|cuda|auto  where to run (default auto: cuda if a GPU is usable)\n" \
    "  -o, --out FILE           results JSON (written atomically; default results/<cmd>.json)\n" \
    "  --seed N                 seed of every random input (default 1)\n"             \
    "  --check                  validate the configuration only: run nothing, write nothing\n" \
    "  -b, -e SIZE              smallest / largest size in bytes (K, M, G suffixes)\n" \
    "  -f FACTOR                size step factor (default 2)\n"                       \
    "  -n N, -w N               timed iterations / warm-up iterations\n"              \
    "  -q, --quiet              no progress on stderr\n"                               \
    "  -h, --help               this text\n"

typedef struct {
    const char *cmd;     /* "quant" */
    const char *backend; /* "auto" */
    const char *out;     /* NULL: results/<cmd>.json */
    uint64_t seed;
    int quiet, help;
    int check;           /* --check: validate only */
    cJSON *sweep;        /* keys set by -b -e -f -n -w (min_bytes, max_bytes, factor, iters, warmup) */
} agoq_common_opts;

void agoq_common_init(agoq_common_opts *o, const char *cmd);
/* Handles one shared option; returns 1 if handled, 0 if not a shared option, -1 on a bad value. */
int agoq_common_opt(agoq_common_opts *o, int c, const char *arg);
/* Copies the -b/-e/-f/-n/-w values into config (they override). */
void agoq_common_apply_sweep(const agoq_common_opts *o, cJSON *config);
/* Resolves the backend, runs `kind` with config (takes ownership), writes the results. 0 or 1. */
int agoq_cmd_execute(agoq_common_opts *o, const char *kind, cJSON *config, const char *const *tsv,
                     size_t ntsv, int argc, char **argv);
/* For `default:` in a getopt switch: prints "agoq CMD: try --help" and returns 2. */
int agoq_cmd_usage_error(const char *cmd);

#ifdef __cplusplus
}
#endif
#endif
