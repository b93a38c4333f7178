/* The one results document every subcommand writes (schema in README.md, "Results JSON"):
 *   { "schema": "agoq-results/1",
 *     "meta":    { tool, version, commit, date_utc, host, backend, source: measured|simulated,
 *                  command, gpu {name, driver, cuda_runtime, nccl, sm_clock_mhz, ...} },
 *     "config":  the experiment as run (the JSON file's object or the CLI flags),
 *     "records": [ one object per measured point ] }
 * Built in memory with cJSON and written atomically (temp file + fsync + rename), so an
 * interrupted or failed run never leaves a truncated file, and the JSON and TSV of one run are
 * published together or not at all (results_publish). Non-finite numbers are written as
 * null by cJSON; results_num() records them as null explicitly and that is what readers get.
 * A `#`-headed TSV with chosen columns can be written beside it for gnuplot. */
#ifndef AGOQ_RESULTS_H
#define AGOQ_RESULTS_H
#include <cjson/cJSON.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGOQ_RESULTS_SCHEMA "agoq-results/1"

typedef struct {
    cJSON *root, *meta, *config, *records;
} agoq_results;

/* source: "measured" or "simulated"; argv is echoed into meta.command. */
agoq_results *results_new(const char *tool, const char *backend, const char *source, int argc,
                          char **argv);
void results_free(agoq_results *r);
/* Replaces config; takes ownership of `config`. */
void results_set_config(agoq_results *r, cJSON *config);
/* Sets meta.source: "measured" | "simulated". */
void results_set_source(agoq_results *r, const char *source);
/* Appends and returns a new empty record object owned by r. */
cJSON *results_add_record(agoq_results *r);
/* Adds a number, writing null for NaN/Inf (cJSON's own behaviour, made explicit). */
void results_num(cJSON *obj, const char *key, double v);
/* Reading records back (the lenient lookups of checks and calibration, not of experiment files:
 * those go through core/jconf.h): the number at key, NAN when it is missing or not a number (so
 * a null written by results_num reads back as NAN); the string at key, "" when missing or not a
 * string. */
double results_get_num(const cJSON *obj, const char *key);
const char *results_get_str(const cJSON *obj, const char *key);
/* Writes every field of an error-stats record (core/metrics.h): mse, rmse, nmse, snr_db,
 * max_abs, max_rel, cosine, norm_l2, nonfinite. One definition for every runner. */
struct agoq_error_stats_s;
void results_error_stats(cJSON *obj, const struct agoq_error_stats_s *e);
/* Attaches the GPU description (meta.gpu); takes ownership. */
void results_set_gpu(agoq_results *r, cJSON *gpu);
/* Writes r to path atomically. Creates missing parent directories. Returns 0 or -1. */
int results_write(const agoq_results *r, const char *path);
/* Writes records as a TSV: a "# col col ..." header then one row per record; missing or
 * non-numeric values as "nan"; string values as-is. Atomic like results_write. */
int results_write_tsv(const agoq_results *r, const char *path, const char *const *cols, size_t ncols);
/* Publishes one run: the JSON and (tsv_path non-NULL) the TSV are written to temporaries, then
 * both renamed, under a lock on the directory and with SIGINT/SIGTERM/SIGHUP held, so the pair
 * in place is always from one run and no temporary is left; on any failure both temporaries are
 * removed and nothing new is in place. Returns 0 or -1 (one line printed). */
int results_publish(const agoq_results *r, const char *json_path, const char *tsv_path, const char *const *cols,
                    size_t ncols);
/* Before a run: path names a file (not empty, not "dir/", not an existing directory, FIFO or
 * device: a rename would replace it), no name is too long, and a file can be created in the
 * deepest directory of it that exists (probed, then removed; nothing is created). Returns 0
 * or -1 with one line "path: cannot write ...". */
int agoq_check_writable(const char *path);
/* Atomic write of an arbitrary text blob (used by both writers). */
int agoq_write_file_atomic(const char *path, const char *data, size_t len);
/* Reads and parses a JSON file; on error prints "file: reason" and returns NULL. */
cJSON *agoq_read_json(const char *path);

#ifdef __cplusplus
}
#endif
#endif
