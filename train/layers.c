/* CPU kernels of the training path; see layers.h. RMSNorm and SwiGLU use the scalar math of
 * kernels/fused/fused_math.h, the same expressions the fused CUDA kernels evaluate. */
#include "train/layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fused/fused_math.h"
#ifdef _OPENMP
#include <omp.h>
#endif

int tr_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Kernels below this much work run on one thread: fork/join would cost more than it saves
 * (and the tests' tiny models would only measure OpenMP overhead). */
#define TR_PAR_WORK (1L << 16)

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort(); /* scratch of a few KB to MB: running out here is not recoverable */
    return p;
}

void tr_matmul(float *out, const float *a, const float *b, int m, int k, int n, int accumulate) {
    /* Four output rows share each loaded row of B; each output element still adds its k
     * products in ascending order, so blocking and threads never change a bit. */
#pragma omp parallel for schedule(static) if ((long)m * k * n >= 16 * TR_PAR_WORK)
    for (int i0 = 0; i0 < m; i0 += 4) {
        int ni = m - i0 < 4 ? m - i0 : 4;
        if (!accumulate)
            for (int r = 0; r < ni; r++) memset(out + (size_t)(i0 + r) * (size_t)n, 0, (size_t)n * sizeof(float));
        if (ni == 4) {
            float *restrict o0 = out + (size_t)i0 * (size_t)n, *restrict o1 = o0 + n, *restrict o2 = o1 + n,
                            *restrict o3 = o2 + n;
            const float *a0 = a + (size_t)i0 * (size_t)k;
            for (int p = 0; p < k; p++) {
                const float *restrict br = b + (size_t)p * (size_t)n;
                float x0 = a0[p], x1 = a0[k + p], x2 = a0[2 * k + p], x3 = a0[3 * k + p];
                for (int j = 0; j < n; j++) {
                    float bj = br[j];
                    o0[j] += x0 * bj;
                    o1[j] += x1 * bj;
                    o2[j] += x2 * bj;
                    o3[j] += x3 * bj;
                }
            }
        } else {
            for (int r = 0; r < ni; r++) {
                float *restrict o = out + (size_t)(i0 + r) * (size_t)n;
                const float *ar = a + (size_t)(i0 + r) * (size_t)k;
                for (int p = 0; p < k; p++) {
                    const float *restrict br = b + (size_t)p * (size_t)n;
                    float x = ar[p];
                    for (int j = 0; j < n; j++) o[j] += x * br[j];
                }
            }
        }
    }
}

void tr_transpose(float *dst, const float *src, int rows, int cols) {
#pragma omp parallel for schedule(static) if ((long)rows * cols >= TR_PAR_WORK)
    for (int c0 = 0; c0 < cols; c0 += 32)
        for (int r = 0; r < rows; r++)
            for (int c = c0; c < c0 + 32 && c < cols; c++) dst[(size_t)c * (size_t)rows + (size_t)r] = src[(size_t)r * (size_t)cols + (size_t)c];
}

static float row_dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int j = 0; j < n; j++) s += a[j] * b[j];
    return s;
}

void tr_rmsnorm_fwd(float *y, const float *x, const float *w, int rows, int c, float eps) {
#pragma omp parallel for schedule(static) if ((long)rows * c >= TR_PAR_WORK)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * (size_t)c;
        float *yr = y + (size_t)r * (size_t)c;
        float rstd = agoq_rms_rstd(row_dot(xr, xr, c), c, eps);
        for (int j = 0; j < c; j++) yr[j] = agoq_rms_out(xr[j], rstd, w[j]);
    }
}

