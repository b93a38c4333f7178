/* Quantization choices from JSON; see qspec.h. */
#include "kernels/quant/qspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/common.h"

int agoq_scale_by_name(const char *s) {
    if (s && strcmp(s, "fp32") == 0) return AGOQ_SCALE_FP32;
    if (s && strcmp(s, "bf16") == 0) return AGOQ_SCALE_BF16;
    return -1;
}
int agoq_rounding_by_name(const char *s) {
    if (s && strcmp(s, "nearest") == 0) return AGOQ_ROUND_NEAREST;
    if (s && strcmp(s, "stochastic") == 0) return AGOQ_ROUND_STOCHASTIC;
    return -1;
}
const char *agoq_scale_name(agoq_scale_type s) { return s == AGOQ_SCALE_BF16 ? "bf16" : "fp32"; }
const char *agoq_rounding_name(agoq_rounding r) { return r == AGOQ_ROUND_STOCHASTIC ? "stochastic" : "nearest"; }

static int bad_name(jconf c, const char *key, const char *v, const char *valid) {
    agoq_error("%s: key '%s%s%s': unknown value '%s' (valid: %s)", c.file, c.prefix && *c.prefix ? c.prefix : "",
               c.prefix && *c.prefix ? "." : "", key, v, valid);
    return -1;
}

int agoq_jconf_names(jconf c, const cJSON *obj, const char *key, int (*by_name)(const char *), int *out, size_t *n,
                     size_t max, int dflt, const char *valid) {
    const char **names;
    size_t k;
    if (jconf_strs(c, obj, key, 0, &names, &k)) return -1;
    *n = 0;
    if (k == 0) {
        if (dflt >= 0) out[(*n)++] = dflt;
        else
            for (size_t i = 0; i < max; i++) out[(*n)++] = (int)i;
    }
    for (size_t i = 0; i < k; i++) {
        int v = by_name(names[i]);
        if (v < 0 || *n >= max) {
            agoq_error("%s: key '%s.%s[%zu]': %s value '%s' (valid: %s)", c.file, c.prefix, key, i,
                       v < 0 ? "unknown" : "one too many", names[i], valid);
            free(names);
            return -1;
        }
        out[(*n)++] = v;
    }
    free(names);
    return 0;
}

int agoq_qspec_make(agoq_format f, long block, agoq_qconfig *out) {
    *out = agoq_qconfig_default(f);
    if (block == 0) return 0;
    if (block < 8 || block > 65536 || block % 8) return -1;
    out->block = (int)block;
    return 0;
}

int agoq_qspec_from_string(const char *s, agoq_qconfig *out) {
    char name[64];
    if (!s) return -1;
    const char *slash = strchr(s, '/');
    size_t len = slash ? (size_t)(slash - s) : strlen(s);
    if (len == 0 || len >= sizeof name) return -1;
    memcpy(name, s, len);
    name[len] = '\0';
    int f = agoq_format_by_name(name);
    if (f < 0) return -1;
    long b = 0;
    if (slash) {
        char *end;
        b = strtol(slash + 1, &end, 10);
        if (*end || end == slash + 1 || b == 0) return -1;
    }
    return agoq_qspec_make((agoq_format)f, b, out);
}

const char *agoq_qspec_label(const agoq_qconfig *q, char *buf, size_t len) {
    snprintf(buf, len, "%s/%d", agoq_formats[q->fmt].name, q->block);
    return buf;
}

int agoq_qspec_parse(jconf c, const cJSON *obj, agoq_qconfig *out) {
    static const char *const keys[] = {"format", "block", "scale", "rounding", NULL};
    const char *fmt, *scale, *rnd;
    if (!cJSON_IsObject(obj)) {
        agoq_error("%s: key '%s': expected an object like {\"format\": \"int8\"}", c.file, c.prefix);
        return -1;
    }
    if (jconf_only(c, obj, keys) || jconf_str(c, obj, "format", 1, NULL, &fmt)) return -1;
    int f = agoq_format_by_name(fmt);
    if (f < 0) return bad_name(c, "format", fmt, agoq_format_names());
    long block;
    if (jconf_long(c, obj, "block", 0, 8, 65536, agoq_formats[f].default_block, &block) ||
        jconf_str(c, obj, "scale", 0, "fp32", &scale) || jconf_str(c, obj, "rounding", 0, "nearest", &rnd))
        return -1;
    if (agoq_qspec_make((agoq_format)f, block, out)) {
        agoq_error("%s: key '%s.block': %ld is not a multiple of 8", c.file, c.prefix, block);
        return -1;
    }
    int s = agoq_scale_by_name(scale), r = agoq_rounding_by_name(rnd);
    if (s < 0) return bad_name(c, "scale", scale, "fp32, bf16");
    if (r < 0) return bad_name(c, "rounding", rnd, "nearest, stochastic");
    out->scale = (agoq_scale_type)s;
    out->rounding = (agoq_rounding)r;
    return 0;
}

