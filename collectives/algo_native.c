/* Baselines: NCCL's own reduce-scatter / all-reduce in fp32 or bf16. The fp32 input is cast to
 * the wire dtype (bf16: RNE), reduced natively, and cast back. Logical bytes stay fp32. */
#include "collectives/driver.h"

int agoq_algo_native(agoq_coll_run *run) {
    agoq_comm *c = run->comm;
    const int N = c->nranks, ar = run->cfg->op == AGOQ_COLL_ALLREDUCE;
    const size_t total = run->shard * (size_t)N, out_count = ar ? total : run->shard;
    if (run->cfg->algo == AGOQ_ALGO_FP32) {
        agoq_phase(run, AGOQ_PH_COMM);
        if (ar) c->ops->allreduce(c, (void *const *)run->in, (void *const *)run->out, total, AGOQ_DT_F32);
        else c->ops->reduce_scatter(c, (void *const *)run->in, (void *const *)run->out, run->shard, AGOQ_DT_F32);
        return 0;
    }
    void **win = agoq_scratch(run, total * 2), **wout = agoq_scratch(run, out_count * 2);
    agoq_phase(run, AGOQ_PH_QUANT);
    for (int lr = 0; lr < c->nlocal; lr++) c->ops->encode(c, lr, AGOQ_DT_BF16, run->in[lr], total, 1.0f, win[lr]);
    agoq_phase(run, AGOQ_PH_COMM);
    if (ar) c->ops->allreduce(c, win, wout, total, AGOQ_DT_BF16);
    else c->ops->reduce_scatter(c, win, wout, run->shard, AGOQ_DT_BF16);
    agoq_phase(run, AGOQ_PH_DEQUANT);
    for (int lr = 0; lr < c->nlocal; lr++) c->ops->decode(c, lr, AGOQ_DT_BF16, wout[lr], out_count, 1.0f, run->out[lr]);
    agoq_scratch_free(run, win);
    agoq_scratch_free(run, wout);
    return 0;
}
