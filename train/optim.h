/* AdamW in fp32 with the learning-rate schedule and global-norm clipping of the training runs.
 * The moments live in backend memory (ops.h); the update of one element is the scalar function
 * below, compiled for the host and the device, so both backends step bit-identically. */
#ifndef AGOQ_TRAIN_OPTIM_H
#define AGOQ_TRAIN_OPTIM_H
#include <stddef.h>

#include "kernels/quant/quant_math.h" /* AGOQ_HD */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct train_dev train_dev;

/* One step's constants: c1 = 1 - beta1^t, c2 = 1 - beta2^t (bias corrections, powf on the host). */
typedef struct {
    float beta1, beta2, eps, c1, c2, lr, wd;
} train_adam_hyper;

AGOQ_HD void train_adam_elem(const train_adam_hyper *h, float *p, float g, float *m, float *v) {
    *m = h->beta1 * *m + (1.0f - h->beta1) * g;
    *v = h->beta2 * *v + (1.0f - h->beta2) * (g * g);
    float mh = *m / h->c1, vh = *v / h->c2;
    *p -= h->lr * (mh / (sqrtf(vh) + h->eps) + h->wd * *p);
}

typedef struct {
    train_dev *dev;
    float beta1, beta2, eps;
    float *m, *v;  /* first / second moments, n each (backend memory) */
    size_t n;
    long t;        /* steps taken (bias correction) */
} train_adam;

int train_adam_init(train_adam *a, train_dev *dev, size_t n, float beta1, float beta2, float eps);
void train_adam_free(train_adam *a);
void train_adam_begin_step(train_adam *a);
/* Updates p[0..n) whose moments start at element off; decoupled weight decay wd. */
void train_adam_update(train_adam *a, size_t off, float *p, const float *g, size_t n, float lr, float wd);

/* Linear warm-up over `warmup` steps, then cosine from lr to lr * min_frac at `steps`. */
float train_lr_at(long step, long steps, long warmup, float lr, float min_frac);
/* Global L2 norm of g (double sum of squares); scales g by max_norm / norm when above max_norm
 * (max_norm <= 0: no clipping). Returns the norm before clipping. */
double train_clip_grad(train_dev *dev, float *g, size_t n, double max_norm);

#ifdef __cplusplus
}
#endif
#endif