int agoq_qspec_formats(jconf c, const cJSON *obj, const char *key, int *fmts, size_t *n) {
    const char **names;
    size_t k;
    if (jconf_strs(c, obj, key, 0, &names, &k)) return -1;
    *n = 0;
    if (k == 0 || (k == 1 && strcmp(names[0], "all") == 0)) {
        for (int f = 0; f < AGOQ_FMT_COUNT; f++) fmts[(*n)++] = f;
        free(names);
        return 0;
    }
    for (size_t i = 0; i < k; i++) {
        int f = agoq_format_by_name(names[i]);
        if (f < 0) {
            bad_name(c, key, names[i], agoq_format_names());
            free(names);
            return -1;
        }
        fmts[(*n)++] = f;
    }
    free(names);
    return 0;
}

int agoq_qgrid_parse(jconf c, const cJSON *cfg, const agoq_format *dflt, size_t ndflt, agoq_qgrid *g) {
    memset(g, 0, sizeof *g);
    if (dflt && !cJSON_GetObjectItemCaseSensitive(cfg, "formats")) {
        for (size_t i = 0; i < ndflt && i < AGOQ_FMT_COUNT; i++) g->fmts[g->nfmt++] = dflt[i];
    } else if (agoq_qspec_formats(c, cfg, "formats", g->fmts, &g->nfmt)) {
        return -1;
    }
    if (jconf_nums(c, cfg, "blocks", 0, 8, 65536, &g->blocks, &g->nblocks) ||
        agoq_jconf_names(c, cfg, "scales", agoq_scale_by_name, g->scales, &g->nscale, 2, AGOQ_SCALE_FP32, "fp32, bf16") ||
        agoq_jconf_names(c, cfg, "roundings", agoq_rounding_by_name, g->rounds, &g->nround, 2, AGOQ_ROUND_NEAREST,
                         "nearest, stochastic"))
        return -1;
    for (size_t i = 0; i < g->nblocks; i++)
        if ((long)g->blocks[i] % 8 || g->blocks[i] != (double)(long)g->blocks[i]) {
            agoq_error("%s: key '%s.blocks[%zu]': %g is not a multiple of 8", c.file, c.prefix, i, g->blocks[i]);
            return -1;
        }
    return 0;
}

void agoq_qgrid_free(agoq_qgrid *g) {
    free(g->blocks);
    g->blocks = NULL;
}

size_t agoq_qgrid_count(const agoq_qgrid *g, int all_formats) {
    size_t nf = all_formats ? g->nfmt : (g->nfmt ? 1 : 0);
    return nf * (g->nblocks ? g->nblocks : 1) * g->nscale * g->nround;
}

agoq_qconfig agoq_qgrid_at(const agoq_qgrid *g, size_t i, uint64_t seed) {
    size_t ri = i % g->nround, si = i / g->nround % g->nscale, nb = g->nblocks ? g->nblocks : 1;
    size_t bi = i / (g->nround * g->nscale) % nb, fi = i / (g->nround * g->nscale * nb);
    agoq_qconfig q = agoq_qconfig_default((agoq_format)g->fmts[fi]);
    if (g->nblocks) q.block = (int)g->blocks[bi];
    q.scale = (agoq_scale_type)g->scales[si];
    q.rounding = (agoq_rounding)g->rounds[ri];
    q.seed = seed;
    return q;
}

cJSON *agoq_csv_strings(const char *csv) {
    cJSON *a = cJSON_CreateArray();
    char *dup = strdup(csv), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
        cJSON_AddItemToArray(a, cJSON_CreateString(t));
    free(dup);
    return a;
}

cJSON *agoq_csv_numbers(const char *csv) {
    cJSON *a = cJSON_CreateArray();
    char *dup = strdup(csv), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t v;
        if (cli_parse_size(t, &v) != 0) {
            cJSON_Delete(a);
            free(dup);
            return NULL;
        }
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v));
    }
    free(dup);
    return a;
}
