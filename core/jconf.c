/* Checked experiment-JSON access; see jconf.h. */
#include "core/jconf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

static void keyname(jconf c, const char *key, char *buf, size_t len) {
    if (c.prefix && *c.prefix) snprintf(buf, len, "%s.%s", c.prefix, key);
    else snprintf(buf, len, "%s", key);
}

static int missing(jconf c, const char *key) {
    char k[256];
    keyname(c, key, k, sizeof k);
    agoq_error("%s: missing required key '%s'", c.file, k);
    return -1;
}

static int bad(jconf c, const char *key, const char *what) {
    char k[256];
    keyname(c, key, k, sizeof k);
    agoq_error("%s: key '%s': expected %s", c.file, k, what);
    return -1;
}

jconf jconf_child(jconf c, const char *key, char *buf, size_t len) {
    keyname(c, key, buf, len);
    jconf out = {c.file, buf};
    return out;
}

int jconf_long(jconf c, const cJSON *obj, const char *key, int required, long lo, long hi, long dflt,
               long *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return missing(c, key);
        *out = dflt;
        return 0;
    }
    char what[128];
    snprintf(what, sizeof what, "an integer in [%ld, %ld]", lo, hi);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi)
        return bad(c, key, what);
    *out = (long)v->valuedouble;
    return 0;
}

int jconf_num(jconf c, const cJSON *obj, const char *key, int required, double lo, double hi, double dflt,
              double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return missing(c, key);
        *out = dflt;
        return 0;
    }
    char what[128];
    snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) return bad(c, key, what);
    *out = v->valuedouble;
    return 0;
}

int jconf_bool(jconf c, const cJSON *obj, const char *key, int required, int dflt, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return missing(c, key);
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsBool(v)) return bad(c, key, "true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

int jconf_str(jconf c, const cJSON *obj, const char *key, int required, const char *dflt,
              const char **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) return missing(c, key);
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsString(v)) return bad(c, key, "a string");
    *out = v->valuestring;
    return 0;
}

int jconf_strs(jconf c, const cJSON *obj, const char *key, int required, const char ***out, size_t *n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    *n = 0;
    if (!v) return required ? missing(c, key) : 0;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) return bad(c, key, "a non-empty array of strings");
    size_t len = (size_t)cJSON_GetArraySize(v);
    const char **a = calloc(len, sizeof *a);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e)) {
            free(a);
            return bad(c, key, "a non-empty array of strings");
        }
        a[i++] = e->valuestring;
    }
    *out = a;
    *n = len;
    return 0;
}

int jconf_nums(jconf c, const cJSON *obj, const char *key, int required, double lo, double hi,
               double **out, size_t *n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    *n = 0;
    if (!v) return required ? missing(c, key) : 0;
    char what[128];
    snprintf(what, sizeof what, "a non-empty array of numbers in [%g, %g]", lo, hi);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) return bad(c, key, what);
    size_t len = (size_t)cJSON_GetArraySize(v);
    double *a = calloc(len, sizeof *a);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= lo && e->valuedouble <= hi)) {
            free(a);
            return bad(c, key, what);
        }
        a[i++] = e->valuedouble;
    }
    *out = a;
    *n = len;
    return 0;
}

int jconf_obj(jconf c, const cJSON *obj, const char *key, int required, const cJSON **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!v) return required ? missing(c, key) : 0;
    if (!cJSON_IsObject(v)) return bad(c, key, "an object");
    *out = v;
    return 0;
}

int jconf_only(jconf c, const cJSON *obj, const char *const *allowed) { return jconf_only2(c, obj, allowed, NULL); }

int jconf_only2(jconf c, const cJSON *obj, const char *const *allowed, const char *const *more) {
    const cJSON *e;
    cJSON_ArrayForEach(e, obj) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, e->string) == 0) ok = 1;
        for (const char *const *a = more; a && *a; a++)
            if (strcmp(*a, e->string) == 0) ok = 1;
        if (!ok) {
            char k[256];
            keyname(c, e->string, k, sizeof k);
            agoq_error("%s: unknown key '%s'", c.file, k);
            return -1;
        }
    }
    return 0;
}

int jconf_sweep(jconf c, const cJSON *obj, double lo, double hi, cli_sweep dflt, cli_sweep *out) {
    double mn, mx, f;
    if (jconf_num(c, obj, "min_bytes", 0, lo, hi, (double)dflt.min_bytes, &mn) ||
        jconf_num(c, obj, "max_bytes", 0, lo, hi, (double)dflt.max_bytes, &mx) ||
        jconf_num(c, obj, "factor", 0, 1, 1e6, dflt.factor, &f))
        return -1;
    *out = (cli_sweep){(size_t)mn, (size_t)mx, f};
    return 0;
}
