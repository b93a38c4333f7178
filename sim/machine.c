/* Machine files and their calibration sources; see machine.h. */
#include "sim/machine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "core/results.h"
#include "sim/step_calib.h"

const char *const agoq_calib_keys[AGOQ_CAL_COUNT] = {
    [AGOQ_CAL_GPU_MEM_GIB] = "gpu_memory_GiB",
    [AGOQ_CAL_GEMM_BF16_TFLOPS] = "gemm_bf16_tflops",
    [AGOQ_CAL_GEMM_FP8_TFLOPS] = "gemm_fp8_tflops",
    [AGOQ_CAL_ATTN_TFLOPS] = "attention_tflops",
    [AGOQ_CAL_KERNEL_GBPS] = "kernel_GBps",
    [AGOQ_CAL_INTRA_GBPS] = "intra_GBps",
    [AGOQ_CAL_INTRA_LAT_US] = "intra_latency_us",
    [AGOQ_CAL_INTER_GBPS] = "inter_GBps_per_node",
    [AGOQ_CAL_INTER_LAT_US] = "inter_latency_us",
    [AGOQ_CAL_ELEM_NS] = "elementwise_ns",
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 1 when every string member of `where` equals the record's field of the same name. */
static int record_matches(const cJSON *rec, const cJSON *where) {
    const cJSON *w;
    cJSON_ArrayForEach(w, where) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, w->string);
        if (cJSON_IsString(w)) {
            if (!cJSON_IsString(v) || strcmp(v->valuestring, w->valuestring) != 0) return 0;
        } else if (cJSON_IsNumber(w)) {
            if (!cJSON_IsNumber(v) || v->valuedouble != w->valuedouble) return 0;
        }
    }
    return 1;
}

/* Reads the measured override; returns 1 when applied, 0 when the file is absent or has no
 * matching record, -1 on a malformed spec or file. */
static int read_measured(jconf c, const cJSON *spec, agoq_calib *out) {
    static const char *const keys[] = {"file", "key", "derive", "where", "reduce", "scale", "inverse", NULL};
    const char *file, *key, *reduce, *derive;
    const cJSON *where;
    double scale;
    int inverse;
    if (jconf_only(c, spec, keys) || jconf_str(c, spec, "file", 1, NULL, &file) ||
        jconf_str(c, spec, "derive", 0, NULL, &derive) || jconf_str(c, spec, "key", !derive, derive, &key) ||
        jconf_obj(c, spec, "where", 0, &where) || jconf_str(c, spec, "reduce", 0, "max", &reduce) ||
        jconf_num(c, spec, "scale", 0, 1e-12, 1e12, 1.0, &scale) || jconf_bool(c, spec, "inverse", 0, 0, &inverse))
        return -1;
    if (strcmp(reduce, "max") != 0 && strcmp(reduce, "median") != 0 && strcmp(reduce, "min") != 0) {
        agoq_error("%s: key '%s.reduce': expected \"max\", \"median\" or \"min\", got '%s'", c.file, c.prefix, reduce);
        return -1;
    }
    if (derive && !agoq_step_meas_derive_known(derive)) {
        agoq_error("%s: key '%s.derive': expected \"gemm_tflops\", \"attention_tflops\", \"optimizer_GBps\" or "
                   "\"elementwise_ns\", got '%s'",
                   c.file, c.prefix, derive);
        return -1;
    }
    if (access(file, R_OK) != 0) return 0;
    cJSON *doc = agoq_read_json(file);
    if (!doc) return -1;
    const cJSON *recs = cJSON_GetObjectItemCaseSensitive(doc, "records"), *r;
    size_t n = 0, cap = cJSON_IsArray(recs) ? (size_t)cJSON_GetArraySize(recs) : 0;
    double *v = calloc(cap ? cap : 1, sizeof *v);
    cJSON_ArrayForEach(r, recs) {
        if (where && !record_matches(r, where)) continue;
        /* derive: a rate from a measured step record's op profile (sim/step_calib.h) */
        const cJSON *x = derive ? NULL : cJSON_GetObjectItemCaseSensitive(r, key);
        const double val = derive ? agoq_step_meas_derive(r, derive) : cJSON_IsNumber(x) ? x->valuedouble : NAN;
        if (isfinite(val)) v[n++] = val;
    }
    int rc = 0;
    if (n == 0) {
        /* Loud but not fatal: a results file of another schema must not stop every figure. */
        fprintf(stderr, "agoq: warning: %s: key '%s': %s has no record with a numeric '%s' matching 'where'; using the assumed value\n",
                c.file, c.prefix, file, key);
    } else {
        qsort(v, n, sizeof *v, cmp_double);
        double x = strcmp(reduce, "max") == 0 ? v[n - 1] : strcmp(reduce, "min") == 0 ? v[0] : v[n / 2];
        /* inverse: a rate from a time, e.g. TFLOPS = (GEMM FLOPs / 1e9) / median_ms */
        out->value = inverse ? scale / x : scale * x;
        out->measured = 1;
        snprintf(out->source, sizeof out->source, "measured: %s (%s%g %s %s of %s'%s' over %zu records)", file,
                 inverse ? "" : "x", scale, inverse ? "/" : "of", reduce, derive ? "the op profile's " : "", key, n);
        rc = 1;
    }
    free(v);
    cJSON_Delete(doc);
    return rc;
}

