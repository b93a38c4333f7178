/* Saved-tensor inventories of one decoder layer (see inventory.h for the three kinds).
 *
 * LLAMA follows what PyTorch's autograd keeps for the layer written in
 * validation/saved_tensors.py (bf16, pure torch, parameters and constant buffers excluded,
 * storages counted once):
 *   fused RMSNorm   custom Function: save_for_backward(x, rstd)         x bf16, rstd fp32 [b,s]
 *   eager RMSNorm   x.float() (saved by pow and mul), rsqrt(var) [b,s] fp32, the normalized bf16
 *                   copy (saved by the weight multiply); the layer input itself is not saved
 *   q/k/v/o linears save their input (the norm output once: one storage for three GEMMs)
 *   RoPE            saves only the cos/sin buffers (constant, excluded)
 *   flash (SDPA)    query, key, value, output, logsumexp [b,a,s] fp32; the output is a view of a
 *                   [b,s,a,d] buffer, so o_proj's input is the same storage (alias)
 *   eager attention bmm saves q and k, softmax (computed in fp32) saves its fp32 result, the bf16
 *                   probs and v are saved by the second bmm, o_proj saves a fresh [b,s,h] copy
 *   SwiGLU          silu saves gate, mul saves silu(gate) and up, down saves silu(gate)*up
 * With repeat_kv (HF), k and v reach attention as materialized [b,a,s,d] copies. */
#include "models/inventory.h"

#include <stdio.h>
#include <string.h>

