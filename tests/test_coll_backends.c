/* Choosing where simulated ranks run (collectives.h's agoq_sim_comm_open): "cpu" everywhere,
 * "cuda-local" only in a CUDA build with a visible GPU; anything else, or cuda-local where it
 * cannot run, is refused with one line and NULL (the trainer's reducer passes that on as -1).
 * And agoq_sim_collective_on (inputs and outputs apart, ranks whose result is not wanted left
 * alone, one communicator across calls) gives agoq_sim_collective's in-place bits. The GPU
 * side (cuda-local against cpu, bit for bit): tests/cuda/test_coll_cuda_local.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/driver.h"
#include "core/rng.h"
#include "tests/test.h"
#include "train/dp.h"

typedef struct {
    const char *backend;
    int nranks;
    agoq_comm *got;
} open_call;

static int open_comm(void *arg) {
    open_call *o = arg;
    o->got = agoq_sim_comm_open(o->backend, o->nranks);
    return o->got ? 0 : -1;
}

/* 1 when msg is exactly one line containing want */
static int one_line(const char *msg, const char *want) {
    return strstr(msg, want) && strchr(msg, '\n') == msg + strlen(msg) - 1;
}

TEST(coll_sim_backend_selection_and_refusals) {
    char msg[1024];
    open_call o = {"cpu", 3, NULL};
    CHECK(agoq_test_capture_stderr(open_comm, &o, msg, sizeof msg) == 0 && msg[0] == '\0');
    CHECK(strcmp(o.got->backend, "cpu") == 0 && o.got->nranks == 3);
    agoq_sim_comm_close(o.got);

    o = (open_call){"warp", 2, NULL};
    CHECK(agoq_test_capture_stderr(open_comm, &o, msg, sizeof msg) == -1 && o.got == NULL);
    CHECK_MSG(one_line(msg, "unknown simulated-rank backend 'warp' (valid: cpu, cuda-local)"), "%s", msg);
    o = (open_call){"cpu", 0, NULL};
    CHECK(agoq_test_capture_stderr(open_comm, &o, msg, sizeof msg) == -1);
    CHECK_MSG(one_line(msg, "rank count 0"), "%s", msg);

    /* cuda-local: refused in one line without CUDA or without a GPU, else a communicator */
    o = (open_call){"cuda-local", 2, NULL};
    int rc = agoq_test_capture_stderr(open_comm, &o, msg, sizeof msg);
    if (!AGOQ_HAVE_CUDA) CHECK_MSG(rc == -1 && one_line(msg, "cuda-local needs a CUDA build"), "%s", msg);
    if (rc == 0) {
        CHECK(strcmp(o.got->backend, "cuda-local") == 0 && o.got->nranks == 2);
        agoq_sim_comm_close(o.got);
    } else {
        CHECK_MSG(one_line(msg, AGOQ_HAVE_CUDA ? "collectives cuda-local: no visible GPU" : "needs a CUDA build"), "%s",
                  msg);
    }
    o = (open_call){"cuda-local", 65, NULL};
    CHECK(agoq_test_capture_stderr(open_comm, &o, msg, sizeof msg) == -1 && o.got == NULL);
    CHECK_MSG(one_line(msg, AGOQ_HAVE_CUDA ? "rank count 65: must be in [1, 64]" : "needs a CUDA build"), "%s", msg);
}

typedef struct {
    const char *backend;
    train_reducer r;
} reducer_call;

static int init_reducer(void *arg) {
    reducer_call *c = arg;
    agoq_qconfig q = agoq_qconfig_default(AGOQ_FMT_INT8);
    return train_reducer_init(&c->r, GRAD_AGOQ8, &q, 2, 16, c->backend);
}

TEST(coll_sim_backend_refusal_reaches_the_trainer_reducer) {
    char msg[1024];
    reducer_call c = {.backend = "warp"};
    CHECK(agoq_test_capture_stderr(init_reducer, &c, msg, sizeof msg) == -1 && c.r.comm == NULL);
    CHECK_MSG(one_line(msg, "unknown simulated-rank backend 'warp'"), "%s", msg);
    train_reducer_free(&c.r);
    c.backend = "cpu";
    CHECK(agoq_test_capture_stderr(init_reducer, &c, msg, sizeof msg) == 0 && msg[0] == '\0');
    CHECK(c.r.comm && strcmp(c.r.comm->backend, "cpu") == 0);
    train_reducer_free(&c.r);
    CHECK(train_reducer_init(&c.r, GRAD_FP32, NULL, 2, 16, "warp") == 0 && c.r.comm == NULL); /* no collective */
    train_reducer_free(&c.r);
}

/* Every algorithm and op, 3 ranks, sizes that pad: the _on form on one communicator, outputs
 * apart (rank 1's not wanted: its buffer stays as it was) == the in-place form, bit for bit. */
TEST(coll_sim_collective_on_matches_in_place) {
    enum { N = 3 };
    static const size_t sizes[] = {1, 1000, 4099};
    agoq_comm *c = agoq_sim_comm_open("cpu", N);
    CHECK(c != NULL);
    for (int a = 0; a < AGOQ_ALGO_COUNT; a++)
        for (int op = 0; op < 2; op++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                const size_t n = sizes[si];
                agoq_coll_config cfg = agoq_coll_config_default((agoq_coll_algo)a, (agoq_coll_op)op);
                float *in[N], *inplace[N], *out[N];
                for (int r = 0; r < N; r++) {
                    in[r] = malloc(n * sizeof(float));
                    inplace[r] = malloc(n * sizeof(float));
                    out[r] = malloc(n * sizeof(float));
                    agoq_fill(AGOQ_DIST_HEAVY, in[r], n, 300 + (uint64_t)r);
                    memcpy(inplace[r], in[r], n * sizeof(float));
                    for (size_t i = 0; i < n; i++) out[r][i] = op == AGOQ_COLL_ALLREDUCE ? NAN : inplace[r][i];
                }
                float *want_out[N] = {out[0], NULL, out[2]};
                CHECK(agoq_sim_collective(&cfg, inplace, N, n, NULL) == 0);
                CHECK(agoq_sim_collective_on(c, &cfg, (const float *const *)in, want_out, n, NULL) == 0);
                for (int r = 0; r < N; r += 2)
                    CHECK_MSG(agoq_validate_floats("out", inplace[r], out[r], n) == 0, "%s %s n=%zu rank %d",
                              agoq_coll_algos[a].name, agoq_coll_op_name(cfg.op), n, r);
                CHECK(isnan(out[1][0]) || op != AGOQ_COLL_ALLREDUCE);
                for (int r = 0; r < N; r++) {
                    free(in[r]);
                    free(inplace[r]);
                    free(out[r]);
                }
            }
    agoq_sim_comm_close(c);
}
