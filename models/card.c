/* Model cards: models/<name>.json holds a model's public architecture numbers.
 *   {"name", "family", "layer": "llama"|"gpt", "hidden", "ffn", "heads", "kv_heads", "head_dim",
 *    "layers", "vocab", "max_seq", "tied_embeddings", "norm_weights", "source"}
 * head_dim defaults to hidden / heads, kv_heads to heads. Parameter counts follow the layer:
 * LLaMA (no biases, SwiGLU with three FFN matrices, RMSNorm weights) or GPT (biases, GeLU FFN,
 * LayerNorm weight + bias, learned position embeddings). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/knob.h"
#include "core/results.h"
#include "models/memory.h"

static const char *models_dir(void) {
    const char *d = agoq_knob_str("AGOQ_MODELS_DIR");
    return d ? d : "models";
}

int agoq_model_parse(jconf c, const cJSON *obj, agoq_model_card *out) {
    static const char *const keys[] = {"name", "family", "layer", "hidden", "ffn", "heads", "kv_heads",
                                       "head_dim", "layers", "vocab", "max_seq", "tied_embeddings",
                                       "norm_weights", "source", NULL};
    const char *name, *family, *layer;
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(obj)) {
        agoq_error("%s: expected a JSON object (a model card)", c.file);
        return -1;
    }
    if (jconf_only(c, obj, keys) || jconf_str(c, obj, "name", 1, NULL, &name) ||
        jconf_str(c, obj, "family", 0, "llama", &family) || jconf_str(c, obj, "layer", 0, "llama", &layer) ||
        jconf_long(c, obj, "hidden", 1, 1, 1L << 20, 0, &out->hidden) ||
        jconf_long(c, obj, "ffn", 1, 1, 1L << 22, 0, &out->ffn) ||
        jconf_long(c, obj, "heads", 1, 1, 4096, 0, &out->heads) ||
        jconf_long(c, obj, "kv_heads", 0, 1, 4096, out->heads, &out->kv_heads) ||
        jconf_long(c, obj, "layers", 1, 1, 4096, 0, &out->layers) ||
        jconf_long(c, obj, "vocab", 1, 1, 1L << 24, 0, &out->vocab) ||
        jconf_long(c, obj, "max_seq", 0, 1, 1L << 24, 2048, &out->max_seq) ||
        jconf_bool(c, obj, "tied_embeddings", 0, 0, &out->tied_embeddings) ||
        jconf_bool(c, obj, "norm_weights", 0, 1, &out->norm_weights))
        return -1;
    if (!cJSON_GetObjectItemCaseSensitive(obj, "head_dim") && out->hidden % out->heads) {
        agoq_error("%s: key '%s%sheads': %ld heads do not divide hidden %ld (give head_dim for such a model)", c.file,
                   c.prefix, *c.prefix ? "." : "", out->heads, out->hidden);
        return -1;
    }
    if (jconf_long(c, obj, "head_dim", 0, 1, 1L << 16, out->hidden / out->heads, &out->head_dim)) return -1;
    int kind = agoq_layer_kind_by_name(layer);
    if (kind != AGOQ_LAYER_LLAMA && kind != AGOQ_LAYER_GPT) {
        agoq_error("%s: key '%s%slayer': unknown layer '%s' (valid: llama, gpt)", c.file, c.prefix,
                   *c.prefix ? "." : "", layer);
        return -1;
    }
    out->layer = (agoq_layer_kind)kind;
    if (out->heads % out->kv_heads) {
        agoq_error("%s: key '%s%skv_heads': %ld does not divide heads %ld", c.file, c.prefix, *c.prefix ? "." : "",
                   out->kv_heads, out->heads);
        return -1;
    }
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->family, sizeof out->family, "%s", family);
    return 0;
}

int agoq_model_load(const char *name_or_path, agoq_model_card *out) {
    char path[1024];
    size_t len = strlen(name_or_path);
    int n = (len > 5 && strcmp(name_or_path + len - 5, ".json") == 0) || strchr(name_or_path, '/')
                ? snprintf(path, sizeof path, "%s", name_or_path)
                : snprintf(path, sizeof path, "%s/%s.json", models_dir(), name_or_path);
    if (n < 0 || (size_t)n >= sizeof path) {
        agoq_error("model '%.64s...': name longer than %zu characters", name_or_path, sizeof path - 1);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f && strcmp(path, name_or_path) == 0) { /* a path, not a name */
        agoq_error("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (!f) {
        agoq_error("unknown model '%s': no %s (models: %s)", name_or_path, path, agoq_model_names());
        return -1;
    }
    fclose(f);
    cJSON *j = agoq_read_json(path);
    if (!j) return -1;
    jconf c = {path, ""};
    int rc = agoq_model_parse(c, j, out);
    cJSON_Delete(j);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