#define E(n, blk, role, bytes, d0, d1, d2, d3)                                                      \
    (agoq_saved_tensor) {                                                                           \
        n, AGOQ_BLOCK_##blk, AGOQ_ROLE_##role, bytes,                                               \
            {AGOQ_DIM_##d0, AGOQ_DIM_##d1, AGOQ_DIM_##d2, AGOQ_DIM_##d3}, -1                        \
    }

static const char *const g_role_names[AGOQ_ROLE_COUNT] = {
    [AGOQ_ROLE_NORM_IN] = "norm_in",       [AGOQ_ROLE_STAT] = "stat",
    [AGOQ_ROLE_QKV_IN] = "qkv_in",         [AGOQ_ROLE_ATTENTION] = "attention",
    [AGOQ_ROLE_OUTPROJ_IN] = "outproj_in", [AGOQ_ROLE_FFN1_IN] = "ffn1_in",
    [AGOQ_ROLE_FC1_OUT] = "fc1_out",       [AGOQ_ROLE_ACT_OUT] = "act_out",
    [AGOQ_ROLE_FFN2_IN] = "ffn2_in",       [AGOQ_ROLE_MASK] = "mask",
    [AGOQ_ROLE_LOGITS] = "logits",
};
static const char *const g_block_names[AGOQ_BLOCK_COUNT] = {"norm", "attention", "mlp", "head"};
static const char *const g_kind_names[AGOQ_LAYER_KIND_COUNT] = {"llama", "paper", "gpt"};
static const char g_dim_letter[AGOQ_DIM_COUNT] = {'1', 'b', 's', 'h', 'f', 'a', 'k', 'd', 'V'};

/* One RMSNorm ahead of `out_role`'s GEMM: what it saves plus the norm output the GEMM saves. */
static size_t llama_norm(agoq_saved_tensor *o, const agoq_layer_impl *impl, const char *const names[4],
                         agoq_block out_block, agoq_role out_role) {
    size_t n = 0;
    if (impl->fused_norm) {
        o[n++] = E(names[0], NORM, NORM_IN, 2, B, S, H, ONE);
    } else {
        o[n++] = E(names[0], NORM, NORM_IN, 4, B, S, H, ONE); /* x.float() */
        o[n++] = E(names[2], NORM, NORM_IN, 2, B, S, H, ONE); /* normalized bf16, for dweight */
    }
    if (!impl->fused_norm || !impl->norm_no_rstd) o[n++] = E(names[1], NORM, STAT, 4, B, S, ONE, ONE);
    o[n] = E(names[3], NORM, QKV_IN, 2, B, S, H, ONE);
    o[n].block = out_block;
    o[n].role = out_role;
    return n + 1;
}

static size_t llama(const agoq_layer_impl *impl, agoq_saved_tensor *o) {
    static const char *const n1[4] = {"norm1.x", "norm1.rstd", "norm1.xhat", "attn.qkv_in"};
    static const char *const n2[4] = {"norm2.x", "norm2.rstd", "norm2.xhat", "mlp.ffn1_in"};
    size_t n = llama_norm(o, impl, n1, AGOQ_BLOCK_ATTENTION, AGOQ_ROLE_QKV_IN);
    o[n++] = E("attn.q", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.k", ATTENTION, ATTENTION, 2, B, S, KV, D);
    o[n++] = E("attn.v", ATTENTION, ATTENTION, 2, B, S, KV, D);
    if (impl->gqa_repeat) o[n - 2].dims[2] = o[n - 1].dims[2] = AGOQ_DIM_A;
    if (impl->flash_attn) {
        size_t out = n;
        o[n++] = E("attn.out", ATTENTION, ATTENTION, 2, B, S, A, D);
        o[n++] = E("attn.lse", ATTENTION, STAT, 4, B, A, S, ONE);
        o[n] = E("attn.outproj_in", ATTENTION, OUTPROJ_IN, 2, B, S, A, D);
        o[n++].alias_of = (int)out;
    } else {
        o[n++] = E("attn.softmax", ATTENTION, ATTENTION, 4, B, A, S, S);
        o[n++] = E("attn.probs", ATTENTION, ATTENTION, 2, B, A, S, S);
        o[n++] = E("attn.outproj_in", ATTENTION, OUTPROJ_IN, 2, B, S, A, D);
    }
    n += llama_norm(o + n, impl, n2, AGOQ_BLOCK_MLP, AGOQ_ROLE_FFN1_IN);
    o[n++] = E("mlp.gate", MLP, FC1_OUT, 2, B, S, F, ONE);
    o[n++] = E("mlp.up", MLP, FC1_OUT, 2, B, S, F, ONE);
    if (!impl->swiglu_fused) o[n++] = E("mlp.silu_out", MLP, ACT_OUT, 2, B, S, F, ONE);
    o[n++] = E("mlp.ffn2_in", MLP, FFN2_IN, 2, B, S, F, ONE);
    return n;
}

/* The paper's Table 1 rows. It lists attention as 5 units without naming them; q, k, v and
 * the output are four, the fifth is kept as "attn.unlisted" so the total is the paper's. The
 * caller sets f = 4h. */
static size_t paper(agoq_saved_tensor *o) {
    size_t n = 0;
    o[n++] = E("norm1.x", NORM, NORM_IN, 4, B, S, H, ONE);
    o[n++] = E("attn.qkv_in", ATTENTION, QKV_IN, 2, B, S, H, ONE);
    o[n++] = E("attn.q", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.k", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.v", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.out", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.unlisted", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.outproj_in", ATTENTION, OUTPROJ_IN, 2, B, S, A, D);
    o[n++] = E("norm2.x", NORM, NORM_IN, 4, B, S, H, ONE);
    o[n++] = E("mlp.ffn1_in", MLP, FFN1_IN, 2, B, S, H, ONE);
    o[n++] = E("mlp.gate", MLP, FC1_OUT, 2, B, S, F, ONE);
    o[n++] = E("mlp.up", MLP, FC1_OUT, 2, B, S, F, ONE);
    o[n++] = E("mlp.silu_out", MLP, ACT_OUT, 2, B, S, F, ONE);
    o[n++] = E("mlp.ffn2_in", MLP, FFN2_IN, 2, B, S, F, ONE);
    return n;
}

/* Korthikanti et al. section 4.1, term by term (bf16, 1-byte dropout masks). */
static size_t gpt(agoq_saved_tensor *o) {
    size_t n = 0;
    o[n++] = E("ln1.x", NORM, NORM_IN, 2, B, S, H, ONE);
    o[n++] = E("attn.qkv_in", ATTENTION, QKV_IN, 2, B, S, H, ONE);
    o[n++] = E("attn.q", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.k", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.softmax", ATTENTION, ATTENTION, 2, B, A, S, S);
    o[n++] = E("attn.softmax_dropout_mask", ATTENTION, MASK, 1, B, A, S, S);
    o[n++] = E("attn.probs", ATTENTION, ATTENTION, 2, B, A, S, S);
    o[n++] = E("attn.v", ATTENTION, ATTENTION, 2, B, S, A, D);
    o[n++] = E("attn.outproj_in", ATTENTION, OUTPROJ_IN, 2, B, S, A, D);
    o[n++] = E("attn.dropout_mask", ATTENTION, MASK, 1, B, S, H, ONE);
    o[n++] = E("ln2.x", NORM, NORM_IN, 2, B, S, H, ONE);
    o[n++] = E("mlp.ffn1_in", MLP, FFN1_IN, 2, B, S, H, ONE);
    o[n++] = E("mlp.gelu_in", MLP, FC1_OUT, 2, B, S, F, ONE);
    o[n++] = E("mlp.ffn2_in", MLP, FFN2_IN, 2, B, S, F, ONE);
    o[n++] = E("mlp.dropout_mask", MLP, MASK, 1, B, S, H, ONE);
    return n;
}

size_t agoq_inventory(agoq_layer_kind kind, const agoq_layer_impl *impl, agoq_saved_tensor *out) {
    static const agoq_layer_impl dflt = {1, 1, 0, 0, 0};
    switch (kind) {
    case AGOQ_LAYER_LLAMA: return llama(impl ? impl : &dflt, out);
    case AGOQ_LAYER_PAPER: return paper(out);
    case AGOQ_LAYER_GPT: return gpt(out);
    default: return 0;
    }
}

size_t agoq_head_inventory(agoq_layer_kind kind, agoq_saved_tensor *out) {
    size_t n = 0;
    out[n++] = E("head.norm_x", HEAD, NORM_IN, kind == AGOQ_LAYER_PAPER ? 4 : 2, B, S, H, ONE);
    if (kind != AGOQ_LAYER_PAPER) out[n++] = E("head.norm_rstd", HEAD, STAT, 4, B, S, ONE, ONE);
    out[n++] = E("head.gemm_in", HEAD, QKV_IN, 2, B, S, H, ONE);
    out[n++] = E("head.logits", HEAD, LOGITS, 4, B, S, V, ONE);
    return n;
}

static double dim_value(agoq_dim dim, const agoq_dims *d) {
    switch (dim) {
    case AGOQ_DIM_B: return d->b;
    case AGOQ_DIM_S: return d->s;
    case AGOQ_DIM_H: return d->h;
    case AGOQ_DIM_F: return d->f;
    case AGOQ_DIM_A: return d->a;
    case AGOQ_DIM_KV: return d->kv;
    case AGOQ_DIM_D: return d->d;
    case AGOQ_DIM_V: return d->v;
    default: return 1.0;
    }
}

double agoq_saved_elems(const agoq_saved_tensor *t, const agoq_dims *d) {
    double e = 1.0;
    for (int i = 0; i < AGOQ_SAVED_MAX_DIMS; i++) e *= dim_value(t->dims[i], d);
    return e;
}

void agoq_saved_rows_cols(const agoq_saved_tensor *t, const agoq_dims *d, double *rows, double *cols) {
    double r = 1.0, c = 1.0;
    int seen_s = 0;
    for (int i = 0; i < AGOQ_SAVED_MAX_DIMS; i++) {
        double v = dim_value(t->dims[i], d);
        if (seen_s) c *= v;
        else r *= v;
        if (t->dims[i] == AGOQ_DIM_S) seen_s = 1;
    }
    if (!seen_s) {
        c = r;
        r = 1.0;
    }
    *rows = r;
    *cols = c;
}

int agoq_saved_tp_split(const agoq_saved_tensor *t) {
    for (int i = 0; i < AGOQ_SAVED_MAX_DIMS; i++)
        if (t->dims[i] == AGOQ_DIM_A || t->dims[i] == AGOQ_DIM_KV || t->dims[i] == AGOQ_DIM_F ||
            t->dims[i] == AGOQ_DIM_V)
            return 1;
    return 0;
}

const char *agoq_saved_shape(const agoq_saved_tensor *t, char *buf, size_t len) {
    size_t k = 0;
    for (int i = 0; i < AGOQ_SAVED_MAX_DIMS && k + 3 < len; i++) {
        if (t->dims[i] == AGOQ_DIM_ONE) continue;
        if (k) buf[k++] = '*';
        buf[k++] = g_dim_letter[t->dims[i]];
    }
    if (k == 0 && len > 1) buf[k++] = '1';
    if (len) buf[k < len ? k : len - 1] = '\0';
    return buf;
}

const char *agoq_layer_kind_name(agoq_layer_kind k) {
    return (unsigned)k < AGOQ_LAYER_KIND_COUNT ? g_kind_names[k] : "?";
}
int agoq_layer_kind_by_name(const char *s) {
    for (int i = 0; i < AGOQ_LAYER_KIND_COUNT; i++)
        if (s && strcmp(s, g_kind_names[i]) == 0) return i;
    return -1;
}
const char *agoq_block_name(agoq_block b) { return (unsigned)b < AGOQ_BLOCK_COUNT ? g_block_names[b] : "?"; }
const char *agoq_role_name(agoq_role r) { return (unsigned)r < AGOQ_ROLE_COUNT ? g_role_names[r] : "?"; }
int agoq_role_by_name(const char *s) {
    for (int i = 0; i < AGOQ_ROLE_COUNT; i++)
        if (s && strcmp(s, g_role_names[i]) == 0) return i;
    return -1;
}
