/* Results document and atomic writers; see results.h. */
#include "core/results.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/common.h"
#include "core/knob.h"
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

double results_get_num(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *results_get_str(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : "";
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
    if (strlen(path) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(tmp, path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

/* SIGINT, SIGTERM and SIGHUP are held while temporaries exist, so a kill during a write lands
 * after the temporaries are renamed or removed: never an orphan "X.json.tmp.PID" (SIGKILL aside). */
static void hold_signals(sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigprocmask(SIG_BLOCK, &s, old);
}

/* Writes data to "path.tmp.PID" (fsync'd); tmp receives that name. On failure prints one line,
 * removes the temporary and returns -1. */
static int write_temp(const char *path, const char *data, size_t len, char *tmp, size_t tmplen) {
    if (mkdir_parents(path) != 0) {
        agoq_error("%s: cannot create parent directory: %s", path, strerror(errno));
        return -1;
    }
    if ((size_t)snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid()) >= tmplen) {
        agoq_error("%s: cannot write: %s", path, strerror(ENAMETOOLONG));
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        agoq_error("%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w <= 0) {
            agoq_error("%s: write failed: %s", path, w < 0 ? strerror(errno) : "no space");
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        agoq_error("%s: cannot finish write: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int agoq_write_file_atomic(const char *path, const char *data, size_t len) {
    char tmp[4200];
    sigset_t old;
    hold_signals(&old);
    int rc = write_temp(path, data, len, tmp, sizeof tmp);
    if (rc == 0 && rename(tmp, path) != 0) {
        agoq_error("%s: cannot finish write: %s", path, strerror(errno));
        unlink(tmp);
        rc = -1;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int agoq_check_writable(const char *path) {
    size_t n = strlen(path);
    struct stat st;
    if (n == 0 || path[n - 1] == '/') {
        agoq_error("'%s': cannot write: expected a file name, not a directory", path);
        return -1;
    }
    int too_long = n >= 4000;
    for (const char *p = path, *slash; !too_long && *p; p = slash + 1) {
        slash = strchr(p, '/');
        if (!slash) slash = path + n - 1;
        too_long = slash - p > 240; /* NAME_MAX 255, less the ".tmp.PID" of the temporary */
    }
    if (too_long) {
        agoq_error("%.200s...: cannot write: %s", path, strerror(ENAMETOOLONG));
        return -1;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* renaming over /dev/null or a FIFO would replace it */
        agoq_error("%s: cannot write: %s", path, S_ISDIR(st.st_mode) ? "is a directory" : "exists and is not a regular file");
        return -1;
    }
    /* Probe the deepest directory that exists (the writer creates the rest at publish time),
     * so that a failed check or a bad config leaves no directory behind. */
    char dir[4096], probe[4200];
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash) {
            snprintf(dir, sizeof dir, ".");
            break;
        }
        *(slash == dir ? slash + 1 : slash) = '\0';
        if (stat(dir, &st) == 0 || slash == dir) break;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        agoq_error("%s: cannot write: %s is not a directory", path, dir);
        return -1;
    }
    snprintf(probe, sizeof probe, "%s/.agoq-probe.%ld", dir, (long)getpid());
    sigset_t old;
    hold_signals(&old);
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644);
    int err = errno;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        agoq_error("%s: cannot write in %s: %s", path, dir, strerror(err));
        return -1;
    }
    return 0;
}

static char *json_text(const agoq_results *r, size_t *len) {
    char *text = cJSON_Print(r->root);
    if (!text) return NULL;
    *len = strlen(text);
    char *withnl = malloc(*len + 2);
    if (withnl) {
        memcpy(withnl, text, *len);
        withnl[(*len)++] = '\n';
        withnl[*len] = '\0';
    }
    cJSON_free(text);
    return withnl;
}

int results_write(const agoq_results *r, const char *path) {
    size_t len;
    char *text = json_text(r, &len);
    if (!text) {
        agoq_error("%s: cannot serialize results", path);
        return -1;
    }
    int rc = agoq_write_file_atomic(path, text, len);
    free(text);
    return rc;
}

static char *tsv_text(const agoq_results *r, const char *const *cols, size_t ncols, size_t *out_len) {
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
    *out_len = len;
    return buf;
}

int results_write_tsv(const agoq_results *r, const char *path, const char *const *cols, size_t ncols) {
    size_t len;
    char *buf = tsv_text(r, cols, ncols, &len);
    int rc = agoq_write_file_atomic(path, buf, len);
    free(buf);
    return rc;
}

/* Milliseconds to wait between writing the temporaries and renaming them: a test hook
 * (AGOQ_TEST_PUBLISH_DELAY_MS, 0..60000, default 0, read before anything is written) that lets
 * tests kill a run in the middle of a publish. */
static void test_delay(long ms) {
    if (ms > 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int results_publish(const agoq_results *r, const char *json_path, const char *tsv_path, const char *const *cols,
                    size_t ncols) {
    const long delay_ms = agoq_knob_int("AGOQ_TEST_PUBLISH_DELAY_MS", 0, 0, 60000);
    size_t jlen, tlen = 0;
    char *jtext = json_text(r, &jlen), *ttext = tsv_path ? tsv_text(r, cols, ncols, &tlen) : NULL;
    char jtmp[4200], ttmp[4200];
    int rc = -1, have_j = 0, have_t = 0, lock = -1;
    sigset_t old;
    hold_signals(&old);
    if (!jtext || (tsv_path && !ttext)) {
        agoq_error("%s: cannot serialize results", json_path);
        goto done;
    }
    if (write_temp(json_path, jtext, jlen, jtmp, sizeof jtmp)) goto done;
    have_j = 1;
    if (tsv_path) {
        if (write_temp(tsv_path, ttext, tlen, ttmp, sizeof ttmp)) goto done;
        have_t = 1;
    }
    test_delay(delay_ms);
    /* Two runs publishing to the same directory take turns (flock on the directory), so the
     * JSON and TSV in place always come from one run. */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", json_path);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    else snprintf(dir, sizeof dir, ".");
    lock = open(dir, O_RDONLY | O_DIRECTORY);
    if (lock >= 0) flock(lock, LOCK_EX);
    if (have_t && rename(ttmp, tsv_path) != 0) {
        agoq_error("%s: cannot finish write: %s", tsv_path, strerror(errno));
        goto done;
    }
    have_t = 0;
    if (rename(jtmp, json_path) != 0) {
        agoq_error("%s: cannot finish write: %s", json_path, strerror(errno));
        if (tsv_path) unlink(tsv_path); /* never a new TSV beside an old JSON */
        goto done;
    }
    have_j = 0;
    rc = 0;
done:
    if (have_j) unlink(jtmp);
    if (have_t) unlink(ttmp);
    if (lock >= 0) close(lock);
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(jtext);
    free(ttext);
    return rc;
}

/* Reads a whole file (regular file, pipe or device) into a NUL-terminated buffer; refuses a
 * directory, a file larger than AGOQ_MAX_JSON_BYTES and one with a NUL byte, one line each. */
#define AGOQ_MAX_JSON_BYTES ((size_t)256 << 20)
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        agoq_error("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        agoq_error("%s: is a directory, expected a JSON file", path);
        fclose(f);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap + 1);
    while (text) {
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
        if (len == cap) {
            char *bigger = cap >= AGOQ_MAX_JSON_BYTES ? NULL : realloc(text, 2 * cap + 1);
            if (!bigger) {
                agoq_error("%s: larger than %zu MiB, not a JSON input of agoq", path, AGOQ_MAX_JSON_BYTES >> 20);
                free(text);
                fclose(f);
                return NULL;
            }
            text = bigger;
            cap *= 2;
        }
    }
    if (!text || ferror(f)) {
        agoq_error("%s: cannot read: %s", path, text ? strerror(errno) : "out of memory");
        free(text);
        fclose(f);
        return NULL;
    }
    fclose(f);
    text[len] = '\0';
    if (strlen(text) != len) {
        agoq_error("%s: malformed JSON: NUL byte at offset %zu", path, strlen(text));
        free(text);
        return NULL;
    }
    return text;
}

/* Finds the first key that appears twice in one object (cJSON would silently use the first);
 * writes its path ("config.sweep.bits") to buf and returns 1, else 0. */
static int find_duplicate_key(const cJSON *node, char *buf, size_t len, size_t at) {
    const cJSON *e;
    int index = 0;
    cJSON_ArrayForEach(e, node) {
        size_t n = at;
        if (cJSON_IsObject(node)) {
            for (const cJSON *d = node->child; d != e; d = d->next)
                if (strcmp(d->string, e->string) == 0) {
                    snprintf(buf + at, len - at, "%s%s", at ? "." : "", e->string);
                    return 1;
                }
            n += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "." : "", e->string);
        } else {
            n += (size_t)snprintf(buf + at, len - at, "[%d]", index);
        }
        index++;
        if (n >= len) n = len - 1;
        if ((cJSON_IsObject(e) || cJSON_IsArray(e)) && find_duplicate_key(e, buf, len, n)) return 1;
        buf[at] = '\0';
    }
    return 0;
}

cJSON *agoq_read_json(const char *path) {
    char *text = read_text(path);
    if (!text) return NULL;
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
    char key[512] = "";
    if (j && find_duplicate_key(j, key, sizeof key, 0)) {
        agoq_error("%s: duplicate key '%s'", path, key);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

void results_set_source(agoq_results *r, const char *source) {
    cJSON_ReplaceItemInObject(r->meta, "source", cJSON_CreateString(source));
}
