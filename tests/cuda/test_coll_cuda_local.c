/* The cuda-local backend (simulated ranks on GPU 0) against the cpu backend (make test-cuda;
 * needs a GPU): every algorithm, all-reduce and reduce-scatter, 2, 3 and 4 ranks, ragged sizes,
 * the same inputs through agoq_sim_collective_on, must give the cpu backend's outputs bit for
 * bit. Bit-identity, not a tolerance, is the right bound because nothing differs between the
 * two but where the arithmetic runs:
 *   - the quantizers and the 8-bit reduce are k1's kernels, bit-exact with the C references by
 *     the kernel tests (fmad off, no FTZ, the same quant_math.h expressions);
 *   - the native reductions (fp32, bf16, fp8lm) are one function on both sides, wire.h's
 *     agoq_ring_sum: the same ring order (partial sum from rank j+1 round to rank j) and the
 *     same rounding to the wire dtype after every add; the encode / decode kernels use the same
 *     element access (agoq_dt_load / agoq_dt_store);
 *   - fp8lm's shared scale comes from a max (order-free) and is computed on the host by the
 *     algorithm; all-to-all, all-gather and shift are byte copies in the cpu backend's pattern.
 * Any difference is a bug (a misrouted chunk, a different rounding, a race on the stream).
 * The trainer's reducer on cuda-local must likewise give the cpu reducer's mean exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/driver.h"
#include "core/rng.h"
#include "tests/test.h"
#include "train/dp.h"

/* cfg over N ranks of n inputs (seeded by rank) on comm c; returns N * n outputs (NaN where a
 * reduce-scatter leaves a rank's buffer alone), or NULL when the run failed. */
static float *run_sim(agoq_comm *c, const agoq_coll_config *cfg, size_t n) {
    const int N = c->nranks;
    const size_t all = (size_t)N * n;
    float *in = malloc(all * sizeof *in), *out = malloc(all * sizeof *out);
    const float *inp[64];
    float *outp[64];
    for (size_t i = 0; i < all; i++) out[i] = NAN;
    for (int r = 0; r < N; r++) inp[r] = in + (size_t)r * n, outp[r] = out + (size_t)r * n;
    for (int r = 0; r < N; r++) agoq_fill(AGOQ_DIST_HEAVY, in + (size_t)r * n, n, 700 + (uint64_t)r);
    const int rc = agoq_sim_collective_on(c, cfg, inp, outp, n, NULL);
    free(in);
    if (rc) free(out);
    return rc ? NULL : out;
}

TEST(cuda_coll_local_matches_cpu_bit_for_bit) {
    static const int ranks[] = {2, 3, 4};
    static const size_t sizes[] = {1, 1000, 65537};
    static const agoq_format fmts[] = {AGOQ_FMT_INT8, AGOQ_FMT_FP8_E4M3, AGOQ_FMT_DYN8, AGOQ_FMT_INT4};
    int runs = 0;
    for (size_t ni = 0; ni < sizeof ranks / sizeof ranks[0]; ni++) {
        const int N = ranks[ni];
        agoq_comm *g = agoq_sim_comm_open("cuda-local", N), *h = agoq_sim_comm_open("cpu", N);
        CHECK(g != NULL && h != NULL && strcmp(g->backend, "cuda-local") == 0);
        for (int a = 0; a < AGOQ_ALGO_COUNT; a++)
            for (int op = 0; op < 2; op++)
                for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0] + (a == AGOQ_ALGO_QGZ); fi++) {
                        agoq_coll_config cfg = agoq_coll_config_default((agoq_coll_algo)a, (agoq_coll_op)op);
                        const int quant = agoq_coll_algos[a].quantized, rpn = fi == 4; /* qgz: 2 ranks a node */
                        if ((!quant || a == AGOQ_ALGO_FP8LM) && fi > 1) continue;
                        if (!quant && fi > 0) continue;
                        if (rpn && N % 2) continue;
                        if (a == AGOQ_ALGO_FP8LM) cfg.q = agoq_qconfig_default(fi ? AGOQ_FMT_FP8_E5M2 : AGOQ_FMT_FP8_E4M3);
                        else if (quant) cfg.q = agoq_qconfig_default(fmts[rpn ? 3 : fi]);
                        cfg.sum = (fi & 1) ? AGOQ_SUM_BF16 : AGOQ_SUM_FP32;
                        cfg.ranks_per_node = rpn ? 2 : 0;
                        float *want = run_sim(h, &cfg, sizes[si]), *got = run_sim(g, &cfg, sizes[si]);
                        float *again = run_sim(g, &cfg, sizes[si]); /* from the pool's reused memory */
                        CHECK(want && got && again);
                        CHECK_MSG(agoq_validate_floats(agoq_coll_algos[a].name, want, got, (size_t)N * sizes[si]) == 0 &&
                                      agoq_validate_floats("again", got, again, (size_t)N * sizes[si]) == 0,
                                  "%s %s N=%d n=%zu %s sum %s rpn %d", agoq_coll_algos[a].name, agoq_coll_op_name(cfg.op),
                                  N, sizes[si], quant ? agoq_formats[cfg.q.fmt].name : "-",
                                  cfg.sum == AGOQ_SUM_BF16 ? "bf16" : "fp32", cfg.ranks_per_node);
                        free(want);
                        free(got);
                        free(again);
                        runs++;
                    }
        agoq_sim_comm_close(g);
        agoq_sim_comm_close(h);
    }
    printf("    %d configurations bit-identical on cuda-local and cpu\n", runs);
}

/* dp.h's reducer, as the trainer uses it: agoq8 and fp8lm means of 2 and 3 ranks, one reducer
 * per backend over tensors of several sizes (the comm and its pool kept across calls). */
TEST(cuda_coll_local_train_reducer_matches_cpu) {
    static const size_t sizes[] = {4096, 1000, 384 * 1024 + 7, 1};
    for (int R = 2; R <= 3; R++)
        for (int mode = GRAD_AGOQ8; mode <= GRAD_FP8LM; mode++) {
            agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_INT8);
            q.block = 256;
            train_reducer rc, rg;
            CHECK(train_reducer_init(&rc, (train_grad_mode)mode, &q, R, 384 * 1024 + 7, "cpu") == 0);
            CHECK(train_reducer_init(&rg, (train_grad_mode)mode, &q, R, 384 * 1024 + 7, "cuda-local") == 0);
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                const size_t n = sizes[si];
                float *g[3], *mc = malloc(n * sizeof *mc), *mg = malloc(n * sizeof *mg);
                for (int k = 0; k < R; k++) {
                    g[k] = malloc(n * sizeof(float));
                    agoq_fill(AGOQ_DIST_NORMAL, g[k], n, 50 + (uint64_t)(k + 10 * si));
                }
                train_reduce_mean(&rc, (const float *const *)g, n, mc);
                train_reduce_mean(&rg, (const float *const *)g, n, mg);
                CHECK_MSG(agoq_validate_floats("mean", mc, mg, n) == 0, "%s R=%d n=%zu", train_grad_mode_names[mode], R, n);
                for (int k = 0; k < R; k++) free(g[k]);
                free(mc);
                free(mg);
            }
            train_reducer_free(&rc);
            train_reducer_free(&rg);
        }
}
