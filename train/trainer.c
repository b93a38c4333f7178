/* The training loop pieces; see trainer.h. */
#include "train/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "train/engine.h"

/* The parameter tensors of the run's model: sizes, offsets in one flat array, norm flags. */
static void tensor_table(train_trainer *t) {
    if (t->lm) {
        t->ntensor = agoq_lm_tensor_count(t->lm);
        for (size_t i = 0; i < t->ntensor; i++) {
            t->tsize[i] = agoq_lm_tensor_elems(t->lm, i);
            t->tnorm[i] = agoq_lm_tensor_is_norm(t->lm, i);
        }
    } else {
        t->ntensor = P_COUNT;
        for (int p = 0; p < P_COUNT; p++) {
            t->tsize[p] = t->model.params.size[p];
            t->tnorm[p] = p == P_LN1 || p == P_LN2 || p == P_LNF; /* no decay on norm gains */
        }
    }
    t->np = 0;
    for (size_t i = 0; i < t->ntensor; i++) t->toff[i] = t->np, t->np += t->tsize[i];
}

static int open_model(train_trainer *t, const train_run_cfg *c) {
    if (c->model.backend != AGOQ_BACKEND_CUDA) {
        if (train_model_init(&t->model, &c->model, &c->act)) return -1;
        train_model_init_weights(&t->model, c->seed);
        t->act_bytes_per_layer = t->model.act_bytes_per_layer;
        return 0;
    }
    if (train_engine_open(&c->model, &c->act, c->seed, &t->lm)) return -1;
    t->act_bytes_per_layer = (size_t)agoq_lm_saved_bytes_per_layer(t->lm);
    return 0;
}

/* The trainer's host arrays: the host table's memory, page-locked when the model is the engine. */
static void *host_alloc(train_trainer *t, size_t bytes) {
    return t->lm ? agoq_lm_host_alloc(bytes) : t->host->ops->alloc(t->host, bytes);
}
static void host_free(train_trainer *t, void *p) {
    if (t->lm) agoq_lm_host_free(p);
    else t->host->ops->release(t->host, p);
}

int train_trainer_init(train_trainer *t, const train_run_cfg *c, const train_corpus *corpus) {
    memset(t, 0, sizeof *t);
    t->cfg = *c;
    t->corpus = corpus;
    const int bt = c->model.batch * c->model.seq_len;
    AGOQ_REQUIRE(corpus->n_train > (size_t)c->model.seq_len + 1 && corpus->n_heldout > (size_t)c->model.seq_len + 1,
                 "train: corpus (%zu train / %zu held-out bytes) shorter than a window of %d", corpus->n_train,
                 corpus->n_heldout, c->model.seq_len + 1);
    if (open_model(t, c) || !(t->host = train_dev_open(AGOQ_BACKEND_CPU))) {
        train_trainer_free(t);
        return -1;
    }
    tensor_table(t);
    t->allreduce_backend = c->grad == GRAD_FP32 ? "host" : t->lm ? "cuda-local" : "cpu";
    train_dev *d = t->host;
    size_t maxn = 0;
    for (size_t i = 0; i < t->ntensor; i++) maxn = t->tsize[i] > maxn ? t->tsize[i] : maxn;
    /* the engine's gradients come down and go up every step: page-locked host memory for them */
    t->rank_grads = host_alloc(t, (size_t)c->ranks * t->np * sizeof(float));
    t->mean_grad = host_alloc(t, t->np * sizeof(float));
    t->exact_mean = host_alloc(t, t->np * sizeof(float));
    t->tokens = malloc((size_t)bt * sizeof(int));
    t->targets = malloc((size_t)bt * sizeof(int));
    if (!t->rank_grads || !t->mean_grad || !t->exact_mean || !t->tokens || !t->targets ||
        d->ops->reduce_init(d, c->grad, &c->grad_q, c->ranks, maxn, t->allreduce_backend) ||
        (!t->lm && train_adam_init(&t->adam, t->model.dev, t->np, c->beta1, c->beta2, 1e-8f))) {
        agoq_error("train: cannot set up the run (%zu parameters, %d ranks)", t->np, c->ranks);
        train_trainer_free(t);
        return -1;
    }
    t->data_rng.s = c->seed ^ 0xD1B54A32D192ED03ull; /* data order: independent of the weight draws */
    t->measure_reduce = 1;
    return 0;
}

void train_trainer_free(train_trainer *t) {
    train_dev *d = t->host;
    if (d) {
        host_free(t, t->rank_grads);
        host_free(t, t->mean_grad);
        host_free(t, t->exact_mean);
        train_dev_close(d);
    }
    if (t->model.dev) train_adam_free(&t->adam); /* before the model closes its backend */
    train_model_free(&t->model);
    agoq_lm_close(t->lm);
    free(t->tokens);
    free(t->targets);
    memset(t, 0, sizeof *t);
}

