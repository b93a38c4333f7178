/* C-callable CUDA quantization kernels: block quantize / dequantize of every format of
 * formats.h, bit-exact with quant_ref.c (the 8-bit gradient kernels: kernels/grad8/grad8_cuda.h).
 *
 * Layout: a device qtensor has the same three planes as agoq_qtensor (formats.h): codes (a
 * dense bit stream, element i at bits [i*bits, (i+1)*bits), the last block zero-padded),
 * scales (fp32 or bf16 per block) and zeros (asymmetric formats only). All pointers are device
 * pointers; `stream` is a cudaStream_t passed as void * (NULL = the legacy default stream) so
 * that C files need no CUDA headers. Calls are asynchronous on the stream unless they say not.
 *
 * Errors: a bad argument (config, NULL pointer, size mismatch) prints one line and returns -1
 * before anything is launched; a failing CUDA call exits through cudaCheck (core/check.h).
 *
 * Speed notes: the fast kernels use one thread per 8 consecutive elements ("group") and one
 * warp segment per block, for blocks of up to 256 elements; larger blocks use a warp-per-block
 * kernel. fp32 input needs 16-byte, bf16 8-byte alignment for vector loads (else scalar loads).
 * Implemented in kernels/quant/quant.cu (CUDA=1 builds only). */
#ifndef AGOQ_QUANT_CUDA_H
#define AGOQ_QUANT_CUDA_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/quant/formats.h"
#include "kernels/quant/tab_lut.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device encoder kinds (agoq_enc_kind) are in formats.h: each format names its own. */

/* A format's value table in device memory (copied from agoq_table(), the round-to-nearest LUT
 * of tab_lut.h built on the host by quant.cu); kernels stage it in shared memory
 * (agoq_dev_load_table in quant_device.cuh). */
typedef struct agoq_dev_table {
    int nsorted;              /* distinct finite values */
    int ncodes;               /* 2^bits */
    float sorted[256];        /* ascending */
    float mid[256];           /* mid[i] = 0.5f * (sorted[i] + sorted[i+1]) */
    float value[256];         /* decoded value by code */
    uint8_t sorted_code[256]; /* code of sorted[i] */
    agoq_tab_lut lut;         /* round to nearest by one lookup (tab_lut.h) */
    agoq_tab_grid grid;       /* the uniform grid of tab_lut.h (grid.k = 0: none; NF4 has one) */
} agoq_dev_table;

/* Everything a kernel needs to know about a qconfig, passed by value to kernels. */
typedef struct {
    int fmt;        /* agoq_format */
    int kind;       /* agoq_code_kind */
    int enc;        /* agoq_enc_kind used to encode (depends on the rounding) */
    int dec;        /* agoq_enc_kind used to decode */
    int bits;       /* 2..8 */
    int block;      /* elements per block, multiple of 8 */
    int bf16_scale; /* scales (and zeros) stored as bf16 */
    int stochastic; /* stochastic rounding: draw of element i is agoq_u01(seed, i) */
    float qmax;     /* agoq_formats[fmt].qmax */
    float tab_gk;   /* table->grid.k (tab_lut.h; 0: no grid); in what was padding before seed */
    uint64_t seed;
    const agoq_dev_table *table; /* device pointer; table formats only, else NULL */
    int tab_shift, tab_base, tab_nb, tab_ident; /* table->lut's grid, code = position flag and */
    float tab_lo, tab_hi;                       /* clamp (tab_lut.h), here so kernels read them from
                                                   the parameter bank; 0 for other formats */
} agoq_cuda_qparams;

/* Device planes of a quantized tensor of n elements (same layout as agoq_qtensor). */
typedef struct {
    uint8_t *codes;
    uint8_t *scales;
    uint8_t *zeros; /* NULL unless agoq_has_zeros */
    size_t n;
} agoq_cuda_qtensor;

/* Checks c and fills p for the current device (device tables are built once per device and
 * live until exit). 0 or -1. */
int agoq_cuda_qparams_make(const agoq_qconfig *c, agoq_cuda_qparams *p);

/* Device qtensor planes (zeroed, synchronous) and their release. */
int agoq_cuda_qtensor_alloc(agoq_cuda_qtensor *q, const agoq_qconfig *c, size_t n);
void agoq_cuda_qtensor_free(agoq_cuda_qtensor *q);
/* Synchronous copies between a host agoq_qtensor and a device one of the same n. */
int agoq_cuda_qtensor_download(const agoq_qconfig *c, const agoq_cuda_qtensor *d, agoq_qtensor *h);
int agoq_cuda_qtensor_upload(const agoq_qconfig *c, const agoq_qtensor *h, agoq_cuda_qtensor *d);

