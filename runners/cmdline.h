/* Runner descriptors and the one command-line parser every `agoq KIND` subcommand goes through.
 *
 * A runner (runners/<kind>.c) is one agoq_runner: its experiment kind, the config keys it reads,
 * its flags table, its runner function and the TSV columns of a command-line run. The flags
 * table is the single source of both the parser and `agoq KIND --help`, so help cannot drift
 * from what is parsed: each flag names the config key it sets and how its value is read.
 *
 * Flags every subcommand shares (the common table, agoq_common_flags):
 *   --backend cpu|cuda|auto   -o/--out FILE   --seed N   --check   -q/--quiet   -h/--help
 *   -b MIN -e MAX -f FACTOR   (nccl-tests letters: sizes in bytes, K/M/G suffixes)
 *   -n ITERS -w WARMUP
 * A runner's flag with the same short letter takes that letter over (agoq step: -n is --reps).
 *
 * Results path rule (agoq_results_default_out): a run given no "out" (experiment file key or
 * -o) writes results/<machine>/<name>.json (+ .tsv), name = the experiment file's base name or
 * the subcommand; machine = "cpu" for runs on the host (backend cpu, or a runner whose results
 * never come from the GPU: quant, memory, bitalloc, simulate), else the GPU's short name
 * ("NVIDIA H200" -> "h200"). */
#ifndef AGOQ_CMDLINE_H
#define AGOQ_CMDLINE_H
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cli.h"
#include "core/run.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { AGOQ_OPT_BACKEND = 1000, AGOQ_OPT_SEED, AGOQ_OPT_CHECK, AGOQ_OPT_FIRST_PRIVATE = 1100 };
#define AGOQ_COMMON_SHORTOPTS "b:e:f:n:w:o:qh"

typedef enum {
    AGOQ_FLAG_STR,  /* config[key] = the argument */
    AGOQ_FLAG_STRS, /* "a,b" -> ["a", "b"] */
    AGOQ_FLAG_NUMS, /* "1,2,4K" -> [1, 2, 4096] (K/M/G suffixes); bad: "... for --NAME (expect e.g. HINT)" */
    AGOQ_FLAG_LONG, /* an integer in [lo, hi] */
    AGOQ_FLAG_NUM,  /* a finite number */
    AGOQ_FLAG_SET,  /* no argument: config[key] = the JSON text `value` ("true", "\"greedy\"", ...) */
    AGOQ_FLAG_CALL, /* parse() reads it */
} agoq_flag_kind;

typedef struct agoq_flag agoq_flag;
struct agoq_flag {
    const char *name; /* long name without "--"; NULL: a short letter only */
    int short_opt;    /* 0, or its letter ('g'); a common letter (n, w, b, ...) is taken over */
    agoq_flag_kind kind;
    const char *key;  /* config key it sets; "impl.flash_attn" sets a member of object "impl" */
    const char *arg;  /* --help: the argument's name ("a,b,...", "N"); NULL for none */
    const char *help; /* --help: what it does (may hold '\n' for more lines); NULL: not listed */
    long lo, hi;      /* AGOQ_FLAG_LONG: the range */
    const char *value; /* AGOQ_FLAG_SET: the JSON set; AGOQ_FLAG_NUMS: the "expect e.g." hint */
    const char *(*choices)(void); /* --help appends ": " and these names */
    int (*parse)(cJSON *cfg, const agoq_flag *f, const char *arg, const char *cmd); /* CALL: 0 or -1 */
};
/* A long-only --NAME taking one finite number into config key KEY (AGOQ_FLAG_NUM). */
#define AGOQ_NUM_FLAG(name_, key_, arg_, what_) \
    {.name = name_, .short_opt = 0, .kind = AGOQ_FLAG_NUM, .key = key_, .arg = arg_, .help = what_}

