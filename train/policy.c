/* The trainer's run names over the memory model's policies; see policy.h. */
#include "train/policy.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"

int train_role_recomputable(agoq_role r) {
    return r == AGOQ_ROLE_QKV_IN || r == AGOQ_ROLE_FFN1_IN || r == AGOQ_ROLE_FFN2_IN || r == AGOQ_ROLE_ACT_OUT;
}

int train_act_policy_by_name(const char *name, int block, train_act_policy *out) {
    static const struct {
        const char *name, *mem;
    } map[] = {{"fp32", "bf16"}, {"bf16", "bf16"}, {"agoq", "agoq"}, {"uniform4", "int4"}, {"coat", "coat"}};
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        agoq_policy pol;
        if (!name || strcmp(name, map[i].name) != 0 || agoq_policy_by_name(map[i].mem, &pol)) continue;
        out->name = map[i].name;
        out->base = pol.id;
        memcpy(out->store, pol.act, sizeof out->store);
        if (strcmp(name, "fp32") == 0)
            for (int r = 0; r < AGOQ_ROLE_COUNT; r++) out->store[r].kind = AGOQ_STORE_FP32;
        if (strcmp(name, "coat") == 0)
            out->store[AGOQ_ROLE_QKV_IN] = out->store[AGOQ_ROLE_OUTPROJ_IN] = out->store[AGOQ_ROLE_FC1_OUT];
        for (int r = 0; r < AGOQ_ROLE_COUNT; r++)
            if (out->store[r].kind == AGOQ_STORE_QUANT) out->store[r].q.block = block;
        return 0;
    }
    return -1;
}

void train_act_policy_to_mem(const train_act_policy *p, agoq_policy *out) {
    agoq_policy_by_name(agoq_policy_name(p->base), out);
    memcpy(out->act, p->store, sizeof out->act);
    out->grad.kind = AGOQ_STORE_FP32;
    out->moments.kind = AGOQ_STORE_FP32;
}

void train_act_store(const agoq_store *st, const float *src, size_t rows, size_t cols, float *dst) {
    size_t n = rows * cols;
    switch (st->kind) {
    case AGOQ_STORE_FP32:
        if (dst != src) memcpy(dst, src, n * sizeof(float));
        break;
    case AGOQ_STORE_NATIVE:
        for (size_t i = 0; i < n; i++) dst[i] = agoq_round_bf16(src[i]);
        break;
    case AGOQ_STORE_QUANT: {
        agoq_qtensor q; /* one row's planes, reused: rows are independent block runs (rowq) */
        if (agoq_qtensor_alloc(&q, &st->q, cols) != 0) abort();
        for (size_t r = 0; r < rows; r++) {
            agoq_quantize_ref(&st->q, src + r * cols, cols, &q);
            agoq_dequantize_ref(&st->q, &q, dst + r * cols);
        }
        agoq_qtensor_free(&q);
        break;
    }
    case AGOQ_STORE_RECOMPUTE: break;
    }
}

size_t train_act_store_bytes(const agoq_store *st, size_t rows, size_t cols) {
    switch (st->kind) {
    case AGOQ_STORE_FP32: return rows * cols * 4;
    case AGOQ_STORE_NATIVE: return rows * cols * 2;
    case AGOQ_STORE_QUANT: return rows * agoq_qtensor_bytes(&st->q, cols);
    case AGOQ_STORE_RECOMPUTE: return 0;
    }
    return 0;
}