static int parse_calib(jconf top, const cJSON *doc, agoq_calib_id id, agoq_calib *out) {
    const char *key = agoq_calib_keys[id];
    static const char *const keys[] = {"value", "source", "measured", NULL};
    const cJSON *e, *meas;
    char buf[128];
    const char *src;
    /* elementwise_ns is optional (older machine files): absent = 0, not modelled */
    const int optional = id == AGOQ_CAL_ELEM_NS;
    if (jconf_obj(top, doc, key, !optional, &e)) return -1;
    if (!e) {
        out->value = 0;
        out->measured = 0;
        snprintf(out->source, sizeof out->source, "assumed: 0 (not in the machine file: memory-bound layer ops not modelled)");
        return 0;
    }
    jconf c = jconf_child(top, key, buf, sizeof buf);
    if (jconf_only(c, e, keys) || jconf_num(c, e, "value", 1, 0, INFINITY, 0, &out->value) ||
        jconf_str(c, e, "source", 1, NULL, &src))
        return -1;
    /* An unmeasured number must say where it came from and that it is an assumption. */
    if (strncmp(src, "assumed", 7) != 0) {
        agoq_error("%s: key '%s.source': must start with \"assumed\" (measured values come from \"measured\")", c.file,
                   c.prefix);
        return -1;
    }
    snprintf(out->source, sizeof out->source, "%s", src);
    out->measured = 0;
    meas = cJSON_GetObjectItemCaseSensitive(e, "measured");
    if (!meas) return 0;
    if (!cJSON_IsObject(meas) && !cJSON_IsArray(meas)) {
        agoq_error("%s: key '%s.measured': expected an object or an array of objects", c.file, c.prefix);
        return -1;
    }
    /* One spec or a list of candidates: the first file that yields a value wins. */
    int r = 0, i = 0;
    const cJSON *spec = cJSON_IsObject(meas) ? meas : meas->child;
    for (; spec && r == 0; spec = cJSON_IsObject(meas) ? NULL : spec->next, i++) {
        char mbuf[160], idx[32];
        if (cJSON_IsObject(meas)) snprintf(idx, sizeof idx, "measured");
        else snprintf(idx, sizeof idx, "measured[%d]", i);
        jconf mc = jconf_child(c, idx, mbuf, sizeof mbuf);
        if (!cJSON_IsObject(spec)) {
            agoq_error("%s: key '%s': expected an object", c.file, mc.prefix);
            return -1;
        }
        r = read_measured(mc, spec, out);
    }
    if (r == 0) {
        size_t used = strlen(out->source);
        snprintf(out->source + used, sizeof out->source - used, "%s", " (no measured value in the named results file)");
    }
    return r < 0 ? -1 : 0;
}

