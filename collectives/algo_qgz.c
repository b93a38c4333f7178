/* ZeRO++ qgZ style hierarchical reduce-scatter: int4 blocks (by default), an all-to-all inside
 * each node, dequant-sum-requant, an all-to-all across nodes between ranks of the same local
 * index, dequant-sum-requant. With R ranks per node and M = N/R nodes, rank (node a, local k) =
 * a*R + k sends local peer k' the shards {b*R + k' : b < M}; after the intra-node sum it holds
 * the node's partial of shards {b*R + k}, and sends partial b to node b. Inter-node traffic is
 * one shard per node instead of N-1 shards (qgZ's point), at the cost of a third quantization. */
#include "collectives/driver.h"

int agoq_algo_qgz(agoq_coll_run *run) {
    agoq_comm *c = run->comm;
    const int N = c->nranks, R = run->cfg->ranks_per_node ? run->cfg->ranks_per_node : N, M = N / R;
    const agoq_qconfig *q = &run->cfg->q;
    const size_t qb = agoq_packed(q, run->shard).bytes, sh = run->shard;
    void **send = agoq_scratch(run, qb * (size_t)N), **recv = agoq_scratch(run, qb * (size_t)N);
    void **part = agoq_scratch(run, qb * (size_t)M), **red = M > 1 ? agoq_scratch(run, qb) : part;
    agoq_phase(run, AGOQ_PH_QUANT);
    for (int lr = 0; lr < c->nlocal; lr++) {
        agoq_qconfig qs = agoq_step_qconfig(q, c->rank0 + lr, 0);
        for (int k = 0; k < R; k++)
            for (int b = 0; b < M; b++) /* slot k (to local peer k) holds shards b*R + k */
                c->ops->quantize(c, lr, &qs, run->in[lr] + (size_t)(b * R + k) * sh, sh,
                                 (char *)send[lr] + ((size_t)k * M + b) * qb);
    }
    agoq_phase(run, AGOQ_PH_COMM);
    c->ops->alltoall(c, send, recv, qb * (size_t)M, (agoq_comm_group){R, 1});
    agoq_phase(run, AGOQ_PH_REDUCE);
    for (int lr = 0; lr < c->nlocal; lr++) {
        agoq_qconfig qs = agoq_step_qconfig(q, c->rank0 + lr, 1);
        for (int b = 0; b < M; b++) /* shard b*R + k from each of the R local peers */
            c->ops->reduce(c, lr, &qs, (char *)recv[lr] + (size_t)b * qb, qb * (size_t)M, R, sh, run->cfg->sum,
                           (char *)part[lr] + (size_t)b * qb);
    }
    if (M > 1) {
        agoq_phase(run, AGOQ_PH_COMM);
        c->ops->alltoall(c, part, recv, qb, (agoq_comm_group){M, R});
        agoq_phase(run, AGOQ_PH_REDUCE);
        for (int lr = 0; lr < c->nlocal; lr++) {
            agoq_qconfig qs = agoq_step_qconfig(q, c->rank0 + lr, 2);
            c->ops->reduce(c, lr, &qs, recv[lr], qb, M, sh, run->cfg->sum, red[lr]);
        }
    }
    agoq_quantized_tail(run, red);
    agoq_scratch_free(run, send);
    agoq_scratch_free(run, recv);
    agoq_scratch_free(run, part);
    if (M > 1) agoq_scratch_free(run, red);
    return 0;
}
