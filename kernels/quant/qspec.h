/* Reading quantization choices from experiment JSON and CLI lists, shared by every runner.
 *   {"format": "int8", "block": 256, "scale": "fp32"|"bf16", "rounding": "nearest"|"stochastic"}
 * Unknown names are errors that list the valid ones. */
#ifndef AGOQ_QSPEC_H
#define AGOQ_QSPEC_H
#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/jconf.h"
#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one format/block parser: every "format[/block]" string (memory model and step stores,
 * simulator and bitalloc candidates), every {"format", "block", ...} object and the trainer's
 * grad_format/grad_block go through agoq_qspec_make. Block: 8..65536, a multiple of 8.
 * agoq_qspec_make: format f with block (0: the format's own), fp32 scale, nearest rounding;
 * -1 when the block is out of range or not a multiple of 8. */
int agoq_qspec_make(agoq_format f, long block, agoq_qconfig *out);
/* "format" or "format/block" -> qconfig; -1 (nothing printed: the caller names its key) when
 * the name is unknown or the block malformed. */
int agoq_qspec_from_string(const char *s, agoq_qconfig *out);
/* "format/block" of q into buf (the inverse of agoq_qspec_from_string). */
const char *agoq_qspec_label(const agoq_qconfig *q, char *buf, size_t len);
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
/* The format grid every format-sweeping runner walks (quant, kernels): formats x blocks x scales
 * x roundings from config keys "formats" (names or "all"; default dflt[0..ndflt) or, when dflt
 * is NULL, every format), "blocks" (multiples of 8 in 8..65536; none: each format's own),
 * "scales" (default fp32) and "roundings" (default nearest). */
typedef struct {
    int fmts[AGOQ_FMT_COUNT];
    size_t nfmt;
    double *blocks; /* empty: each format's default block */
    size_t nblocks;
    int scales[2], rounds[2];
    size_t nscale, nround;
} agoq_qgrid;
int agoq_qgrid_parse(jconf c, const cJSON *cfg, const agoq_format *dflt, size_t ndflt, agoq_qgrid *g);
void agoq_qgrid_free(agoq_qgrid *g);
/* Points of the grid, format-major (blocks, scales, roundings vary fastest last); with
 * all_formats 0 only the first format's points (for cases that use no format). */
size_t agoq_qgrid_count(const agoq_qgrid *g, int all_formats);
/* Point i (< agoq_qgrid_count) as a qconfig with the given stochastic-rounding seed. */
agoq_qconfig agoq_qgrid_at(const agoq_qgrid *g, size_t i, uint64_t seed);
/* "a,b,c" -> JSON array of strings / numbers (for CLI flags); NULL on a bad number. */
cJSON *agoq_csv_strings(const char *csv);
cJSON *agoq_csv_numbers(const char *csv);

#ifdef __cplusplus
}
#endif
#endif