/* Rank r's micro-batch gradient into its row of rank_grads (host); returns the loss. */
static double rank_grads(train_trainer *t, int r) {
    float *g = t->rank_grads + (size_t)r * t->np;
    if (!t->lm) {
        double loss = train_step_grads(&t->model, t->tokens, t->targets);
        t->model.dev->ops->download(t->model.dev, g, t->model.grads.mem, t->np * sizeof(float));
        return loss;
    }
    float *gt[TRAIN_MAX_TENSORS];
    for (size_t i = 0; i < t->ntensor; i++) gt[i] = g + t->toff[i];
    double loss;
    if (agoq_lm_grads(t->lm, t->tokens, t->targets, &loss, gt)) agoq_die("train: the step engine failed (see above)");
    return loss;
}

double train_trainer_step(train_trainer *t, double *grad_norm) {
    train_dev *d = t->host;
    const train_run_cfg *c = &t->cfg;
    const size_t np = t->np;
    double loss = 0.0;
    const float *g[TRAIN_MAX_RANKS];
    for (int r = 0; r < c->ranks; r++) {
        train_sample_batch(t->corpus->train, t->corpus->n_train, c->model.batch, c->model.seq_len, &t->data_rng,
                           t->tokens, t->targets);
        loss += rank_grads(t, r);
    }
    for (size_t i = 0; i < t->ntensor; i++) { /* one all-reduce per tensor: scales never span two */
        for (int r = 0; r < c->ranks; r++) g[r] = t->rank_grads + (size_t)r * np + t->toff[i];
        d->ops->reduce_mean(d, g, t->tsize[i], t->mean_grad + t->toff[i]);
    }
    if (t->measure_reduce) { /* the all-reduce's own error, against the exact mean of the same gradients */
        for (int r = 0; r < c->ranks; r++) g[r] = t->rank_grads + (size_t)r * np;
        d->ops->mean_fp32(d, g, c->ranks, np, t->exact_mean);
        t->reduce_err = d->ops->compare(d, t->exact_mean, t->mean_grad, np);
    }
    double norm = train_clip_grad(d, t->mean_grad, np, c->grad_clip);
    if (grad_norm) *grad_norm = norm;
    float lr = train_lr_at(t->step, c->steps, c->warmup, c->lr, c->min_lr_frac);
    if (t->lm) {
        float *gt[TRAIN_MAX_TENSORS];
        for (size_t i = 0; i < t->ntensor; i++) gt[i] = t->mean_grad + t->toff[i];
        if (agoq_lm_adamw(t->lm, gt, lr, c->weight_decay, c->beta1, c->beta2, 1e-8f))
            agoq_die("train: the step engine's optimizer failed (see above)");
    } else {
        train_adam_begin_step(&t->adam); /* cpu backend memory is host memory: mean_grad as it is */
        for (size_t i = 0; i < t->ntensor; i++)
            train_adam_update(&t->adam, t->toff[i], t->model.params.t[i], t->mean_grad + t->toff[i], t->tsize[i], lr,
                              t->tnorm[i] ? 0.0f : c->weight_decay);
    }
    t->step++;
    return loss / c->ranks;
}

/* Held-out window w of nwin: starts spread evenly over the held-out text. */
static void heldout_batch(train_trainer *t, int first, int nwin) {
    const int T = t->cfg.model.seq_len, B = t->cfg.model.batch;
    const size_t span = t->corpus->n_heldout - (size_t)T - 1;
    for (int i = 0; i < B; i++) {
        int w = (first + i) % nwin;
        size_t start = (size_t)((double)span * w / nwin);
        train_window(t->corpus->heldout, start, T, t->tokens + (size_t)i * T, t->targets + (size_t)i * T);
    }
}

double train_trainer_eval(train_trainer *t) {
    const int B = t->cfg.model.batch, nwin = t->cfg.eval_windows;
    double sum = 0.0;
    int batches = 0;
    for (int first = 0; first < nwin; first += B, batches++) {
        heldout_batch(t, first, nwin);
        double loss;
        if (!t->lm) loss = train_forward(&t->model, t->tokens, t->targets);
        else if (agoq_lm_loss(t->lm, t->tokens, t->targets, &loss)) agoq_die("train: the step engine failed (see above)");
        sum += loss;
    }
    return sum / batches;
}

agoq_error_stats train_policy_grad_error(train_trainer *t, const train_act_policy *test, const train_act_policy *ref) {
    if (t->lm) {
        agoq_error_stats nan;
        memset(&nan, 0, sizeof nan);
        nan.mse = nan.rmse = nan.nmse = nan.snr_db = nan.max_abs = nan.max_rel = nan.cosine = NAN;
        return nan;
    }
    train_model *m = &t->model;
    const size_t np = m->params.total;
    train_act_policy own = m->policy;
    float *g_ref = t->rank_grads; /* free between steps */
    heldout_batch(t, 0, t->cfg.eval_windows);
    m->policy = *ref;
    train_step_grads(m, t->tokens, t->targets);
    m->dev->ops->copy(m->dev, g_ref, m->grads.mem, np * sizeof(float));
    m->policy = *test;
    train_step_grads(m, t->tokens, t->targets);
    m->policy = own;
    return m->dev->ops->compare(m->dev, g_ref, m->grads.mem, np);
}

agoq_error_stats train_trainer_grad_error(train_trainer *t, const train_act_policy *ref) {
    if (t->lm) return train_policy_grad_error(t, ref, ref);
    train_act_policy own = t->model.policy;
    return train_policy_grad_error(t, &own, ref);
}
