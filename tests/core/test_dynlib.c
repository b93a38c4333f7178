/* core/dynlib.c and core/dynlib_cuda.cu: the GPU libraries opened at their first call. A library
 * that does not open is a soft answer from the probe and one error line (exit 1) from a call;
 * in a CUDA build every function the project calls resolves in the installed libraries and the
 * calls that need no GPU return the headers' versions; `agoq` itself no longer needs the
 * libraries to start (its DT_NEEDED entries). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dynlib.h"
#include "core/dynlib_cuda.h"
#include "tests/test.h"

#define NO_LIB "libagoq_test_no_such_library.so.7"

TEST(dynlib_missing_library_is_a_soft_probe) {
    char why[256];
    CHECK(agoq_dynlib_probe(NO_LIB, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, NO_LIB) != NULL, "why: '%s'", why);
    CHECK(agoq_dynlib_find(NO_LIB, "f", why, sizeof why) == NULL);
    CHECK(agoq_dynlib_probe("libm.so.6", why, sizeof why) == 0 && why[0] == '\0');
    CHECK(agoq_dynlib_find("libm.so.6", "cos", why, sizeof why) != NULL);
    CHECK(agoq_dynlib_find("libm.so.6", "agoq_no_such_symbol", why, sizeof why) == NULL && why[0] != '\0');
}

static void call_missing_lib(void *arg) { agoq_dynlib_sym(NO_LIB, (const char *)arg); }
static void call_missing_sym(void *arg) { agoq_dynlib_sym("libm.so.6", (const char *)arg); }

TEST(dynlib_missing_library_at_a_call_exits_in_one_line) {
    CHECK(agoq_test_expect_die(call_missing_lib, (void *)"ncclSend", "cannot load " NO_LIB " (needed for ncclSend)"));
    CHECK(agoq_test_expect_die(call_missing_sym, (void *)"agoq_no_such_symbol",
                               "cannot load libm.so.6 (needed for agoq_no_such_symbol)"));
}

TEST(dynlib_cuda_functions_resolve_in_the_installed_libraries) {
#if AGOQ_HAVE_CUDA
    char why[512] = "";
    CHECK(agoq_dynlib_cuda_count() >= 30);
    const int bad = agoq_dynlib_cuda_selftest(why, sizeof why);
    CHECK_MSG(bad == 0, "%d of %d: %s", bad, agoq_dynlib_cuda_count(), why);
    CHECK(agoq_dynlib_cuda_nccl() == 1);
#else
    SKIP("CPU-only build: no GPU libraries");
#endif
}

TEST(dynlib_agoq_binary_does_not_link_the_gpu_libraries) {
#if AGOQ_HAVE_CUDA
    char cmd[1024], line[512];
    snprintf(cmd, sizeof cmd, "readelf -d '%s' 2>&1", agoq_test_bin());
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    int needed = 0, gpu = 0;
    while (fgets(line, sizeof line, p)) {
        if (!strstr(line, "(NEEDED)")) continue;
        needed++;
        if (strstr(line, "cublas") || strstr(line, "nccl") || strstr(line, "cudnn")) {
            gpu++;
            fprintf(stderr, "    %s", line);
        }
    }
    pclose(p);
    CHECK_MSG(needed > 0, "readelf listed no NEEDED entries of %s", agoq_test_bin());
    CHECK_MSG(gpu == 0, "%d GPU libraries linked", gpu);
#else
    SKIP("CPU-only build: no GPU libraries");
#endif
}
