/* The trainer's model on the step engine; see engine.h. */
#include "train/engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/common.h"

size_t train_engine_cpu_index(const train_cfg *c, size_t i, size_t j) {
    const size_t L = (size_t)c->n_layer, C = (size_t)c->d_model, F = (size_t)c->d_ff, hd = C / (size_t)c->n_head;
    size_t size[P_COUNT], off[P_COUNT], o = 0;
    train_param_sizes(c, size);
    for (int t = 0; t < P_COUNT; t++) off[t] = o, o += size[t];
    if (i == 0) return off[P_WTE] + j;
    if (i == L * 6 + 1) return off[P_LNF] + j;
    const size_t l = (i - 1) / 6;
    switch ((i - 1) % 6) {
    case 0: return off[P_LN1] + l * C + j; /* norm1 */
    case 1: {                              /* qkv [3C, C] <- (C, 3C), q and k features permuted */
        const size_t r = j / C, in = j % C, part = r / C, head = (r % C) / hd, ed = (r % C) % hd;
        const size_t dd = part < 2 ? (ed < hd / 2 ? 2 * ed : 2 * (ed - hd / 2) + 1) : ed;
        return off[P_QKV] + l * C * 3 * C + in * 3 * C + part * C + head * hd + dd;
    }
    case 2: return off[P_WO] + l * C * C + (j % C) * C + j / C;           /* out [C, C] */
    case 3: return off[P_LN2] + l * C + j;                                 /* norm2 */
    case 4: return off[P_W1] + l * C * 2 * F + (j % C) * 2 * F + j / C;   /* fc1 [2F, C] */
    default: return off[P_W2] + l * F * C + (j % F) * C + j / F;           /* fc2 [C, F] */
    }
}

void train_engine_from_cpu(const train_cfg *c, const agoq_lm *lm, const float *cpu, float *const *eng) {
    for (size_t i = 0; i < agoq_lm_tensor_count(lm); i++)
        for (size_t j = 0; j < agoq_lm_tensor_elems(lm, i); j++) eng[i][j] = cpu[train_engine_cpu_index(c, i, j)];
}

void train_engine_to_cpu(const train_cfg *c, const agoq_lm *lm, float *const *eng, float *cpu) {
    for (size_t i = 0; i < agoq_lm_tensor_count(lm); i++)
        for (size_t j = 0; j < agoq_lm_tensor_elems(lm, i); j++) cpu[train_engine_cpu_index(c, i, j)] = eng[i][j];
}

int train_engine_open(const train_cfg *c, const train_act_policy *p, uint64_t seed, agoq_lm **out) {
    char why[256] = "";
    *out = NULL;
    if (agoq_cuda_devices(why, sizeof why) <= 0)
        return agoq_error("train: backend 'cuda': no usable GPU: %s", why), -1;
    agoq_lm_config lc = {.vocab = c->vocab, .seq = c->seq_len, .batch = c->batch, .layers = c->n_layer,
                         .heads = c->n_head, .hidden = c->d_model, .ffn = c->d_ff, .rope_base = c->rope_base,
                         .norm_eps = c->norm_eps};
    train_act_policy_to_mem(p, &lc.pol);
    if (agoq_lm_open(&lc, out)) return -1;
    size_t size[P_COUNT], total = 0;
    train_param_sizes(c, size);
    for (int t = 0; t < P_COUNT; t++) total += size[t];
    const size_t nt = agoq_lm_tensor_count(*out);
    float *cpu = malloc(total * sizeof *cpu), *flat = malloc(total * sizeof *flat), **eng = calloc(nt, sizeof *eng);
    int rc = -1;
    if (!cpu || !flat || !eng) {
        agoq_error("train: out of host memory for %zu weights", total);
        goto out;
    }
    float *w = flat;
    for (size_t i = 0; i < nt; w += agoq_lm_tensor_elems(*out, i), i++) eng[i] = w;
    train_weights_draw(c, seed, cpu);
    train_engine_from_cpu(c, *out, cpu, eng);
    rc = agoq_lm_set_weights(*out, eng);
out:
    free(cpu);
    free(flat);
    free(eng);
    if (rc) {
        agoq_lm_close(*out);
        *out = NULL;
    }
    return rc;
}
