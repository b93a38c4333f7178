/* Committed results are reproducible: every experiment file whose committed results came from
 * the cpu backend (simulated, or measured on the CPU) is re-run with the current binary and
 * every field of its config and records is compared with the committed file; timings (keys
 * ending in _ms or _s, GB/s rates, ratios to the copy bandwidth, the thread count) are skipped
 * for measured results only: a simulated step_ms is a result, not a timing. A field the code
 * writes now but the committed file predates is named (once per file), not failed.
 *   make test            the simulated ones (well under a second each)
 *   make check-results   all of them (AGOQ_CHECK_RESULTS=all: CPU collectives, quant, train)
 * A mismatch means the code changed what a committed file says: re-run the experiment and
 * commit its new results (JSON and TSV together), or fix the code. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results.h"
#include "tests/test.h"

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_timing_key(const char *k) {
    return ends_with(k, "_ms") || ends_with(k, "_s") || strstr(k, "gbps") || strstr(k, "GBps") ||
           ends_with(k, "_vs_copy") || strcmp(k, "threads") == 0 || strcmp(k, "throughput_device") == 0;
}

/* Numbers agree to 1e-9 relative (printing and libm may differ in the last digits). */
static int g_shown;       /* mismatch lines printed for the current file (at most 8) */
static size_t g_new_fields; /* fields the code writes now that the committed file lacks */

static int same_number(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)) + 1e-12; }

static size_t compare(const cJSON *ref, const cJSON *got, char *path, size_t at, size_t cap, int skip_timing,
                      const char *file) {
    size_t bad = 0;
    char rv[64] = "", gv[64] = "";
    if (cJSON_IsObject(ref) && cJSON_IsObject(got)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, ref) {
            if (skip_timing && is_timing_key(e->string)) continue;
            size_t n = at + (size_t)snprintf(path + at, cap - at, ".%s", e->string);
            bad += compare(e, cJSON_GetObjectItemCaseSensitive(got, e->string), path, n < cap ? n : cap - 1, cap,
                           skip_timing, file);
        }
        cJSON_ArrayForEach(e, got) {
            if ((skip_timing && is_timing_key(e->string)) || cJSON_GetObjectItemCaseSensitive(ref, e->string)) continue;
            /* the schema grew after the file was committed: every committed field still has to
             * match; the new ones are counted and named, not failed */
            if (g_new_fields++ == 0) fprintf(stderr, "    %s: note: new field %.*s.%s (and maybe others) not in the committed file\n",
                                             file, (int)at, path, e->string);
        }
        path[at] = '\0';
        return bad;
    }
    if (cJSON_IsArray(ref) && cJSON_IsArray(got)) {
        if (cJSON_GetArraySize(ref) != cJSON_GetArraySize(got)) {
            fprintf(stderr, "    %s: %s: %d entries committed, %d now\n", file, path, cJSON_GetArraySize(ref),
                    cJSON_GetArraySize(got));
            return 1;
        }
        const cJSON *r = ref->child, *g = got->child;
        for (int i = 0; r && g; r = r->next, g = g->next, i++) {
            size_t n = at + (size_t)snprintf(path + at, cap - at, "[%d]", i);
            bad += compare(r, g, path, n < cap ? n : cap - 1, cap, skip_timing, file);
        }
        path[at] = '\0';
        return bad;
    }
    int same = cJSON_IsNumber(ref) && cJSON_IsNumber(got)   ? same_number(ref->valuedouble, got->valuedouble)
               : cJSON_IsString(ref) && cJSON_IsString(got) ? strcmp(ref->valuestring, got->valuestring) == 0
               : got != NULL && ref->type == got->type;      /* null, true, false */
    if (same) return 0;
    if (cJSON_IsNumber(ref)) snprintf(rv, sizeof rv, "%.10g", ref->valuedouble);
    else snprintf(rv, sizeof rv, "%.60s", cJSON_IsString(ref) ? ref->valuestring : "(not a number)");
    if (!got) snprintf(gv, sizeof gv, "(missing)");
    else if (cJSON_IsNumber(got)) snprintf(gv, sizeof gv, "%.10g", got->valuedouble);
    else snprintf(gv, sizeof gv, "%.60s", cJSON_IsString(got) ? got->valuestring : "(another type)");
    if (g_shown++ < 8) fprintf(stderr, "    %s: %s: committed %s, now %s\n", file, path, rv, gv);
    return 1;
}

