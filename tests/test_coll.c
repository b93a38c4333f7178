/* Collectives on the cpu backend (simulated ranks): the AGoQ error bound for 1..16 ranks and
 * odd sizes, exact routing of every quantized algorithm (inputs chosen so that quantization is
 * lossless: any misrouted, duplicated or dropped chunk changes the result), the fp32/bf16 ring
 * order, padding, the naive ring's error growth, FP8-LM, 8-bit accumulation, bad arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/driver.h"
#include "core/metrics.h"
#include "core/rng.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"
#include "tests/test.h"

/* nranks buffers of n floats: rank r is N(0, 1) times (1 + r % 3), so ranks' scales differ. */
static float **make_ranks(int nranks, size_t n, uint64_t seed) {
    float **b = calloc((size_t)nranks, sizeof *b);
    for (int r = 0; r < nranks; r++) {
        b[r] = malloc(n * sizeof(float));
        agoq_fill(AGOQ_DIST_NORMAL, b[r], n, seed + (uint64_t)r);
        for (size_t i = 0; i < n; i++) b[r][i] *= (float)(1 + r % 3);
    }
    return b;
}
static float **copy_ranks(float *const *src, int nranks, size_t n) {
    float **b = calloc((size_t)nranks, sizeof *b);
    for (int r = 0; r < nranks; r++) {
        b[r] = malloc(n * sizeof(float));
        memcpy(b[r], src[r], n * sizeof(float));
    }
    return b;
}
static void free_ranks(float **b, int nranks) {
    for (int r = 0; r < nranks; r++) free(b[r]);
    free(b);
}
static float *exact_sum(float *const *x, int nranks, size_t n) {
    float *s = malloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++) {
        double a = 0;
        for (int r = 0; r < nranks; r++) a += x[r][i];
        s[i] = (float)a;
    }
    return s;
}

/* Element-wise AGoQ bound for int8 RNE: |out_i - sum_r x_ri| <= sum_r s_in(r, b)/2 + s_out(b)/2
 * (+ fp32 rounding of the sum), b the block of i. Blocks are aligned globally because shards
 * are multiples of the block. s_out is the scale of acc = sum_r dequant(Q(x_r)), summed in
 * rank order as the reduce does. Returns the number of elements outside the bound. */
static size_t agoq_bound_violations(const agoq_qconfig *q, float *const *x, int nranks, size_t n,
                                    const float *got, size_t lo, size_t hi, double *worst_ratio) {
    const size_t B = (size_t)q->block;
    float *fq = malloc(n * sizeof *fq), *acc = calloc(n, sizeof *acc), *sin = calloc((n + B - 1) / B, sizeof *sin);
    for (int r = 0; r < nranks; r++) {
        agoq_fake_quant_ref(q, x[r], n, fq);
        for (size_t i = 0; i < n; i++) acc[i] = acc[i] + fq[i];
        for (size_t b = 0; b * B < n; b++) {
            float s, z;
            agoq_block_params_ref(q, x[r] + b * B, (int)(b * B + B <= n ? B : n - b * B), &s, &z);
            sin[b] += s;
        }
    }
    size_t bad = 0;
    *worst_ratio = 0;
    for (size_t b = lo / B; b * B < hi; b++) {
        float sout, z;
        size_t len = b * B + B <= n ? B : n - b * B;
        agoq_block_params_ref(q, acc + b * B, (int)len, &sout, &z);
        for (size_t i = b * B; i < b * B + len; i++) {
            if (i < lo || i >= hi) continue;
            double exact = 0, mag = 0;
            for (int r = 0; r < nranks; r++) {
                exact += x[r][i];
                mag += fabs(x[r][i]);
            }
            double bound = 0.5 * sin[b] + 0.5 * sout + 1e-6 * (mag + sout);
            double err = fabs((double)got[i] - exact);
            if (err > bound) bad++;
            if (bound > 0 && err / bound > *worst_ratio) *worst_ratio = err / bound;
        }
    }
    free(fq);
    free(acc);
    free(sin);
    return bad;
}

