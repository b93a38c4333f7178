/* The shared collectives driver: the algorithm table, the shard layout, phase timing, the
 * dispatch to the algorithm files, and the simulated-rank entry points of collectives.h.
 * See driver.h for the communicator interface and collectives.h for the algorithms. */
#include "collectives/driver.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/quant/quant_ref.h"

const agoq_coll_algo_info agoq_coll_algos[AGOQ_ALGO_COUNT] = {
    [AGOQ_ALGO_FP32] = {"fp32", "NCCL ring reduce in fp32 (baseline)", 0, AGOQ_FMT_INT8},
    [AGOQ_ALGO_BF16] = {"bf16", "NCCL ring reduce in bf16 (baseline; partial sums rounded per hop)", 0, AGOQ_FMT_INT8},
    [AGOQ_ALGO_AGOQ] = {"agoq", "AGoQ: per-block 8-bit all-to-all, one dequant-sum-requant, all-gather", 1,
                        AGOQ_FMT_INT8},
    [AGOQ_ALGO_QGZ] = {"qgz", "ZeRO++ qgZ style: int4 blocks, intra-node then inter-node all-to-all", 1,
                       AGOQ_FMT_INT4},
    [AGOQ_ALGO_RING_Q] = {"ring_q", "naive quantized ring: dequant, add, requantize at every hop", 1, AGOQ_FMT_INT8},
    [AGOQ_ALGO_FP8LM] = {"fp8lm", "FP8-LM: one global scale, NCCL sums fp8 directly", 1, AGOQ_FMT_FP8_E4M3},
};

const char *const agoq_coll_phase_names[AGOQ_PH_COUNT] = {"quant", "comm", "reduce", "dequant"};

int agoq_coll_algo_by_name(const char *name) {
    for (int a = 0; a < AGOQ_ALGO_COUNT; a++)
        if (name && strcmp(name, agoq_coll_algos[a].name) == 0) return a;
    return -1;
}

const char *agoq_coll_algo_names(void) { return "fp32, bf16, agoq, qgz, ring_q, fp8lm"; }

const char *agoq_coll_op_name(agoq_coll_op op) { return op == AGOQ_COLL_ALLREDUCE ? "allreduce" : "reduce_scatter"; }

int agoq_coll_op_by_name(const char *name) {
    if (name && strcmp(name, "allreduce") == 0) return AGOQ_COLL_ALLREDUCE;
    if (name && strcmp(name, "reduce_scatter") == 0) return AGOQ_COLL_REDUCE_SCATTER;
    return -1;
}

size_t agoq_dtype_bytes(agoq_dtype dt) { return dt == AGOQ_DT_F32 ? 4 : dt == AGOQ_DT_BF16 ? 2 : 1; }

agoq_coll_config agoq_coll_config_default(agoq_coll_algo algo, agoq_coll_op op) {
    agoq_coll_config c;
    memset(&c, 0, sizeof c);
    c.algo = algo;
    c.op = op;
    c.q = agoq_qconfig_default(agoq_coll_algos[algo].default_fmt);
    c.sum = AGOQ_SUM_FP32;
    return c;
}

int agoq_coll_config_check(const agoq_coll_config *cfg, int nranks) {
    AGOQ_REQUIRE((int)cfg->algo >= 0 && cfg->algo < AGOQ_ALGO_COUNT, "collectives: algorithm id %d unknown",
                 (int)cfg->algo);
    AGOQ_REQUIRE(nranks >= 1, "collectives: rank count %d: must be >= 1", nranks);
    AGOQ_REQUIRE(cfg->op == AGOQ_COLL_ALLREDUCE || cfg->op == AGOQ_COLL_REDUCE_SCATTER,
                 "collectives: operation id %d unknown", (int)cfg->op);
    if (!agoq_coll_algos[cfg->algo].quantized) return 0;
    if (agoq_qconfig_check(&cfg->q)) return -1;
    if (cfg->algo == AGOQ_ALGO_FP8LM)
        AGOQ_REQUIRE(AGOQ_FMT_IS_FP8(cfg->q.fmt),
                     "collectives: fp8lm needs format fp8_e4m3 or fp8_e5m2, not %s", agoq_formats[cfg->q.fmt].name);
    if (cfg->algo == AGOQ_ALGO_QGZ && cfg->ranks_per_node)
        AGOQ_REQUIRE(cfg->ranks_per_node > 0 && nranks % cfg->ranks_per_node == 0,
                     "collectives: ranks_per_node %d does not divide the rank count %d", cfg->ranks_per_node, nranks);
    return 0;
}

