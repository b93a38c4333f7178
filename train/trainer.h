/* One training run: R simulated data-parallel ranks, each with its own micro-batch, gradients
 * combined by the chosen all-reduce (dp.h), global-norm clipping, AdamW. cfg.model.backend picks
 * the model: cpu, the fp32 reference of train/model.h (AdamW: optim.h); cuda, the same model on
 * the step engine in bf16 with real activation storage (train/engine.h; AdamW: the engine's,
 * kernels/optim/adamw.h). Either way the ranks' gradients are host arrays and the exact mean and
 * the clipping host code, one loop over the model's parameter tensors (the CPU's P_* tensors, or
 * the engine's per-layer tensors: an all-reduce never spans two of them). The quantized
 * all-reduces (collectives/ through dp.h, simulated ranks) run on the collectives' cpu backend
 * for the CPU model and on cuda-local (GPU 0, the same bits) for the engine's
 * (allreduce_backend says which).
 * Determinism: the corpus, the initial weights (seed) and the data order (seed) are the same
 * for every policy, so runs differ only by their activation and gradient policies. */
#ifndef AGOQ_TRAIN_TRAINER_H
#define AGOQ_TRAIN_TRAINER_H
#include <stdint.h>

#include "core/metrics.h"
#include "core/rng.h"
#include "step/model.h"
#include "train/corpus.h"
#include "train/dp.h"
#include "train/model.h"
#include "train/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    train_cfg model;
    train_act_policy act;
    train_grad_mode grad;
    agoq_qconfig grad_q;     /* agoq8 format and block */
    int ranks;               /* simulated data-parallel ranks */
    long steps, warmup;
    float lr, min_lr_frac, weight_decay, grad_clip, beta1, beta2;
    int eval_windows;        /* held-out windows per evaluation (fixed, evenly spaced) */
    uint64_t seed;           /* weights and data order */
} train_run_cfg;

#define TRAIN_MAX_TENSORS 512

typedef struct {
    train_run_cfg cfg;
    train_model model;       /* cpu: the model (owns its backend, model.dev); cuda: unused */
    agoq_lm *lm;             /* cuda: the step engine's model */
    train_dev *host;         /* the host ops (cpu backend) the all-reduce and clipping run on */
    const char *allreduce_backend; /* "host" (fp32: the exact mean), "cpu" or "cuda-local" */
    size_t ntensor, np;      /* parameter tensors, parameters */
    size_t tsize[TRAIN_MAX_TENSORS], toff[TRAIN_MAX_TENSORS]; /* per tensor: elements, offset */
    int tnorm[TRAIN_MAX_TENSORS]; /* norm weights (no weight decay) */
    size_t act_bytes_per_layer; /* saved-activation bytes of one decoder layer */
    train_adam adam;         /* cpu only */
    const train_corpus *corpus;
    float *rank_grads;       /* (ranks, P), host */
    float *mean_grad;        /* (P), host */
    int *tokens, *targets;   /* (B, T), host */
    float *exact_mean;       /* (P) fp32 mean of the ranks' gradients, to measure the all-reduce */
    int measure_reduce;      /* compute reduce_err in the next steps (1 after init) */
    agoq_error_stats reduce_err; /* last measured step: all-reduce mean vs exact mean (zero for fp32) */
    agoq_rng data_rng;
    long step;               /* optimizer steps taken */
} train_trainer;

int train_trainer_init(train_trainer *t, const train_run_cfg *c, const train_corpus *corpus);
void train_trainer_free(train_trainer *t);
/* One optimizer step; returns the mean training loss over the ranks' micro-batches and the
 * gradient norm before clipping in *grad_norm. */
double train_trainer_step(train_trainer *t, double *grad_norm);
/* Mean held-out loss over cfg.eval_windows fixed windows (forward only: activation storage
 * does not change the forward, so this is the model's quality whatever the policy). */
double train_trainer_eval(train_trainer *t);
/* Gradient under the run's activation policy vs under `ref`, same weights, same probe batch
 * (the first held-out windows), single rank: the error the policy puts into the gradients.
 * CPU model only (the engine stores no fp32 reference): NaN statistics on cuda. */
agoq_error_stats train_trainer_grad_error(train_trainer *t, const train_act_policy *ref);
/* The same for any pair: gradient under `test` compared with the gradient under `ref`. */
agoq_error_stats train_policy_grad_error(train_trainer *t, const train_act_policy *test, const train_act_policy *ref);

#ifdef __cplusplus
}
#endif
#endif
