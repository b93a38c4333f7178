/* Layer kernels of the cuda training backend (ops.h's layer entries; the CPU versions are
 * train/layers.c). Same scalar math as the CPU where it is shared: RMSNorm and SwiGLU through
 * kernels/fused/fused_math.h (bit-exact on the same inputs), RoPE through a table built by layers.c's
 * tr_rope_cs (bit-exact), embedding backward in the CPU's token order (bit-exact). Sums that
 * the CPU takes sequentially (row dots, softmax denominators, the weight gradient of RMSNorm,
 * the cross-entropy mean) are taken here in a fixed parallel order: same bits on every run,
 * rounding-level differences from the CPU. Attention follows llm.c: q, k, v permuted to
 * (B, NH, T, HD), cuBLAS strided-batched GEMMs over the B * NH heads, a causal softmax kernel. */
#include <math.h>

#include "kernels/fused/fused_math.h"
#include "train/cuda_common.cuh"
#include "train/layers.h"

/* One warp per row: row index and lane of this thread (rows beyond the last return early;
 * every lane of a warp shares its row, so the warp shuffles stay convergent). */
#define WARP_ROW(row, lane)                                                                    \
    const int lane = threadIdx.x & 31;                                                         \
    const size_t row = (size_t)blockIdx.x * kWarps + threadIdx.x / 32

/* ---- RMSNorm ---- */
__global__ void k_rmsnorm_fwd(float *y, const float *x, const float *w, int rows, int c, float eps) {
    WARP_ROW(row, lane);
    if (row >= (size_t)rows) return;
    const float *xr = x + row * c;
    float ss = 0.0f;
    for (int j = lane; j < c; j += 32) ss += xr[j] * xr[j];
    const float rstd = agoq_rms_rstd(warp_sum(ss), c, eps);
    for (int j = lane; j < c; j += 32) y[row * c + j] = agoq_rms_out(xr[j], rstd, w[j]);
}

void cu_rmsnorm_fwd(train_dev *d, float *y, const float *x, const float *w, int rows, int c, float eps) {
    k_rmsnorm_fwd<<<blocks_for((size_t)rows, kWarps), kThreads>>>(y, x, w, rows, c, eps);
    cudaCheckLaunch();
}

/* dx per row (g = dy * w, as the CPU); rstd kept for the weight gradient */
__global__ void k_rmsnorm_bwd_dx(float *dx, float *rstd_out, const float *dy, const float *x, const float *w, int rows,
                                 int c, float eps) {
    WARP_ROW(row, lane);
    if (row >= (size_t)rows) return;
    const float *xr = x + row * c, *dyr = dy + row * c;
    float ss = 0.0f, dot = 0.0f;
    for (int j = lane; j < c; j += 32) {
        ss += xr[j] * xr[j];
        dot += (dyr[j] * w[j]) * xr[j];
    }
    const float rstd = agoq_rms_rstd(warp_sum(ss), c, eps), coef = agoq_rms_coef(warp_sum(dot), c, rstd);
    for (int j = lane; j < c; j += 32) dx[row * c + j] = agoq_rms_dx(xr[j], dyr[j] * w[j], rstd, coef);
    if (lane == 0) rstd_out[row] = rstd;
}

/* dw: partial[g][j] = sum over the rows of group g, in row order; then dw[j] += sum over g. */
constexpr int kRowsPerGroup = 64, kColThreads = 128;
__global__ void k_rmsnorm_dw_partial(float *partial, const float *dy, const float *x, const float *rstd, int rows,
                                     int c) {
    const int j = blockIdx.x * kColThreads + threadIdx.x, g = blockIdx.y;
    if (j >= c) return;
    const int r0 = g * kRowsPerGroup, r1 = min(rows, r0 + kRowsPerGroup);
    float acc = 0.0f;
    for (int r = r0; r < r1; r++) acc += dy[(size_t)r * c + j] * (x[(size_t)r * c + j] * rstd[r]);
    partial[(size_t)g * c + j] = acc;
}
__global__ void k_rmsnorm_dw_sum(float *dw, const float *partial, int groups, int c) {
    const int j = blockIdx.x * kColThreads + threadIdx.x;
    if (j >= c) return;
    float acc = 0.0f;
    for (int g = 0; g < groups; g++) acc += partial[(size_t)g * c + j];
    dw[j] += acc;
}

