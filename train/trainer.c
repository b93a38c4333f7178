/* The training loop pieces; see trainer.h. */
#include "train/trainer.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"

int train_trainer_init(train_trainer *t, const train_run_cfg *c, const train_corpus *corpus) {
    memset(t, 0, sizeof *t);
    t->cfg = *c;
    t->corpus = corpus;
    const int bt = c->model.batch * c->model.seq_len;
    AGOQ_REQUIRE(corpus->n_train > (size_t)c->model.seq_len + 1 && corpus->n_heldout > (size_t)c->model.seq_len + 1,
                 "train: corpus (%zu train / %zu held-out bytes) shorter than a window of %d", corpus->n_train,
                 corpus->n_heldout, c->model.seq_len + 1);
    if (train_model_init(&t->model, &c->model, &c->act)) return -1;
    train_dev *d = t->model.dev;
    size_t np = train_model_param_count(&t->model), maxn = 0;
    for (int i = 0; i < P_COUNT; i++) maxn = t->model.params.size[i] > maxn ? t->model.params.size[i] : maxn;
    t->rank_grads = d->ops->alloc(d, (size_t)c->ranks * np * sizeof(float));
    t->mean_grad = d->ops->alloc(d, np * sizeof(float));
    t->exact_mean = d->ops->alloc(d, np * sizeof(float));
    t->tokens = malloc((size_t)bt * sizeof(int));
    t->targets = malloc((size_t)bt * sizeof(int));
    if (!t->rank_grads || !t->mean_grad || !t->exact_mean || !t->tokens || !t->targets ||
        d->ops->reduce_init(d, c->grad, &c->grad_q, c->ranks, maxn) ||
        train_adam_init(&t->adam, d, np, c->beta1, c->beta2, 1e-8f)) {
        agoq_error("train: cannot set up the run (%zu parameters, %d ranks)", np, c->ranks);
        train_trainer_free(t);
        return -1;
    }
    train_model_init_weights(&t->model, c->seed);
    t->data_rng.s = c->seed ^ 0xD1B54A32D192ED03ull; /* data order: independent of the weight draws */
    t->measure_reduce = 1;
    return 0;
}

void train_trainer_free(train_trainer *t) {
    train_dev *d = t->model.dev;
    if (d) { /* the run's buffers first: the model closes the backend */
        train_adam_free(&t->adam);
        d->ops->release(d, t->rank_grads);
        d->ops->release(d, t->mean_grad);
        d->ops->release(d, t->exact_mean);
    }
    train_model_free(&t->model);
    free(t->tokens);
    free(t->targets);
    memset(t, 0, sizeof *t);
}

double train_trainer_step(train_trainer *t, double *grad_norm) {
    train_model *m = &t->model;
    train_dev *d = m->dev;
    const train_run_cfg *c = &t->cfg;
    const size_t np = m->params.total;
    double loss = 0.0;
    const float *g[TRAIN_MAX_RANKS];
    for (int r = 0; r < c->ranks; r++) {
        train_sample_batch(t->corpus->train, t->corpus->n_train, c->model.batch, c->model.seq_len, &t->data_rng,
                           t->tokens, t->targets);
        loss += train_step_grads(m, t->tokens, t->targets);
        d->ops->copy(d, t->rank_grads + (size_t)r * np, m->grads.mem, np * sizeof(float));
    }
    size_t off = 0;
    for (int p = 0; p < P_COUNT; p++) { /* one all-reduce per tensor: scales never span two */
        for (int r = 0; r < c->ranks; r++) g[r] = t->rank_grads + (size_t)r * np + off;
        d->ops->reduce_mean(d, g, m->params.size[p], t->mean_grad + off);
        off += m->params.size[p];
    }
    if (t->measure_reduce) { /* the all-reduce's own error, against the exact mean of the same gradients */
        for (int r = 0; r < c->ranks; r++) g[r] = t->rank_grads + (size_t)r * np;
        d->ops->mean_fp32(d, g, c->ranks, np, t->exact_mean);
        t->reduce_err = d->ops->compare(d, t->exact_mean, t->mean_grad, np);
    }
    double norm = train_clip_grad(d, t->mean_grad, np, c->grad_clip);
    if (grad_norm) *grad_norm = norm;
    float lr = train_lr_at(t->step, c->steps, c->warmup, c->lr, c->min_lr_frac);
    train_adam_begin_step(&t->adam);
    off = 0;
    for (int p = 0; p < P_COUNT; p++) {
        int is_norm = p == P_LN1 || p == P_LN2 || p == P_LNF; /* no decay on norm gains */
        train_adam_update(&t->adam, off, m->params.t[p], t->mean_grad + off, m->params.size[p], lr,
                          is_norm ? 0.0f : c->weight_decay);
        off += m->params.size[p];
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
        sum += train_forward(&t->model, t->tokens, t->targets);
    }
    return sum / batches;
}

agoq_error_stats train_policy_grad_error(train_trainer *t, const train_act_policy *test, const train_act_policy *ref) {
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
    train_act_policy own = t->model.policy;
    return train_policy_grad_error(t, &own, ref);
}
