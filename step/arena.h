/* The step engine's device memory: one allocation (one cudaMalloc, or none in a dry run) carved
 * by a first-fit allocator whose bookkeeping is plain host C, so CI tests it without a GPU.
 *
 * Every allocation carries a class (what it is for) and, for saved activations, the role and
 * the layer; the arena keeps the bytes live per class and, at each new high-water mark, a
 * snapshot of them: the breakdown AT the peak, not the sum of per-class peaks.
 * Offsets are aligned to 256 bytes (cuBLASLt / cuDNN want 16; 256 keeps every tensor on its
 * own cache lines). Freed ranges coalesce with their neighbours; fragmentation is real and the
 * high-water mark (largest end offset ever used) is what a cudaMalloc-per-tensor allocator
 * could not beat by more than the fragmentation (high_water - peak_live_bytes).
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

typedef struct {
    uint8_t *base;            /* device base; NULL in a dry run (pointers are then base + off) */
    size_t capacity;          /* bytes */
    size_t high_water;        /* largest end offset ever allocated */
    size_t live_bytes;        /* sum of live allocation sizes (aligned) */
    size_t peak_live_bytes;   /* largest live_bytes */
    size_t live_by_class[AGOQ_MEM_CLASS_COUNT];
    size_t at_peak_by_class[AGOQ_MEM_CLASS_COUNT]; /* live_by_class when peak_live_bytes was set */
    agoq_arena_block *live;   /* live blocks sorted by offset */
    size_t nlive, cap_live;
} agoq_arena;

/* base may be NULL (dry run: bookkeeping only; returned pointers are fake but distinct). */
int agoq_arena_init(agoq_arena *a, void *base, size_t capacity);
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