const char *agoq_model_names(void) {
    static char buf[2048];
    char names[128][64];
    const char *ptr[128];
    size_t n = 0, k = 0;
    DIR *d = opendir(models_dir());
    buf[0] = '\0';
    if (!d) return "(no models directory)";
    for (struct dirent *e; (e = readdir(d)) && n < 128;) {
        size_t l = strlen(e->d_name);
        if (l <= 5 || l >= 64 || strcmp(e->d_name + l - 5, ".json")) continue;
        snprintf(names[n], sizeof names[n], "%.*s", (int)(l - 5), e->d_name);
        ptr[n] = names[n];
        n++;
    }
    closedir(d);
    qsort(ptr, n, sizeof ptr[0], cmp_str);
    for (size_t i = 0; i < n && k + 70 < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", i ? ", " : "", ptr[i]);
    return buf;
}

double agoq_model_layer_params(const agoq_model_card *m) {
    double h = (double)m->hidden, f = (double)m->ffn, qd = (double)(m->heads * m->head_dim),
           kvd = (double)(m->kv_heads * m->head_dim);
    if (m->layer == AGOQ_LAYER_GPT) /* qkv + bias, proj + bias, fc1 + bias, fc2 + bias, 2 LN */
        return (h * 3 * qd + 3 * qd) + (qd * h + h) + (h * f + f) + (f * h + h) + 4 * h;
    return h * qd + 2 * h * kvd + qd * h + 3 * h * f + (m->norm_weights ? 2 * h : 0);
}

double agoq_model_params(const agoq_model_card *m) {
    double h = (double)m->hidden, v = (double)m->vocab;
    double p = (double)m->layers * agoq_model_layer_params(m) + v * h * (m->tied_embeddings ? 1 : 2);
    if (m->layer == AGOQ_LAYER_GPT) p += (double)m->max_seq * h + 2 * h; /* positions, final LN */
    else if (m->norm_weights) p += h;
    return p;
}

const char *const agoq_layout_keys[] = {"tp", "pp", "dp", "zero", "seq", "micro_batch", "vpp", "schedule", "sp",
                                        "num_microbatches", "recompute_layers", "recompute_attn_core",
                                        "bucket_elems", "impl", NULL};

static int parse_impl(jconf c, const cJSON *cfg, agoq_layer_impl *impl) {
    static const char *const keys[] = {"flash_attn", "fused_norm", "gqa_repeat", "norm_no_rstd", "swiglu_fused", NULL};
    const cJSON *o;
    char buf[128];
    if (jconf_obj(c, cfg, "impl", 0, &o)) return -1;
    if (!o) return 0;
    jconf ci = jconf_child(c, "impl", buf, sizeof buf);
    return jconf_only(ci, o, keys) || jconf_bool(ci, o, "flash_attn", 0, impl->flash_attn, &impl->flash_attn) ||
                   jconf_bool(ci, o, "fused_norm", 0, impl->fused_norm, &impl->fused_norm) ||
                   jconf_bool(ci, o, "gqa_repeat", 0, impl->gqa_repeat, &impl->gqa_repeat) ||
                   jconf_bool(ci, o, "norm_no_rstd", 0, impl->norm_no_rstd, &impl->norm_no_rstd) ||
                   jconf_bool(ci, o, "swiglu_fused", 0, impl->swiglu_fused, &impl->swiglu_fused)
               ? -1
               : 0;
}

int agoq_layout_parse(jconf c, const cJSON *cfg, agoq_mem_setup *ms, int sweep_keys) {
    agoq_parallel *p = &ms->par;
    long zero = p->zero, m;
    const char *sched;
    if (!sweep_keys &&
        (jconf_long(c, cfg, "tp", 0, 1, 4096, p->tp, &p->tp) || jconf_long(c, cfg, "pp", 0, 1, AGOQ_MAX_STAGES, p->pp, &p->pp) ||
         jconf_long(c, cfg, "zero", 0, 0, 3, zero, &zero) ||
         jconf_long(c, cfg, "seq", 0, 1, 1L << 24, p->seq, &p->seq) ||
         jconf_long(c, cfg, "micro_batch", 0, 1, 1L << 16, p->micro_batch, &p->micro_batch)))
        return -1;
    p->zero = (int)zero;
    if (jconf_long(c, cfg, "dp", 0, 1, 1L << 20, p->dp, &p->dp) || jconf_long(c, cfg, "vpp", 0, 1, 64, p->vpp, &p->vpp) ||
        jconf_str(c, cfg, "schedule", 0, p->vpp > 1 ? "interleaved" : "1f1b", &sched) ||
        jconf_bool(c, cfg, "sp", 0, p->sp, &p->sp) ||
        jconf_long(c, cfg, "num_microbatches", 0, 0, 1L << 20, 0, &m) ||
        jconf_long(c, cfg, "recompute_layers", 0, -1, 4096, p->recompute_layers, &p->recompute_layers) ||
        jconf_bool(c, cfg, "recompute_attn_core", 0, p->recompute_attn_core, &p->recompute_attn_core) ||
        jconf_num(c, cfg, "bucket_elems", 0, 0, 1e12, p->bucket_elems, &p->bucket_elems) ||
        parse_impl(c, cfg, &ms->impl))
        return -1;
    if (strcmp(sched, "1f1b") == 0) p->schedule = AGOQ_SCHED_1F1B;
    else if (strcmp(sched, "interleaved") == 0) p->schedule = AGOQ_SCHED_INTERLEAVED;
    else {
        agoq_error("%s: key '%s%sschedule': unknown schedule '%s' (valid: 1f1b, interleaved)", c.file, c.prefix,
                   *c.prefix ? "." : "", sched);
        return -1;
    }
    p->num_microbatches = m ? m : sweep_keys ? 0 : p->pp; /* 0: the sweeping caller uses each point's pp */
    return 0;
}
