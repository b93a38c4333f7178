/* Backend selection and GPU description; see backend.h. */
#include "core/backend.h"

#include <stdio.h>
#include <string.h>

#include "core/common.h"

const char *agoq_backend_name(agoq_backend b) { return b == AGOQ_BACKEND_CUDA ? "cuda" : "cpu"; }

int agoq_cuda_devices(char *reason, size_t len) {
#if AGOQ_HAVE_CUDA
    return agoq_cuda_device_count_impl(reason, len);
#else
    snprintf(reason, len, "this build has no CUDA support (built with CUDA=0)");
    return 0;
#endif
}

int agoq_backend_resolve(const char *name, agoq_backend *out) {
    char why[256] = "";
    if (!name || strcmp(name, "cpu") == 0) {
        *out = AGOQ_BACKEND_CPU;
        return 0;
    }
    if (strcmp(name, "auto") == 0) {
        *out = agoq_cuda_devices(why, sizeof why) > 0 ? AGOQ_BACKEND_CUDA : AGOQ_BACKEND_CPU;
        return 0;
    }
    if (strcmp(name, "cuda") == 0) {
        if (agoq_cuda_devices(why, sizeof why) > 0) {
            *out = AGOQ_BACKEND_CUDA;
            return 0;
        }
        agoq_error("backend 'cuda': no usable GPU: %s", why);
        return -1;
    }
    agoq_error("unknown backend '%s' (expect cpu, cuda or auto)", name);
    return -1;
}

int agoq_gpu_query(int dev, agoq_gpu_info *info) {
    memset(info, 0, sizeof *info);
#if AGOQ_HAVE_CUDA
    return agoq_cuda_query_impl(dev, info);
#else
    agoq_error("GPU query: this build has no CUDA support");
    return -1;
#endif
}

cJSON *agoq_gpu_json(const agoq_gpu_info *g) {
    if (!g || g->device_count == 0) return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", g->name);
    cJSON_AddStringToObject(o, "driver", g->driver);
    cJSON_AddNumberToObject(o, "device_count", g->device_count);
    cJSON_AddNumberToObject(o, "cuda_driver_api", g->cuda_driver_api);
    cJSON_AddNumberToObject(o, "cuda_runtime", g->cuda_runtime);
    cJSON_AddNumberToObject(o, "nccl_version", g->nccl_version);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
    cJSON_AddStringToObject(o, "compute_capability", cc);
    cJSON_AddNumberToObject(o, "sm_count", g->sm_count);
    cJSON_AddNumberToObject(o, "memory_bytes", (double)g->mem_bytes);
    cJSON_AddNumberToObject(o, "l2_bytes", (double)g->l2_bytes);
    cJSON_AddNumberToObject(o, "sm_clock_mhz", g->sm_clock_mhz);
    cJSON_AddNumberToObject(o, "mem_clock_mhz", g->mem_clock_mhz);
    return o;
}
