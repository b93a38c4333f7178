/* The functions of cuBLAS, cuBLASLt, NCCL and cuDNN this project calls, defined here with the
 * libraries' own prototypes (their headers declare them; the compiler checks each definition
 * against its declaration) and forwarded to the library's function, found at the first call by
 * core/dynlib.c (the library opened then). The build no longer links the libraries
 * (Makefile), so starting `agoq` maps none of them; see dynlib.h. A function used elsewhere
 * and missing here fails the link (undefined reference), so the list cannot fall behind. The
 * shared object names follow the headers' major versions. The binary exports none of these
 * (it is not linked with -rdynamic), so the libraries' own calls among themselves are theirs. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#if AGOQ_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "core/dynlib.h"
#include "core/dynlib_cuda.h"

#define DYN_STR_(x) #x
#define DYN_STR(x) DYN_STR_(x)
#define DYN_CUBLAS "libcublas.so." DYN_STR(CUBLAS_VER_MAJOR)
#define DYN_CUBLASLT "libcublasLt.so." DYN_STR(CUBLAS_VER_MAJOR)
#define DYN_NCCL "libnccl.so." DYN_STR(NCCL_MAJOR)
#define DYN_CUDNN "libcudnn.so." DYN_STR(CUDNN_MAJOR)

#define DYN_CUBLAS_FNS(X) \
    X(DYN_CUBLAS, cublasStatus_t, cublasCreate_v2, (cublasHandle_t* handle), (handle)) \
    X(DYN_CUBLAS, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle)) \
    X(DYN_CUBLAS, cublasStatus_t, cublasGemmEx, (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo), (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo)) \
    X(DYN_CUBLAS, const char*, cublasGetStatusString, (cublasStatus_t status), (status)) \
    X(DYN_CUBLAS, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId))

#define DYN_CUBLASLT_FNS(X) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtCreate, (cublasLtHandle_t* lightHandle), (lightHandle)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t lightHandle), (lightHandle)) \
    X(DYN_CUBLASLT, const char*, cublasLtGetStatusString, (cublasStatus_t status), (status)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmul, (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream), (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmulAlgoGetHeuristic, (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount), (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount, heuristicResultsArray, returnAlgoCount)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType, cudaDataType_t scaleType), (matmulDesc, computeType, scaleType)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t matmulDesc), (matmulDesc)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmulDescSetAttribute, (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t sizeInBytes), (matmulDesc, attr, buf, sizeInBytes)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t* pref), (pref)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatmulPreferenceSetAttribute, (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t sizeInBytes), (pref, attr, buf, sizeInBytes)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatrixLayoutCreate, (cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld), (matLayout, type, rows, cols, ld)) \
    X(DYN_CUBLASLT, cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t matLayout), (matLayout))

#define DYN_NCCL_FNS(X) \
    X(DYN_NCCL, ncclResult_t, ncclAllGather, (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, sendcount, datatype, comm, stream)) \
    X(DYN_NCCL, ncclResult_t, ncclAllReduce, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, op, comm, stream)) \
    X(DYN_NCCL, ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm)) \
    X(DYN_NCCL, ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm)) \
    X(DYN_NCCL, ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError), (comm, asyncError)) \
    X(DYN_NCCL, ncclResult_t, ncclCommInitAll, (ncclComm_t* comm, int ndev, const int* devlist), (comm, ndev, devlist)) \
    X(DYN_NCCL, ncclResult_t, ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank), (comm, nranks, commId, rank)) \
    X(DYN_NCCL, const char*, ncclGetErrorString, (ncclResult_t result), (result)) \
    X(DYN_NCCL, ncclResult_t, ncclGetUniqueId, (ncclUniqueId* uniqueId), (uniqueId)) \
    X(DYN_NCCL, ncclResult_t, ncclGetVersion, (int *version), (version)) \
    X(DYN_NCCL, ncclResult_t, ncclGroupEnd, (void), ()) \
    X(DYN_NCCL, ncclResult_t, ncclGroupStart, (void), ()) \
    X(DYN_NCCL, ncclResult_t, ncclRecv, (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (recvbuff, count, datatype, peer, comm, stream)) \
    X(DYN_NCCL, ncclResult_t, ncclReduceScatter, (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, recvcount, datatype, op, comm, stream)) \
    X(DYN_NCCL, ncclResult_t, ncclSend, (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (sendbuff, count, datatype, peer, comm, stream))

#define DYN_CUDNN_FNS(X) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnBackendCreateDescriptor, (cudnnBackendDescriptorType_t descriptorType, cudnnBackendDescriptor_t *descriptor), (descriptorType, descriptor)) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t descriptor), (descriptor)) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnBackendExecute, (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan, cudnnBackendDescriptor_t variantPack), (handle, executionPlan, variantPack)) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnBackendFinalize, (cudnnBackendDescriptor_t descriptor), (descriptor)) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnBackendGetAttribute, (cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t attributeName, cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount, int64_t *elementCount, void *arrayOfElements), (descriptor, attributeName, attributeType, requestedElementCount, elementCount, arrayOfElements)) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnBackendSetAttribute, (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName, cudnnBackendAttributeType_t attributeType, int64_t elementCount, const void *arrayOfElements), (descriptor, attributeName, attributeType, elementCount, arrayOfElements)) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnCreate, (cudnnHandle_t *handle), (handle)) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle), (handle)) \
    X(DYN_CUDNN, const char *, cudnnGetErrorString, (cudnnStatus_t status), (status)) \
    X(DYN_CUDNN, void, cudnnGetLastErrorString, (char *message, size_t max_size), (message, max_size)) \
    X(DYN_CUDNN, size_t, cudnnGetVersion, (void), ()) \
    X(DYN_CUDNN, cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))
#if AGOQ_HAVE_CUDNN
#define DYN_ALL_FNS(X) DYN_CUBLAS_FNS(X) DYN_CUBLASLT_FNS(X) DYN_NCCL_FNS(X) DYN_CUDNN_FNS(X)
#else
#define DYN_ALL_FNS(X) DYN_CUBLAS_FNS(X) DYN_CUBLASLT_FNS(X) DYN_NCCL_FNS(X)
#endif

/* One function: the library's address kept after the first call (a racing first call stores
 * the same address twice). */
