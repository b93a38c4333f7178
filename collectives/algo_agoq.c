/* AGoQ reduce-scatter / all-reduce: each rank quantizes the chunk destined to every other rank
 * (per block, scales travel with the codes), one all-to-all (grouped ncclSend/ncclRecv),
 * then each rank dequantizes its N received chunks, sums them (fp32, or bf16 per add as the
 * paper's released code) and requantizes once. All-reduce then all-gathers the 8-bit shards.
 * Every element is quantized exactly twice whatever N: the error bound does not grow with N. */
#include "collectives/driver.h"

int agoq_algo_agoq(agoq_coll_run *run) {
    agoq_comm *c = run->comm;
    const int N = c->nranks;
    const agoq_qconfig *q = &run->cfg->q;
    const size_t qb = agoq_packed(q, run->shard).bytes;
    void **send = agoq_scratch(run, qb * (size_t)N), **recv = agoq_scratch(run, qb * (size_t)N);
    void **red = agoq_scratch(run, qb);
    agoq_phase(run, AGOQ_PH_QUANT);
    for (int lr = 0; lr < c->nlocal; lr++)
        for (int j = 0; j < N; j++) {
            agoq_qconfig qs = agoq_step_qconfig(q, c->rank0 + lr, j);
            c->ops->quantize(c, lr, &qs, run->in[lr] + (size_t)j * run->shard, run->shard, (char *)send[lr] + (size_t)j * qb);
        }
    agoq_phase(run, AGOQ_PH_COMM);
    c->ops->alltoall(c, send, recv, qb, (agoq_comm_group){N, 1});
    agoq_phase(run, AGOQ_PH_REDUCE);
    for (int lr = 0; lr < c->nlocal; lr++) {
        agoq_qconfig qs = agoq_step_qconfig(q, c->rank0 + lr, N);
        c->ops->reduce(c, lr, &qs, recv[lr], qb, N, run->shard, run->cfg->sum, red[lr]);
    }
    agoq_quantized_tail(run, red);
    agoq_scratch_free(run, send);
    agoq_scratch_free(run, recv);
    agoq_scratch_free(run, red);
    return 0;
}
