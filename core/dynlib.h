/* The GPU libraries the CUDA build calls (cuBLAS, cuBLASLt, NCCL, cuDNN), opened with dlopen at
 * their first call instead of by the dynamic loader at start-up (core/dynlib_cuda.cu defines each
 * function used, forwarding to the library's own). Why: linking them made every start of `agoq`
 * map and start ~800 MB of libraries (~0.37 s on the 2-core development machine, mostly page
 * faults by perf) even for `agoq --help` or a CPU run, and a machine without one of them could not start the binary at
 * all; now a missing library is one error line at its first use (or a soft probe's answer).
 * Plain C, no CUDA headers: the host tests use it without a GPU. */
#ifndef AGOQ_DYNLIB_H
#define AGOQ_DYNLIB_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The address of `sym` in the library `soname` (e.g. "libnccl.so.2"), opening the library on its
 * first use (RTLD_NOW | RTLD_LOCAL; the search of dlopen: LD_LIBRARY_PATH, the binary's
 * RUNPATH, the system's). Thread-safe. A library that cannot be opened, or a symbol it lacks,
 * exits in one line: "agoq: cannot load <soname> (needed for <sym>): <dlerror>". */
void *agoq_dynlib_sym(const char *soname, const char *sym);
/* The same without exiting: NULL, with the reason in why (when non-NULL), where it fails. */
void *agoq_dynlib_find(const char *soname, const char *sym, char *why, size_t len);
/* 0 when `soname` opens; -1 otherwise, with the reason in why (when non-NULL). */
int agoq_dynlib_probe(const char *soname, char *why, size_t len);

#ifdef __cplusplus
}
#endif
#endif
