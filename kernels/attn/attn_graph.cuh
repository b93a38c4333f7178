/* The building blocks of cuDNN backend operation graphs used by attn_cudnn.cu (cuDNN builds
 * only): a graph under construction (every descriptor it created, its operations, the first
 * failure, which is sticky so later builders do nothing), tensor descriptors (real tensors by
 * uid, virtual ones with fresh uids), and one builder per node kind the SDPA graphs use:
 * pointwise, matmul, reduction, reshape, and the causal and padding masks made of them.
 * Header-only (static inline), included by attn_cudnn.cu alone. */
#ifndef AGOQ_ATTN_GRAPH_CUH
#define AGOQ_ATTN_GRAPH_CUH
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cudnn.h>

enum { U_Q = 1, U_K, U_V, U_O, U_LSE, U_DO, U_DQ, U_DK, U_DV, U_SCALE, U_ONE, U_NINF, U_DSUM, U_DQACC, U_SEQQ,
       U_SEQKV, U_COUNT };
#define MAX_DESC 160
#define MAX_OPS 48
#define MAX_CFG 64

typedef struct {
    cudnnBackendDescriptor_t desc[MAX_DESC]; /* every descriptor built, destroyed in reverse */
    int ndesc;
    cudnnBackendDescriptor_t ops[MAX_OPS];
    int nops;
    int64_t next_virtual_uid;
    long version; /* cudnnGetVersion() */
    cudnnStatus_t st; /* first failure (sticky: later builders do nothing) */
    char what[512];
    int used[U_COUNT]; /* non-virtual uids in this graph */
} graph_t;

