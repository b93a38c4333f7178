/* AdamW, schedule and clipping; see optim.h. */
#include "train/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int train_adam_init(train_adam *a, size_t n, float beta1, float beta2, float eps) {
    memset(a, 0, sizeof *a);
    a->m = calloc(n, sizeof(float));
    a->v = calloc(n, sizeof(float));
    a->n = n;
    a->beta1 = beta1;
    a->beta2 = beta2;
    a->eps = eps;
    return a->m && a->v ? 0 : -1;
}

void train_adam_free(train_adam *a) {
    free(a->m);
    free(a->v);
    memset(a, 0, sizeof *a);
}

void train_adam_begin_step(train_adam *a) { a->t++; }

void train_adam_update(train_adam *a, size_t off, float *p, const float *g, size_t n, float lr, float wd) {
    const float b1 = a->beta1, b2 = a->beta2;
    const float c1 = 1.0f - powf(b1, (float)a->t), c2 = 1.0f - powf(b2, (float)a->t);
    float *m = a->m + off, *v = a->v + off;
    for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * (g[i] * g[i]);
        float mh = m[i] / c1, vh = v[i] / c2;
        p[i] -= lr * (mh / (sqrtf(vh) + a->eps) + wd * p[i]);
    }
}

float train_lr_at(long step, long steps, long warmup, float lr, float min_frac) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    double span = (double)(steps - warmup), frac = span > 0 ? (double)(step - warmup) / span : 1.0;
    if (frac > 1.0) frac = 1.0;
    double cosf_ = 0.5 * (1.0 + cos(M_PI * frac));
    return (float)(lr * (min_frac + (1.0 - min_frac) * cosf_));
}

double train_clip_grad(float *g, size_t n, double max_norm) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * (double)g[i];
    double norm = sqrt(ss);
    if (max_norm > 0 && norm > max_norm) {
        float s = (float)(max_norm / norm);
        for (size_t i = 0; i < n; i++) g[i] *= s;
    }
    return norm;
}
