/* AdamW, schedule and clipping; see optim.h. */
#include "train/optim.h"

#include <math.h>
#include <string.h>

#include "train/ops.h"

int train_adam_init(train_adam *a, train_dev *dev, size_t n, float beta1, float beta2, float eps) {
    memset(a, 0, sizeof *a);
    a->dev = dev;
    a->m = dev->ops->alloc(dev, n * sizeof(float));
    a->v = dev->ops->alloc(dev, n * sizeof(float));
    a->n = n;
    a->beta1 = beta1;
    a->beta2 = beta2;
    a->eps = eps;
    return a->m && a->v ? 0 : -1;
}

void train_adam_free(train_adam *a) {
    if (a->dev) {
        a->dev->ops->release(a->dev, a->m);
        a->dev->ops->release(a->dev, a->v);
    }
    memset(a, 0, sizeof *a);
}

void train_adam_begin_step(train_adam *a) { a->t++; }

void train_adam_update(train_adam *a, size_t off, float *p, const float *g, size_t n, float lr, float wd) {
    const train_adam_hyper h = {a->beta1, a->beta2, a->eps, 1.0f - powf(a->beta1, (float)a->t),
                                1.0f - powf(a->beta2, (float)a->t), lr, wd};
    a->dev->ops->adam(a->dev, &h, p, g, a->m + off, a->v + off, n);
}

float train_lr_at(long step, long steps, long warmup, float lr, float min_frac) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    double span = (double)(steps - warmup), frac = span > 0 ? (double)(step - warmup) / span : 1.0;
    if (frac > 1.0) frac = 1.0;
    double cosf_ = 0.5 * (1.0 + cos(M_PI * frac));
    return (float)(lr * (min_frac + (1.0 - min_frac) * cosf_));
}

double train_clip_grad(train_dev *dev, float *g, size_t n, double max_norm) {
    double norm = sqrt(dev->ops->sumsq(dev, g, n));
    if (max_norm > 0 && norm > max_norm) dev->ops->scale(dev, g, n, (float)(max_norm / norm));
    return norm;
}
