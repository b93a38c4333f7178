/* Storage policies of the memory model: for every saved-activation role, the gradients and
 * Adam's moments, whether they are kept in their native dtype, widened, quantized (a format of
 * kernels/quant/formats.h) or recomputed.
 *   bf16          everything native; bf16 gradients, fp32 master + fp32 m, v (16 B/param)
 *   coat          FP8 E4M3 (block 128) for norm inputs, FC1 input, SwiGLU and FC2 input; QKV
 *                 input, attention and out-projection input bf16 (the paper's Table 1 COAT
 *                 column); m, v FP8 E4M3 block 128 (COAT's FP8 optimizer states)
 *   int8 / int4   every activation quantized (int8 / fp4_e2m1, block 128), attention included;
 *                 statistics, masks and logits kept; Adam states as bf16
 *   agoq          norm inputs, out-projection input and FC1 output (gate, up) fp4_e2m1 block 128
 *                 with fp32 scales; QKV input, FC1 input, SiLU output and FC2 input recomputed;
 *                 attention bf16; gradients and m, v 8-bit dynamic code (dyn8, block 256)
 *   agoq_balanced agoq plus per-stage widths (see memory.h) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant/qspec.h"
#include "models/memory.h"

static const char *const g_policy_names[AGOQ_POLICY_COUNT] = {"bf16", "coat", "int8", "int4", "agoq",
                                                               "agoq_balanced"};

const char *agoq_policy_name(agoq_policy_id id) {
    return (unsigned)id < AGOQ_POLICY_COUNT ? g_policy_names[id] : "?";
}

const char *agoq_policy_names(void) { return "bf16, coat, int8, int4, agoq, agoq_balanced"; }

static agoq_store quant(agoq_format f, int block) {
    agoq_store s = {AGOQ_STORE_QUANT, agoq_qconfig_default(f)};
    s.q.block = block;
    return s;
}

static void set_roles(agoq_policy *p, const agoq_role *roles, size_t n, agoq_store st) {
    for (size_t i = 0; i < n; i++) p->act[roles[i]] = st;
}

int agoq_policy_by_name(const char *name, agoq_policy *out) {
    int id = -1;
    for (int i = 0; i < AGOQ_POLICY_COUNT; i++)
        if (name && strcmp(name, g_policy_names[i]) == 0) id = i;
    if (id < 0) return -1;
    memset(out, 0, sizeof *out);
    out->id = (agoq_policy_id)id;
    out->master_bytes = 4;
    out->grad.kind = AGOQ_STORE_NATIVE;
    out->moments.kind = AGOQ_STORE_FP32;
    /* memset left every act[] at NATIVE */
    static const agoq_role all_data[] = {AGOQ_ROLE_NORM_IN, AGOQ_ROLE_QKV_IN, AGOQ_ROLE_ATTENTION,
                                         AGOQ_ROLE_OUTPROJ_IN, AGOQ_ROLE_FFN1_IN, AGOQ_ROLE_FC1_OUT,
                                         AGOQ_ROLE_ACT_OUT, AGOQ_ROLE_FFN2_IN};
    static const agoq_role coat_fp8[] = {AGOQ_ROLE_NORM_IN, AGOQ_ROLE_FFN1_IN, AGOQ_ROLE_FC1_OUT,
                                         AGOQ_ROLE_ACT_OUT, AGOQ_ROLE_FFN2_IN};
    static const agoq_role agoq_q4[] = {AGOQ_ROLE_NORM_IN, AGOQ_ROLE_OUTPROJ_IN, AGOQ_ROLE_FC1_OUT};
    static const agoq_role agoq_rc[] = {AGOQ_ROLE_QKV_IN, AGOQ_ROLE_FFN1_IN, AGOQ_ROLE_ACT_OUT, AGOQ_ROLE_FFN2_IN};
    const size_t nall = sizeof all_data / sizeof all_data[0];
    switch (out->id) {
    case AGOQ_POLICY_BF16: break;
    case AGOQ_POLICY_COAT:
        set_roles(out, coat_fp8, sizeof coat_fp8 / sizeof coat_fp8[0], quant(AGOQ_FMT_FP8_E4M3, 128));
        out->moments = quant(AGOQ_FMT_FP8_E4M3, 128);
        break;
    case AGOQ_POLICY_INT8: set_roles(out, all_data, nall, quant(AGOQ_FMT_INT8, 128)); break;
    case AGOQ_POLICY_INT4: set_roles(out, all_data, nall, quant(AGOQ_FMT_FP4_E2M1, 128)); break;
    case AGOQ_POLICY_AGOQ:
    case AGOQ_POLICY_AGOQ_BALANCED: {
        agoq_store rc = {AGOQ_STORE_RECOMPUTE, agoq_qconfig_default(AGOQ_FMT_FP4_E2M1)};
        set_roles(out, agoq_q4, sizeof agoq_q4 / sizeof agoq_q4[0], quant(AGOQ_FMT_FP4_E2M1, 128));
        set_roles(out, agoq_rc, sizeof agoq_rc / sizeof agoq_rc[0], rc);
        out->grad = quant(AGOQ_FMT_DYN8, 256);
        out->moments = quant(AGOQ_FMT_DYN8, 256);
        break;
    }
    default: return -1;
    }
    return 0;
}

