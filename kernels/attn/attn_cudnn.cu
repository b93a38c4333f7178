/* Causal / GQA flash attention through cuDNN's graph backend API (cudnn_graph.h), no frontend.
 *
 * Each direction is one operation graph of matmul / pointwise / reduction / reshape nodes in the
 * exact pattern cuDNN's fused SDPA engines match (the pattern NVIDIA's cudnn-frontend emits for
 * its composite SDPA nodes; read from its source and written here in C):
 *   forward:  S = Q KT; S *= scale; causal: S = select(row >= col, S, -inf);
 *             m = max_row S; E = exp(S - m); z = sum_row E; lse = m + log z; P = E / z (bf16);
 *             O = P V.
 *   backward: Dsum = sum_row(dO * O) * 1 (fp32, workspace); S = Q KT * scale [padding mask];
 *             E = exp(S - lse) [causal select]; dV = reshape(E)^T dO (GQA: per query head, then a
 *             head-sum reduction); dP = dO VT; dS = (dP - Dsum) * E * scale;
 *             dK = reshape(dS)^T Q (GQA as dV); dQacc = dS K (fp32, workspace); dQ = identity(dQacc).
 * K enters as KT = [b, kv_heads, d, s] (strides swapped), V likewise as VT in backward. Scalars
 * (scale, 1, -inf) are pass-by-value tensors whose host copies live in struct agoq_attn.
 * cuDNN <= 9.15 computes wrong backward results when s % 128 != 0 unless a padding mask is
 * present (cudnn-frontend 1.15 adds one automatically); we do the same, with seq_len tensors
 * [b,1,1,1] = s allocated once in agoq_attn_create. (On an H200 with 9.14, s in {64, 192, 257}
 * gave the same results with and without it: results/h200/logs/attn_cudnn.log.)
 *
 * Plans: engine heuristics (mode A, then fallback) give engine configs; the first whose execution
 * plan finalizes is kept for the life of the agoq_attn (9.14 on H200: engine 2, the fused
 * flash-attention engine, first in the list for both graphs). Execution builds no plan and allocates no
 * device memory: the variant pack is rebuilt (host descriptor only) when the pointers change.
 * Workspace layout of agoq_attn_workspace_bytes: backward [dQacc fp32 | Dsum fp32 | plan ws],
 * forward [plan ws]; offsets 256-byte aligned.
 * AGOQ_ATTN_VERBOSE=1 prints the chosen engine, workspace and every refused engine config;
 * AGOQ_ATTN_NO_BWD_PAD=1 leaves the padding workaround out (to test whether a runtime needs it);
 * both 0 or 1, default 0 (core/knob.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn/attn.h"

#if AGOQ_HAVE_CUDNN
#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/check.h"
#include "core/dynlib_cuda.h"
#include "core/knob.h"
#include "kernels/attn/attn_graph.cuh"

typedef struct {
    graph_t g;
    cudnnBackendDescriptor_t cfg, plan, vpack;
    int64_t ws_bytes, engine;
    void *vptr[U_COUNT], *vws; /* pointers of the cached variant pack */
} plan_t;

struct agoq_attn {
    agoq_attn_desc d;
    cudnnHandle_t h;
    long version;
    int pad_bwd;                          /* padding-mask workaround in backward */
    float scale, one, ninf;               /* pass-by-value scalars */
    int32_t *seq_dev;                     /* [2 b] int32 = s (padding workaround), else NULL */
    size_t acc_off, sum_off, bwd_ws_off;  /* backward workspace layout (bytes) */
    size_t ws_bytes;
    plan_t fwd, bwd;
};

