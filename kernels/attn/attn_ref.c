/* Plain-C reference of causal / GQA scaled dot-product attention (the specification that
 * tests/cuda/attn/test_attn_cuda.c holds cuDNN's fused kernels to). Inputs are the bf16 tensors of attn.h
 * (same layouts and strides); all math is in double (scores, softmax, sums) and the outputs are
 * rounded once to fp32. Query head h reads kv head h / (heads / kv_heads).
 *
 * Forward:  s_ij = scale * q_i . k_j (j <= i when causal), lse_i = log sum_j exp(s_ij),
 *           P_ij = exp(s_ij - lse_i), o_i = sum_j P_ij v_j.
 * Backward (L = sum dout . o): D_i = dout_i . o_i, dP_ij = dout_i . v_j, dS_ij = P_ij (dP_ij - D_i),
 *           dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i, dv_j = sum_i P_ij dout_i,
 *           dk / dv summed over the query heads that share a kv head.
 * O(b * heads * s^2 * head_dim) time: meant for test shapes (s up to a few hundred). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn/attn.h"
#include "kernels/quant/quant_math.h"

/* One query row: fills p[0..n) with P_ij (n = number of visible keys) and returns lse_i. */
static double row_probs(const agoq_attn_desc *d, const uint16_t *q, const uint16_t *k, int bi, int h, int i,
                        double *p, int *n_out) {
    const int D = d->head_dim, g = h / (d->heads / d->kv_heads);
    const int n = d->causal ? i + 1 : d->s;
    const uint16_t *qi = q + ((int64_t)bi * d->s + i) * d->q_row + (int64_t)h * D;
    double m = -INFINITY;
    for (int j = 0; j < n; j++) {
        const uint16_t *kj = k + ((int64_t)bi * d->s + j) * d->kv_row + (int64_t)g * D;
        double acc = 0.0;
        for (int c = 0; c < D; c++) acc += (double)agoq_bf16_to_f32(qi[c]) * (double)agoq_bf16_to_f32(kj[c]);
        p[j] = (double)d->scale * acc;
        if (p[j] > m) m = p[j];
    }
    double z = 0.0;
    for (int j = 0; j < n; j++) z += exp(p[j] - m);
    const double lse = m + log(z);
    for (int j = 0; j < n; j++) p[j] = exp(p[j] - lse);
    *n_out = n;
    return lse;
}

/* o_i (double, head_dim values) = sum_j P_ij v_j. */
static void row_out(const agoq_attn_desc *d, const uint16_t *v, int bi, int h, const double *p, int n, double *o) {
    const int D = d->head_dim, g = h / (d->heads / d->kv_heads);
    for (int c = 0; c < D; c++) o[c] = 0.0;
    for (int j = 0; j < n; j++) {
        const uint16_t *vj = v + ((int64_t)bi * d->s + j) * d->kv_row + (int64_t)g * D;
        for (int c = 0; c < D; c++) o[c] += p[j] * (double)agoq_bf16_to_f32(vj[c]);
    }
}

void agoq_attn_ref_fwd(const agoq_attn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, float *o,
                       float *lse) {
    const int D = d->head_dim;
    double *p = malloc((size_t)d->s * sizeof(double)), *orow = malloc((size_t)D * sizeof(double));
    for (int bi = 0; bi < d->b; bi++)
        for (int h = 0; h < d->heads; h++)
            for (int i = 0; i < d->s; i++) {
                int n = 0;
                const double l = row_probs(d, q, k, bi, h, i, p, &n);
                if (lse) lse[((int64_t)bi * d->heads + h) * d->s + i] = (float)l;
                row_out(d, v, bi, h, p, n, orow);
                float *oi = o + ((int64_t)bi * d->s + i) * d->o_row + (int64_t)h * D;
                for (int c = 0; c < D; c++) oi[c] = (float)orow[c];
            }
    free(p);
    free(orow);
}

void agoq_attn_ref_bwd(const agoq_attn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                       const uint16_t *dout, float *dq, float *dk, float *dv) {
    const int D = d->head_dim, S = d->s, group = d->heads / d->kv_heads;
    /* dk, dv accumulate over query rows and grouped heads: double scratch [b, kv_heads, s, D]. */
    const size_t nkv = (size_t)d->b * d->kv_heads * S * D;
    double *adk = calloc(nkv, sizeof(double)), *adv = calloc(nkv, sizeof(double));
    double *p = malloc((size_t)S * sizeof(double)), *orow = malloc((size_t)D * sizeof(double));
    double *dqrow = malloc((size_t)D * sizeof(double));
    for (int bi = 0; bi < d->b; bi++)
        for (int h = 0; h < d->heads; h++) {
            const int g = h / group;
            for (int i = 0; i < S; i++) {
                int n = 0;
                row_probs(d, q, k, bi, h, i, p, &n);
                row_out(d, v, bi, h, p, n, orow);
                const int64_t tq = (int64_t)bi * S + i;
                const uint16_t *doi = dout + tq * d->o_row + (int64_t)h * D, *qi = q + tq * d->q_row + (int64_t)h * D;
                double Di = 0.0;
                for (int c = 0; c < D; c++) Di += (double)agoq_bf16_to_f32(doi[c]) * orow[c];
                for (int c = 0; c < D; c++) dqrow[c] = 0.0;
                for (int j = 0; j < n; j++) {
                    const int64_t tk = (int64_t)bi * S + j;
                    const uint16_t *kj = k + tk * d->kv_row + (int64_t)g * D, *vj = v + tk * d->kv_row + (int64_t)g * D;
                    double dp = 0.0;
                    for (int c = 0; c < D; c++) dp += (double)agoq_bf16_to_f32(doi[c]) * (double)agoq_bf16_to_f32(vj[c]);
                    const double ds = p[j] * (dp - Di) * (double)d->scale;
                    double *akj = adk + (((size_t)bi * d->kv_heads + g) * S + j) * D;
                    double *avj = adv + (((size_t)bi * d->kv_heads + g) * S + j) * D;
                    for (int c = 0; c < D; c++) {
                        dqrow[c] += ds * (double)agoq_bf16_to_f32(kj[c]);
                        akj[c] += ds * (double)agoq_bf16_to_f32(qi[c]);
                        avj[c] += p[j] * (double)agoq_bf16_to_f32(doi[c]);
                    }
                }
                float *dqi = dq + tq * d->q_row + (int64_t)h * D;
                for (int c = 0; c < D; c++) dqi[c] = (float)dqrow[c];
            }
        }
    for (int bi = 0; bi < d->b; bi++)
        for (int g = 0; g < d->kv_heads; g++)
            for (int j = 0; j < S; j++) {
                const size_t src = (((size_t)bi * d->kv_heads + g) * S + j) * D;
                const int64_t dst = ((int64_t)bi * S + j) * d->kv_row + (int64_t)g * D;
                for (int c = 0; c < D; c++) {
                    dk[dst + c] = (float)adk[src + c];
                    dv[dst + c] = (float)adv[src + c];
                }
            }
    free(adk);
    free(adv);
    free(p);
    free(orow);
    free(dqrow);
}
