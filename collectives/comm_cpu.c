/* The cpu communicator: N ranks simulated in one process, a host buffer per rank, the C
 * reference kernels for every compute call. Communication is memcpy between rank buffers in the
 * pattern the GPUs use (agoq_local_*, which cuda-local runs with device copies); the native
 * reductions follow NCCL's ring: the partial sum of chunk j starts at rank j+1, visits j+2, ...,
 * ends at rank j, and is rounded to the wire dtype after every add (as NCCL does for bf16 and
 * fp8: load, add in fp32, store in the dtype; wire.h's agoq_ring_sum, shared with cuda-local).
 * NCCL may choose a tree or NVLS algorithm instead of the ring; the ring is the model here.
 * Fault injection (tests of the watchdog without a GPU): AGOQ_TEST_COMM_FAULT=hang:R makes rank
 * R never complete, =error:R makes it report an asynchronous error (anything else: one line,
 * exit 1); sync then goes through agoq_comm_wait exactly like the nccl backend's (watchdog.h)
 * and exits 1 with its message. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/driver.h"
#include "collectives/watchdog.h"
#include "collectives/wire.h"
#include "core/common.h"
#include "core/knob.h"
#include "kernels/grad8/grad8.h"
#include "kernels/quant/quant_math.h"
#include "kernels/quant/quant_ref.h"

static void *cpu_alloc(agoq_comm *c, int lr, size_t bytes) {
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) agoq_die("collectives cpu: out of host memory for %zu bytes (rank %d)", bytes, lr);
    return p;
}
static void cpu_release(agoq_comm *c, int lr, void *p) { free(p); }
static void cpu_copy(agoq_comm *c, int lr, void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }
static void cpu_zero(agoq_comm *c, int lr, void *dst, size_t bytes) { memset(dst, 0, bytes); }
typedef struct {
    int fault_rank;  /* -1: none */
    int fault_hang;  /* 1: the rank never completes; 0: it reports an asynchronous error */
    int aborted;
} cpu_state;

static agoq_rank_state cpu_poll(void *ctx, int lr, const char **why) {
    const cpu_state *s = ((agoq_comm *)ctx)->impl;
    if (lr != s->fault_rank) return AGOQ_RANK_DONE;
    *why = "asynchronous error: remote process exited or network error (injected by AGOQ_TEST_COMM_FAULT)";
    return s->fault_hang ? AGOQ_RANK_PENDING : AGOQ_RANK_FAILED;
}
static void cpu_abort(void *ctx) { ((cpu_state *)((agoq_comm *)ctx)->impl)->aborted = 1; }

static void cpu_sync(agoq_comm *c) {
    const cpu_state *s = c->impl;
    if (s->fault_rank < 0) return; /* the cpu ranks finish every call before it returns */
    agoq_comm_waiter w = {cpu_poll, cpu_abort, c};
    if (agoq_comm_wait(&w, c->backend, c->nlocal, c->rank0, agoq_comm_timeout_s(), "sync")) exit(1);
}

static int group_index(int r, agoq_comm_group g) { return (r / g.stride) % g.size; }
static int group_member(int r, agoq_comm_group g, int k) {
    return r - group_index(r, g) * g.stride + k * g.stride;
}

void agoq_local_alltoall(agoq_comm *c, void *const *send, void *const *recv, size_t bytes, agoq_comm_group g) {
    for (int r = 0; r < c->nranks; r++)
        for (int k = 0; k < g.size; k++) {
            int peer = group_member(r, g, k);
            c->ops->copy(c, r, (char *)recv[r] + (size_t)k * bytes,
                         (const char *)send[peer] + (size_t)group_index(r, g) * bytes, bytes);
        }
}

void agoq_local_allgather(agoq_comm *c, void *const *send, void *const *recv, size_t bytes) {
    for (int r = 0; r < c->nranks; r++)
        for (int k = 0; k < c->nranks; k++) c->ops->copy(c, r, (char *)recv[r] + (size_t)k * bytes, send[k], bytes);
}

void agoq_local_shift(agoq_comm *c, void *const *send, void *const *recv, size_t bytes) {
    for (int r = 0; r < c->nranks; r++) c->ops->copy(c, r, recv[r], send[(r + c->nranks - 1) % c->nranks], bytes);
}

/* Ring sum of elements [lo, hi) of chunk j into dst (dtype dt, indices relative to lo). */
static void ring_chunk(agoq_comm *c, void *const *send, agoq_dtype dt, int j, size_t lo, size_t hi, void *dst) {
    for (size_t i = lo; i < hi; i++)
        agoq_dt_store(dt, dst, i - lo, agoq_ring_sum(dt, (const void *const *)send, c->nranks, j, i));
}

static void cpu_reduce_scatter(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    for (int r = 0; r < c->nranks; r++) ring_chunk(c, send, dt, r, (size_t)r * count, (size_t)(r + 1) * count, recv[r]);
}