/* Shapes shared by both graphs (element strides of attn.h). */
typedef struct {
    int64_t q[4], qs[4], kt[4], kts[4], kv[4], kvs[4], o[4], os[4], r[4], rs[4], ss[4], sss[4], st[4], sts[4],
        one[4], ones[4], full[4], fulls[4], seq[4];
} shapes_t;
static shapes_t shapes(const agoq_attn_desc *d) {
    const int64_t b = d->b, h = d->heads, hk = d->kv_heads, s = d->s, D = d->head_dim;
    shapes_t x = {
        {b, h, s, D}, {s * d->q_row, D, d->q_row, 1},       /* Q, dQ */
        {b, hk, D, s}, {s * d->kv_row, D, 1, d->kv_row},    /* KT, VT */
        {b, hk, s, D}, {s * d->kv_row, D, d->kv_row, 1},    /* K, V, dK, dV */
        {b, h, s, D}, {s * d->o_row, D, d->o_row, 1},       /* O, dO */
        {b, h, s, 1}, {h * s, s, 1, 1},                     /* lse, row stats */
        {b, h, s, s}, {h * s * s, s * s, s, 1},             /* scores */
        {b, h, s, s}, {h * s * s, s * s, 1, s},             /* transposed scores (reshape) */
        {1, 1, 1, 1}, {1, 1, 1, 1},                         /* scalars */
        {b, h, s, D}, {h * s * D, s * D, D, 1},             /* dQacc, GQA per-head dK/dV */
        {b, 1, 1, 1}};                                      /* seq_len tensors */
    return x;
}

static void build_fwd(agoq_attn *a, graph_t *g) {
    const shapes_t x = shapes(&a->d);
    cudnnBackendDescriptor_t Q = tensor(g, U_Q, CUDNN_DATA_BFLOAT16, x.q, x.qs, 0);
    cudnnBackendDescriptor_t KT = tensor(g, U_K, CUDNN_DATA_BFLOAT16, x.kt, x.kts, 0);
    cudnnBackendDescriptor_t V = tensor(g, U_V, CUDNN_DATA_BFLOAT16, x.kv, x.kvs, 0);
    cudnnBackendDescriptor_t O = tensor(g, U_O, CUDNN_DATA_BFLOAT16, x.o, x.os, 0);
    cudnnBackendDescriptor_t L = tensor(g, U_LSE, CUDNN_DATA_FLOAT, x.r, x.rs, 0);
    cudnnBackendDescriptor_t SC = tensor(g, U_SCALE, CUDNN_DATA_FLOAT, x.one, x.ones, 1);
    cudnnBackendDescriptor_t s0 = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss), s1 = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss);
    mm(g, Q, KT, s0, NULL, NULL, NULL);
    pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s0, SC, NULL, s1, 0);
    if (a->d.causal) {
        cudnnBackendDescriptor_t NINF = tensor(g, U_NINF, CUDNN_DATA_FLOAT, x.one, x.ones, 1);
        s1 = causal_mask(g, s1, x.ss, x.sss, NINF);
    }
    cudnnBackendDescriptor_t m = vt(g, CUDNN_DATA_FLOAT, x.r, x.rs), sub = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss);
    red(g, CUDNN_REDUCE_TENSOR_MAX, s1, m);
    pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s1, m, NULL, sub, 0);
    cudnnBackendDescriptor_t e = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss), z = vt(g, CUDNN_DATA_FLOAT, x.r, x.rs);
    pw(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, sub, NULL, NULL, e, 0);
    red(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
    cudnnBackendDescriptor_t lz = vt(g, CUDNN_DATA_FLOAT, x.r, x.rs);
    pw(g, CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, z, NULL, NULL, lz, 0);
    pw(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, m, lz, NULL, L, 0);
    cudnnBackendDescriptor_t p = vt(g, CUDNN_DATA_BFLOAT16, x.ss, x.sss); /* bmm2's A is bf16 */
    pw(g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, z, NULL, p, 0);
    mm(g, p, V, O, NULL, NULL, NULL);
}

/* dX = reshape(T)^T Y: directly for MHA, per query head then a head-sum for GQA. */
static void grad_kv(agoq_attn *a, graph_t *g, const shapes_t *x, cudnnBackendDescriptor_t tT, cudnnBackendDescriptor_t y,
                    cudnnBackendDescriptor_t out, cudnnBackendDescriptor_t sq, cudnnBackendDescriptor_t skv) {
    if (a->d.heads == a->d.kv_heads) {
        mm(g, tT, y, out, skv, NULL, sq);
        return;
    }
    cudnnBackendDescriptor_t full = vt(g, CUDNN_DATA_BFLOAT16, x->full, x->fulls);
    mm(g, tT, y, full, skv, NULL, sq);
    red(g, CUDNN_REDUCE_TENSOR_ADD, full, out);
}