void cu_rmsnorm_bwd(train_dev *d, float *dx, float *dw, const float *dy, const float *x, const float *w, int rows,
                    int c, float eps) {
    if (dx == dy || dx == x) agoq_die("train cuda: rmsnorm backward: dx must not alias dy or x");
    const int groups = (rows + kRowsPerGroup - 1) / kRowsPerGroup;
    float *rstd = (float *)cuda_scratch(d, SCR_ROWS, (size_t)rows * sizeof(double));
    float *partial = (float *)cuda_scratch(d, SCR_PARTIAL, (size_t)groups * c * sizeof(float));
    k_rmsnorm_bwd_dx<<<blocks_for((size_t)rows, kWarps), kThreads>>>(dx, rstd, dy, x, w, rows, c, eps);
    cudaCheckLaunch();
    const unsigned col_blocks = (unsigned)((c + kColThreads - 1) / kColThreads);
    k_rmsnorm_dw_partial<<<dim3(col_blocks, (unsigned)groups), kColThreads>>>(partial, dy, x, rstd, rows, c);
    cudaCheckLaunch();
    k_rmsnorm_dw_sum<<<col_blocks, kColThreads>>>(dw, partial, groups, c);
    cudaCheckLaunch();
}

/* ---- RoPE: pair i of every head of q and k, rotated by the table's (cos, sin) at pos ---- */
__global__ void k_rope(float *qkv, const float2 *tab, int rows, int t, int c, int hd, int inverse) {
    const int half = hd / 2;
    GRID_STRIDE(idx, (size_t)rows * c) { /* c pairs per row: c/2 in q, c/2 in k */
        const size_t r = idx / c;
        const int rem = (int)(idx % c), part = rem / (c / 2), pr = rem % (c / 2), h = pr / half, i = pr % half;
        const float2 cs = tab[(size_t)(r % t) * half + i];
        const float sn = inverse ? -cs.y : cs.y;
        float *p = qkv + r * 3 * c + (size_t)part * c + (size_t)h * hd + 2 * i;
        const float x0 = p[0], x1 = p[1];
        p[0] = x0 * cs.x - x1 * sn;
        p[1] = x0 * sn + x1 * cs.x;
    }
}

void cu_rope(train_dev *d, float *qkv, int b, int t, int c, int nh, float base, int inverse) {
    cuda_state *s = cst(d);
    const int hd = c / nh, half = hd / 2;
    if (!s->rope || s->rope_t != t || s->rope_hd != hd || s->rope_base != base) {
        float2 *host = (float2 *)malloc((size_t)t * half * sizeof(float2));
        if (!host) agoq_die("train cuda: out of host memory for the RoPE table");
        for (int pos = 0; pos < t; pos++)
            for (int i = 0; i < half; i++) tr_rope_cs(pos, i, hd, base, &host[pos * half + i].x, &host[pos * half + i].y);
        if (s->rope) cudaCheck(cudaFree(s->rope));
        cudaCheck(cudaMalloc(&s->rope, (size_t)t * half * sizeof(float2)));
        cudaCheck(cudaMemcpy(s->rope, host, (size_t)t * half * sizeof(float2), cudaMemcpyHostToDevice));
        free(host);
        s->rope_t = t;
        s->rope_hd = hd;
        s->rope_base = base;
    }
    const int rows = b * t;
    k_rope<<<blocks_for((size_t)rows * c, kThreads), kThreads>>>(qkv, s->rope, rows, t, c, hd, inverse);
    cudaCheckLaunch();
}

/* ---- attention ---- */
/* heads[b][h][t][d] <-> rows[(b*T + t) * stride + h*HD + d]: one head's rows contiguous, so
 * that cuBLAS sees packed (T, HD) matrices at a fixed stride. */
