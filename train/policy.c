/* Saved-activation policies; see policy.h. */
#include "train/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant/qspec.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"

const char *const train_act_class_names[ACT_CLASS_COUNT] = {
    "norm_in", "norm_out", "qkv", "attn_probs", "attn_out", "fc1_out", "fc2_in"};

int train_act_class_recomputable(train_act_class c) { return c == ACT_NORM_OUT || c == ACT_FC2_IN; }

static train_store st_plain(train_store_kind k) {
    train_store s;
    memset(&s, 0, sizeof s);
    s.kind = k;
    return s;
}

static train_store st_quant(agoq_format f, int block) {
    train_store s = st_plain(TS_QUANT);
    if (agoq_qspec_make(f, block, &s.q)) abort(); /* blocks are checked where they are read */
    return s;
}

int train_act_policy_by_name(const char *name, int block, train_act_policy *out) {
    memset(out, 0, sizeof *out);
    train_store fp4 = st_quant(AGOQ_FMT_FP4_E2M1, block), fp8 = st_quant(AGOQ_FMT_FP8_E4M3, block);
    train_store bf16 = st_plain(TS_BF16), rec = st_plain(TS_RECOMPUTE);
    for (int c = 0; c < ACT_CLASS_COUNT; c++) out->store[c] = st_plain(TS_FP32);
    if (strcmp(name, "fp32") == 0) {
        out->name = "fp32";
    } else if (strcmp(name, "bf16") == 0) {
        out->name = "bf16";
        for (int c = 0; c < ACT_CLASS_COUNT; c++) out->store[c] = bf16;
    } else if (strcmp(name, "agoq") == 0) {
        out->name = "agoq";
        out->store[ACT_NORM_IN] = fp4;
        out->store[ACT_NORM_OUT] = rec;
        out->store[ACT_QKV] = bf16;
        out->store[ACT_PROBS] = bf16;
        out->store[ACT_ATTN_OUT] = fp4;
        out->store[ACT_FC1_OUT] = fp4;
        out->store[ACT_FC2_IN] = rec;
    } else if (strcmp(name, "uniform4") == 0) {
        out->name = "uniform4";
        for (int c = 0; c < ACT_CLASS_COUNT; c++) out->store[c] = fp4;
    } else if (strcmp(name, "coat") == 0) {
        out->name = "coat";
        for (int c = 0; c < ACT_CLASS_COUNT; c++) out->store[c] = fp8;
        out->store[ACT_QKV] = bf16;
        out->store[ACT_PROBS] = bf16;
    } else {
        return -1;
    }
    return 0;
}

void train_act_store(const train_store *st, const float *src, size_t rows, size_t cols, float *dst) {
    size_t n = rows * cols;
    switch (st->kind) {
    case TS_FP32:
        if (dst != src) memcpy(dst, src, n * sizeof(float));
        break;
    case TS_BF16:
        for (size_t i = 0; i < n; i++) dst[i] = agoq_round_bf16(src[i]);
        break;
    case TS_QUANT: {
        agoq_qtensor q; /* one row's planes, reused: rows are independent block runs (rowq) */
        if (agoq_qtensor_alloc(&q, &st->q, cols) != 0) abort();
        for (size_t r = 0; r < rows; r++) {
            agoq_quantize_ref(&st->q, src + r * cols, cols, &q);
            agoq_dequantize_ref(&st->q, &q, dst + r * cols);
        }
        agoq_qtensor_free(&q);
        break;
    }
    case TS_RECOMPUTE: break;
    }
}

size_t train_act_store_bytes(const train_store *st, size_t rows, size_t cols) {
    switch (st->kind) {
    case TS_FP32: return rows * cols * 4;
    case TS_BF16: return rows * cols * 2;
    case TS_QUANT: return rows * agoq_qtensor_bytes(&st->q, cols);
    case TS_RECOMPUTE: return 0;
    }
    return 0;
}

const char *train_store_label(const train_store *st, char *buf, size_t len) {
    switch (st->kind) {
    case TS_FP32: snprintf(buf, len, "fp32"); break;
    case TS_BF16: snprintf(buf, len, "bf16"); break;
    case TS_QUANT: agoq_qspec_label(&st->q, buf, len); break;
    case TS_RECOMPUTE: snprintf(buf, len, "recompute"); break;
    }
    return buf;
}
