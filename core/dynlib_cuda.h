/* The CUDA build's GPU libraries opened at their first call (core/dynlib_cuda.cu; dynlib.h
 * says why). Plain C declarations: the host tests call them without CUDA headers. */
#ifndef AGOQ_DYNLIB_CUDA_H
#define AGOQ_DYNLIB_CUDA_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Functions defined by dynlib_cuda.cu (cuBLAS, cuBLASLt, NCCL and, with cuDNN, cuDNN). */
int agoq_dynlib_cuda_count(void);
/* 1 when NCCL's library opens (0: no NCCL; nothing exits). */
int agoq_dynlib_cuda_nccl(void);
/* 1 when cuDNN's library opens; 0 with the reason in why (not found, or built without it). */
int agoq_dynlib_cuda_cudnn(char *why, size_t len);
/* Every function above resolved in its library without exiting, then ncclGetVersion,
 * cublasLtGetStatusString and cudnnGetVersion called through them (no GPU needed) and the
 * majors compared with the headers'. 0 when all hold; else the count of unresolved functions
 * (or 1), the first failure in why. For the host test tests/core/test_dynlib.c. */
int agoq_dynlib_cuda_selftest(char *why, size_t len);

#ifdef __cplusplus
}
#endif
#endif