TEST(coll_agoq_allreduce_within_one_step_bound) {
    static const size_t sizes[] = {1, 7, 129, 1000, 4099};
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_INT8);
    double worst = 0;
    for (int N = 1; N <= 16; N++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si];
            float **x = make_ranks(N, n, 100 + (uint64_t)N), **y = copy_ranks(x, N, n);
            CHECK(agoq_sim_allreduce("agoq", &q, 0, y, N, n) == 0);
            double ratio;
            size_t bad = agoq_bound_violations(&q, x, N, n, y[0], 0, n, &ratio);
            CHECK_MSG(bad == 0, "%d ranks, n=%zu: %zu elements outside the bound (worst %.3f x)", N, n, bad, ratio);
            for (int r = 1; r < N; r++) CHECK(memcmp(y[r], y[0], n * sizeof(float)) == 0); /* all ranks agree */
            if (ratio > worst) worst = ratio;
            free_ranks(x, N);
            free_ranks(y, N);
        }
    CHECK_MSG(worst > 0.3, "bound never approached (worst %.3f): the test would not see a bug", worst);
}

TEST(coll_agoq_reduce_scatter_shards_within_bound) {
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_INT8);
    q.block = 32;
    for (int N = 1; N <= 16; N += 3) {
        size_t n = 1000 + (size_t)N; /* never a multiple of N x block */
        float **x = make_ranks(N, n, 7), **y = copy_ranks(x, N, n);
        agoq_coll_config cfg = agoq_coll_config_default(AGOQ_ALGO_AGOQ, AGOQ_COLL_REDUCE_SCATTER);
        cfg.q = q;
        agoq_coll_info info;
        CHECK(agoq_sim_collective(&cfg, y, N, n, &info) == 0);
        CHECK(info.shard_count == agoq_coll_shard_count(&cfg, N, n));
        for (int r = 0; r < N; r++) {
            size_t lo = (size_t)r * info.shard_count, hi = lo + info.shard_count < n ? lo + info.shard_count : n;
            if (lo >= n) continue;
            double ratio;
            CHECK_MSG(agoq_bound_violations(&q, x, N, n, y[r], lo, hi, &ratio) == 0, "rank %d of %d: worst %.3f", r, N,
                      ratio);
        }
        free_ranks(x, N);
        free_ranks(y, N);
    }
}

TEST(coll_shard_layout_pads_to_blocks) {
    agoq_coll_config a = agoq_coll_config_default(AGOQ_ALGO_AGOQ, AGOQ_COLL_ALLREDUCE);
    agoq_coll_config f = agoq_coll_config_default(AGOQ_ALGO_FP32, AGOQ_COLL_ALLREDUCE);
    CHECK(a.q.fmt == AGOQ_FMT_INT8 && a.q.block == 128);
    CHECK(agoq_coll_shard_count(&a, 3, 1000) == 384); /* ceil(1000/3) = 334 -> 3 blocks */
    CHECK(agoq_coll_shard_count(&f, 3, 1000) == 334);
    CHECK(agoq_coll_shard_count(&a, 16, 1) == 128);
    CHECK(agoq_coll_shard_count(&f, 16, 1) == 1);
    CHECK(agoq_coll_shard_count(&a, 4, 1024) == 256);
    /* wire bytes: a 256-element int8 shard is 256 code bytes + 2 fp32 scales, padded to 16 bytes
     * (272); all-reduce sends 2(N-1) shards */
    agoq_coll_info in = agoq_coll_describe(&a, 4, 256);
    CHECK_NEAR(in.wire_bytes, 2.0 * 3 * 272, 0);
    agoq_qconfig i3 = agoq_qconfig_default(AGOQ_FMT_INT3);
    i3.block = 8; /* 3 code bytes per block: planes realigned */
    agoq_packed_layout l = agoq_packed(&i3, 24);
    CHECK(l.scales_off == 16 && l.zeros_off == 32 && l.bytes == 32);
    CHECK(in.quantizations == 2);
}

/* Lossless inputs: x_r[i] = sign_i * qmax * 2^r with sign_i in {-1, 0, 1} from a hash of i. Every
 * block's absmax is qmax * (sum of the ranks' 2^r it contains), so each quantization is exact
 * and the result must equal sign_i * qmax * (2^N - 1) bit for bit. */
