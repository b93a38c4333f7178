/* Measured step records as simulator inputs; counting conventions in step_calib.h. */
#include "sim/step_calib.h"

#include <math.h>
#include <string.h>

#include "core/common.h"
#include "core/results.h"
#include "models/memory.h"
#include "sim/step_model.h"

static double num(const cJSON *o, const char *k) { return results_get_num(o, k); }

static const char *str(const cJSON *o, const char *k) { return results_get_str(o, k); }

int agoq_step_meas_read(const cJSON *rec, agoq_step_meas *m) {
    memset(m, 0, sizeof *m);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(rec, "op_ms");
    if (strcmp(str(rec, "source"), "measured") || cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(rec, "fits")) ||
        !cJSON_IsObject(ops) || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "op_profile_complete")))
        return -1;
    agoq_model_card card;
    /* records name the card they ran; an unknown one says so on stderr and is skipped (no
     * agoq_error_capture here: it does not nest, and callers may be capturing) */
    int bad = agoq_model_load(str(rec, "model"), &card);
    const double tp = num(rec, "tp"), b = num(rec, "micro_batch"), s = num(rec, "seq"), mb = num(rec, "micro_batches"),
                 L = num(rec, "layers"), k = num(rec, "recomputed_layers");
    const cJSON *mm = cJSON_GetObjectItemCaseSensitive(rec, "memory_model");
    m->params = num(mm, "params");
    m->step_ms = num(rec, "step_ms");
    if (bad || !(tp >= 1 && b >= 1 && s >= 1 && mb >= 1 && L >= 1 && k >= 0 && k <= L) || !(m->step_ms > 0) ||
        !(m->params > 0))
        return -1;
    m->tokens = b * s;
    m->token_layers = mb * (L + k) * m->tokens;
    m->elem_units = m->token_layers * (double)(card.hidden + card.ffn) / tp;
    m->gemm_flops = mb * (3.0 * L + k) * agoq_layer_gemm_flops_fwd(&card, m->tokens) / tp;
    m->attn_flops = mb * (3.5 * L + k) * agoq_layer_attn_flops_fwd(&card, b, s) / tp;
    const int fp32_opt = strcmp(str(rec, "grad"), "fp32") == 0 && strcmp(str(rec, "moments"), "fp32") == 0;
    m->opt_bytes = fp32_opt ? 30.0 * m->params : 0.0;
    const cJSON *op;
    cJSON_ArrayForEach(op, ops) {
        if (!cJSON_IsNumber(op)) continue;
        const double v = op->valuedouble;
        const char *n = op->string;
        m->op_sum_ms += v;
        if (!strcmp(n, "gemm_fwd") || !strcmp(n, "gemm_dgrad") || !strcmp(n, "gemm_wgrad")) m->gemm_ms += v;
        else if (!strcmp(n, "attn_fwd") || !strcmp(n, "attn_bwd")) m->attn_ms += v;
        else if (!strcmp(n, "optimizer")) m->opt_ms += v;
        else m->other_ms += v;
    }
    return m->gemm_ms > 0 && m->attn_ms > 0 ? 0 : -1;
}

int agoq_step_meas_derive_known(const char *d) {
    return d && (!strcmp(d, "gemm_tflops") || !strcmp(d, "attention_tflops") || !strcmp(d, "optimizer_GBps") ||
                 !strcmp(d, "elementwise_ns"));
}

double agoq_step_meas_derive(const cJSON *rec, const char *d) {
    agoq_step_meas m;
    if (agoq_step_meas_read(rec, &m)) return NAN;
    if (!strcmp(d, "gemm_tflops")) return m.gemm_flops / m.gemm_ms / 1e9;
    if (!strcmp(d, "attention_tflops")) return m.attn_flops / m.attn_ms / 1e9;
    if (!strcmp(d, "optimizer_GBps") && m.opt_bytes > 0 && m.opt_ms > 0) return m.opt_bytes / m.opt_ms / 1e6;
    if (!strcmp(d, "elementwise_ns") && m.other_ms > 0) return 1e6 * m.other_ms / m.elem_units;
    return NAN;
}