static void build_bwd(agoq_attn *a, graph_t *g) {
    const shapes_t x = shapes(&a->d);
    cudnnBackendDescriptor_t Q = tensor(g, U_Q, CUDNN_DATA_BFLOAT16, x.q, x.qs, 0);
    cudnnBackendDescriptor_t KT = tensor(g, U_K, CUDNN_DATA_BFLOAT16, x.kt, x.kts, 0);
    cudnnBackendDescriptor_t VT = tensor(g, U_V, CUDNN_DATA_BFLOAT16, x.kt, x.kts, 0);
    cudnnBackendDescriptor_t O = tensor(g, U_O, CUDNN_DATA_BFLOAT16, x.o, x.os, 0);
    cudnnBackendDescriptor_t dO = tensor(g, U_DO, CUDNN_DATA_BFLOAT16, x.o, x.os, 0);
    cudnnBackendDescriptor_t L = tensor(g, U_LSE, CUDNN_DATA_FLOAT, x.r, x.rs, 0);
    cudnnBackendDescriptor_t SC = tensor(g, U_SCALE, CUDNN_DATA_FLOAT, x.one, x.ones, 1);
    cudnnBackendDescriptor_t ONE = tensor(g, U_ONE, CUDNN_DATA_FLOAT, x.one, x.ones, 1);
    cudnnBackendDescriptor_t DSUM = tensor(g, U_DSUM, CUDNN_DATA_FLOAT, x.r, x.rs, 0);
    cudnnBackendDescriptor_t DQACC = tensor(g, U_DQACC, CUDNN_DATA_FLOAT, x.full, x.fulls, 0);
    cudnnBackendDescriptor_t dQ = tensor(g, U_DQ, CUDNN_DATA_BFLOAT16, x.q, x.qs, 0);
    cudnnBackendDescriptor_t dK = tensor(g, U_DK, CUDNN_DATA_BFLOAT16, x.kv, x.kvs, 0);
    cudnnBackendDescriptor_t dV = tensor(g, U_DV, CUDNN_DATA_BFLOAT16, x.kv, x.kvs, 0);
    cudnnBackendDescriptor_t NINF = NULL, SQ = NULL, SKV = NULL;
    if (a->d.causal || a->pad_bwd) NINF = tensor(g, U_NINF, CUDNN_DATA_FLOAT, x.one, x.ones, 1);
    if (a->pad_bwd) {
        SQ = tensor(g, U_SEQQ, CUDNN_DATA_INT32, x.seq, x.ones, 0);
        SKV = tensor(g, U_SEQKV, CUDNN_DATA_INT32, x.seq, x.ones, 0);
    }
    /* Dsum = rowsum(dO * O) * 1 (the frontend's strides for the virtual product, kept as is). */
    const int64_t pr[4] = {x.o[0], x.o[1], x.o[2], x.o[3]};
    const int64_t prs[4] = {x.o[1] * x.o[2] * x.o[3], x.o[2] * x.o[3], x.o[1] * x.o[3], 1};
    cudnnBackendDescriptor_t t1 = vt(g, CUDNN_DATA_FLOAT, pr, prs), t2 = vt(g, CUDNN_DATA_FLOAT, x.r, x.rs);
    pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dO, O, NULL, t1, 0);
    red(g, CUDNN_REDUCE_TENSOR_ADD, t1, t2);
    pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t2, ONE, NULL, DSUM, 0);
    /* E = exp(scale Q KT - lse), masked */
    cudnnBackendDescriptor_t s0 = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss), s1 = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss);
    mm(g, Q, KT, s0, SQ, SKV, NULL);
    pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s0, SC, NULL, s1, 0);
    if (a->pad_bwd) s1 = padding_mask(g, s1, x.ss, x.sss, SQ, SKV, NINF);
    cudnnBackendDescriptor_t s2 = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss);
    pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s1, L, NULL, s2, 0);
    if (a->pad_bwd && a->version >= 90000 && a->version < 91000) s2 = padding_mask(g, s2, x.ss, x.sss, SQ, SKV, NINF);
    if (a->d.causal) s2 = causal_mask(g, s2, x.ss, x.sss, NINF);
    cudnnBackendDescriptor_t e = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss);
    pw(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, s2, NULL, NULL, e, 0);
    /* dV = P^T dO */
    cudnnBackendDescriptor_t pT = vt(g, CUDNN_DATA_BFLOAT16, x.st, x.sts);
    reshape(g, e, pT);
    grad_kv(a, g, &x, pT, dO, dV, SQ, SKV);
    /* dS = (dO VT - Dsum) * E * scale */
    cudnnBackendDescriptor_t dp = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss), dp1 = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss);
    mm(g, dO, VT, dp, SQ, SKV, NULL);
    pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, dp, DSUM, NULL, dp1, 0);
    cudnnBackendDescriptor_t dp2 = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss), ds = vt(g, CUDNN_DATA_FLOAT, x.ss, x.sss);
    pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dp1, e, NULL, dp2, 0);
    pw(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dp2, SC, NULL, ds, 0);
    /* dK = dS^T Q */
    cudnnBackendDescriptor_t dsT = vt(g, CUDNN_DATA_BFLOAT16, x.st, x.sts);
    reshape(g, ds, dsT);
    grad_kv(a, g, &x, dsT, Q, dK, SQ, SKV);
    /* dQ = dS K through the fp32 accumulator (the view of KT as K is typed fp32 like every
     * untyped virtual tensor of the frontend's graph) */
    cudnnBackendDescriptor_t K = vt(g, CUDNN_DATA_FLOAT, x.kv, x.kvs);
    reshape(g, KT, K);
    mm(g, ds, K, DQACC, SQ, NULL, SKV);
    pw(g, CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, DQACC, NULL, NULL, dQ, 0);
}