__global__ void k_heads(float *heads, float *rows, int B, int T, int NH, int HD, int stride, int into_heads) {
    GRID_STRIDE(i, (size_t)B * NH * T * HD) {
        const int dd = (int)(i % HD), t = (int)(i / HD % T), h = (int)(i / ((size_t)HD * T) % NH);
        const size_t b = i / ((size_t)HD * T * NH), r = (b * T + t) * (size_t)stride + (size_t)h * HD + dd;
        if (into_heads) heads[i] = rows[r];
        else rows[r] = heads[i];
    }
}
static void to_heads(float *heads, const float *rows, int B, int T, int NH, int HD, int stride) {
    k_heads<<<blocks_for((size_t)B * NH * T * HD, kThreads), kThreads>>>(heads, (float *)rows, B, T, NH, HD, stride, 1);
    cudaCheckLaunch();
}
static void from_heads(float *rows, const float *heads, int B, int T, int NH, int HD, int stride) {
    k_heads<<<blocks_for((size_t)B * NH * T * HD, kThreads), kThreads>>>((float *)heads, rows, B, T, NH, HD, stride, 0);
    cudaCheckLaunch();
}

/* Causal softmax in place over rows of T scores (row r is query t1 = r % T): p = exp(s*scale -
 * max) / sum for t2 <= t1, 0 above the diagonal (the CPU's expression; its sum is sequential). */
__global__ void k_softmax_causal(float *att, int rows, int T, float scale) {
    WARP_ROW(row, lane);
    if (row >= (size_t)rows) return;
    const int t1 = (int)(row % T);
    float *a = att + row * T;
    float mx = -INFINITY, sum = 0.0f;
    for (int j = lane; j <= t1; j += 32) mx = fmaxf(mx, a[j] * scale);
    mx = warp_max(mx);
    for (int j = lane; j <= t1; j += 32) sum += expf(a[j] * scale - mx);
    const float inv = 1.0f / warp_sum(sum);
    for (int j = lane; j < T; j += 32) a[j] = j <= t1 ? expf(a[j] * scale - mx) * inv : 0.0f;
}

/* Softmax backward in place on datt: ds = p (datt - <p, datt>) * scale below the diagonal. */
__global__ void k_softmax_causal_bwd(float *datt, const float *att, int rows, int T, float scale) {
    WARP_ROW(row, lane);
    if (row >= (size_t)rows) return;
    const int t1 = (int)(row % T);
    const float *p = att + row * T;
    float *da = datt + row * T, dot = 0.0f;
    for (int j = lane; j <= t1; j += 32) dot += p[j] * da[j];
    dot = warp_sum(dot);
    for (int j = lane; j < T; j += 32) da[j] = j <= t1 ? p[j] * (da[j] - dot) * scale : 0.0f;
}

void cu_attention_fwd(train_dev *d, float *y, float *att, const float *qkv, int b, int t, int c, int nh) {
    const int hd = c / nh, bh = b * nh;
    const size_t btc = (size_t)b * t * c, th = (size_t)t * hd, tt = (size_t)t * t;
    float *q = (float *)cuda_scratch(d, SCR_HEADS_QKV, 3 * btc * sizeof(float)), *k = q + btc, *v = k + btc;
    float *yh = (float *)cuda_scratch(d, SCR_HEADS_Y, btc * sizeof(float));
    to_heads(q, qkv, b, t, nh, hd, 3 * c);
    to_heads(k, qkv + c, b, t, nh, hd, 3 * c);
    to_heads(v, qkv + 2 * c, b, t, nh, hd, 3 * c);
    cuda_gemm(d, 0, 1, t, t, hd, 1.0f, q, th, k, th, 0.0f, att, tt, bh); /* scores = q k^T */
    k_softmax_causal<<<blocks_for((size_t)bh * t, kWarps), kThreads>>>(att, bh * t, t, 1.0f / sqrtf((float)hd));
    cudaCheckLaunch();
    cuda_gemm(d, 0, 0, t, hd, t, 1.0f, att, tt, v, th, 0.0f, yh, th, bh); /* y = p v */
    from_heads(y, yh, b, t, nh, hd, c);
}

