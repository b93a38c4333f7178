/* One check family for external APIs: on failure print the expression, file:line, host and
 * rank (agoq_check_fail), then exit. Include only from files that use the API in question. */
#ifndef AGOQ_CHECK_H
#define AGOQ_CHECK_H
#include "core/common.h"

#define cudaCheck(expr)                                                                    \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess)                                                             \
            agoq_check_fail("CUDA", #expr, cudaGetErrorString(e_), __FILE__, __LINE__);    \
    } while (0)
/* After a kernel launch: catches bad launch configurations immediately. */
#define cudaCheckLaunch() cudaCheck(cudaGetLastError())

#define ncclCheck(expr)                                                                    \
    do {                                                                                   \
        ncclResult_t r_ = (expr);                                                          \
        if (r_ != ncclSuccess)                                                             \
            agoq_check_fail("NCCL", #expr, ncclGetErrorString(r_), __FILE__, __LINE__);    \
    } while (0)

#define cublasCheck(expr)                                                                  \
    do {                                                                                   \
        cublasStatus_t s_ = (expr);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                   \
            agoq_check_fail("cuBLAS", #expr, cublasGetStatusString(s_), __FILE__, __LINE__); \
    } while (0)

#define mpiCheck(expr)                                                                     \
    do {                                                                                   \
        int m_ = (expr);                                                                   \
        if (m_ != MPI_SUCCESS) {                                                           \
            char s_[MPI_MAX_ERROR_STRING];                                                 \
            int l_ = 0;                                                                    \
            MPI_Error_string(m_, s_, &l_);                                                 \
            agoq_check_fail("MPI", #expr, s_, __FILE__, __LINE__);                         \
        }                                                                                  \
    } while (0)
#endif