static int lossless_case(agoq_coll_algo algo, agoq_coll_op op, agoq_format fmt, int N, int rpn, size_t n) {
    agoq_coll_config cfg = agoq_coll_config_default(algo, op);
    cfg.q = agoq_qconfig_default(fmt);
    cfg.q.block = 16;
    cfg.ranks_per_node = rpn;
    const float qmax = agoq_formats[fmt].qmax;
    float **x = calloc((size_t)N, sizeof *x);
    for (int r = 0; r < N; r++) {
        x[r] = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            agoq_rng g = {i * 7 + 3};
            x[r][i] = (float)((int)(agoq_rng_next(&g) % 3) - 1) * qmax * (float)(1u << r);
        }
    }
    agoq_coll_info info;
    int ok = agoq_sim_collective(&cfg, x, N, n, &info) == 0;
    for (int r = 0; r < N && ok; r++) {
        size_t lo = op == AGOQ_COLL_ALLREDUCE ? 0 : (size_t)r * info.shard_count;
        size_t hi = op == AGOQ_COLL_ALLREDUCE ? n : (lo + info.shard_count < n ? lo + info.shard_count : n);
        for (size_t i = lo; i < hi && ok; i++) {
            agoq_rng g = {i * 7 + 3};
            float want = (float)((int)(agoq_rng_next(&g) % 3) - 1) * qmax * (float)((1u << N) - 1);
            if (x[r][i] != want) {
                fprintf(stderr, "    %s %s N=%d rpn=%d n=%zu: rank %d [%zu] = %g, want %g\n", agoq_coll_algos[algo].name,
                        agoq_coll_op_name(op), N, rpn, n, r, i, x[r][i], want);
                ok = 0;
            }
        }
    }
    for (int r = 0; r < N; r++) free(x[r]);
    free(x);
    return ok;
}

TEST(coll_quantized_algorithms_route_every_chunk_exactly) {
    static const size_t sizes[] = {1, 37, 500};
    for (int op = 0; op < 2; op++)
        for (size_t si = 0; si < 3; si++)
            for (int N = 1; N <= 12; N++) {
                CHECK(lossless_case(AGOQ_ALGO_AGOQ, (agoq_coll_op)op, AGOQ_FMT_INT8, N, 0, sizes[si]));
                CHECK(lossless_case(AGOQ_ALGO_RING_Q, (agoq_coll_op)op, AGOQ_FMT_INT8, N, 0, sizes[si]));
                CHECK(lossless_case(AGOQ_ALGO_QGZ, (agoq_coll_op)op, AGOQ_FMT_INT4, N, 0, sizes[si]));
                for (int rpn = 1; rpn <= N; rpn++) /* every hierarchy: 1 node .. N nodes */
                    if (N % rpn == 0) CHECK(lossless_case(AGOQ_ALGO_QGZ, (agoq_coll_op)op, AGOQ_FMT_INT4, N, rpn, sizes[si]));
            }
}

TEST(coll_native_rings_follow_nccl_order) {
    const int N = 5;
    const size_t n = 23;
    for (int bf = 0; bf < 2; bf++) {
        float **x = make_ranks(N, n, 42), **y = copy_ranks(x, N, n);
        CHECK(agoq_sim_allreduce(bf ? "bf16" : "fp32", NULL, 0, y, N, n) == 0);
        const size_t chunk = (n + N - 1) / N; /* fp32 shard: ceil(23/5) = 5 */
        for (size_t i = 0; i < n; i++) {
            int j = (int)(i / chunk); /* chunk j's sum starts at rank j+1 and ends at rank j */
            float acc = bf ? agoq_round_bf16(x[(j + 1) % N][i]) : x[(j + 1) % N][i];
            for (int k = 2; k <= N; k++) {
                float v = bf ? agoq_round_bf16(x[(j + k) % N][i]) : x[(j + k) % N][i];
                acc = bf ? agoq_round_bf16(acc + v) : acc + v;
            }
            CHECK_MSG(y[0][i] == acc && y[N - 1][i] == acc, "%s [%zu]: %.9g, want %.9g", bf ? "bf16" : "fp32", i, y[0][i], acc);
        }
        free_ranks(x, N);
        free_ranks(y, N);
    }
}

static double sim_nmse(const char *algo, agoq_format fmt, int bf16_sum, int N, size_t n, uint64_t seed) {
    float **x = make_ranks(N, n, seed), **y = copy_ranks(x, N, n);
    agoq_qconfig q = agoq_qconfig_default(fmt);
    if (agoq_sim_allreduce(algo, &q, bf16_sum, y, N, n)) return NAN;
    float *ref = exact_sum(x, N, n);
    agoq_error_stats e = agoq_compare(ref, y[0], n);
    free(ref);
    free_ranks(x, N);
    free_ranks(y, N);
    return e.nmse;
}