void cu_attention_bwd(train_dev *d, float *dqkv, const float *dy, const float *qkv, const float *att, int b, int t,
                      int c, int nh) {
    const int hd = c / nh, bh = b * nh;
    const size_t btc = (size_t)b * t * c, th = (size_t)t * hd, tt = (size_t)t * t;
    float *q = (float *)cuda_scratch(d, SCR_HEADS_QKV, 3 * btc * sizeof(float)), *k = q + btc, *v = k + btc;
    float *dq = (float *)cuda_scratch(d, SCR_HEADS_DQKV, 3 * btc * sizeof(float)), *dk = dq + btc, *dv = dk + btc;
    float *dyh = (float *)cuda_scratch(d, SCR_HEADS_Y, btc * sizeof(float));
    float *datt = (float *)cuda_scratch(d, SCR_DATT, (size_t)bh * tt * sizeof(float));
    to_heads(q, qkv, b, t, nh, hd, 3 * c);
    to_heads(k, qkv + c, b, t, nh, hd, 3 * c);
    to_heads(v, qkv + 2 * c, b, t, nh, hd, 3 * c);
    to_heads(dyh, dy, b, t, nh, hd, c);
    cuda_gemm(d, 0, 1, t, t, hd, 1.0f, dyh, th, v, th, 0.0f, datt, tt, bh); /* datt = dy v^T */
    cuda_gemm(d, 1, 0, t, hd, t, 1.0f, att, tt, dyh, th, 0.0f, dv, th, bh); /* dv = p^T dy */
    k_softmax_causal_bwd<<<blocks_for((size_t)bh * t, kWarps), kThreads>>>(datt, att, bh * t, t,
                                                                           1.0f / sqrtf((float)hd));
    cudaCheckLaunch();
    cuda_gemm(d, 0, 0, t, hd, t, 1.0f, datt, tt, k, th, 0.0f, dq, th, bh); /* dq = ds k */
    cuda_gemm(d, 1, 0, t, hd, t, 1.0f, datt, tt, q, th, 0.0f, dk, th, bh); /* dk = ds^T q */
    from_heads(dqkv, dq, b, t, nh, hd, 3 * c);
    from_heads(dqkv + c, dk, b, t, nh, hd, 3 * c);
    from_heads(dqkv + 2 * c, dv, b, t, nh, hd, 3 * c);
}

/* ---- SwiGLU (fused_math.h: the CPU's exact expressions) ---- */
__global__ void k_swiglu_fwd(float *s, const float *gu, int rows, int f) {
    GRID_STRIDE(i, (size_t)rows * f) {
        const float *g = gu + i / f * 2 * f + i % f;
        s[i] = agoq_silu(g[0]) * g[f];
    }
}
__global__ void k_swiglu_bwd(float *dgu, const float *ds, const float *gu, int rows, int f) {
    GRID_STRIDE(i, (size_t)rows * f) {
        const size_t o = i / f * 2 * f + i % f;
        float out;
        agoq_swiglu_bwd(gu[o], gu[o + f], ds[i], &dgu[o], &dgu[o + f], &out);
    }
}
void cu_swiglu_fwd(train_dev *d, float *s, const float *gu, int rows, int f) {
    k_swiglu_fwd<<<blocks_for((size_t)rows * f, kThreads), kThreads>>>(s, gu, rows, f);
    cudaCheckLaunch();
}
void cu_swiglu_bwd(train_dev *d, float *dgu, const float *ds, const float *gu, int rows, int f) {
    k_swiglu_bwd<<<blocks_for((size_t)rows * f, kThreads), kThreads>>>(dgu, ds, gu, rows, f);
    cudaCheckLaunch();
}

/* ---- embedding ---- */
__global__ void k_embed_fwd(float *out, const float *wte, const int *tokens, int bt, int c) {
    GRID_STRIDE(i, (size_t)bt * c) out[i] = wte[(size_t)tokens[i / c] * c + i % c];
}
/* Block (v, column tile): thread j adds, in token order, the rows whose token is v: the CPU's
 * sequence of additions, without atomics. Tokens are staged in shared memory in tiles. */