size_t agoq_coll_shard_count(const agoq_coll_config *cfg, int nranks, size_t n) {
    size_t shard = (n + (size_t)nranks - 1) / (size_t)nranks;
    /* block-quantized chunks: every shard starts on a block boundary, so one rank's blocks
     * never straddle two destinations (fp8lm has a single global scale: no blocks) */
    if (agoq_coll_algos[cfg->algo].quantized && cfg->algo != AGOQ_ALGO_FP8LM) {
        size_t b = (size_t)cfg->q.block;
        shard = (shard + b - 1) / b * b;
    }
    return shard ? shard : 1;
}

agoq_coll_info agoq_coll_describe(const agoq_coll_config *cfg, int nranks, size_t shard) {
    agoq_coll_info in = {shard, 0.0, 0};
    const double N = nranks, ar = cfg->op == AGOQ_COLL_ALLREDUCE;
    const double qb = (double)agoq_packed(&cfg->q, shard).bytes;
    /* bytes each rank sends: ring reduce-scatter (N-1) shards, all-gather another (N-1) */
    switch (cfg->algo) {
    case AGOQ_ALGO_FP32: in.wire_bytes = (1 + ar) * (N - 1) * (double)shard * 4; break;
    case AGOQ_ALGO_BF16:
        in.wire_bytes = (1 + ar) * (N - 1) * (double)shard * 2;
        in.quantizations = nranks; /* the input cast, then every hop's partial sum */
        break;
    case AGOQ_ALGO_FP8LM:
        in.wire_bytes = (1 + ar) * (N - 1) * (double)shard; /* + one fp32 max all-reduce, not counted */
        in.quantizations = nranks;
        break;
    case AGOQ_ALGO_AGOQ:
        in.wire_bytes = (1 + ar) * (N - 1) * qb;
        in.quantizations = 2;
        break;
    case AGOQ_ALGO_RING_Q:
        in.wire_bytes = (1 + ar) * (N - 1) * qb;
        in.quantizations = nranks;
        break;
    case AGOQ_ALGO_QGZ: {
        int rpn = cfg->ranks_per_node ? cfg->ranks_per_node : nranks, nn = nranks / rpn;
        in.wire_bytes = (double)(rpn - 1) * nn * qb + (double)(nn - 1) * qb + ar * (N - 1) * qb;
        in.quantizations = 2 + (nn > 1); /* input, intra-node sum, inter-node sum */
        break;
    }
    default: break;
    }
    return in;
}

void agoq_phase(agoq_coll_run *run, agoq_coll_phase ph) {
    if (run->time_phases) {
        run->comm->ops->sync(run->comm);
        double t = agoq_now_s();
        if (run->cur_phase >= 0) run->phase_s[run->cur_phase] += t - run->phase_t0;
        run->phase_t0 = t;
    }
    run->cur_phase = (int)ph;
}

void agoq_phase_end(agoq_coll_run *run) {
    if (run->time_phases && run->cur_phase >= 0) {
        run->comm->ops->sync(run->comm);
        run->phase_s[run->cur_phase] += agoq_now_s() - run->phase_t0;
    }
    run->cur_phase = -1;
}

void **agoq_scratch(agoq_coll_run *run, size_t bytes) {
    for (int i = 0; i < run->nscratch; i++)
        if (!run->scratch[i].used && run->scratch[i].bytes == bytes) {
            run->scratch[i].used = 1;
            return run->scratch[i].bufs;
        }
    if (run->nscratch == (int)(sizeof run->scratch / sizeof run->scratch[0]))
        agoq_die("collectives: more than %d scratch buffers in one algorithm", run->nscratch);
    agoq_comm *c = run->comm;
    void **b = calloc((size_t)c->nlocal, sizeof *b);
    if (!b) abort();
    for (int lr = 0; lr < c->nlocal; lr++) b[lr] = c->ops->alloc(c, lr, bytes);
    run->scratch[run->nscratch].bytes = bytes;
    run->scratch[run->nscratch].bufs = b;
    run->scratch[run->nscratch++].used = 1;
    return b;
}

void agoq_scratch_free(agoq_coll_run *run, void **bufs) {
    for (int i = 0; i < run->nscratch; i++)
        if (run->scratch[i].bufs == bufs) run->scratch[i].used = 0;
}

