/* Backends behind one interface: `cpu` always exists; `cuda` when built with CUDA=1 and a
 * device is visible. `auto` picks cuda when it can, cpu otherwise. */
#ifndef AGOQ_BACKEND_H
#define AGOQ_BACKEND_H
#include <cjson/cJSON.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AGOQ_BACKEND_CPU, AGOQ_BACKEND_CUDA } agoq_backend;

/* Device facts recorded in every measured results file. */
typedef struct {
    int device_count;
    char name[256];
    char driver[64];       /* kernel driver version, e.g. "580.159.04" */
    int cuda_driver_api;   /* cudaDriverGetVersion, e.g. 13000 */
    int cuda_runtime;      /* cudaRuntimeGetVersion */
    int nccl_version;      /* ncclGetVersion, e.g. 22805 */
    int cc_major, cc_minor, sm_count;
    size_t mem_bytes, l2_bytes;
    int sm_clock_mhz, mem_clock_mhz; /* current clocks as reported */
} agoq_gpu_info;

/* Resolves "cpu" | "cuda" | "auto". "cuda" without a usable device is an error naming why. */
int agoq_backend_resolve(const char *name, agoq_backend *out);
const char *agoq_backend_name(agoq_backend b);
/* Number of CUDA devices (0 with the reason in `reason` when none or not built with CUDA). */
int agoq_cuda_devices(char *reason, size_t len);
/* Fills info for device dev; 0 or -1. */
int agoq_gpu_query(int dev, agoq_gpu_info *info);
/* meta.gpu object for results files (NULL on CPU). */
cJSON *agoq_gpu_json(const agoq_gpu_info *info);

#if AGOQ_HAVE_CUDA
/* Implemented in core/cuda_info.cu. */
int agoq_cuda_device_count_impl(char *reason, size_t len);
int agoq_cuda_query_impl(int dev, agoq_gpu_info *info);
#endif

#ifdef __cplusplus
}
#endif
#endif