/* Re-runs one experiment file if its committed results qualify; returns mismatches (0 when
 * skipped), *checked += 1 when compared. */
static size_t check_one(const char *exp, int all, int *checked) {
    cJSON *e = agoq_read_json(exp);
    if (!e) return 1;
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(e, "out"), *be = cJSON_GetObjectItemCaseSensitive(e, "backend");
    char committed[1024], fresh[1024], args[3072];
    const char *base = strrchr(exp, '/') ? strrchr(exp, '/') + 1 : exp;
    if (cJSON_IsString(out)) snprintf(committed, sizeof committed, "%s", out->valuestring);
    else snprintf(committed, sizeof committed, "results/cpu/%s", base); /* the path rule, machine cpu */
    int cuda_only = cJSON_IsString(be) && strcmp(be->valuestring, "cuda") == 0;
    cJSON_Delete(e);
    if (cuda_only || !agoq_test_file_exists(committed)) return 0;
    cJSON *ref = agoq_read_json(committed);
    if (!ref) return 1;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(ref, "meta");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(meta, "source"), *rb = cJSON_GetObjectItemCaseSensitive(meta, "backend");
    int simulated = cJSON_IsString(src) && strcmp(src->valuestring, "simulated") == 0;
    int cpu = cJSON_IsString(rb) && strcmp(rb->valuestring, "cpu") == 0;
    if (!cpu || (!simulated && !all)) {
        cJSON_Delete(ref);
        return 0;
    }
    snprintf(fresh, sizeof fresh, "%s/repro_%s", agoq_test_tmpdir(), base);
    snprintf(args, sizeof args, "run %s --backend cpu -q -o %s > /dev/null", exp, fresh);
    char msg[4096];
    size_t bad = 0;
    g_shown = 0;
    g_new_fields = 0;
    if (agoq_test_run_cli(args, msg, sizeof msg) != 0) {
        fprintf(stderr, "    %s: the re-run failed: %s\n", exp, msg);
        printf("    %-58s FAILED TO RUN\n", committed);
        bad = 1;
    } else {
        cJSON *got = agoq_read_json(fresh);
        char path[512] = "config";
        bad = got ? compare(cJSON_GetObjectItemCaseSensitive(ref, "config"), cJSON_GetObjectItemCaseSensitive(got, "config"),
                            path, strlen(path), sizeof path, !simulated, committed)
                  : 1;
        snprintf(path, sizeof path, "records");
        if (got)
            bad += compare(cJSON_GetObjectItemCaseSensitive(ref, "records"), cJSON_GetObjectItemCaseSensitive(got, "records"),
                           path, strlen(path), sizeof path, !simulated, committed);
        printf("    %-58s %s%zu mismatches, %d records\n", committed, bad ? "DIFFERS: " : "reproduced: ", bad,
               got ? cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(got, "records")) : 0);
        cJSON_Delete(got);
    }
    (*checked)++;
    cJSON_Delete(ref);
    return bad;
}

TEST(committed_results_reproduce) {
    const char *mode = getenv("AGOQ_CHECK_RESULTS");
    int all = mode && strcmp(mode, "all") == 0, checked = 0;
    glob_t g;
    if (glob("experiments/*.json", 0, NULL, &g) != 0) SKIP("no experiments/ here (run from the repository root)");
    size_t bad = 0, files = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        size_t b = check_one(g.gl_pathv[i], all, &checked);
        bad += b;
        files += b > 0;
    }
    globfree(&g);
    CHECK_MSG(bad == 0, "%zu mismatches in %zu of %d committed results (re-run those experiments)", bad, files, checked);
    CHECK(checked > 0);
}
