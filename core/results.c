/* Results document and atomic writers; see results.h. */
#include "core/results.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "core/metrics.h"
#include "core/provenance.h"

agoq_results *results_new(const char *tool, const char *backend, const char *source, int argc,
                          char **argv) {
    agoq_results *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->root = cJSON_CreateObject();
    cJSON_AddStringToObject(r->root, "schema", AGOQ_RESULTS_SCHEMA);
    r->meta = cJSON_AddObjectToObject(r->root, "meta");
    cJSON_AddStringToObject(r->meta, "tool", tool);
    cJSON_AddStringToObject(r->meta, "version", AGOQ_VERSION);
    cJSON_AddStringToObject(r->meta, "commit", agoq_git_commit());
    char buf[256];
    agoq_utc_now(buf, sizeof buf);
    cJSON_AddStringToObject(r->meta, "date_utc", buf);
    agoq_hostname(buf, sizeof buf);
    cJSON_AddStringToObject(r->meta, "host", buf);
    cJSON_AddStringToObject(r->meta, "backend", backend);
    cJSON_AddStringToObject(r->meta, "source", source);
    cJSON *cmd = cJSON_AddArrayToObject(r->meta, "command");
    cJSON_AddItemToArray(cmd, cJSON_CreateString("agoq"));
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(cmd, cJSON_CreateString(argv[i]));
    r->config = cJSON_AddObjectToObject(r->root, "config");
    r->records = cJSON_AddArrayToObject(r->root, "records");
    return r;
}

void results_free(agoq_results *r) {
    if (!r) return;
    cJSON_Delete(r->root);
    free(r);
}

void results_set_config(agoq_results *r, cJSON *config) {
    cJSON_ReplaceItemInObject(r->root, "config", config);
    r->config = config;
}

cJSON *results_add_record(agoq_results *r) {
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddItemToArray(r->records, rec);
    return rec;
}

void results_num(cJSON *obj, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(obj, key, v);
    else cJSON_AddNullToObject(obj, key);
}

void results_error_stats(cJSON *obj, const agoq_error_stats *e) {
    results_num(obj, "mse", e->mse);
    results_num(obj, "rmse", e->rmse);
    results_num(obj, "nmse", e->nmse);
    results_num(obj, "snr_db", e->snr_db);
    results_num(obj, "max_abs", e->max_abs);
    results_num(obj, "max_rel", e->max_rel);
    results_num(obj, "cosine", e->cosine);
    results_num(obj, "norm_l2", agoq_norm_l2(e));
    cJSON_AddNumberToObject(obj, "nonfinite", (double)e->nonfinite);
}

void results_set_gpu(agoq_results *r, cJSON *gpu) {
    if (cJSON_HasObjectItem(r->meta, "gpu")) cJSON_ReplaceItemInObject(r->meta, "gpu", gpu);
    else cJSON_AddItemToObject(r->meta, "gpu", gpu);
}

static int mkdir_parents(const char *path) {
    char tmp[4096];
    if (strlen(path) >= sizeof tmp) return -1;
    strcpy(tmp, path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

int agoq_write_file_atomic(const char *path, const char *data, size_t len) {
    char tmp[4200];
    if (mkdir_parents(path) != 0) {
        agoq_error("%s: cannot create parent directory: %s", path, strerror(errno));
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        agoq_error("%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w <= 0) {
            agoq_error("%s: write failed: %s", path, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        agoq_error("%s: cannot finish write: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int results_write(const agoq_results *r, const char *path) {
    char *text = cJSON_Print(r->root);
    if (!text) {
        agoq_error("%s: cannot serialize results", path);
        return -1;
    }
    size_t len = strlen(text);
    char *withnl = malloc(len + 2);
    memcpy(withnl, text, len);
    withnl[len] = '\n';
    int rc = agoq_write_file_atomic(path, withnl, len + 1);
    free(withnl);
    cJSON_free(text);
    return rc;
}

int results_write_tsv(const agoq_results *r, const char *path, const char *const *cols, size_t ncols) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
#define APPEND(...)                                                                  \
    do {                                                                             \
        int n_ = snprintf(buf + len, cap - len, __VA_ARGS__);                        \
        while ((size_t)n_ >= cap - len) {                                            \
            cap *= 2;                                                                \
            buf = realloc(buf, cap);                                                 \
            n_ = snprintf(buf + len, cap - len, __VA_ARGS__);                        \
        }                                                                            \
        len += (size_t)n_;                                                           \
    } while (0)
    APPEND("#");
    for (size_t c = 0; c < ncols; c++) APPEND(" %s", cols[c]);
    APPEND("\n");
    const cJSON *rec;
    cJSON_ArrayForEach(rec, r->records) {
        for (size_t c = 0; c < ncols; c++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, cols[c]);
            const char *sep = c ? "\t" : "";
            if (cJSON_IsNumber(v)) APPEND("%s%.9g", sep, v->valuedouble);
            else if (cJSON_IsString(v)) APPEND("%s%s", sep, v->valuestring);
            else if (cJSON_IsBool(v)) APPEND("%s%d", sep, cJSON_IsTrue(v));
            else APPEND("%snan", sep);
        }
        APPEND("\n");
    }
#undef APPEND
    int rc = agoq_write_file_atomic(path, buf, len);
    free(buf);
    return rc;
}

cJSON *agoq_read_json(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        agoq_error("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    size_t got = fread(text, 1, (size_t)n, f);
    fclose(f);
    text[got] = '\0';
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(text, &end, 1);
    if (!j) {
        /* report line and column of the parse failure */
        const char *at = end ? end : text;
        int line = 1, col = 1;
        for (const char *p = text; p < at && *p; p++) {
            if (*p == '\n') { line++; col = 1; } else col++;
        }
        agoq_error("%s: malformed JSON at line %d, column %d", path, line, col);
    }
    free(text);
    return j;
}

void results_set_source(agoq_results *r, const char *source) {
    cJSON_ReplaceItemInObject(r->meta, "source", cJSON_CreateString(source));
}
