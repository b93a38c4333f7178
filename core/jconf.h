/* Typed, checked access to experiment JSON. Every failure prints one line naming the file and
 * the full key path ("experiments/x.json: key 'sweep.bits[2]': expected an integer in [2, 8]")
 * and returns -1, so a bad experiment file stops the run before anything is measured or written. */
#ifndef AGOQ_JCONF_H
#define AGOQ_JCONF_H
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/cli.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *file;   /* file name for messages */
    const char *prefix; /* key path of the object being read, "" at top level */
} jconf;

/* Missing optional keys leave *out at the given default. Unknown keys are not errors here;
 * use jconf_only() to reject typos. */
int jconf_long(jconf c, const cJSON *obj, const char *key, int required, long lo, long hi, long dflt,
               long *out);
int jconf_num(jconf c, const cJSON *obj, const char *key, int required, double lo, double hi, double dflt,
              double *out);
int jconf_bool(jconf c, const cJSON *obj, const char *key, int required, int dflt, int *out);
int jconf_str(jconf c, const cJSON *obj, const char *key, int required, const char *dflt,
              const char **out);
/* Array of strings / numbers: *out points into a malloc'd array (caller frees), *n its length.
 * A missing optional key gives n = 0. */
int jconf_strs(jconf c, const cJSON *obj, const char *key, int required, const char ***out, size_t *n);
/* The size sweep keys of every sweeping runner (quant, kernels, collectives, simulate comm):
 * min_bytes and max_bytes in [lo, hi], factor in [1, 1e6], defaults from dflt. Reads them only;
 * the caller checks the range with cli_sweep_check (core/cli.h) and walks the points with
 * cli_sweep_count / cli_sweep_bytes. */
int jconf_sweep(jconf c, const cJSON *obj, double lo, double hi, cli_sweep dflt, cli_sweep *out);
int jconf_nums(jconf c, const cJSON *obj, const char *key, int required, double lo, double hi,
               double **out, size_t *n);
/* Object member (required or NULL result when optional and missing). */
int jconf_obj(jconf c, const cJSON *obj, const char *key, int required, const cJSON **out);
/* Reject keys not in the NULL-terminated allow list (catches typos in experiment files). */
int jconf_only(jconf c, const cJSON *obj, const char *const *allowed);
/* The same with a second list (NULL: none), e.g. a runner's keys and the shared agoq_layout_keys. */
int jconf_only2(jconf c, const cJSON *obj, const char *const *allowed, const char *const *more);
/* Child context for nested objects: prefix "a.b" */
jconf jconf_child(jconf c, const char *key, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
