/* The nccl backend against the cpu backend (make test-cuda; needs a GPU): the same algorithm
 * on the same inputs over every visible GPU (ncclCommInitAll). Algorithms that move bytes only
 * (agoq, qgz, ring_q: k1's kernels are bit-exact with the references, NCCL's all-to-all,
 * all-gather and send/recv are copies) must give the cpu backend's bits; the NCCL-reduced ones
 * (fp32, bf16, fp8lm) too on one GPU (a reduction over one rank is a copy), and within a sanity
 * SNR of the cpu ring on several (NCCL's reduction order is its own). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/driver.h"
#include "core/metrics.h"
#include "core/rng.h"
#include "tests/test.h"

/* Runs cfg on comm c with rank r's input seeded by r; returns the rank outputs on the host
 * (all-reduce: shard*N per rank, reduce-scatter: shard). */
static float *run_on(agoq_comm *c, const agoq_coll_config *cfg, size_t n, size_t *out_count) {
    const int N = c->nranks;
    const size_t shard = agoq_coll_shard_count(cfg, N, n), total = shard * (size_t)N;
    const size_t oc = cfg->op == AGOQ_COLL_ALLREDUCE ? total : shard;
    float **in = calloc((size_t)N, sizeof *in), **out = calloc((size_t)N, sizeof *out);
    float *host = malloc(n * sizeof *host), *res = malloc((size_t)N * oc * sizeof *res);
    for (int r = 0; r < N; r++) {
        in[r] = c->ops->alloc(c, r, total * sizeof(float));
        out[r] = c->ops->alloc(c, r, oc * sizeof(float));
        agoq_fill(AGOQ_DIST_HEAVY, host, n, 900 + (uint64_t)r);
        c->ops->upload(c, r, in[r], host, n * sizeof(float));
    }
    agoq_coll_run run = {.comm = c, .cfg = cfg, .shard = shard, .in = in, .out = out};
    int rc = agoq_coll_execute(&run);
    c->ops->sync(c);
    for (int r = 0; r < N && rc == 0; r++) c->ops->download(c, r, res + (size_t)r * oc, out[r], oc * sizeof(float));
    agoq_coll_run_release(&run);
    for (int r = 0; r < N; r++) {
        c->ops->release(c, r, in[r]);
        c->ops->release(c, r, out[r]);
    }
    free(in);
    free(out);
    free(host);
    *out_count = (size_t)N * oc;
    if (rc) {
        free(res);
        return NULL;
    }
    return res;
}

TEST(cuda_coll_nccl_matches_cpu_backend) {
    agoq_comm *g = agoq_comm_nccl_create(0);
    CHECK(g != NULL);
    const int N = g->nranks;
    agoq_comm *h = agoq_comm_cpu_create(N);
    static const size_t sizes[] = {1, 1000, 65537};
    static const agoq_format fmts[] = {AGOQ_FMT_INT8, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8, AGOQ_FMT_INT4};
    printf("    %d GPU rank(s)\n", N);
    for (int a = 0; a < AGOQ_ALGO_COUNT; a++)
        for (int op = 0; op < 2; op++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
                    agoq_coll_config cfg = agoq_coll_config_default((agoq_coll_algo)a, (agoq_coll_op)op);
                    const int quant = agoq_coll_algos[a].quantized;
                    if (!quant && fi > 0) continue;
                    if (a == AGOQ_ALGO_FP8LM && fi > 0) continue;
                    if (quant && a != AGOQ_ALGO_FP8LM) cfg.q = agoq_qconfig_default(fmts[fi]);
                    cfg.sum = (fi & 1) ? AGOQ_SUM_BF16 : AGOQ_SUM_FP32;
                    size_t cn, gn;
                    float *want = run_on(h, &cfg, sizes[si], &cn), *got = run_on(g, &cfg, sizes[si], &gn);
                    CHECK(want && got && cn == gn);
                    const int exact = (a == AGOQ_ALGO_AGOQ || a == AGOQ_ALGO_QGZ || a == AGOQ_ALGO_RING_Q) || N == 1;
                    if (exact) {
                        CHECK_MSG(agoq_validate_floats(agoq_coll_algos[a].name, want, got, cn) == 0, "%s %s n=%zu %s",
                                  agoq_coll_algos[a].name, agoq_coll_op_name(cfg.op), sizes[si], agoq_formats[cfg.q.fmt].name);
                    } else {
                        agoq_error_stats e = agoq_compare(want, got, cn);
                        CHECK_MSG(e.nonfinite == 0 && e.snr_db > (a == AGOQ_ALGO_FP32 ? 100.0 : 15.0),
                                  "%s %s n=%zu: snr vs cpu ring %.1f dB", agoq_coll_algos[a].name,
                                  agoq_coll_op_name(cfg.op), sizes[si], e.snr_db);
                    }
                    free(want);
                    free(got);
                }
    agoq_comm_cpu_destroy(h);
    agoq_comm_nccl_destroy(g);
}