void agoq_coll_run_release(agoq_coll_run *run) {
    agoq_comm *c = run->comm;
    for (int i = 0; i < run->nscratch; i++) {
        for (int lr = 0; lr < c->nlocal; lr++) c->ops->release(c, lr, run->scratch[i].bufs[lr]);
        free(run->scratch[i].bufs);
    }
    run->nscratch = 0;
}

agoq_qconfig agoq_step_qconfig(const agoq_qconfig *q, int rank, int step) {
    agoq_qconfig s = *q;
    s.seed = q->seed + 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1) + 0xD1B54A32D192ED03ull * (uint64_t)(step + 1);
    return s;
}

void agoq_quantized_tail(agoq_coll_run *run, void **red) {
    agoq_comm *c = run->comm;
    const agoq_qconfig *q = &run->cfg->q;
    const size_t qb = agoq_packed(q, run->shard).bytes;
    if (run->cfg->op == AGOQ_COLL_REDUCE_SCATTER) {
        agoq_phase(run, AGOQ_PH_DEQUANT);
        for (int lr = 0; lr < c->nlocal; lr++) c->ops->dequantize(c, lr, q, red[lr], run->shard, run->out[lr]);
        return;
    }
    void **all = agoq_scratch(run, qb * (size_t)c->nranks);
    agoq_phase(run, AGOQ_PH_COMM);
    c->ops->allgather(c, red, all, qb);
    agoq_phase(run, AGOQ_PH_DEQUANT);
    for (int lr = 0; lr < c->nlocal; lr++)
        for (int j = 0; j < c->nranks; j++)
            c->ops->dequantize(c, lr, q, (char *)all[lr] + (size_t)j * qb, run->shard, run->out[lr] + (size_t)j * run->shard);
    agoq_scratch_free(run, all);
}

int agoq_coll_execute(agoq_coll_run *run) {
    if (agoq_coll_config_check(run->cfg, run->comm->nranks)) return -1;
    memset(run->phase_s, 0, sizeof run->phase_s);
    run->cur_phase = -1;
    int rc;
    switch (run->cfg->algo) {
    case AGOQ_ALGO_FP32:
    case AGOQ_ALGO_BF16: rc = agoq_algo_native(run); break;
    case AGOQ_ALGO_AGOQ: rc = agoq_algo_agoq(run); break;
    case AGOQ_ALGO_QGZ: rc = agoq_algo_qgz(run); break;
    case AGOQ_ALGO_RING_Q: rc = agoq_algo_ring_q(run); break;
    case AGOQ_ALGO_FP8LM: rc = agoq_algo_fp8lm(run); break;
    default: rc = -1;
    }
    agoq_phase_end(run);
    return rc;
}

agoq_comm *agoq_sim_comm_open(const char *backend, int nranks) {
    if (backend && strcmp(backend, "cpu") == 0) return agoq_comm_cpu_create(nranks);
    if (backend && strcmp(backend, "cuda-local") == 0) {
#if AGOQ_HAVE_CUDA
        return agoq_comm_cuda_local_create(nranks);
#else
        agoq_error("collectives: backend cuda-local needs a CUDA build (this one has CUDA=0)");
        return NULL;
#endif
    }
    agoq_error("collectives: unknown simulated-rank backend '%s' (valid: %s)", backend ? backend : "(null)",
               AGOQ_SIM_BACKENDS);
    return NULL;
}

void agoq_sim_comm_close(agoq_comm *c) {
#if AGOQ_HAVE_CUDA
    if (c && strcmp(c->backend, "cuda-local") == 0) {
        agoq_comm_cuda_local_destroy(c);
        return;
    }
#endif
    agoq_comm_cpu_destroy(c);
}

