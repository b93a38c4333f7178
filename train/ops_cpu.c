/* The cpu backend of ops.h (host memory; the kernels of layers.c, policy.c's store, dp.c's
 * all-reduces, optim.h's AdamW) and the backend selection. */
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "train/layers.h"
#include "train/ops.h"

typedef struct {
    float *ta, *tb;       /* transposed operands of matmul (grown on demand) */
    size_t ta_n, tb_n;
    train_reducer red;
} cpu_state;

static cpu_state *st(train_dev *d) { return (cpu_state *)d->impl; }

/* A host buffer of at least n floats, kept between calls. */
static float *grow(float **buf, size_t *cap, size_t n) {
    if (n > *cap) {
        free(*buf);
        if (!(*buf = malloc(n * sizeof(float)))) agoq_die("train cpu: out of host memory for %zu floats", n);
        *cap = n;
    }
    return *buf;
}

static void *c_alloc(train_dev *d, size_t bytes) { return calloc(bytes ? bytes : 1, 1); }
static void c_release(train_dev *d, void *p) { free(p); }
static void c_copy(train_dev *d, void *dst, const void *src, size_t bytes) {
    if (dst != src) memmove(dst, src, bytes);
}
static void c_zero(train_dev *d, void *dst, size_t bytes) { memset(dst, 0, bytes); }

/* Transposed operands are staged in row-major order, then tr_matmul: each output element still
 * sums its k products in ascending order, as with pre-transposed weights. */
static void c_matmul(train_dev *d, float *out, const float *a, int trans_a, const float *b, int trans_b, int m, int k,
                     int n, int accumulate) {
    if (trans_a) {
        float *t = grow(&st(d)->ta, &st(d)->ta_n, (size_t)m * (size_t)k);
        tr_transpose(t, a, k, m);
        a = t;
    }
    if (trans_b) {
        float *t = grow(&st(d)->tb, &st(d)->tb_n, (size_t)k * (size_t)n);
        tr_transpose(t, b, n, k);
        b = t;
    }
    tr_matmul(out, a, b, m, k, n, accumulate);
}

static void c_rmsnorm_fwd(train_dev *d, float *y, const float *x, const float *w, int rows, int c, float eps) {
    tr_rmsnorm_fwd(y, x, w, rows, c, eps);
}
static void c_rmsnorm_bwd(train_dev *d, float *dx, float *dw, const float *dy, const float *x, const float *w, int rows,
                          int c, float eps) {
    tr_rmsnorm_bwd(dx, dw, dy, x, w, rows, c, eps);
}
static void c_rope(train_dev *d, float *qkv, int b, int t, int c, int nh, float base, int inverse) {
    tr_rope(qkv, b, t, c, nh, base, inverse);
}
static void c_attention_fwd(train_dev *d, float *y, float *att, const float *qkv, int b, int t, int c, int nh) {
    tr_attention_fwd(y, att, qkv, b, t, c, nh);
}
static void c_attention_bwd(train_dev *d, float *dqkv, const float *dy, const float *qkv, const float *att, int b,
                            int t, int c, int nh) {
    tr_attention_bwd(dqkv, dy, qkv, att, b, t, c, nh);
}
static void c_swiglu_fwd(train_dev *d, float *s, const float *gu, int rows, int f) { tr_swiglu_fwd(s, gu, rows, f); }
static void c_swiglu_bwd(train_dev *d, float *dgu, const float *ds, const float *gu, int rows, int f) {
    tr_swiglu_bwd(dgu, ds, gu, rows, f);
}
static void c_add(train_dev *d, float *dst, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = a[i] + b[i];
}
static void c_embed_fwd(train_dev *d, float *out, const float *wte, const int *tokens, int bt, int c) {
    for (int i = 0; i < bt; i++) memcpy(out + (size_t)i * c, wte + (size_t)tokens[i] * c, (size_t)c * sizeof(float));
}
static void c_embed_bwd(train_dev *d, float *dwte, const float *dout, const int *tokens, int bt, int c, int v) {
    for (int i = 0; i < bt; i++) {
        float *dst = dwte + (size_t)tokens[i] * c;
        const float *src = dout + (size_t)i * c;
        for (int j = 0; j < c; j++) dst[j] += src[j];
    }
}
static double c_cross_entropy(train_dev *d, float *dlogits, const float *logits, const int *targets, int rows, int v,
                              float dscale) {
    return tr_cross_entropy(dlogits, logits, targets, rows, v, dscale);
}

