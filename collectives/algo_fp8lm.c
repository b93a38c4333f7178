/* FP8-LM style all-reduce: every rank scales its gradient by one shared factor so that NCCL can
 * sum fp8 values directly (ncclFloat8e4m3 / ncclFloat8e5m2, NCCL >= 2.24; the partial sum is
 * stored in fp8 at every hop). The shared scale s = N * global_absmax / fp8_max keeps the sum of
 * N values in range ("pre-scaling"); the price is that small gradients fall into fp8's
 * subnormals or to zero as N grows, the accuracy loss the paper reports for this design. */
#include "collectives/driver.h"

int agoq_algo_fp8lm(agoq_coll_run *run) {
    agoq_comm *c = run->comm;
    const int N = c->nranks, ar = run->cfg->op == AGOQ_COLL_ALLREDUCE;
    const size_t total = run->shard * (size_t)N, out_count = ar ? total : run->shard;
    const agoq_dtype dt = agoq_formats[run->cfg->q.fmt].fp8_mbits == 2 ? AGOQ_DT_FP8_E5M2 : AGOQ_DT_FP8_E4M3;
    void **win = agoq_scratch(run, total), **wout = agoq_scratch(run, out_count);
    agoq_phase(run, AGOQ_PH_QUANT);
    float amax = c->ops->global_absmax(c, (void *const *)run->in, total);
    float s = amax > 0.0f ? (float)N * amax / agoq_formats[run->cfg->q.fmt].qmax : 1.0f;
    for (int lr = 0; lr < c->nlocal; lr++) c->ops->encode(c, lr, dt, run->in[lr], total, 1.0f / s, win[lr]);
    agoq_phase(run, AGOQ_PH_COMM);
    if (ar) c->ops->allreduce(c, win, wout, total, dt);
    else c->ops->reduce_scatter(c, win, wout, run->shard, dt);
    agoq_phase(run, AGOQ_PH_DEQUANT);
    for (int lr = 0; lr < c->nlocal; lr++) c->ops->decode(c, lr, dt, wout[lr], out_count, s, run->out[lr]);
    agoq_scratch_free(run, win);
    agoq_scratch_free(run, wout);
    return 0;
}
