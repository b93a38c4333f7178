/* Naive quantized ring reduce-scatter (what a plain "compress every message" ring does): the
 * partial sum of chunk c travels the ring; each hop dequantizes it, adds the local chunk and
 * requantizes before sending on. Chunk r ends at rank r after N-1 hops, so an element is
 * quantized N times and the error of the partial sums accumulates with the rank count.
 * All-reduce then all-gathers the quantized result (no extra quantization). */
#include "collectives/driver.h"

int agoq_algo_ring_q(agoq_coll_run *run) {
    agoq_comm *c = run->comm;
    const int N = c->nranks;
    const agoq_qconfig *q = &run->cfg->q;
    const size_t qb = agoq_packed(q, run->shard).bytes, sh = run->shard;
    void **sendq = agoq_scratch(run, qb), **recvq = agoq_scratch(run, qb), **acc = agoq_scratch(run, sh * 4);
    /* step 0: rank r starts the partial sum of chunk r-1 */
    agoq_phase(run, AGOQ_PH_QUANT);
    for (int lr = 0; lr < c->nlocal; lr++) {
        int r = c->rank0 + lr, chunk = (r + N - 1) % N;
        agoq_qconfig qs = agoq_step_qconfig(q, r, 0);
        c->ops->quantize(c, lr, &qs, run->in[lr] + (size_t)chunk * sh, sh, sendq[lr]);
    }
    for (int s = 0; s < N - 1; s++) {
        agoq_phase(run, AGOQ_PH_COMM);
        c->ops->shift(c, sendq, recvq, qb);
        agoq_phase(run, AGOQ_PH_REDUCE);
        for (int lr = 0; lr < c->nlocal; lr++) {
            int r = c->rank0 + lr, chunk = ((r - s - 2) % N + N) % N; /* the chunk r-1 sent */
            agoq_qconfig qs = agoq_step_qconfig(q, r, s + 1);
            c->ops->dequantize(c, lr, q, recvq[lr], sh, acc[lr]);
            c->ops->add(c, lr, acc[lr], run->in[lr] + (size_t)chunk * sh, sh, run->cfg->sum);
            c->ops->quantize(c, lr, &qs, acc[lr], sh, sendq[lr]);
        }
    }
    agoq_quantized_tail(run, sendq);
    agoq_scratch_free(run, sendq);
    agoq_scratch_free(run, recvq);
    agoq_scratch_free(run, acc);
    return 0;
}