int agoq_sim_collective_on(agoq_comm *c, const agoq_coll_config *cfg, const float *const *in_host,
                           float *const *out_host, size_t n, agoq_coll_info *info) {
    AGOQ_REQUIRE(n > 0, "collectives: element count is 0");
    const int nranks = c->nranks;
    if (agoq_coll_config_check(cfg, nranks)) return -1;
    const size_t shard = agoq_coll_shard_count(cfg, nranks, n), total = shard * (size_t)nranks;
    const size_t out_count = cfg->op == AGOQ_COLL_ALLREDUCE ? total : shard;
    float **in = calloc((size_t)nranks, sizeof *in), **out = calloc((size_t)nranks, sizeof *out);
    if (!in || !out) abort();
    for (int r = 0; r < nranks; r++) {
        in[r] = c->ops->alloc(c, r, total * sizeof(float)); /* zeroed: the padding */
        out[r] = c->ops->alloc(c, r, out_count * sizeof(float));
        c->ops->upload(c, r, in[r], in_host[r], n * sizeof(float));
    }
    agoq_coll_run run = {.comm = c, .cfg = cfg, .shard = shard, .in = in, .out = out};
    int rc = agoq_coll_execute(&run);
    agoq_coll_run_release(&run);
    for (int r = 0; r < nranks && rc == 0; r++) {
        if (!out_host[r]) continue;
        if (cfg->op == AGOQ_COLL_ALLREDUCE) {
            c->ops->download(c, r, out_host[r], out[r], n * sizeof(float));
        } else {
            size_t lo = (size_t)r * shard, hi = lo + shard < n ? lo + shard : n;
            if (lo < n) c->ops->download(c, r, out_host[r] + lo, out[r], (hi - lo) * sizeof(float));
        }
    }
    for (int r = 0; r < nranks; r++) {
        c->ops->release(c, r, in[r]);
        c->ops->release(c, r, out[r]);
    }
    free(in);
    free(out);
    if (info && rc == 0) *info = agoq_coll_describe(cfg, nranks, shard);
    return rc;
}

int agoq_sim_collective(const agoq_coll_config *cfg, float *const *rank_bufs, int nranks, size_t n,
                        agoq_coll_info *info) {
    if (agoq_coll_config_check(cfg, nranks)) return -1; /* before the comm: its own rank message */
    agoq_comm *c = agoq_comm_cpu_create(nranks);
    if (!c) return -1;
    int rc = agoq_sim_collective_on(c, cfg, (const float *const *)rank_bufs, rank_bufs, n, info);
    agoq_comm_cpu_destroy(c);
    return rc;
}

/* The all-reduce configuration of agoq_sim_allreduce's arguments; 0 or -1. */
static int allreduce_config(const char *algo, const agoq_qconfig *q, int bf16_sum, agoq_coll_config *cfg) {
    int a = agoq_coll_algo_by_name(algo);
    AGOQ_REQUIRE(a >= 0, "collectives: unknown algorithm '%s' (valid: %s)", algo ? algo : "(null)",
                 agoq_coll_algo_names());
    *cfg = agoq_coll_config_default((agoq_coll_algo)a, AGOQ_COLL_ALLREDUCE);
    if (q) cfg->q = *q;
    cfg->sum = bf16_sum ? AGOQ_SUM_BF16 : AGOQ_SUM_FP32;
    return 0;
}

int agoq_sim_allreduce(const char *algo, const agoq_qconfig *q, int bf16_sum, float *const *rank_bufs,
                       int nranks, size_t n) {
    agoq_coll_config cfg;
    if (allreduce_config(algo, q, bf16_sum, &cfg)) return -1;
    return agoq_sim_collective(&cfg, rank_bufs, nranks, n, NULL);
}

int agoq_sim_allreduce_on(agoq_comm *c, const char *algo, const agoq_qconfig *q, int bf16_sum,
                          const float *const *in, float *const *out, size_t n) {
    agoq_coll_config cfg;
    if (allreduce_config(algo, q, bf16_sum, &cfg)) return -1;
    return agoq_sim_collective_on(c, &cfg, in, out, n, NULL);
}

int agoq_accumulate_quantized(const agoq_qconfig *q, const float *const *micro, int nmicro, size_t n,
                              float *out) {
    AGOQ_REQUIRE(n > 0 && nmicro >= 1, "accumulate: need n > 0 and nmicro >= 1 (got %zu, %d)", n, nmicro);
    if (agoq_qconfig_check(q)) return -1;
    agoq_qtensor acc;
    if (agoq_qtensor_alloc(&acc, q, n)) return -1;
    /* Q(0): zero codes are not the zero value for offset-binary formats, so quantize zeros */
    memset(out, 0, n * sizeof(float));
    agoq_quantize_ref(q, out, n, &acc);
    for (int m = 0; m < nmicro; m++) agoq_grad_accumulate_ref(q, &acc, micro[m], NULL, n);
    agoq_dequantize_ref(q, &acc, out);
    agoq_qtensor_free(&acc);
    return 0;
}
