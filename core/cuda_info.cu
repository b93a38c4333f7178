/* CUDA side of the backend interface: device count and the facts recorded in results meta. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "core/backend.h"
#include "core/check.h"
#include "core/dynlib_cuda.h"

extern "C" int agoq_cuda_device_count_impl(char *reason, size_t len) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(reason, len, "%s", cudaGetErrorString(e));
        cudaGetLastError(); /* clear the sticky error so a CPU run can continue */
        return 0;
    }
    if (n == 0) snprintf(reason, len, "no CUDA device is visible");
    return n;
}

/* The kernel driver's version string ("580.159.04"), from procfs where the driver exposes it. */
static void driver_version(char *buf, size_t len) {
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        /* "NVRM version: NVIDIA UNIX [Open ]Kernel Module [for x86_64]  580.159.04  ...": the
         * first token that starts with digits and a dot is the version */
        for (char *tok = strtok(line, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
            const char *dot = strchr(tok, '.');
            if (tok[0] >= '0' && tok[0] <= '9' && dot && dot[1] >= '0' && dot[1] <= '9') {
                snprintf(buf, len, "%s", tok);
                break;
            }
        }
    }
    fclose(f);
}

extern "C" int agoq_cuda_query_impl(int dev, agoq_gpu_info *g) {
    char why[256];
    g->device_count = agoq_cuda_device_count_impl(why, sizeof why);
    if (g->device_count == 0 || dev >= g->device_count) return -1;
    cudaDeviceProp p;
    cudaCheck(cudaGetDeviceProperties(&p, dev));
    snprintf(g->name, sizeof g->name, "%s", p.name);
    driver_version(g->driver, sizeof g->driver);
    cudaCheck(cudaDriverGetVersion(&g->cuda_driver_api));
    cudaCheck(cudaRuntimeGetVersion(&g->cuda_runtime));
    g->nccl_version = 0; /* 0: NCCL's library does not open here (core/dynlib.h) */
    if (agoq_dynlib_cuda_nccl()) ncclCheck(ncclGetVersion(&g->nccl_version));
    g->cc_major = p.major;
    g->cc_minor = p.minor;
    g->sm_count = p.multiProcessorCount;
    g->mem_bytes = p.totalGlobalMem;
    g->l2_bytes = (size_t)p.l2CacheSize;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) == cudaSuccess) g->sm_clock_mhz = khz / 1000;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess) g->mem_clock_mhz = khz / 1000;
    cudaGetLastError();
    return 0;
}