/* q->n = n elements of x (device fp32 / bf16) -> q. Writes every code byte of the n's blocks
 * (tail padding included), every scale and zero. */
int agoq_cuda_quantize_f32(const agoq_qconfig *c, const float *x, size_t n, agoq_cuda_qtensor *q, void *stream);
int agoq_cuda_quantize_bf16(const agoq_qconfig *c, const uint16_t *x, size_t n, agoq_cuda_qtensor *q, void *stream);
/* q -> y[0..q->n) as fp32 / bf16 (round to nearest even). */
int agoq_cuda_dequantize_f32(const agoq_qconfig *c, const agoq_cuda_qtensor *q, float *y, void *stream);
int agoq_cuda_dequantize_bf16(const agoq_qconfig *c, const agoq_cuda_qtensor *q, uint16_t *y, void *stream);

/* Small runtime helpers for C callers (tests, benchmarks): failures exit via cudaCheck. */
/* The grid of the tile and fused kernels (kernels/quant/quant_launch.cuh, agoq_grid_units): 1 =
 * resident grids whose warps loop over the tiles (as AGOQ_GRID=resident), 0 = one tile per warp
 * (the default), -1 = from AGOQ_GRID again. For tests and A/B runs; not thread-safe. */
void agoq_cuda_grid_force(int mode);
/* The dequantizer's kernel (kernels/quant/quant.cu; both bit-identical in output): 0 = the
 * tile kernel, 1 = the flat kernel of quant_flat.cuh (the default; where its config does not
 * apply the tile kernel runs). Read from AGOQ_DEQ_VAR (0 or 1; a bad value exits) at the first
 * dequantize unless forced; force(-1) rereads it. count: the kernels; name: "tile",
 * "flat16_u2_minb16" (NULL out of range). For tests and A/B runs; not thread-safe. */
int agoq_cuda_deq_variant(void);
void agoq_cuda_deq_variant_force(int v);
int agoq_cuda_deq_variant_count(void);
const char *agoq_cuda_deq_variant_name(int v);

/* The tile quantizers' encoder options (issue 15), a mask of AGOQ_TILE_OPT_*, each bit-exact
 * (tests/quant/test_quant_math.c, test_quant_q7.c, test_quant_q8.c). The template parameter
 * of the tile kernels. ASYM, GRID, PACK and Q7 (q6 / q7: faster or equal on every format and size
 * in their H200 A/Bs, results/h200/logs/s6_callB_11ce4b2/, s7_a16a6c6/q7/) are fixed by the
 * launcher (quant_launch.cuh) since the eleventh session, which removed the knobs that turned
 * them off (AGOQ_Q6_ASYM, AGOQ_Q6_NF4, AGOQ_Q6_PACK, AGOQ_Q7). Q8, PF and LUT32 are chosen at run
 * time (agoq_cuda_tile_opts_enc). They apply to the quantizers (quant.cu) and the 8-bit gradient
 * kernels (grad8.cu); the fused kernels take PACK | Q7 themselves. agoq_cuda_tile_opts_force: a
 * mask of the run-time options for tests, -1 = from the environment again (not thread-safe). */
#define AGOQ_TILE_OPT_ASYM 1 /* quant_tile.cuh: int asym codes by the magic add */
#define AGOQ_TILE_OPT_GRID 2 /* quant_tile.cuh: table codes by the uniform grid (tables that have one) */
#define AGOQ_TILE_OPT_PACK 4 /* quant_tile.cuh: bf16 input tiles kept packed until the encoder */
/* issue 15 (q7), fixed since the A/B at a16a6c6 (bf16 FP4 0.80 -> 0.87 of copy at 4 GiB; it acts
 * with packed tiles only): the packed
 * tiles' absmax by max.NaN.xorsign.abs.bf16x2 (one instruction a word instead of two) and
 * FP4 codes by agoq_q7_fp4_pack_bf16 (quant_q7.h) */