constexpr int kTokenTile = 2048;
__global__ void k_embed_bwd(float *dwte, const float *dout, const int *tokens, int bt, int c) {
    __shared__ int tok[kTokenTile];
    const int v = blockIdx.x, j = blockIdx.y * kColThreads + threadIdx.x;
    float acc = j < c ? dwte[(size_t)v * c + j] : 0.0f;
    for (int i0 = 0; i0 < bt; i0 += kTokenTile) {
        const int n = min(kTokenTile, bt - i0);
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += kColThreads) tok[i] = tokens[i0 + i];
        __syncthreads();
        if (j < c)
            for (int i = 0; i < n; i++)
                if (tok[i] == v) acc += dout[(size_t)(i0 + i) * c + j];
    }
    if (j < c) dwte[(size_t)v * c + j] = acc;
}
void cu_embed_fwd(train_dev *d, float *out, const float *wte, const int *tokens, int bt, int c) {
    k_embed_fwd<<<blocks_for((size_t)bt * c, kThreads), kThreads>>>(out, wte, tokens, bt, c);
    cudaCheckLaunch();
}
void cu_embed_bwd(train_dev *d, float *dwte, const float *dout, const int *tokens, int bt, int c, int v) {
    k_embed_bwd<<<dim3((unsigned)v, (unsigned)((c + kColThreads - 1) / kColThreads)), kColThreads>>>(dwte, dout,
                                                                                                     tokens, bt, c);
    cudaCheckLaunch();
}

/* ---- cross-entropy: one warp per row, loss per row in double, then a fixed-order sum ---- */
__global__ void k_cross_entropy(float *dlogits, const float *logits, const int *targets, int rows, int v, float dscale,
                                double *loss) {
    WARP_ROW(row, lane);
    if (row >= (size_t)rows) return;
    const float *lr = logits + row * v;
    const int tgt = targets[row];
    const float target_logit = lr[tgt]; /* read before any lane writes (dlogits may alias) */
    float mx = -INFINITY, sum = 0.0f;
    for (int j = lane; j < v; j += 32) mx = fmaxf(mx, lr[j]);
    mx = warp_max(mx);
    for (int j = lane; j < v; j += 32) sum += expf(lr[j] - mx);
    sum = warp_sum(sum);
    if (lane == 0) loss[row] = log((double)sum) - (double)(target_logit - mx);
    __syncwarp(); /* every lane has read target_logit */
    if (!dlogits) return;
    const float inv = 1.0f / sum;
    float *dr = dlogits + row * v;
    for (int j = lane; j < v; j += 32) dr[j] = (expf(lr[j] - mx) * inv - (j == tgt ? 1.0f : 0.0f)) * dscale;
}

__global__ void k_sum_doubles(const double *x, int n, double *out) {
    __shared__ double sh[kThreads];
    double acc = 0.0;
    for (int i = threadIdx.x; i < n; i += kThreads) acc += x[i];
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = sh[0];
}
void cu_sum_doubles(const double *x, int n, double *out) {
    k_sum_doubles<<<1, kThreads>>>(x, n, out);
    cudaCheckLaunch();
}

double cu_cross_entropy(train_dev *d, float *dlogits, const float *logits, const int *targets, int rows, int v,
                        float dscale) {
    double *loss = (double *)cuda_scratch(d, SCR_ROWS, (size_t)rows * sizeof(double));
    double *total = (double *)cuda_scratch(d, SCR_SCALARS, 64), host = 0.0;
    k_cross_entropy<<<blocks_for((size_t)rows, kWarps), kThreads>>>(dlogits, logits, targets, rows, v, dscale, loss);
    cudaCheckLaunch();
    cu_sum_doubles(loss, rows, total);
    cudaCheck(cudaMemcpy(&host, total, sizeof host, cudaMemcpyDeviceToHost));
    return host / rows;
}