#define DYN_DEFINE(LIB, RET, NAME, PARAMS, ARGS)                                  \
    RET NAME PARAMS {                                                             \
        typedef RET(*fn_t) PARAMS;                                                \
        static fn_t fp;                                                           \
        fn_t f = __atomic_load_n(&fp, __ATOMIC_ACQUIRE);                          \
        if (!f) {                                                                 \
            f = (fn_t)agoq_dynlib_sym(LIB, #NAME);                                \
            __atomic_store_n(&fp, f, __ATOMIC_RELEASE);                           \
        }                                                                         \
        return f ARGS;                                                            \
    }
DYN_ALL_FNS(DYN_DEFINE)

#define DYN_ENTRY(LIB, RET, NAME, PARAMS, ARGS) {LIB, #NAME},
static const struct {
    const char *lib, *name;
} dyn_fns[] = {DYN_ALL_FNS(DYN_ENTRY)};

int agoq_dynlib_cuda_count(void) { return (int)(sizeof dyn_fns / sizeof dyn_fns[0]); }

int agoq_dynlib_cuda_nccl(void) { return agoq_dynlib_probe(DYN_NCCL, NULL, 0) == 0; }
int agoq_dynlib_cuda_cudnn(char *why, size_t len) {
#if AGOQ_HAVE_CUDNN
    char w[400];
    if (agoq_dynlib_probe(DYN_CUDNN, w, sizeof w) == 0) return 1;
    if (why && len) snprintf(why, len, "cannot load %s: %s", DYN_CUDNN, w);
#else
    if (why && len) snprintf(why, len, "built without cuDNN");
#endif
    return 0;
}

int agoq_dynlib_cuda_selftest(char *why, size_t len) {
    char w[400];
    int missing = 0;
    for (int i = 0; i < agoq_dynlib_cuda_count(); i++)
        if (!agoq_dynlib_find(dyn_fns[i].lib, dyn_fns[i].name, w, sizeof w)) {
            if (!missing++ && why && len) snprintf(why, len, "%s in %s: %s", dyn_fns[i].name, dyn_fns[i].lib, w);
        }
    if (missing) return missing;
    /* calls through the definitions above that need no GPU: the versions against the headers' */
    int nv = 0;
    if (ncclGetVersion(&nv) != ncclSuccess || nv / 10000 != NCCL_MAJOR) {
        if (why && len) snprintf(why, len, "ncclGetVersion: %d, header %d.%d", nv, NCCL_MAJOR, NCCL_MINOR);
        return 1;
    }
    const char *s = cublasLtGetStatusString(CUBLAS_STATUS_SUCCESS);
    if (!s || !*s) {
        if (why && len) snprintf(why, len, "cublasLtGetStatusString returned nothing");
        return 1;
    }
#if AGOQ_HAVE_CUDNN
    const size_t cv = cudnnGetVersion();
    if (cv / 10000 != CUDNN_MAJOR) {
        if (why && len) snprintf(why, len, "cudnnGetVersion: %zu, header major %d", cv, CUDNN_MAJOR);
        return 1;
    }
#endif
    return 0;
}
