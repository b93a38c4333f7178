/* The C inventory against PyTorch's real saved tensors: results/h200/saved_tensors.json
 * (written by validation/saved_tensors.py on the GPU machine, tools/device_validation.sh) must
 * agree within 2% for every measured shape and implementation. Until that file is committed
 * the comparison is skipped, saying so; the comparator itself is tested on fixtures. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/results.h"
#include "models/memory.h"
#include "tests/test.h"

#define VALIDATION_JSON "results/h200/saved_tensors.json"
#define TOLERANCE 0.02

static double num(const cJSON *o, const char *k) { return results_get_num(o, k); }
static int flag(const cJSON *o, const char *k) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k)); }

/* Bytes the memory model gives one layer of record r (bf16, REAL, one rank). */
static double model_bytes(const cJSON *r) {
    agoq_model_card m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "validation");
    m.layer = AGOQ_LAYER_LLAMA;
    m.hidden = (long)num(r, "h");
    m.ffn = (long)num(r, "f");
    m.heads = (long)num(r, "heads");
    m.kv_heads = (long)num(r, "kv_heads");
    m.head_dim = (long)num(r, "head_dim");
    m.layers = 1;
    m.vocab = 1;
    m.norm_weights = 1;
    agoq_mem_setup ms;
    agoq_mem_setup_default(&ms, &m);
    ms.par.micro_batch = (long)num(r, "b");
    ms.par.seq = (long)num(r, "s");
    ms.impl = (agoq_layer_impl){flag(r, "flash_attn"), flag(r, "fused_norm"), flag(r, "gqa_repeat"), 0, 0};
    return agoq_layer_act_bytes(&ms, 0, NULL, NULL);
}

/* Mismatches beyond TOLERANCE in path (printing each comparison); -1 when the file is not a
 * measured saved-tensor record set. *checked counts the records compared. */
static int compare_file(const char *path, int *checked) {
    cJSON *j = agoq_read_json(path);
    *checked = 0;
    if (!j) return -1;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "meta"), "source");
    const cJSON *recs = cJSON_GetObjectItemCaseSensitive(j, "records"), *r;
    if (!cJSON_IsString(src) || strcmp(src->valuestring, "measured") || !cJSON_IsArray(recs)) {
        fprintf(stderr, "    %s: not a measured saved-tensor file\n", path);
        cJSON_Delete(j);
        return -1;
    }
    int bad = 0;
    cJSON_ArrayForEach(r, recs) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(r, "status");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(r, "name");
        const char *name = cJSON_IsString(nm) ? nm->valuestring : "?";
        if (!cJSON_IsString(st) || strcmp(st->valuestring, "ok")) {
            printf("    validation %-11s flash=%d fused_norm=%d: %s\n", name, flag(r, "flash_attn"), flag(r, "fused_norm"),
                   cJSON_IsString(st) ? st->valuestring : "no status");
            continue;
        }
        double measured = num(r, "saved_bytes"), model = model_bytes(r);
        double rel = (model - measured) / measured;
        int ok = isfinite(rel) && fabs(rel) <= TOLERANCE;
        printf("    validation %-11s flash=%d fused_norm=%d: model %.0f B, PyTorch %.0f B (%+.3f%%)%s\n", name,
               flag(r, "flash_attn"), flag(r, "fused_norm"), model, measured, 100 * rel, ok ? "" : "  MISMATCH");
        bad += !ok;
        (*checked)++;
    }
    cJSON_Delete(j);
    return bad;
}

TEST(memory_validation_against_pytorch) {
    if (!agoq_test_file_exists(VALIDATION_JSON)) SKIP(VALIDATION_JSON " not present");
    int n, bad = compare_file(VALIDATION_JSON, &n);
    CHECK_MSG(bad == 0 && n > 0, "%d of %d shapes beyond %.0f%% (or unreadable: %d)", bad, n, 100 * TOLERANCE, bad);
}

/* The comparator on fixtures: a record equal to the hand-summed inventory passes, one 3% off
 * fails, a simulated file is refused. small-mha flash + fused norm, b 2, s 512, h 1024, f 2816,
 * 16 heads of 64: 8 bf16 [b,s,h] + 2 fp32 rstd [b,s] + fp32 lse [b,a,s] + 4 bf16 [b,s,f]. */
TEST(memory_validation_comparator) {
    const double b = 2, s = 512, h = 1024, f = 2816, a = 16;
    const double exact = 2 * b * s * h * 8 + 4 * b * s * 2 + 4 * b * a * s + 2 * b * s * f * 4;
    char path[512], text[2048];
    const char *fmt = "{\"meta\":{\"source\":\"%s\"},\"records\":[{\"name\":\"small-mha\",\"b\":2,\"s\":512,\"h\":1024,"
                      "\"f\":2816,\"heads\":16,\"kv_heads\":16,\"head_dim\":64,\"flash_attn\":true,\"fused_norm\":true,"
                      "\"gqa_repeat\":false,\"status\":\"ok\",\"saved_bytes\":%.0f},{\"name\":\"x\",\"status\":\"skipped: no flash\"}]}";
    int n;
    snprintf(path, sizeof path, "%s/validation_ok.json", agoq_test_tmpdir());
    snprintf(text, sizeof text, fmt, "measured", exact);
    agoq_test_write(path, text);
    CHECK(compare_file(path, &n) == 0 && n == 1);
    snprintf(path, sizeof path, "%s/validation_off.json", agoq_test_tmpdir());
    snprintf(text, sizeof text, fmt, "measured", exact * 1.03);
    agoq_test_write(path, text);
    CHECK(compare_file(path, &n) == 1 && n == 1);
    snprintf(path, sizeof path, "%s/validation_sim.json", agoq_test_tmpdir());
    snprintf(text, sizeof text, fmt, "simulated", exact);
    agoq_test_write(path, text);
    CHECK(compare_file(path, &n) == -1);
}