double agoq_store_bytes(const agoq_store *st, double n, int native_bytes, int with_scales, double *scale_bytes) {
    return agoq_store_bytes_rows(st, 1.0, n, native_bytes, with_scales, scale_bytes);
}

double agoq_store_bytes_rows(const agoq_store *st, double rows, double cols, int native_bytes, int with_scales,
                             double *scale_bytes) {
    const double n = rows * cols;
    if (scale_bytes) *scale_bytes = 0.0;
    switch (st->kind) {
    case AGOQ_STORE_NATIVE: return n * native_bytes;
    case AGOQ_STORE_FP32: return n * 4.0;
    case AGOQ_STORE_RECOMPUTE: return 0.0;
    case AGOQ_STORE_QUANT: {
        if (!with_scales) return n * agoq_formats[st->q.fmt].bits / 8.0;
        /* Whole blocks: the tail block is padded (formats.h). Exact in double below 2^53. */
        double blocks = rows * ceil(cols / st->q.block);
        double codes = blocks * (double)agoq_block_code_bytes(&st->q);
        double scales = blocks * (double)agoq_scale_elem_bytes(&st->q) * (agoq_has_zeros(&st->q) ? 2 : 1);
        if (scale_bytes) *scale_bytes = scales;
        return codes + scales;
    }
    }
    return 0.0;
}

int agoq_store_parse(const char *s, agoq_store *out) {
    memset(out, 0, sizeof *out);
    if (!s) return -1;
    if (strcmp(s, "native") == 0 || strcmp(s, "bf16") == 0) return out->kind = AGOQ_STORE_NATIVE, 0;
    if (strcmp(s, "fp32") == 0) return out->kind = AGOQ_STORE_FP32, 0;
    if (strcmp(s, "recompute") == 0) return out->kind = AGOQ_STORE_RECOMPUTE, 0;
    if (agoq_qspec_from_string(s, &out->q)) return -1; /* format[/block]: the shared parser */
    out->kind = AGOQ_STORE_QUANT;
    return 0;
}

const char *agoq_store_label(const agoq_store *st, char *buf, size_t len) {
    switch (st->kind) {
    case AGOQ_STORE_NATIVE: snprintf(buf, len, "native"); break;
    case AGOQ_STORE_FP32: snprintf(buf, len, "fp32"); break;
    case AGOQ_STORE_RECOMPUTE: snprintf(buf, len, "recompute"); break;
    case AGOQ_STORE_QUANT: agoq_qspec_label(&st->q, buf, len); break;
    }
    return buf;
}