void tr_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *w, int rows, int c,
                    float eps) {
    float *rstd = xmalloc((size_t)rows * sizeof(float));
#pragma omp parallel if ((long)rows * c >= TR_PAR_WORK)
    {
        float *g = xmalloc((size_t)c * sizeof(float));
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++) {
            const size_t o = (size_t)r * (size_t)c;
            for (int j = 0; j < c; j++) g[j] = dy[o + j] * w[j];
            float rs = agoq_rms_rstd(row_dot(x + o, x + o, c), c, eps);
            float coef = agoq_rms_coef(row_dot(g, x + o, c), c, rs);
            for (int j = 0; j < c; j++) dx[o + j] = agoq_rms_dx(x[o + j], g[j], rs, coef);
            rstd[r] = rs;
        }
        free(g);
    }
    for (int r = 0; r < rows; r++) { /* dw: rows in order, serial (cheap: rows * c) */
        const size_t o = (size_t)r * (size_t)c;
        for (int j = 0; j < c; j++) dw[j] += dy[o + j] * (x[o + j] * rstd[r]);
    }
    free(rstd);
}

void tr_rope_cs(int pos, int i, int hd, float base, float *cs, float *sn) {
    double ang = (double)pos * pow((double)base, -2.0 * i / hd);
    *cs = (float)cos(ang);
    *sn = (float)sin(ang);
}

void tr_rope(float *qkv, int b, int t, int c, int nh, float base, int inverse) {
    const int hd = c / nh, rows = b * t;
#pragma omp parallel for schedule(static) if ((long)rows * c >= TR_PAR_WORK)
    for (int bt = 0; bt < rows; bt++) {
        int pos = bt % t;
        float *row = qkv + (size_t)bt * 3 * (size_t)c;
        for (int i = 0; i < hd / 2; i++) {
            float cs, sn;
            tr_rope_cs(pos, i, hd, base, &cs, &sn);
            if (inverse) sn = -sn;
            for (int part = 0; part < 2; part++) /* q then k */
                for (int h = 0; h < nh; h++) {
                    float *p = row + (size_t)part * (size_t)c + (size_t)h * (size_t)hd + 2 * (size_t)i;
                    float x0 = p[0], x1 = p[1];
                    p[0] = x0 * cs - x1 * sn;
                    p[1] = x0 * sn + x1 * cs;
                }
        }
    }
}

void tr_attention_fwd(float *y, float *att, const float *qkv, int b, int t, int c, int nh) {
    const int hd = c / nh;
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t c3 = 3 * (size_t)c;
#pragma omp parallel for schedule(static) if ((long)b * t * t * c >= TR_PAR_WORK)
    for (int bh = 0; bh < b * nh; bh++) {
        int bi = bh / nh, h = bh % nh;
        const float *base = qkv + (size_t)bi * (size_t)t * c3;
        for (int t1 = 0; t1 < t; t1++) {
            const float *q = base + (size_t)t1 * c3 + (size_t)h * hd;
            float *ar = att + ((size_t)bh * (size_t)t + (size_t)t1) * (size_t)t;
            float mx = -INFINITY, sum = 0.0f;
            for (int t2 = 0; t2 <= t1; t2++) {
                ar[t2] = row_dot(q, base + (size_t)t2 * c3 + (size_t)c + (size_t)h * hd, hd) * scale;
                if (ar[t2] > mx) mx = ar[t2];
            }
            for (int t2 = 0; t2 <= t1; t2++) {
                ar[t2] = expf(ar[t2] - mx);
                sum += ar[t2];
            }
            float inv = 1.0f / sum;
            for (int t2 = 0; t2 < t; t2++) ar[t2] = t2 <= t1 ? ar[t2] * inv : 0.0f;
            float *yr = y + ((size_t)bi * (size_t)t + (size_t)t1) * (size_t)c + (size_t)h * hd;
            for (int d = 0; d < hd; d++) yr[d] = 0.0f;
            for (int t2 = 0; t2 <= t1; t2++) {
                const float *v = base + (size_t)t2 * c3 + 2 * (size_t)c + (size_t)h * hd;
                for (int d = 0; d < hd; d++) yr[d] += ar[t2] * v[d];
            }
        }
    }
}

