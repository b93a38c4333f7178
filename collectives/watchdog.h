/* Waiting on communicators without hanging forever. A collective whose peer died or whose
 * network failed never completes: NCCL reports the failure asynchronously
 * (ncclCommGetAsyncError), and a hung peer reports nothing at all. agoq_comm_wait polls every
 * local rank until its work is done; on an asynchronous error, or when a rank is still busy
 * after the timeout, it aborts the communicators (ncclCommAbort) and prints one line naming the
 * rank, so a run fails in bounded time with a reason instead of hanging.
 *
 * The backend supplies the probes: nccl polls cudaStreamQuery + ncclCommGetAsyncError and
 * aborts with ncclCommAbort (comm_nccl.cu); the cpu backend polls its injected faults
 * (AGOQ_TEST_COMM_FAULT, comm_cpu.c), which is how the path is tested without a GPU. */
#ifndef AGOQ_COLL_WATCHDOG_H
#define AGOQ_COLL_WATCHDOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AGOQ_RANK_DONE, AGOQ_RANK_PENDING, AGOQ_RANK_FAILED } agoq_rank_state;

typedef struct {
    /* State of local rank lr's outstanding work; on AGOQ_RANK_FAILED *why says why (static). */
    agoq_rank_state (*poll)(void *ctx, int lr, const char **why);
    /* Aborts every local communicator (after this the communicator is unusable). */
    void (*abort_all)(void *ctx);
    void *ctx;
} agoq_comm_waiter;

/* Waits for local ranks 0..nlocal-1 (global rank rank0 + lr). Returns 0 when all are done;
 * -1 after abort_all and one line "collectives BACKEND: rank R: WHAT: <reason>; communicators
 * aborted" when a rank failed or was still pending after timeout_s seconds. */
int agoq_comm_wait(const agoq_comm_waiter *w, const char *backend, int nlocal, int rank0, double timeout_s,
                   const char *what);
/* The timeout of every communicator wait: $AGOQ_COMM_TIMEOUT_S (seconds, > 0 and < 1e7; another
 * value exits after one line, core/knob.h), default 300.
 * Generous: the longest collective of a sweep (4 GiB over PCIe) takes seconds, a hang forever. */
double agoq_comm_timeout_s(void);

#ifdef __cplusplus
}
#endif
#endif