int agoq_machine_parse(const char *file, const cJSON *doc, agoq_machine *m) {
    static const char *const keys[] = {"name", "description", "gpu", "gpus_per_node", "nodes", "gpu_memory_GiB",
                                       "gemm_bf16_tflops", "gemm_fp8_tflops", "attention_tflops", "kernel_GBps",
                                       "intra_GBps", "intra_latency_us", "inter_GBps_per_node", "inter_latency_us",
                                       "elementwise_ns", NULL};
    jconf top = {file, ""};
    const char *name, *gpu, *desc;
    long gpn, nodes;
    memset(m, 0, sizeof *m);
    if (!cJSON_IsObject(doc)) {
        agoq_error("%s: expected a JSON object at the top level", file);
        return -1;
    }
    if (jconf_only(top, doc, keys) || jconf_str(top, doc, "name", 1, NULL, &name) ||
        jconf_str(top, doc, "description", 0, "", &desc) || jconf_str(top, doc, "gpu", 1, NULL, &gpu) ||
        jconf_long(top, doc, "gpus_per_node", 1, 1, 64, 8, &gpn) || jconf_long(top, doc, "nodes", 0, 1, 1 << 20, 1, &nodes))
        return -1;
    for (int i = 0; i < AGOQ_CAL_COUNT; i++)
        if (parse_calib(top, doc, (agoq_calib_id)i, &m->cal[i])) return -1;
    static const agoq_calib_id positive[] = {AGOQ_CAL_GPU_MEM_GIB, AGOQ_CAL_GEMM_BF16_TFLOPS, AGOQ_CAL_GEMM_FP8_TFLOPS,
                                             AGOQ_CAL_ATTN_TFLOPS, AGOQ_CAL_KERNEL_GBPS, AGOQ_CAL_INTRA_GBPS,
                                             AGOQ_CAL_INTER_GBPS};
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        if (!(m->cal[positive[i]].value > 0)) {
            agoq_error("%s: key '%s.value': must be > 0", file, agoq_calib_keys[positive[i]]);
            return -1;
        }
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->gpu, sizeof m->gpu, "%s", gpu);
    snprintf(m->file, sizeof m->file, "%s", file);
    m->gpus_per_node = (int)gpn;
    m->nodes = (int)nodes;
    m->fabric.intra.bw_Bps = 1e9 * m->cal[AGOQ_CAL_INTRA_GBPS].value;
    m->fabric.intra.alpha_s = 1e-6 * m->cal[AGOQ_CAL_INTRA_LAT_US].value;
    m->fabric.inter.bw_Bps = 1e9 * m->cal[AGOQ_CAL_INTER_GBPS].value;
    m->fabric.inter.alpha_s = 1e-6 * m->cal[AGOQ_CAL_INTER_LAT_US].value;
    return 0;
}

int agoq_machine_load(const char *path, agoq_machine *m) {
    cJSON *doc = agoq_read_json(path);
    if (!doc) return -1;
    int rc = agoq_machine_parse(path, doc, m);
    cJSON_Delete(doc);
    return rc;
}

cJSON *agoq_machine_json(const agoq_machine *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddStringToObject(o, "file", m->file);
    cJSON_AddStringToObject(o, "gpu", m->gpu);
    cJSON_AddNumberToObject(o, "gpus_per_node", m->gpus_per_node);
    for (int i = 0; i < AGOQ_CAL_COUNT; i++) {
        cJSON *c = cJSON_AddObjectToObject(o, agoq_calib_keys[i]);
        results_num(c, "value", m->cal[i].value);
        cJSON_AddStringToObject(c, "source", m->cal[i].source);
    }
    return o;
}

void agoq_machine_add_inputs(const agoq_machine *m, cJSON *rec) {
    cJSON *meas = cJSON_AddArrayToObject(rec, "measured_inputs"), *assumed = cJSON_AddArrayToObject(rec, "assumed_inputs");
    for (int i = 0; i < AGOQ_CAL_COUNT; i++)
        cJSON_AddItemToArray(m->cal[i].measured ? meas : assumed, cJSON_CreateString(agoq_calib_keys[i]));
}