#define AGOQ_TILE_OPT_Q7 8
/* issue 15 (q8), AGOQ_Q8=0|1 forces it off / on; unset: on for INT4-asym, INT8-asym and dyn8
 * (agoq_cuda_tile_opts_enc; packed tiles only): table formats
 * whose code is the position (dyn8; NF4 without its grid) encode through the CTA's LUT at
 * 32-bit shared addresses with the sign select and without the upper clamp (quant_q8.h), and
 * the asymmetric integer tile kernels are register-bounded to 3 CTAs an SM */
#define AGOQ_TILE_OPT_Q8 16
/* issue 15 (q8), AGOQ_Q8_PF=0|1 forces it off / on; unset: on for dyn8, NF4 and FP4 (packed tiles only): resident grids
 * whose warps load their next tile before encoding the current one */
#define AGOQ_TILE_OPT_PF 32
/* issue 15 (s10), AGOQ_Q8_LUT32=0|1 forces it off / on; unset: on for dyn8 since the twelfth
 * session's A/B (quant_opts.cu): the q8 table encoder of the packed bf16 tiles reads the CTA's
 * LUT in 32-bit entries (tab_lut32.h; quant_q8.cuh: one 32-bit shared load a code instead of an
 * 8-byte one, for the MIO-bound dyn8 quantizer) */
#define AGOQ_TILE_OPT_LUT32 64
int agoq_cuda_tile_opts(void);
/* agoq_cuda_tile_opts with q8 / pf / LUT32 added where their knob is unset and the encoder
 * (AGOQ_ENC_*) and code width take them by default (quant_opts.cu: INT4- / INT8-asym q8, dyn8
 * q8 + pf + LUT32, NF4 and FP4 pf) */
int agoq_cuda_tile_opts_enc(int enc, int bits);
void agoq_cuda_tile_opts_force(int mask);
/* AGOQ_G8_LUT32=0|1 (twenty-second session, default 1; read at every launch, the tests switch it): the
 * 8-bit gradient kernels' dyn8 encoder (accumulation, reduce core; grad8.cu's sources with the
 * replicated value table) through q8's 32-bit LUT (Q8 | LUT32: agoq_tab_lut32_sum, one add a
 * code) instead of the 8-byte one. The twelfth session's form of it (AGOQ_G8=4, a compare and a
 * select a code) lost and was removed. */
int agoq_cuda_g8_lut32(void);

void *agoq_cuda_malloc(size_t bytes);                     /* NULL only for bytes == 0 */
void agoq_cuda_free(void *p);
/* The benchmark arena (quant_rt.cu says why): while open, agoq_cuda_malloc hands out pieces of
 * one allocation (2 MiB-aligned from 2 MiB, else 256-byte aligned) and agoq_cuda_free of a
 * piece does nothing; a request that does not fit goes to cudaMalloc and is counted. open:
 * bytes (at most the free memory less reserve, whole 2 MiB pages); 0, or -1 when that leaves
 * nothing or cudaMalloc fails (the arena stays closed). reset: every piece free again (the
 * caller has dropped its pointers) and the fallback count cleared. */
int agoq_cuda_arena_open(size_t bytes, size_t reserve);
size_t agoq_cuda_arena_bytes(void); /* 0 when closed */
void agoq_cuda_arena_reset(void);
size_t agoq_cuda_arena_fallbacks(void); /* cudaMalloc calls since the last reset or open */
void agoq_cuda_arena_close(void);
void agoq_cuda_h2d(void *dst, const void *src, size_t bytes); /* synchronous */
void agoq_cuda_d2h(void *dst, const void *src, size_t bytes); /* synchronous */
void agoq_cuda_memset(void *p, int byte, size_t bytes, void *stream);
void agoq_cuda_sync(void *stream);                         /* cudaStreamSynchronize */
int agoq_cuda_sm_count(void);                              /* SMs of the current device (cached) */
/* Benchmark inputs on the device: approximately N(0, 1) from a counter hash (not bit-exact
 * with rng.h; the tests upload host data instead). */
void agoq_cuda_fill_normal_f32(float *x, size_t n, uint64_t seed, void *stream);
void agoq_cuda_fill_normal_bf16(uint16_t *x, size_t n, uint64_t seed, void *stream);
/* A bf16 device buffer of n elements, filled as above when seed != 0 (benchmarks). */
static inline uint16_t *agoq_cuda_random_bf16(size_t n, uint64_t seed, void *stream) {
    uint16_t *p = (uint16_t *)agoq_cuda_malloc(n * 2);
    if (seed) agoq_cuda_fill_normal_bf16(p, n, seed, stream);
    return p;
}

#ifdef __cplusplus
}
#endif
#endif