TEST(coll_naive_ring_error_grows_agoq_does_not) {
    const size_t n = 8192;
    double ring2 = sim_nmse("ring_q", AGOQ_FMT_INT8, 0, 2, n, 5), ring16 = sim_nmse("ring_q", AGOQ_FMT_INT8, 0, 16, n, 5);
    double agoq2 = sim_nmse("agoq", AGOQ_FMT_INT8, 0, 2, n, 5), agoq16 = sim_nmse("agoq", AGOQ_FMT_INT8, 0, 16, n, 5);
    printf("    nmse ring_q 2/16 ranks %.3g / %.3g, agoq %.3g / %.3g\n", ring2, ring16, agoq2, agoq16);
    CHECK_MSG(ring16 > 3.0 * ring2, "ring_q nmse %.3g -> %.3g: expected growth with N", ring2, ring16);
    CHECK_MSG(agoq16 < 1.5 * agoq2, "agoq nmse %.3g -> %.3g: must not grow with N", agoq2, agoq16);
    CHECK(ring16 > 2.0 * agoq16);
}

TEST(coll_variants_fp8_dyn8_bf16_sum) {
    const size_t n = 4096;
    double i8 = sim_nmse("agoq", AGOQ_FMT_INT8, 0, 8, n, 9), e4 = sim_nmse("agoq", AGOQ_FMT_FP8_E4M3, 0, 8, n, 9);
    double e5 = sim_nmse("agoq", AGOQ_FMT_FP8_E5M2, 0, 8, n, 9), d8 = sim_nmse("agoq", AGOQ_FMT_DYN8, 0, 8, n, 9);
    double b16 = sim_nmse("agoq", AGOQ_FMT_INT8, 1, 16, n, 9), f32 = sim_nmse("agoq", AGOQ_FMT_INT8, 0, 16, n, 9);
    printf("    agoq nmse: int8 %.3g fp8_e4m3 %.3g fp8_e5m2 %.3g dyn8 %.3g; 16 ranks bf16 sum %.3g fp32 sum %.3g\n", i8,
           e4, e5, d8, b16, f32);
    /* fewer mantissa bits, larger error: E5M2 (2 bits) > E4M3 (3 bits); all finite and small */
    CHECK(e5 > e4 && e4 > 0 && i8 > 0 && d8 > 0 && e5 < 0.05);
    CHECK(b16 >= f32); /* the bf16 local sum only adds rounding */
    /* formats whose planes need realignment in the packed chunk (3 code bytes per block, zeros) */
    double i3 = sim_nmse("agoq", AGOQ_FMT_INT3, 0, 5, 1001, 9), a4 = sim_nmse("agoq", AGOQ_FMT_INT4_ASYM, 0, 5, 1001, 9);
    double i4 = sim_nmse("agoq", AGOQ_FMT_INT4, 0, 5, 1001, 9);
    printf("    agoq nmse 5 ranks: int3 %.3g int4 %.3g int4_asym %.3g\n", i3, i4, a4);
    CHECK(i3 > i4 && i4 > i8 && a4 > 0 && i3 < 0.2);
}

TEST(coll_fp8lm_shared_scale_loses_accuracy_with_ranks) {
    const size_t n = 8192;
    double f2 = sim_nmse("fp8lm", AGOQ_FMT_FP8_E4M3, 0, 2, n, 11), f32r = sim_nmse("fp8lm", AGOQ_FMT_FP8_E4M3, 0, 32, n, 11);
    double a32 = sim_nmse("agoq", AGOQ_FMT_FP8_E4M3, 0, 32, n, 11);
    printf("    fp8lm nmse 2 ranks %.3g, 32 ranks %.3g; agoq (fp8_e4m3 blocks) 32 ranks %.3g\n", f2, f32r, a32);
    CHECK(f32r > 2.0 * f2);
    CHECK(f32r > 2.0 * a32);
    /* one rank, values on the fp8 grid once scaled by 448/absmax: exact */
    float v[4] = {448.0f, -224.0f, 0.0f, 1.0f}, *b[1] = {v};
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_FP8_E4M3);
    CHECK(agoq_sim_allreduce("fp8lm", &q, 0, b, 1, 4) == 0);
    CHECK(v[0] == 448.0f && v[1] == -224.0f && v[2] == 0.0f && v[3] == 1.0f);
}

