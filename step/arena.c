/* First-fit arena over one device allocation (arena.h). Live blocks are kept sorted by offset
 * in an array; an allocation takes the first gap that fits (gaps are implicit between live
 * blocks, so freed ranges coalesce by construction). O(live blocks) per call: a layer step
 * has a few hundred. */
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

int agoq_arena_init(agoq_arena *a, void *base, size_t capacity) {
    memset(a, 0, sizeof *a);
    a->base = base;
    a->capacity = capacity;
    return 0;
}

void agoq_arena_release(agoq_arena *a) {
    free(a->live);
    a->live = NULL;
    a->nlive = a->cap_live = 0;
}

/* Dry runs hand out base + off with a fake, non-NULL base (never dereferenced). */
static uint8_t *base_of(const agoq_arena *a) { return a->base ? a->base : (uint8_t *)(uintptr_t)AGOQ_ARENA_ALIGN; }

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

void *agoq_arena_alloc(agoq_arena *a, size_t bytes, agoq_mem_class cls, int role, int layer, const char *label) {
    const size_t sz = (bytes + AGOQ_ARENA_ALIGN - 1) / AGOQ_ARENA_ALIGN * AGOQ_ARENA_ALIGN;
    if (sz == 0 || (unsigned)cls >= AGOQ_MEM_CLASS_COUNT) {
        agoq_error("arena: bad allocation of %zu bytes (class %d) for %s", bytes, (int)cls, label ? label : "?");
        return NULL;
    }
    size_t pos = 0, at = 0;
    for (; at < a->nlive; at++) {
        if (a->live[at].off - pos >= sz) break;
        pos = a->live[at].off + a->live[at].bytes;
    }
    if (pos + sz > a->capacity) {
        agoq_error("arena: out of memory allocating %zu bytes for %s (%s): %zu of %zu bytes live, first fit at %zu",
                   bytes, label ? label : "?", agoq_mem_class_name(cls), a->live_bytes, a->capacity, pos);
        return NULL;
    }
    if (a->nlive == a->cap_live) {
        size_t nc = a->cap_live ? 2 * a->cap_live : 256;
        agoq_arena_block *nb = realloc(a->live, nc * sizeof *nb);
        if (!nb) {
            agoq_error("arena: out of host memory");
            return NULL;
        }
        a->live = nb;
        a->cap_live = nc;
    }
    memmove(&a->live[at + 1], &a->live[at], (a->nlive - at) * sizeof *a->live);
    agoq_arena_block *b = &a->live[at];
    b->off = pos;
    b->bytes = sz;
    b->cls = cls;
    b->role = role;
    b->layer = layer;
    snprintf(b->label, sizeof b->label, "%s", label ? label : "");
    a->nlive++;
    if (pos + sz > a->high_water) a->high_water = pos + sz;
    account(a, sz, cls, +1);
    return base_of(a) + pos;
}

static long find(const agoq_arena *a, const void *p) {
    if (!p || (const uint8_t *)p < base_of(a)) return -1;
    const size_t off = (size_t)((const uint8_t *)p - base_of(a));
    size_t lo = 0, hi = a->nlive;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a->live[mid].off < off) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->nlive && a->live[lo].off == off ? (long)lo : -1;
}

int agoq_arena_free(agoq_arena *a, void *p) {
    long i = find(a, p);
    AGOQ_REQUIRE(i >= 0, "arena: free of %p, which is not a live allocation", p);
    account(a, a->live[i].bytes, a->live[i].cls, -1);
    memmove(&a->live[i], &a->live[i + 1], (a->nlive - (size_t)i - 1) * sizeof *a->live);
    a->nlive--;
    return 0;
}

int agoq_arena_retag(agoq_arena *a, void *p, agoq_mem_class cls, int role, int layer) {
    long i = find(a, p);
    AGOQ_REQUIRE(i >= 0, "arena: retag of %p, which is not a live allocation", p);
    AGOQ_REQUIRE((unsigned)cls < AGOQ_MEM_CLASS_COUNT, "arena: retag to bad class %d", (int)cls);
    agoq_arena_block *b = &a->live[i];
    a->live_by_class[b->cls] -= b->bytes;
    a->live_by_class[cls] += b->bytes;
    b->cls = cls;
    b->role = role;
    b->layer = layer;
    return 0;
}