static void cpu_allreduce(agoq_comm *c, void *const *send, void *const *recv, size_t count, agoq_dtype dt) {
    const int N = c->nranks;
    const size_t chunk = (count + (size_t)N - 1) / (size_t)N, es = agoq_dtype_bytes(dt);
    for (int j = 0; j < N; j++) {
        size_t lo = (size_t)j * chunk, hi = lo + chunk < count ? lo + chunk : count;
        if (lo >= hi) continue;
        ring_chunk(c, send, dt, j, lo, hi, (char *)recv[j] + lo * es); /* owner j, then the all-gather */
        for (int r = 0; r < N; r++)
            if (r != j) memcpy((char *)recv[r] + lo * es, (const char *)recv[j] + lo * es, (hi - lo) * es);
    }
}

static float cpu_global_absmax(agoq_comm *c, void *const *x, size_t count) {
    float m = 0.0f;
    for (int r = 0; r < c->nranks; r++)
        for (size_t i = 0; i < count; i++) {
            float v = ((const float *)x[r])[i];
            if (agoq_isfinite(v) && fabsf(v) > m) m = fabsf(v);
        }
    return m;
}

static void cpu_quantize(agoq_comm *c, int lr, const agoq_qconfig *q, const float *x, size_t count, void *packed) {
    agoq_qtensor t = agoq_packed_view(q, packed, count);
    agoq_quantize_ref(q, x, count, &t);
}

static void cpu_dequantize(agoq_comm *c, int lr, const agoq_qconfig *q, const void *packed, size_t count, float *y) {
    agoq_qtensor t = agoq_packed_view(q, packed, count);
    agoq_dequantize_ref(q, &t, y);
}

static void cpu_reduce(agoq_comm *c, int lr, const agoq_qconfig *q, const void *in, size_t stride, int nin,
                       size_t count, agoq_sum_precision p, void *out) {
    agoq_qtensor *views = malloc((size_t)nin * sizeof *views);
    const agoq_qtensor **ptrs = malloc((size_t)nin * sizeof *ptrs);
    if (!views || !ptrs) abort();
    for (int k = 0; k < nin; k++) {
        views[k] = agoq_packed_view(q, (const char *)in + (size_t)k * stride, count);
        ptrs[k] = &views[k];
    }
    agoq_qtensor o = agoq_packed_view(q, out, count);
    agoq_grad_reduce_ref(q, ptrs, nin, count, p, &o, NULL);
    free(views);
    free(ptrs);
}

static void cpu_add(agoq_comm *c, int lr, float *acc, const float *x, size_t count, agoq_sum_precision p) {
    for (size_t i = 0; i < count; i++) acc[i] = agoq_sum_step(acc[i], x[i], p);
}

static void cpu_encode(agoq_comm *c, int lr, agoq_dtype dt, const float *x, size_t count, float mul, void *out) {
    for (size_t i = 0; i < count; i++) agoq_dt_store(dt, out, i, x[i] * mul);
}

static void cpu_decode(agoq_comm *c, int lr, agoq_dtype dt, const void *in, size_t count, float mul, float *y) {
    for (size_t i = 0; i < count; i++) y[i] = agoq_dt_load(dt, in, i) * mul;
}

static const agoq_comm_ops cpu_ops = {
    .alloc = cpu_alloc, .release = cpu_release, .upload = cpu_copy, .download = cpu_copy, .copy = cpu_copy,
    .zero = cpu_zero, .sync = cpu_sync, .alltoall = agoq_local_alltoall, .allgather = agoq_local_allgather,
    .reduce_scatter = cpu_reduce_scatter, .allreduce = cpu_allreduce, .shift = agoq_local_shift,
    .global_absmax = cpu_global_absmax, .quantize = cpu_quantize, .dequantize = cpu_dequantize,
    .reduce = cpu_reduce, .add = cpu_add, .encode = cpu_encode, .decode = cpu_decode,
};

agoq_comm *agoq_comm_cpu_create(int nranks) {
    if (nranks < 1) {
        agoq_error("collectives cpu: rank count %d: must be >= 1", nranks);
        return NULL;
    }
    agoq_comm *c = calloc(1, sizeof *c);
    cpu_state *s = calloc(1, sizeof *s);
    if (!c || !s) abort();
    s->fault_rank = -1;
    const char *f = agoq_knob_str("AGOQ_TEST_COMM_FAULT");
    if (f) {
        const char *r = strncmp(f, "hang:", 5) == 0 ? f + 5 : strncmp(f, "error:", 6) == 0 ? f + 6 : NULL;
        char *end = NULL;
        const long rank = r && *r >= '0' && *r <= '9' ? strtol(r, &end, 10) : -1;
        if (rank < 0 || rank > INT_MAX || *end) agoq_knob_bad("AGOQ_TEST_COMM_FAULT", f, "hang:R or error:R (R a rank)");
        s->fault_hang = f[0] == 'h';
        s->fault_rank = (int)rank;
    }
    c->impl = s;
    c->ops = &cpu_ops;
    c->backend = "cpu";
    c->nranks = c->nlocal = nranks;
    c->rank0 = 0;
    return c;
}

void agoq_comm_cpu_destroy(agoq_comm *c) {
    if (c) free(c->impl);
    free(c);
}
