/* Machine files (experiments/machines/NAME.json): the hardware a simulation runs on, with the
 * source of every number. Each calibration entry is an object
 *   {"value": 154.8, "source": "assumed: RTX A6000 datasheet, dense BF16 tensor TFLOPS"}
 * optionally with a measured override read from a results file when that file exists:
 *   "measured": {"file": "results/h200/gemm.json", "key": "tflops",
 *                "where": {"op": "gemm", "dtype": "bf16"}, "reduce": "max"|"median"|"min"}
 * The override takes `key` of every record whose fields equal `where` (strings and numbers),
 * reduces them, and multiplies by "scale" (default 1: unit conversion), or with "inverse": true
 * takes scale / value (a rate from a time: TFLOPS = GEMM GFLOP / median_ms). "measured" may also be an array of such specs
 * (candidate files): the first that yields a value wins. Instead of "key", "derive" takes a rate from
 * each measured `agoq step` record's op profile: "gemm_tflops", "attention_tflops" or
 * "optimizer_GBps" (counting in sim/step_calib.h), then `where`, `reduce` and `scale` as above. A missing file falls back to the assumed value
 * (the source then says so); so does a present file without matching records (with a warning).
 *
 * Keys: name, description, gpu, gpus_per_node, nodes (size of the real cluster, informative),
 * and calibration entries: gpu_memory_GiB, gemm_bf16_tflops, gemm_fp8_tflops, attention_tflops,
 * kernel_GBps (achieved bandwidth of memory-bound quantize/elementwise kernels), intra_GBps,
 * intra_latency_us, inter_GBps_per_node (all NICs of a node), inter_latency_us; optional
 * elementwise_ns (default 0 = not modelled): the memory-bound ops of a decoder layer (RMSNorms,
 * RoPE, SwiGLU, residuals, quantization of stored activations), forward + backward, in ns per
 * token x (hidden + ffn) / tp; derived from measured steps ("derive": "elementwise_ns"). */
#ifndef AGOQ_SIM_MACHINE_H
#define AGOQ_SIM_MACHINE_H
#include <cjson/cJSON.h>

#include "core/jconf.h"
#include "sim/collective_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double value;
    int measured;     /* 1 when value came from a results file */
    char source[512]; /* "measured: FILE (key, n records)" or "assumed: ..." */
} agoq_calib;

typedef enum {
    AGOQ_CAL_GPU_MEM_GIB,
    AGOQ_CAL_GEMM_BF16_TFLOPS,
    AGOQ_CAL_GEMM_FP8_TFLOPS,
    AGOQ_CAL_ATTN_TFLOPS,
    AGOQ_CAL_KERNEL_GBPS,
    AGOQ_CAL_INTRA_GBPS,
    AGOQ_CAL_INTRA_LAT_US,
    AGOQ_CAL_INTER_GBPS,
    AGOQ_CAL_INTER_LAT_US,
    AGOQ_CAL_ELEM_NS, /* optional: memory-bound layer ops, ns per token x (hidden + ffn) / tp per layer */
    AGOQ_CAL_COUNT
} agoq_calib_id;

extern const char *const agoq_calib_keys[AGOQ_CAL_COUNT];

typedef struct {
    char name[64], gpu[96], file[256];
    int gpus_per_node, nodes;
    agoq_calib cal[AGOQ_CAL_COUNT];
    agoq_fabric fabric; /* derived from the four link entries */
} agoq_machine;

/* Loads and validates a machine file; messages name the file and key. 0 or -1. */
int agoq_machine_load(const char *path, agoq_machine *m);
/* Same from an already parsed object (tests); `file` is used in messages. */
int agoq_machine_parse(const char *file, const cJSON *doc, agoq_machine *m);
static inline double agoq_machine_val(const agoq_machine *m, agoq_calib_id id) { return m->cal[id].value; }
/* Adds "measured_inputs" and "assumed_inputs" (arrays of calibration keys) to a record: which
 * numbers behind a prediction were measured, which assumed. */
void agoq_machine_add_inputs(const agoq_machine *m, cJSON *rec);
/* {"gemm_bf16_tflops": {"value":..,"source":..}, ...} for results meta / records. */
cJSON *agoq_machine_json(const agoq_machine *m);

#ifdef __cplusplus
}
#endif
#endif