TEST(coll_accumulate_8bit_microbatches) {
    const size_t n = 2048;
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_INT8);
    float *g[64], *out = malloc(n * sizeof *out), *fq = malloc(n * sizeof *fq);
    for (int m = 0; m < 64; m++) {
        g[m] = malloc(n * sizeof(float));
        agoq_fill(AGOQ_DIST_NORMAL, g[m], n, 300 + (uint64_t)m);
    }
    /* one micro-batch: Q(0) dequantizes to exactly 0, so the result is fake_quant(g0) */
    CHECK(agoq_accumulate_quantized(&q, (const float *const *)g, 1, n, out) == 0);
    agoq_fake_quant_ref(&q, g[0], n, fq);
    CHECK(agoq_validate_floats("accumulate 1", fq, out, n) == 0);
    double prev = 0;
    for (int m = 2; m <= 64; m *= 4) {
        CHECK(agoq_accumulate_quantized(&q, (const float *const *)g, m, n, out) == 0);
        float *ref = exact_sum(g, m, n);
        agoq_error_stats e = agoq_compare(ref, out, n);
        free(ref);
        CHECK_MSG(e.mse > prev, "accumulation mse %.3g after %d micro-batches, not above %.3g", e.mse, m, prev);
        prev = e.mse;
    }
    for (int m = 0; m < 64; m++) free(g[m]);
    free(out);
    free(fq);
}

TEST(coll_bad_arguments_are_errors) {
    float v[8] = {0}, *b[2] = {v, v};
    agoq_qconfig i8 = agoq_qconfig_default(AGOQ_FMT_INT8);
    CHECK(agoq_sim_allreduce("teleport", NULL, 0, b, 2, 8) == -1);
    CHECK(agoq_sim_allreduce("agoq", NULL, 0, b, 2, 0) == -1);
    CHECK(agoq_sim_allreduce("agoq", NULL, 0, b, 0, 8) == -1);
    CHECK(agoq_sim_allreduce("fp8lm", &i8, 0, b, 2, 8) == -1); /* fp8lm needs an fp8 format */
    agoq_coll_config qgz = agoq_coll_config_default(AGOQ_ALGO_QGZ, AGOQ_COLL_ALLREDUCE);
    qgz.ranks_per_node = 3;
    CHECK(agoq_coll_config_check(&qgz, 8) == -1);
    CHECK(agoq_coll_algo_by_name("agoq") == AGOQ_ALGO_AGOQ && agoq_coll_algo_by_name("nope") == -1);
}

/* The benchmark executes one run many times with its scratch kept: every algorithm must give
 * the same bits on the second execute (no reads of stale scratch). */
TEST(coll_repeated_execute_is_deterministic) {
    const int N = 6;
    const size_t n = 777;
    agoq_comm *c = agoq_comm_cpu_create(N);
    for (int a = 0; a < AGOQ_ALGO_COUNT; a++)
        for (int op = 0; op < 2; op++) {
            agoq_coll_config cfg = agoq_coll_config_default((agoq_coll_algo)a, (agoq_coll_op)op);
            cfg.ranks_per_node = a == AGOQ_ALGO_QGZ ? 3 : 0;
            size_t shard = agoq_coll_shard_count(&cfg, N, n), total = shard * N, oc = op ? shard : total;
            float *in[6], *out[6], *first = malloc(N * oc * sizeof(float));
            for (int r = 0; r < N; r++) {
                in[r] = c->ops->alloc(c, r, total * sizeof(float));
                out[r] = c->ops->alloc(c, r, oc * sizeof(float));
                agoq_fill(AGOQ_DIST_HEAVY, in[r], n, 50 + (uint64_t)r);
            }
            agoq_coll_run run = {.comm = c, .cfg = &cfg, .shard = shard, .in = in, .out = out};
            CHECK(agoq_coll_execute(&run) == 0);
            for (int r = 0; r < N; r++) memcpy(first + r * oc, out[r], oc * sizeof(float));
            run.time_phases = 1;
            CHECK(agoq_coll_execute(&run) == 0);
            for (int r = 0; r < N; r++)
                CHECK_MSG(memcmp(first + r * oc, out[r], oc * sizeof(float)) == 0, "%s %s rank %d differs on re-execute",
                          agoq_coll_algos[a].name, agoq_coll_op_name((agoq_coll_op)op), r);
            agoq_coll_run_release(&run);
            for (int r = 0; r < N; r++) {
                c->ops->release(c, r, in[r]);
                c->ops->release(c, r, out[r]);
            }
            free(first);
        }
    agoq_comm_cpu_destroy(c);
}