static int verbose(void) { return agoq_knob_int("AGOQ_ATTN_VERBOSE", 0, 0, 1); }

/* Operation graph -> heuristics (mode A, then fallback) -> first engine config whose plan
 * finalizes. 0 or -1 (reason in g->what). */
static int make_plan(agoq_attn *a, plan_t *p, const char *name) {
    graph_t *g = &p->g;
    cudnnBackendDescriptor_t og = mk(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    SET(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
    SET(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &a->h);
    fin(g, og, "finalize operation graph");
    if (!G_OK(g)) return -1;
    const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    int tried = 0;
    char refused[512] = "no engine config";
    for (int mi = 0; mi < 2 && !p->plan; mi++) {
        cudnnBackendDescriptor_t heur = mk(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        SET(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og);
        SET(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[mi]);
        fin(g, heur, "finalize engine heuristics");
        if (!G_OK(g)) return -1;
        int64_t count = 0;
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL);
        if (count > MAX_CFG) count = MAX_CFG;
        cudnnBackendDescriptor_t cfg[MAX_CFG];
        int64_t ncfg = 0;
        for (int64_t i = 0; i < count; i++) cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]);
        if (count > 0)
            cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &ncfg, cfg);
        if (verbose()) fprintf(stderr, "agoq attn %s: heuristics mode %d -> %lld engine configs\n", name, (int)modes[mi], (long long)ncfg);
        for (int64_t i = 0; i < ncfg && !p->plan; i++) {
            int64_t eng_index = -1, n = 0;
            cudnnBackendDescriptor_t eng = NULL;
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) == CUDNN_STATUS_SUCCESS) {
                if (cudnnBackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) ==
                    CUDNN_STATUS_SUCCESS)
                    cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &eng_index);
                cudnnBackendDestroyDescriptor(eng);
            }
            cudnnBackendDescriptor_t plan = NULL;
            cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
            if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &a->h);
            if (s == CUDNN_STATUS_SUCCESS)
                s = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
            if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(plan);
            tried++;
            if (s == CUDNN_STATUS_SUCCESS) {
                p->plan = plan;
                p->cfg = cfg[i];
                p->engine = eng_index;
                cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &p->ws_bytes);
            } else {
                char last[256] = "";
                cudnnGetLastErrorString(last, sizeof last);
                snprintf(refused, sizeof refused, "engine %lld: %s%s%s", (long long)eng_index, cudnnGetErrorString(s),
                         last[0] ? " / " : "", last);
                if (verbose()) fprintf(stderr, "agoq attn %s: refused %s\n", name, refused);
                if (plan) cudnnBackendDestroyDescriptor(plan);
            }
        }
        for (int64_t i = 0; i < count; i++)
            if (cfg[i] != p->cfg) cudnnBackendDestroyDescriptor(cfg[i]);
    }
    if (!p->plan) {
        snprintf(g->what, sizeof g->what, "no execution plan (%d engine configs tried; last %s)", tried, refused);
        g->st = CUDNN_STATUS_NOT_SUPPORTED;
        return -1;
    }
    if (verbose())
        fprintf(stderr, "agoq attn %s: engine %lld, workspace %lld bytes, %d ops\n", name, (long long)p->engine,
                (long long)p->ws_bytes, g->nops);
    return 0;
}

