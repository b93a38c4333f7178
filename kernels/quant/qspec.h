/* Reading quantization choices from experiment JSON and CLI lists, shared by every runner.
 *   {"format": "int8", "block": 256, "scale": "fp32"|"bf16", "rounding": "nearest"|"stochastic"}
 * Unknown names are errors that list the valid ones. */
#ifndef AGOQ_QSPEC_H
#define AGOQ_QSPEC_H
#include <cjson/cJSON.h>

#include "core/jconf.h"
#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses one qconfig object (format required; block defaults to the format's). */
int agoq_qspec_parse(jconf c, const cJSON *obj, agoq_qconfig *out);
/* Array of format names under key ("all" = every format); default when missing: all. */
int agoq_qspec_formats(jconf c, const cJSON *obj, const char *key, int *fmts, size_t *n);
/* A list of names under key, each mapped through by_name into out (at most max). Missing key:
 * the single default dflt, or every value 0..max-1 when dflt < 0. An unknown name is an error
 * naming file, key, index and the valid names. */
int agoq_jconf_names(jconf c, const cJSON *obj, const char *key, int (*by_name)(const char *), int *out, size_t *n,
                     size_t max, int dflt, const char *valid);
int agoq_scale_by_name(const char *s);    /* -1 when unknown */
int agoq_rounding_by_name(const char *s); /* -1 when unknown */
const char *agoq_scale_name(agoq_scale_type s);
const char *agoq_rounding_name(agoq_rounding r);
/* "a,b,c" -> JSON array of strings / numbers (for CLI flags); NULL on a bad number. */
cJSON *agoq_csv_strings(const char *csv);
cJSON *agoq_csv_numbers(const char *csv);

#ifdef __cplusplus
}
#endif
#endif
