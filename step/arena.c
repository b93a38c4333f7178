/* Two-ended first-fit arena over one device allocation (arena.h). Each end keeps its live
 * blocks sorted by their offset from that end (the bottom: from base; the top: "depth" from
 * the end), and an allocation takes the first gap that fits in its end's coordinates (gaps are
 * implicit between live blocks, so freed ranges coalesce by construction). The ends never see
 * each other's gaps, so the placement does not depend on the capacity: a dry run on a huge
 * bookkeeping arena places every block where the real run (capacity = the dry run's need)
 * will, and the need is the largest sum of the two ends' extents over the run. O(live blocks)
 * per call: a layer step has a few hundred. */
#include "step/arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

static const char *const g_class_names[AGOQ_MEM_CLASS_COUNT] = {"weights", "grads",  "optimizer",
                                                                "saved",   "io",     "workspace"};

const char *agoq_mem_class_name(agoq_mem_class c) {
    return (unsigned)c < AGOQ_MEM_CLASS_COUNT ? g_class_names[c] : "?";
}

int agoq_arena_init(agoq_arena *a, void *base, size_t capacity, int ends) {
    memset(a, 0, sizeof *a);
    AGOQ_REQUIRE(ends == 1 || ends == 2, "arena: %d ends (1 or 2)", ends);
    a->ends = ends;
    a->base = base;
    a->capacity = capacity / AGOQ_ARENA_ALIGN * AGOQ_ARENA_ALIGN;
    return 0;
}

void agoq_arena_release(agoq_arena *a) {
    for (int s = 0; s < 2; s++) {
        free(a->end[s].live);
        memset(&a->end[s], 0, sizeof a->end[s]);
    }
}

/* Dry runs hand out base + off with a fake, non-NULL base (never dereferenced). */
static uint8_t *base_of(const agoq_arena *a) { return a->base ? a->base : (uint8_t *)(uintptr_t)AGOQ_ARENA_ALIGN; }

/* Which end a class lives at: transients at the bottom, everything that outlives a kernel or
 * two (weights, gradients, optimizer state, saved activations, pipeline I/O) at the top, so
 * the saved tensors of several layers and micro-batches pack together instead of pinning the
 * holes their producers' temporaries leave behind. */
static int end_of(const agoq_arena *a, int cls) { return a->ends == 2 && cls != AGOQ_MEM_WORKSPACE; }

/* Highest offset (coordinates of that end) any live block of the end reaches. */
static size_t extent(const agoq_arena_end *s) { return s->n ? s->live[s->n - 1].off + s->live[s->n - 1].bytes : 0; }

static void account(agoq_arena *a, size_t bytes, int cls, int sign) {
    if (sign > 0) {
        a->live_bytes += bytes;
        a->live_by_class[cls] += bytes;
    } else {
        a->live_bytes -= bytes;
        a->live_by_class[cls] -= bytes;
    }
    if (a->live_bytes > a->peak_live_bytes) {
        a->peak_live_bytes = a->live_bytes;
        memcpy(a->at_peak_by_class, a->live_by_class, sizeof a->live_by_class);
    }
}

/* The device address of offset off of end s (top offsets count down from the end). */
static uint8_t *addr(const agoq_arena *a, int s, size_t off, size_t bytes) {
    return s == 0 ? base_of(a) + off : base_of(a) + (a->capacity - off - bytes);
}

void *agoq_arena_alloc(agoq_arena *a, size_t bytes, agoq_mem_class cls, int role, int layer, const char *label) {
    const size_t sz = (bytes + AGOQ_ARENA_ALIGN - 1) / AGOQ_ARENA_ALIGN * AGOQ_ARENA_ALIGN;
    if (sz == 0 || (unsigned)cls >= AGOQ_MEM_CLASS_COUNT) {
        agoq_error("arena: bad allocation of %zu bytes (class %d) for %s", bytes, (int)cls, label ? label : "?");
        return NULL;
    }
    const int s = end_of(a, cls);
    agoq_arena_end *e = &a->end[s];
    size_t pos = 0, at = 0;
    for (; at < e->n; at++) {
        if (e->live[at].off - pos >= sz) break;
        pos = e->live[at].off + e->live[at].bytes;
    }
    const size_t mine = pos + sz > extent(e) ? pos + sz : extent(e), need = mine + extent(&a->end[!s]);
    if (need > a->capacity) {
        agoq_error("arena: out of memory allocating %zu bytes for %s (%s): %zu of %zu bytes live, the two ends "
                   "would span %zu",
                   bytes, label ? label : "?", agoq_mem_class_name(cls), a->live_bytes, a->capacity, need);
        return NULL;
    }
    if (e->n == e->cap) {
        size_t nc = e->cap ? 2 * e->cap : 256;
        agoq_arena_block *nb = realloc(e->live, nc * sizeof *nb);
        if (!nb) {
            agoq_error("arena: out of host memory");
            return NULL;
        }
        e->live = nb;
        e->cap = nc;
    }
    memmove(&e->live[at + 1], &e->live[at], (e->n - at) * sizeof *e->live);
    agoq_arena_block *b = &e->live[at];
    b->off = pos;
    b->bytes = sz;
    b->cls = cls;
    b->role = role;
    b->layer = layer;
    snprintf(b->label, sizeof b->label, "%s", label ? label : "");
    e->n++;
    if (need > a->high_water) a->high_water = need;
    account(a, sz, cls, +1);
    return addr(a, s, pos, sz);
}

/* The end (*s) and index of the live block at p, or -1. */
static long find(const agoq_arena *a, const void *p, int *s) {
    if (!p || (const uint8_t *)p < base_of(a)) return -1;
    const size_t at = (size_t)((const uint8_t *)p - base_of(a));
    for (*s = 0; *s < 2; (*s)++) {
        const agoq_arena_end *e = &a->end[*s];
        size_t lo = 0, hi = e->n;
        while (lo < hi) { /* first block whose address is not below p: bottom ascending, top descending */
            const size_t mid = (lo + hi) / 2, m = (size_t)(addr(a, *s, e->live[mid].off, e->live[mid].bytes) - base_of(a));
            if (*s == 0 ? m < at : m > at) lo = mid + 1;
            else hi = mid;
        }
        if (lo < e->n && (size_t)(addr(a, *s, e->live[lo].off, e->live[lo].bytes) - base_of(a)) == at) return (long)lo;
    }
    return -1;
}

int agoq_arena_free(agoq_arena *a, void *p) {
    int s;
    long i = find(a, p, &s);
    AGOQ_REQUIRE(i >= 0, "arena: free of %p, which is not a live allocation", p);
    agoq_arena_end *e = &a->end[s];
    account(a, e->live[i].bytes, e->live[i].cls, -1);
    memmove(&e->live[i], &e->live[i + 1], (e->n - (size_t)i - 1) * sizeof *e->live);
    e->n--;
    return 0;
}

int agoq_arena_retag(agoq_arena *a, void *p, agoq_mem_class cls, int role, int layer) {
    int s;
    long i = find(a, p, &s);
    AGOQ_REQUIRE(i >= 0, "arena: retag of %p, which is not a live allocation", p);
    AGOQ_REQUIRE((unsigned)cls < AGOQ_MEM_CLASS_COUNT, "arena: retag to bad class %d", (int)cls);
    agoq_arena_block *b = &a->end[s].live[i];
    a->live_by_class[b->cls] -= b->bytes;
    a->live_by_class[cls] += b->bytes;
    b->cls = cls;
    b->role = role;
    b->layer = layer;
    return 0;
}