static void free_plan(plan_t *p) {
    if (p->vpack) cudnnBackendDestroyDescriptor(p->vpack);
    if (p->plan) cudnnBackendDestroyDescriptor(p->plan);
    if (p->cfg) cudnnBackendDestroyDescriptor(p->cfg);
    for (int i = p->g.ndesc - 1; i >= 0; i--) cudnnBackendDestroyDescriptor(p->g.desc[i]);
    memset(p, 0, sizeof *p);
}

/* 0 where cuDNN's library does not open (core/dynlib.h: it is opened at the first call) */
long agoq_attn_cudnn_version(void) { return agoq_dynlib_cuda_cudnn(NULL, 0) ? (long)cudnnGetVersion() : 0; }

int agoq_attn_available(char *why, size_t len) {
    if (!agoq_dynlib_cuda_cudnn(why, len)) return -1;
    const long v = agoq_attn_cudnn_version();
    int dev = 0, major = 0, minor = 0;
    if (v < 90000) {
        if (why) snprintf(why, len, "cuDNN %ld.%ld < 9.0", v / 10000, (v / 100) % 100);
        return -1;
    }
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        if (why) snprintf(why, len, "no CUDA device");
        return -1;
    }
    if (major < 8) {
        if (why) snprintf(why, len, "sm_%d%d < sm_80", major, minor);
        return -1;
    }
    if (why && len) why[0] = '\0';
    return 0;
}

static size_t up256(size_t x) { return (x + 255) & ~(size_t)255; }

