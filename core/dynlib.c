/* Libraries opened at their first call (dynlib.h). */
#include "core/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/common.h"

#define DYNLIB_MAX 8
static struct {
    char soname[64];
    void *handle;
} g_libs[DYNLIB_MAX];
static int g_nlibs;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* The handle of soname (opened now if it is not yet), or NULL with dlerror's text in why. */
static void *open_lib(const char *soname, char *why, size_t len) {
    void *h = NULL;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nlibs && !h; i++)
        if (!strcmp(g_libs[i].soname, soname)) h = g_libs[i].handle;
    if (!h) {
        dlerror();
        h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            if (why && len) snprintf(why, len, "%s", e ? e : "dlopen failed");
        } else if (g_nlibs < DYNLIB_MAX && strlen(soname) < sizeof g_libs[0].soname) {
            snprintf(g_libs[g_nlibs].soname, sizeof g_libs[0].soname, "%s", soname);
            g_libs[g_nlibs++].handle = h; /* never closed: the process keeps it to its end */
        }
    }
    pthread_mutex_unlock(&g_lock);
    return h;
}

int agoq_dynlib_probe(const char *soname, char *why, size_t len) {
    if (why && len) why[0] = '\0';
    return open_lib(soname, why, len) ? 0 : -1;
}

void *agoq_dynlib_find(const char *soname, const char *sym, char *why, size_t len) {
    void *h = open_lib(soname, why, len);
    if (!h) return NULL;
    dlerror();
    void *p = dlsym(h, sym);
    if (!p && why && len) {
        const char *e = dlerror();
        snprintf(why, len, "%s", e ? e : "symbol not found");
    }
    return p;
}

void *agoq_dynlib_sym(const char *soname, const char *sym) {
    char why[512] = "";
    void *p = agoq_dynlib_find(soname, sym, why, sizeof why);
    if (!p) agoq_die("cannot load %s (needed for %s): %s", soname, sym, why);
    return p;
}
