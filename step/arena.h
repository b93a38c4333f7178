/* The step engine's device memory: one allocation (one cudaMalloc, or none in a dry run) carved
 * by a two-ended first-fit allocator whose bookkeeping is plain host C, so CI tests it without
 * a GPU. Transients (WORKSPACE) are placed from the bottom, everything longer-lived (weights,
 * gradients, optimizer state, saved activations, pipeline I/O) from the top; each end is first
 * fit in its own coordinates, so placement does not depend on the capacity and a dry run sizes
 * the real one exactly.
 *
 * Every allocation carries a class (what it is for) and, for saved activations, the role and
 * the layer; the arena keeps the bytes live per class and, at each new high-water mark, a
 * snapshot of them: the breakdown AT the peak, not the sum of per-class peaks.
 * Offsets are aligned to 256 bytes (cuBLASLt / cuDNN want 16; 256 keeps every tensor on its
 * own cache lines). Freed ranges coalesce with their neighbours; fragmentation is real and the
 * high-water mark (the largest span of the two ends together) is what a cudaMalloc-per-tensor
 * allocator could not beat by more than the fragmentation (high_water - peak_live_bytes).
 * A block keeps its end when it is retagged (a temporary kept as a saved tensor stays at the
 * bottom: the engine allocates such buffers with their final class where it knows it).
 * Sizes are bytes (size_t). Errors (out of arena, double free, unknown pointer) print one line
 * naming the allocation's label and return NULL / -1. */
#ifndef AGOQ_ARENA_H
#define AGOQ_ARENA_H
#include <stddef.h>
#include <stdint.h>

#include "models/inventory.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AGOQ_MEM_WEIGHTS,   /* bf16 working weights */
    AGOQ_MEM_GRADS,     /* main gradients (fp32) or their 8-bit storage */
    AGOQ_MEM_OPTIMIZER, /* fp32 master weights + moments (or quantized moments) */
    AGOQ_MEM_SAVED,     /* activations saved for backward (role + layer given) */
    AGOQ_MEM_IO,        /* the stack's input, output and output gradient (pipeline boundary) */
    AGOQ_MEM_WORKSPACE, /* everything transient: GEMM/attention workspaces, temporaries */
    AGOQ_MEM_CLASS_COUNT
} agoq_mem_class;

#define AGOQ_ARENA_ALIGN 256

typedef struct {
    size_t off, bytes;
    int cls, role, layer; /* role/layer: -1 unless SAVED */
    char label[40];
} agoq_arena_block;

/* One end's live blocks, sorted by offset from that end (off of a top block counts down from
 * the arena's end: its address is base + capacity - off - bytes). */
typedef struct {
    agoq_arena_block *live;
    size_t n, cap;
} agoq_arena_end;

typedef struct {
    uint8_t *base;            /* device base; NULL in a dry run (pointers are then base + off) */
    size_t capacity;          /* bytes, a multiple of AGOQ_ARENA_ALIGN */
    size_t high_water;        /* largest span ever used: bottom extent + top extent */
    size_t live_bytes;        /* sum of live allocation sizes (aligned) */
    size_t peak_live_bytes;   /* largest live_bytes */
    size_t live_by_class[AGOQ_MEM_CLASS_COUNT];
    size_t at_peak_by_class[AGOQ_MEM_CLASS_COUNT]; /* live_by_class when peak_live_bytes was set */
    int ends;                 /* 1 or 2 (agoq_arena_init) */
    agoq_arena_end end[2];    /* 0: bottom (workspace; every class with ends = 1), 1: top (the rest) */
} agoq_arena;

/* base may be NULL (dry run: bookkeeping only; returned pointers are fake but distinct); the
 * capacity is rounded down to AGOQ_ARENA_ALIGN. ends: 2 places the long-lived classes from the
 * top as above, 1 places every class first fit from the bottom (one end). Neither is better for
 * every allocation sequence: the step engine's dry run sizes both and keeps the smaller. */
int agoq_arena_init(agoq_arena *a, void *base, size_t capacity, int ends);
void agoq_arena_release(agoq_arena *a); /* frees the bookkeeping, not base */
void *agoq_arena_alloc(agoq_arena *a, size_t bytes, agoq_mem_class cls, int role, int layer, const char *label);
int agoq_arena_free(agoq_arena *a, void *p);
/* Changes the class/role/layer of a live allocation (a layer's output that becomes the next
 * layer's saved input, say); the per-class and per-role counts move with it. 0 or -1. */
int agoq_arena_retag(agoq_arena *a, void *p, agoq_mem_class cls, int role, int layer);
const char *agoq_mem_class_name(agoq_mem_class c); /* "weights", "grads", ... */

#ifdef __cplusplus
}
#endif
#endif
