/* The kernel benchmark (`agoq kernels`, runners/kernels.c) as a table of "cases": each case
 * is a kernel launch with its buffers, its bytes-moved formula and an optional correctness
 * check against the CPU reference. Any .cu file adds cases with AGOQ_BENCH_REGISTER(array);
 * the quantization and gradient cases are in kernels/quant/bench_quant.cu (fused: kernels/fused/,
 * GEMM: kernels/gemm/, copy ceilings: kernels/stream/), the timing driver (CUDA
 * events, warm-up, L2 scrub, min/median/max, the device-to-device copy of the same run) in
 * kernels/bench/bench.cu. CUDA=1 builds only.
 *
 * A point of the sweep: n elements (the sweep's logical fp32 bytes / 4), one quantization
 * config (cases with uses_format are run for every format of the experiment; others once
 * per size with the experiment's first format), a row length for row-wise cases, the number
 * of chunks for reductions. */
#ifndef AGOQ_BENCH_CASES_H
#define AGOQ_BENCH_CASES_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/quant/formats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t n;        /* elements of the case's main tensor */
    agoq_qconfig qc; /* quantization config of this point */
    int cols;        /* row length of row-wise cases (rows = n / cols, at least 1) */
    int nchunks;     /* inputs of reductions */
    uint64_t seed;   /* input fill */
    void *stream;    /* cudaStream_t */
} agoq_bench_args;

typedef struct {
    const char *name;  /* unique, e.g. "quantize_f32"; selectable with --cases */
    const char *group; /* "quant", "grad8", "fused", ...: --cases also accepts a group */
    int uses_format;   /* 1: one row per format of the experiment */
    /* Bytes read + written by one launch (each case derives its formula in a comment). */
    double (*bytes_moved)(const agoq_bench_args *a);
    /* Allocates and fills the device buffers of point a into *state. 0, or -1 after printing why
     * (the point is then skipped, e.g. a format the case does not support). */
    int (*setup)(const agoq_bench_args *a, void **state);
    /* Enqueues the kernel(s) on a->stream; no synchronisation, no allocation. */
    void (*launch)(void *state, const agoq_bench_args *a);
    /* Optional (NULL): launches once more and returns 0 when that result equals the CPU
     * reference bit for bit, else prints the first mismatches and returns -1. Run once per case
     * and format, at the first size of the sweep (when it is small enough for the CPU). */
    int (*check)(void *state, const agoq_bench_args *a);
    void (*teardown)(void *state);
    /* Optional (NULL = all): 0 skips a format silently (e.g. 8-bit gradient cases). */
    int (*supports)(const agoq_qconfig *qc);
} agoq_bench_case;

/* Registration (constructor time) and the table in registration order. */
void agoq_bench_register(const agoq_bench_case *cases, int ncases);
int agoq_bench_case_count(void);
const agoq_bench_case *agoq_bench_case_at(int i);

#define AGOQ_BENCH_REGISTER(arr)                                                           \
    __attribute__((constructor)) static void agoq_bench_register_##arr(void) {             \
        agoq_bench_register(arr, (int)(sizeof(arr) / sizeof((arr)[0])));                   \
    }

/* For case code (CUDA files, which include core/common.h): a setup or launch step that returns
 * non-zero ends the run naming the call (a case cannot fail gracefully mid-timing). */
#define AGOQ_BENCH_MUST(call)                                                              \
    do {                                                                                   \
        if ((call) != 0) agoq_die("kernels benchmark: %s failed", #call);                 \
    } while (0)

/* Timing driver (kernels/bench/bench.cu). */
typedef struct {
    double min_ms, median_ms, max_ms;
    int iters;
} agoq_bench_timing;

/* Creates the stream and the L2 scrub buffer (2 x L2). 0 or -1. */
int agoq_bench_init(void **stream);
void agoq_bench_shutdown(void);
/* warmup untimed launches, then iters launches each preceded by an L2 scrub (a kernel that
 * reads the scrub buffer, outside the timed interval: it leaves L2 holding clean lines of
 * other data, so no write-back lands in the timed launch) and timed alone with CUDA events. */
void agoq_bench_time_case(const agoq_bench_case *c, void *state, const agoq_bench_args *a, int warmup, int iters,
                          agoq_bench_timing *t);
/* The same for cudaMemcpyAsync device-to-device of `bytes` (it moves 2 * bytes). */
void agoq_bench_time_copy(size_t bytes, void *stream, int warmup, int iters, agoq_bench_timing *t);

#ifdef __cplusplus
}
#endif
#endif
