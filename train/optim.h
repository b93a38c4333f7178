/* AdamW in fp32 with the learning-rate schedule and global-norm clipping of the training runs. */
#ifndef AGOQ_TRAIN_OPTIM_H
#define AGOQ_TRAIN_OPTIM_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float beta1, beta2, eps;
    float *m, *v;  /* first / second moments, n each */
    size_t n;
    long t;        /* steps taken (bias correction) */
} train_adam;

int train_adam_init(train_adam *a, size_t n, float beta1, float beta2, float eps);
void train_adam_free(train_adam *a);
void train_adam_begin_step(train_adam *a);
/* Updates p[0..n) whose moments start at element off; decoupled weight decay wd. */
void train_adam_update(train_adam *a, size_t off, float *p, const float *g, size_t n, float lr, float wd);

/* Linear warm-up over `warmup` steps, then cosine from lr to lr * min_frac at `steps`. */
float train_lr_at(long step, long steps, long warmup, float lr, float min_frac);
/* Global L2 norm of g (double sum, in order); scales g by max_norm / norm when above max_norm
 * (max_norm <= 0: no clipping). Returns the norm before clipping. */
double train_clip_grad(float *g, size_t n, double max_norm);

#ifdef __cplusplus
}
#endif
#endif