int agoq_attn_create(const agoq_attn_desc *d, agoq_attn **out) {
    char why[128];
    *out = NULL;
    if (agoq_attn_available(why, sizeof why) != 0) {
        fprintf(stderr, "agoq: attn: %s\n", why);
        return -1;
    }
    if (d->b < 1 || d->s < 2 || d->heads < 1 || d->kv_heads < 1 || d->heads % d->kv_heads != 0 || d->head_dim % 8 != 0 ||
        d->head_dim > 128 || d->q_row < (int64_t)d->heads * d->head_dim || d->kv_row < (int64_t)d->kv_heads * d->head_dim ||
        d->o_row < (int64_t)d->heads * d->head_dim || d->q_row % 8 || d->kv_row % 8 || d->o_row % 8) {
        fprintf(stderr, "agoq: attn: unsupported shape b=%d s=%d heads=%d kv_heads=%d head_dim=%d rows %lld/%lld/%lld "
                "(need s >= 2, kv_heads | heads, head_dim %% 8 == 0 and <= 128, rows >= heads*head_dim, %% 8)\n",
                d->b, d->s, d->heads, d->kv_heads, d->head_dim, (long long)d->q_row, (long long)d->kv_row,
                (long long)d->o_row);
        return -1;
    }
    agoq_attn *a = (agoq_attn *)calloc(1, sizeof *a);
    a->d = *d;
    a->version = agoq_attn_cudnn_version();
    a->scale = d->scale;
    a->one = 1.0f;
    a->ninf = a->version < 91000 ? -3.402823466e38f : -INFINITY; /* older engines want lowest() */
    const int nopad = agoq_knob_int("AGOQ_ATTN_NO_BWD_PAD", 0, 0, 1); /* diagnostic: build without the workaround */
    a->pad_bwd = d->s % 128 != 0 && a->version <= 91500 && !nopad;
    cudnnStatus_t s = cudnnCreate(&a->h);
    if (s != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "agoq: attn: cudnnCreate: %s\n", cudnnGetErrorString(s));
        free(a);
        return -1;
    }
    if (a->pad_bwd) {
        int32_t *h = (int32_t *)malloc(2 * (size_t)d->b * sizeof(int32_t));
        for (int i = 0; i < 2 * d->b; i++) h[i] = d->s;
        cudaCheck(cudaMalloc(&a->seq_dev, 2 * (size_t)d->b * sizeof(int32_t)));
        cudaCheck(cudaMemcpy(a->seq_dev, h, 2 * (size_t)d->b * sizeof(int32_t), cudaMemcpyHostToDevice));
        free(h);
    }
    plan_t *ps[2] = {&a->fwd, &a->bwd};
    const char *names[2] = {"forward", "backward"};
    for (int i = 0; i < 2; i++) {
        graph_t *g = &ps[i]->g;
        g->next_virtual_uid = 100;
        g->version = a->version;
        if (i == 0) build_fwd(a, g);
        else build_bwd(a, g);
        if (!G_OK(g) || make_plan(a, ps[i], names[i]) != 0) {
            fprintf(stderr, "agoq: attn: cuDNN %ld refused the %s graph (b=%d s=%d heads=%d/%d d=%d causal=%d): %s\n",
                    a->version, names[i], d->b, d->s, d->heads, d->kv_heads, d->head_dim, d->causal, g->what);
            agoq_attn_destroy(a);
            return -1;
        }
    }
    a->acc_off = 0;
    a->sum_off = up256((size_t)d->b * d->heads * d->s * d->head_dim * sizeof(float));
    a->bwd_ws_off = a->sum_off + up256((size_t)d->b * d->heads * d->s * sizeof(float));
    a->ws_bytes = a->bwd_ws_off + up256((size_t)a->bwd.ws_bytes);
    if (up256((size_t)a->fwd.ws_bytes) > a->ws_bytes) a->ws_bytes = up256((size_t)a->fwd.ws_bytes);
    *out = a;
    return 0;
}

size_t agoq_attn_workspace_bytes(const agoq_attn *a) { return a->ws_bytes; }

/* Runs plan p with the non-virtual tensors at ptr[uid]; the variant pack is rebuilt only when a
 * pointer changed. */