typedef struct {
    const char *cmd;     /* "quant" */
    const char *backend; /* "auto" */
    const char *out;     /* NULL: the results path rule */
    uint64_t seed;
    int quiet, help;
    int check;           /* --check: validate the config only (agoq_run_ctx.check_only) */
    cJSON *sweep;        /* keys set by -b -e -f -n -w (min_bytes, max_bytes, factor, iters, warmup) */
} agoq_common_opts;

struct agoq_runner;
/* One parsed command line, handed to a runner's finish/execute hooks. */
typedef struct {
    const struct agoq_runner *r;
    agoq_common_opts o;
    cJSON *cfg;                /* the config object the flags built */
    const char *const *tsv;    /* OUT.tsv columns (default r->tsv) */
    size_t ntsv;
    int argc;
    char **argv;
} agoq_cmd;

typedef struct agoq_runner {
    const char *kind;          /* subcommand and experiment kind: "quant" */
    const char *what;          /* one line for `agoq help`, `agoq list`, `agoq run --help` */
    const char *usage;         /* after "usage: agoq KIND ": "[options]" */
    const char *about;         /* --help paragraph under the usage line */
    const char *const *keys;   /* config keys the runner reads (NULL-terminated; --help lists them) */
    const char *const *more_keys; /* more of them (shared lists: the memory layout keys, ...) */
    const agoq_flag *flags;    /* its flags, ended by an entry with neither name nor short_opt */
    const char *notes;         /* --help lines after the flags ("defaults: -b 1M ...") */
    agoq_experiment_fn run;
    const char *const *tsv;    /* OUT.tsv columns of a command-line run */
    size_t ntsv;
    /* Record fields only some configurations write (a measured step's timing, "fits" under a
     * budget; NULL-terminated, may be NULL): an experiment file's "tsv" may name them, or one of
     * tsv[], though no record of this run has it (the column is then empty); any other column
     * no record has is an error (agoq_experiment_execute). */
    const char *const *optional_fields;
    const char *backend;       /* the subcommand's default --backend (NULL: auto) */
    int host_only;             /* results never come from the GPU: machine "cpu" in the path rule */
    /* After parsing (help and unexpected arguments handled): adjust cmd->cfg / cmd->tsv and
     * return -1 to run, or finish the command and return its exit status. NULL: run. */
    int (*finish)(agoq_cmd *cmd);
    /* Runs the command (NULL: agoq_cmd_execute). Returns the exit status. */
    int (*execute)(agoq_cmd *cmd);
} agoq_runner;

/* `agoq KIND ...`: parses argv by r's flags table, prints --help from it, runs. 0, 1 or 2. */
int agoq_runner_main(const agoq_runner *r, int argc, char **argv);
/* Prints r's --help (usage, about, flags, notes, config keys, common options). */
void agoq_runner_help(const agoq_runner *r);
/* Resolves the backend, runs cmd's config (consumed), writes the results. 0 or 1. */
int agoq_cmd_execute(agoq_cmd *cmd);
/* The results path rule (see the top of this file): "results/<machine>/<name>.json" into buf. */
const char *agoq_results_default_out(const agoq_runner *r, agoq_backend b, const char *name, char *buf, size_t len);

void agoq_common_init(agoq_common_opts *o, const char *cmd);
/* Handles one shared option; returns 1 if handled, 0 if not a shared option, -1 on a bad value. */
int agoq_common_opt(agoq_common_opts *o, int c, const char *arg);
/* Copies the -b/-e/-f/-n/-w values into config (they override). */
void agoq_common_apply_sweep(const agoq_common_opts *o, cJSON *config);
/* The shared flags as getopt_long entries (for `agoq run`): count entries, no terminator. */
const struct option *agoq_common_longopts(size_t *count);
/* For `default:` in a getopt switch: prints "agoq CMD: try --help" and returns 2. */
int agoq_cmd_usage_error(const char *cmd);

#ifdef __cplusplus
}
#endif
#endif