void tr_attention_bwd(float *dqkv, const float *dy, const float *qkv, const float *att, int b, int t, int c,
                      int nh) {
    const int hd = c / nh;
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t c3 = 3 * (size_t)c;
    memset(dqkv, 0, (size_t)b * (size_t)t * c3 * sizeof(float));
#pragma omp parallel if ((long)b * t * t * c >= TR_PAR_WORK)
    {
        float *datt = xmalloc((size_t)t * sizeof(float));
#pragma omp for schedule(static)
        for (int bh = 0; bh < b * nh; bh++) { /* (b, h) owns its q/k/v columns: no races */
            int bi = bh / nh, h = bh % nh;
            const size_t off = (size_t)bi * (size_t)t * c3 + (size_t)h * hd;
            const float *base = qkv + off;
            float *dbase = dqkv + off;
            for (int t1 = 0; t1 < t; t1++) {
                const float *ar = att + ((size_t)bh * (size_t)t + (size_t)t1) * (size_t)t;
                const float *dyr = dy + ((size_t)bi * (size_t)t + (size_t)t1) * (size_t)c + (size_t)h * hd;
                const float *q = base + (size_t)t1 * c3;
                float *dq = dbase + (size_t)t1 * c3, dot = 0.0f;
                for (int t2 = 0; t2 <= t1; t2++) {
                    float *dv = dbase + (size_t)t2 * c3 + 2 * (size_t)c;
                    datt[t2] = row_dot(dyr, base + (size_t)t2 * c3 + 2 * (size_t)c, hd);
                    for (int d = 0; d < hd; d++) dv[d] += ar[t2] * dyr[d];
                    dot += ar[t2] * datt[t2];
                }
                for (int t2 = 0; t2 <= t1; t2++) {
                    float ds = ar[t2] * (datt[t2] - dot) * scale; /* softmax backward, then the 1/sqrt(hd) */
                    const float *k = base + (size_t)t2 * c3 + (size_t)c;
                    float *dk = dbase + (size_t)t2 * c3 + (size_t)c;
                    for (int d = 0; d < hd; d++) {
                        dq[d] += ds * k[d];
                        dk[d] += ds * q[d];
                    }
                }
            }
        }
        free(datt);
    }
}

void tr_swiglu_fwd(float *s, const float *gu, int rows, int f) {
#pragma omp parallel for schedule(static) if ((long)rows * f >= TR_PAR_WORK)
    for (int r = 0; r < rows; r++) {
        const float *g = gu + (size_t)r * 2 * (size_t)f;
        for (int j = 0; j < f; j++) s[(size_t)r * (size_t)f + (size_t)j] = agoq_silu(g[j]) * g[f + j];
    }
}

void tr_swiglu_bwd(float *dgu, const float *ds, const float *gu, int rows, int f) {
#pragma omp parallel for schedule(static) if ((long)rows * f >= TR_PAR_WORK)
    for (int r = 0; r < rows; r++) {
        const float *g = gu + (size_t)r * 2 * (size_t)f;
        float *dg = dgu + (size_t)r * 2 * (size_t)f, out;
        for (int j = 0; j < f; j++) agoq_swiglu_bwd(g[j], g[f + j], ds[(size_t)r * (size_t)f + (size_t)j], &dg[j], &dg[f + j], &out);
    }
}

double tr_cross_entropy(float *dlogits, const float *logits, const int *targets, int rows, int v, float dscale) {
    double *loss = xmalloc((size_t)rows * sizeof(double)), total = 0.0;
#pragma omp parallel for schedule(static) if ((long)rows * v >= TR_PAR_WORK)
    for (int r = 0; r < rows; r++) {
        const float *lr = logits + (size_t)r * (size_t)v;
        float *dr = dlogits + (size_t)r * (size_t)v;
        float mx = -INFINITY, sum = 0.0f;
        for (int j = 0; j < v; j++) mx = lr[j] > mx ? lr[j] : mx;
        for (int j = 0; j < v; j++) sum += expf(lr[j] - mx);
        float target_logit = lr[targets[r]], inv = 1.0f / sum;
        loss[r] = log((double)sum) - (double)(target_logit - mx);
        if (dlogits)
            for (int j = 0; j < v; j++) dr[j] = (expf(lr[j] - mx) * inv - (j == targets[r] ? 1.0f : 0.0f)) * dscale;
    }
    for (int r = 0; r < rows; r++) total += loss[r];
    free(loss);
    return total / rows;
}