static int execute(agoq_attn *a, plan_t *p, void *ptr[U_COUNT], void *ws, void *stream, const char *name) {
    cudnnStatus_t s = cudnnSetStream(a->h, (cudaStream_t)stream);
    int same = p->vpack != NULL && p->vws == ws;
    for (int u = 1; u < U_COUNT && same; u++)
        if (p->g.used[u] && p->vptr[u] != ptr[u]) same = 0;
    if (s == CUDNN_STATUS_SUCCESS && !same) {
        int64_t uids[U_COUNT];
        void *ptrs[U_COUNT];
        int64_t n = 0;
        for (int u = 1; u < U_COUNT; u++)
            if (p->g.used[u]) {
                uids[n] = u;
                ptrs[n++] = ptr[u];
                p->vptr[u] = ptr[u];
            }
        if (p->vpack) cudnnBackendDestroyDescriptor(p->vpack);
        p->vpack = NULL;
        s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &p->vpack);
        if (s == CUDNN_STATUS_SUCCESS)
            s = cudnnBackendSetAttribute(p->vpack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
        if (s == CUDNN_STATUS_SUCCESS)
            s = cudnnBackendSetAttribute(p->vpack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
        if (s == CUDNN_STATUS_SUCCESS)
            s = cudnnBackendSetAttribute(p->vpack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
        if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(p->vpack);
        p->vws = ws;
        if (s != CUDNN_STATUS_SUCCESS && p->vpack) {
            cudnnBackendDestroyDescriptor(p->vpack);
            p->vpack = NULL;
        }
    }
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendExecute(a->h, p->plan, p->vpack);
    if (s != CUDNN_STATUS_SUCCESS) {
        char last[256] = "";
        cudnnGetLastErrorString(last, sizeof last);
        fprintf(stderr, "agoq: attn: %s execute: %s%s%s\n", name, cudnnGetErrorString(s), last[0] ? " / " : "", last);
        return -1;
    }
    return 0;
}

int agoq_attn_fwd(agoq_attn *a, const uint16_t *q, const uint16_t *k, const uint16_t *v, uint16_t *o, float *lse,
                  void *workspace, void *stream) {
    void *ptr[U_COUNT] = {0};
    ptr[U_Q] = (void *)q;
    ptr[U_K] = (void *)k;
    ptr[U_V] = (void *)v;
    ptr[U_O] = o;
    ptr[U_LSE] = lse;
    ptr[U_SCALE] = &a->scale;
    ptr[U_NINF] = &a->ninf;
    return execute(a, &a->fwd, ptr, workspace, stream, "forward");
}

int agoq_attn_bwd(agoq_attn *a, const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *o,
                  const uint16_t *dout, const float *lse, uint16_t *dq, uint16_t *dk, uint16_t *dv, void *workspace,
                  void *stream) {
    char *ws = (char *)workspace;
    void *ptr[U_COUNT] = {0};
    ptr[U_Q] = (void *)q;
    ptr[U_K] = (void *)k;
    ptr[U_V] = (void *)v;
    ptr[U_O] = (void *)o;
    ptr[U_DO] = (void *)dout;
    ptr[U_LSE] = (void *)lse;
    ptr[U_DQ] = dq;
    ptr[U_DK] = dk;
    ptr[U_DV] = dv;
    ptr[U_SCALE] = &a->scale;
    ptr[U_ONE] = &a->one;
    ptr[U_NINF] = &a->ninf;
    ptr[U_DQACC] = ws + a->acc_off;
    ptr[U_DSUM] = ws + a->sum_off;
    ptr[U_SEQQ] = a->seq_dev;
    ptr[U_SEQKV] = a->seq_dev ? a->seq_dev + a->d.b : NULL;
    if (a->version < 90600) /* older engines expect a zeroed dQ accumulator */
        cudaCheck(cudaMemsetAsync(ws + a->acc_off, 0, (size_t)a->d.b * a->d.heads * a->d.s * a->d.head_dim * sizeof(float),
                                  (cudaStream_t)stream));
    return execute(a, &a->bwd, ptr, ws + a->bwd_ws_off, stream, "backward");
}

void agoq_attn_destroy(agoq_attn *a) {
    if (!a) return;
    free_plan(&a->fwd);
    free_plan(&a->bwd);
    if (a->seq_dev) cudaFree(a->seq_dev);
    if (a->h) cudnnDestroy(a->h);
    free(a);
}

#else /* !AGOQ_HAVE_CUDNN */

#define NO_CUDNN "built without cuDNN (set CUDNN_HOME)"
long agoq_attn_cudnn_version(void) { return 0; }
int agoq_attn_available(char *why, size_t len) {
    if (why && len) snprintf(why, len, "%s", NO_CUDNN);
    return -1;
}
int agoq_attn_create(const agoq_attn_desc *d, agoq_attn **out) {
    (void)d;
    *out = NULL;
    fprintf(stderr, "agoq: attn: %s\n", NO_CUDNN);
    return -1;
}
size_t agoq_attn_workspace_bytes(const agoq_attn *a) { return 0; }
int agoq_attn_fwd(agoq_attn *a, const uint16_t *q, const uint16_t *k, const uint16_t *v, uint16_t *o, float *lse,
                  void *workspace, void *stream) {
    return -1;
}
int agoq_attn_bwd(agoq_attn *a, const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *o,
                  const uint16_t *dout, const float *lse, uint16_t *dq, uint16_t *dk, uint16_t *dv, void *workspace,
                  void *stream) {
    return -1;
}
void agoq_attn_destroy(agoq_attn *a) { (void)a; }
#endif