static inline void fail(graph_t *g, cudnnStatus_t st, const char *what) {
    if (g->st != CUDNN_STATUS_SUCCESS) return;
    char last[256] = "";
    cudnnGetLastErrorString(last, sizeof last);
    g->st = st;
    snprintf(g->what, sizeof g->what, "%s: %s%s%s", what, cudnnGetErrorString(st), last[0] ? " / " : "", last);
}
#define G_OK(g) ((g)->st == CUDNN_STATUS_SUCCESS)
#define SET(g, dsc, attr, type, n, ptr)                                                              \
    do {                                                                                             \
        if (G_OK(g)) {                                                                               \
            cudnnStatus_t s_ = cudnnBackendSetAttribute((dsc), (attr), (type), (n), (ptr));          \
            if (s_ != CUDNN_STATUS_SUCCESS) fail((g), s_, "set " #attr);                             \
        }                                                                                            \
    } while (0)

static inline cudnnBackendDescriptor_t mk(graph_t *g, cudnnBackendDescriptorType_t t) {
    cudnnBackendDescriptor_t d = NULL;
    if (!G_OK(g)) return NULL;
    if (g->ndesc == MAX_DESC) {
        fail(g, CUDNN_STATUS_INTERNAL_ERROR, "agoq: descriptor table full");
        return NULL;
    }
    cudnnStatus_t s = cudnnBackendCreateDescriptor(t, &d);
    if (s != CUDNN_STATUS_SUCCESS) {
        fail(g, s, "cudnnBackendCreateDescriptor");
        return NULL;
    }
    g->desc[g->ndesc++] = d;
    return d;
}
static inline void fin(graph_t *g, cudnnBackendDescriptor_t d, const char *what) {
    if (!G_OK(g)) return;
    cudnnStatus_t s = cudnnBackendFinalize(d);
    if (s != CUDNN_STATUS_SUCCESS) fail(g, s, what);
}
static inline void add_op(graph_t *g, cudnnBackendDescriptor_t op, const char *what) {
    fin(g, op, what);
    if (!G_OK(g)) return;
    if (g->nops == MAX_OPS) fail(g, CUDNN_STATUS_INTERNAL_ERROR, "agoq: op table full");
    else g->ops[g->nops++] = op;
}

/* Tensor descriptor (4-d). uid 0: virtual tensor with a fresh uid. */
static inline cudnnBackendDescriptor_t tensor(graph_t *g, int uid, cudnnDataType_t dt, const int64_t dim[4],
                                       const int64_t str[4], int by_value) {
    cudnnBackendDescriptor_t t = mk(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t id = uid ? uid : g->next_virtual_uid++, align = 16;
    bool virt = uid == 0, byv = by_value != 0;
    SET(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    SET(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str);
    SET(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
    SET(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    SET(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (byv) SET(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byv);
    fin(g, t, "finalize tensor");
    if (uid) g->used[uid] = 1;
    return t;
}
static inline cudnnBackendDescriptor_t vt(graph_t *g, cudnnDataType_t dt, const int64_t dim[4], const int64_t str[4]) {
    return tensor(g, 0, dt, dim, str, 0);
}

/* y = mode(x [, b [, t]]) in precision prec; axis only for GEN_INDEX. */
static inline void pw(graph_t *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, cudnnBackendDescriptor_t x,
               cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y, int64_t axis) {
    cudnnBackendDescriptor_t p = mk(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    SET(g, p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET(g, p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (mode == CUDNN_POINTWISE_GEN_INDEX) SET(g, p, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    fin(g, p, "finalize pointwise descriptor");
    cudnnBackendDescriptor_t op = mk(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    const float one = 1.0f;
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b) SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (t) SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    SET(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    add_op(g, op, "finalize pointwise op");
}

/* c = a b (batched over dims 0-1, broadcast for GQA), fp32 accumulation; optional M/N/K
 * override tensors (the padding workaround's actual sequence lengths). */
static inline void mm(graph_t *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c,
               cudnnBackendDescriptor_t mo, cudnnBackendDescriptor_t no, cudnnBackendDescriptor_t ko) {
    cudnnBackendDescriptor_t md = mk(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    cudnnDataType_t ct = CUDNN_DATA_FLOAT;
    SET(g, md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
    fin(g, md, "finalize matmul descriptor");
    cudnnBackendDescriptor_t op = mk(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md);
    if (mo) SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mo);
    if (no) SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &no);
    if (ko) SET(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ko);
    add_op(g, op, "finalize matmul op");
}

/* y = reduce(x) over the dims where y has extent 1 (or a head group), fp32. */
static inline void red(graph_t *g, cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t rd = mk(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    cudnnDataType_t ct = CUDNN_DATA_FLOAT;
    SET(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
    SET(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    if (g->version >= 91100) {
        bool det = false;
        SET(g, rd, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &det);
    }
    fin(g, rd, "finalize reduction descriptor");
    cudnnBackendDescriptor_t op = mk(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    SET(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    SET(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    SET(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
    add_op(g, op, "finalize reduction op");
}

static inline void reshape(graph_t *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t op = mk(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    SET(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    SET(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    add_op(g, op, "finalize reshape op");
}

/* Top-left causal mask on scores x [b,h,s,s]: keep where row >= col, else -inf. */
static inline cudnnBackendDescriptor_t causal_mask(graph_t *g, cudnnBackendDescriptor_t x, const int64_t *dim,
                                            const int64_t *str, cudnnBackendDescriptor_t ninf) {
    cudnnBackendDescriptor_t row = vt(g, CUDNN_DATA_INT32, dim, str), col = vt(g, CUDNN_DATA_INT32, dim, str);
    pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, row, 2);
    pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, col, 3);
    cudnnBackendDescriptor_t keep = vt(g, CUDNN_DATA_BOOLEAN, dim, str), y = vt(g, CUDNN_DATA_FLOAT, dim, str);
    pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, keep, 0);
    pw(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, ninf, keep, y, 0);
    return y;
}

/* Padding mask: keep where row < seq_q[b] and col < seq_kv[b], else -inf. */
static inline cudnnBackendDescriptor_t padding_mask(graph_t *g, cudnnBackendDescriptor_t x, const int64_t *dim,
                                             const int64_t *str, cudnnBackendDescriptor_t sq,
                                             cudnnBackendDescriptor_t skv, cudnnBackendDescriptor_t ninf) {
    cudnnBackendDescriptor_t row = vt(g, CUDNN_DATA_INT32, dim, str), col = vt(g, CUDNN_DATA_INT32, dim, str);
    pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, x, NULL, NULL, row, 2);
    pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, x, NULL, NULL, col, 3);
    cudnnBackendDescriptor_t rm = vt(g, CUDNN_DATA_BOOLEAN, dim, str), cm = vt(g, CUDNN_DATA_BOOLEAN, dim, str);
    pw(g, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, row, sq, NULL, rm, 0);
    pw(g, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, col, skv, NULL, cm, 0);
    cudnnBackendDescriptor_t keep = vt(g, CUDNN_DATA_BOOLEAN, dim, str), y = vt(g, CUDNN_DATA_FLOAT, dim, str);
    pw(g, CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, rm, cm, NULL, keep, 0);
    pw(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, ninf, keep, y, 0);
    return y;
}
#endif