static void c_act_store(train_dev *d, const agoq_store *s, const float *src, size_t rows, size_t cols, float *dst) {
    train_act_store(s, src, rows, cols, dst);
}

static int c_reduce_init(train_dev *d, train_grad_mode mode, const agoq_qconfig *q, int ranks, size_t max_n,
                         const char *coll_backend) {
    train_reducer_free(&st(d)->red);
    return train_reducer_init(&st(d)->red, mode, q, ranks, max_n, coll_backend);
}
static void c_reduce_mean(train_dev *d, const float *const *g, size_t n, float *mean) {
    train_reduce_mean(&st(d)->red, g, n, mean);
}
static void c_mean_fp32(train_dev *d, const float *const *g, int ranks, size_t n, float *mean) {
    train_mean_fp32(g, ranks, n, mean);
}

static void c_adam(train_dev *d, const train_adam_hyper *h, float *p, const float *g, float *m, float *v, size_t n) {
    for (size_t i = 0; i < n; i++) train_adam_elem(h, &p[i], g[i], &m[i], &v[i]);
}
static double c_sumsq(train_dev *d, const float *x, size_t n) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    return ss;
}
static void c_scale(train_dev *d, float *x, size_t n, float s) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}
static agoq_error_stats c_compare(train_dev *d, const float *ref, const float *approx, size_t n) {
    return agoq_compare(ref, approx, n);
}

static const train_ops cpu_ops = {
    .alloc = c_alloc, .release = c_release, .upload = c_copy, .download = c_copy, .copy = c_copy, .zero = c_zero,
    .matmul = c_matmul, .rmsnorm_fwd = c_rmsnorm_fwd, .rmsnorm_bwd = c_rmsnorm_bwd, .rope = c_rope,
    .attention_fwd = c_attention_fwd, .attention_bwd = c_attention_bwd, .swiglu_fwd = c_swiglu_fwd,
    .swiglu_bwd = c_swiglu_bwd, .add = c_add, .embed_fwd = c_embed_fwd, .embed_bwd = c_embed_bwd,
    .cross_entropy = c_cross_entropy, .act_store = c_act_store,
    .reduce_init = c_reduce_init, .reduce_mean = c_reduce_mean, .mean_fp32 = c_mean_fp32, .adam = c_adam,
    .sumsq = c_sumsq, .scale = c_scale, .compare = c_compare,
};

int train_ops_complete(const train_ops *o) {
    typedef void (*any_fn)(void); /* every member is a function pointer */
    _Static_assert(sizeof(train_ops) % sizeof(any_fn) == 0, "train_ops holds only function pointers");
    for (size_t i = 0; i < sizeof *o / sizeof(any_fn); i++) {
        any_fn f;
        memcpy(&f, (const char *)o + i * sizeof f, sizeof f);
        if (!f) return 0;
    }
    return 1;
}

train_dev *train_dev_open(agoq_backend kind) {
    train_dev *d = NULL;
    if (kind == AGOQ_BACKEND_CUDA) {
        /* the GPU runs the step engine's model (train/engine.h), not this table */
        char why[256] = "";
        if (agoq_cuda_devices(why, sizeof why) <= 0) agoq_error("train: backend 'cuda': no usable GPU: %s", why);
        else agoq_error("train: backend 'cuda': the ops table is the CPU model's; the GPU model is train/engine.h");
        return NULL;
    } else {
        cpu_state *s = calloc(1, sizeof *s);
        if (!(d = calloc(1, sizeof *d)) || !s) agoq_die("train cpu: out of host memory");
        d->ops = &cpu_ops;
        d->kind = AGOQ_BACKEND_CPU;
        d->impl = s;
    }
    if (d && !train_ops_complete(d->ops)) agoq_die("train: the %s backend's ops table has an empty entry", agoq_backend_name(kind));
    return d;
}

void train_dev_close(train_dev *d) {
    if (!d) return;
    free(st(d)->ta);
    free(st(d)->tb);
    train_reducer_free(&st(d)->red);
    free(d->impl);
    free(d);
}
