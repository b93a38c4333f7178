/* The probe dump on disk (step.h agoq_step_dump_write), read by validation/hf_step.py:
 *   DIR/index.json        shapes, policy, eps, rope base, and the file of each tensor
 *   DIR/w_<l>_<param>.bf16, g_<l>_<param>.f32, x_<mb>.bf16, dy_<mb>.bf16, y_<mb>.bf16
 * Raw little-endian arrays, row-major (bf16 as uint16). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/common.h"
#include "step/step.h"

static int write_raw(const char *dir, const char *name, const void *p, size_t bytes) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return agoq_error("step dump: cannot create %s: %s", path, strerror(errno)), -1;
    size_t w = fwrite(p, 1, bytes, f);
    if (fclose(f) != 0 || w != bytes) return agoq_error("step dump: short write to %s", path), -1;
    return 0;
}

int agoq_step_dump_write(const agoq_step_config *c, const agoq_step_dump *d, const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return agoq_error("step dump: cannot create %s: %s", dir, strerror(errno)), -1;
    const long tp = c->ms.par.tp;
    cJSON *o = cJSON_CreateObject(), *files = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", c->card.name);
    cJSON_AddStringToObject(o, "policy", agoq_policy_name(c->ms.pol.id));
    cJSON_AddNumberToObject(o, "hidden", (double)c->card.hidden);
    cJSON_AddNumberToObject(o, "heads", (double)(c->card.heads / tp));
    cJSON_AddNumberToObject(o, "kv_heads", (double)(c->card.kv_heads >= tp ? c->card.kv_heads / tp : 1));
    cJSON_AddNumberToObject(o, "head_dim", (double)c->card.head_dim);
    cJSON_AddNumberToObject(o, "ffn", (double)(c->card.ffn / tp));
    cJSON_AddNumberToObject(o, "layers", (double)c->layers);
    cJSON_AddNumberToObject(o, "seq", (double)c->ms.par.seq);
    cJSON_AddNumberToObject(o, "micro_batch", (double)c->ms.par.micro_batch);
    cJSON_AddNumberToObject(o, "micro_batches", (double)d->nmb);
    cJSON_AddNumberToObject(o, "norm_eps", (double)c->norm_eps);
    cJSON_AddNumberToObject(o, "rope_base", (double)c->rope_base);
    cJSON_AddItemToObject(o, "files", files);
    char name[128];
    int rc = 0;
    for (size_t i = 0; !rc && i < d->nparams; i++) {
        const int k = (int)(i % AGOQ_PARAM_COUNT);
        const size_t n = (size_t)d->prow[k] * (size_t)d->pcol[k];
        snprintf(name, sizeof name, "w_%zu_%s.bf16", i / AGOQ_PARAM_COUNT, agoq_param_name(k));
        rc = write_raw(dir, name, d->weights[i], n * 2);
        cJSON_AddStringToObject(files, name, "bf16");
        snprintf(name, sizeof name, "g_%zu_%s.f32", i / AGOQ_PARAM_COUNT, agoq_param_name(k));
        rc = rc || write_raw(dir, name, d->grads[i], n * 4);
        cJSON_AddStringToObject(files, name, "f32");
    }
    const char *const kinds[3] = {"x", "dy", "y"};
    uint16_t **const arr[3] = {d->x, d->dy, d->y};
    for (size_t i = 0; !rc && i < d->nmb; i++)
        for (int k = 0; k < 3 && !rc; k++) {
            snprintf(name, sizeof name, "%s_%zu.bf16", kinds[k], i);
            rc = write_raw(dir, name, arr[k][i], d->tokens * d->hidden * 2);
            cJSON_AddStringToObject(files, name, "bf16");
        }
    char *txt = cJSON_Print(o);
    cJSON_Delete(o);
    if (!rc) rc = write_raw(dir, "index.json", txt, strlen(txt));
    cJSON_free(txt);
    return rc;
}
