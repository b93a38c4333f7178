/* Every block-wise quantization format of agoq-bench, shared by the C references, the CUDA
 * kernels, the sweeps and the memory model. Adding a format is one row of agoq_formats[]
 * (formats.c), plus a value table for table-coded formats.
 *
 * A quantized tensor of n elements, block size B (a multiple of 8), is three planes:
 *   codes  : ceil(n/B) blocks of B*bits/8 bytes each; the last block is padded with code 0
 *   scales : one per block, fp32 or bf16 (agoq_scale_type); little-endian
 *   zeros  : asymmetric integer formats only: the block minimum m, same dtype as scales
 * Bit order inside a block: element i occupies bits [i*bits, (i+1)*bits), least significant
 * bit first (4-bit: element 2j is the low nibble of byte j). See quant_math.h for the math.
 *
 * Scale rule (agoq_block_scale: floored at FLT_MIN for a nonzero block, rounded to the scale
 * dtype; quantizers use inv = 1/s):
 *   int<k>        s = absmax / (2^(k-1) - 1)      q = clamp(rint(x*inv)), code = q + 2^(k-1)
 *   int<k>_asym   s = (max - min) / (2^k - 1)     q = clamp(rint((x - m)*inv)), m = min
 *   table formats s = absmax / qmax (largest |value| of the table)  code = nearest table entry
 * absmax, min and max are taken over finite elements only; NaN quantizes to the code of 0 in
 * the scaled domain (0 for symmetric and table formats, the block minimum for asymmetric ones)
 * and +-Inf saturate to the extreme code. dyn8 (bitsandbytes' map) is not symmetric: its most
 * negative value is -0.99297, so -absmax loses 0.7%. An all-zero block gets s = 0 and every code is the zero code. */
#ifndef AGOQ_FORMATS_H
#define AGOQ_FORMATS_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AGOQ_CODE_INT_SYM,  /* offset-binary integer, symmetric around 0 */
    AGOQ_CODE_INT_ASYM, /* unsigned integer with a per-block zero point (the minimum) */
    AGOQ_CODE_TABLE,    /* index into a value table (FP4, NF4, dynamic map, FP8) */
} agoq_code_kind;

/* How a value of a format (agoq_format_traits.enc) is encoded / decoded on the device. The fast arithmetic encoders (fp4, fp8) are
 * equal to the table search of the reference (tests/quant/test_quant_math.c proves it) and are used
 * for round-to-nearest; stochastic rounding of fp4/fp8 goes through the table. */
typedef enum {
    AGOQ_ENC_INT_SYM,
    AGOQ_ENC_INT_ASYM,
    AGOQ_ENC_FP4,      /* agoq_fp4_encode_rne / agoq_fp4_decode */
    AGOQ_ENC_FP8_E4M3, /* agoq_fp8_encode_rne / agoq_fp8_decode */
    AGOQ_ENC_FP8_E5M2,
    AGOQ_ENC_TABLE,    /* agoq_table_pos over the format's sorted table / value[code] */
    AGOQ_ENC_COUNT
} agoq_enc_kind;

typedef enum {
    AGOQ_FMT_FP4_E2M1,
    AGOQ_FMT_INT2, AGOQ_FMT_INT3, AGOQ_FMT_INT4, AGOQ_FMT_INT5, AGOQ_FMT_INT6, AGOQ_FMT_INT7, AGOQ_FMT_INT8,
    AGOQ_FMT_INT2_ASYM, AGOQ_FMT_INT3_ASYM, AGOQ_FMT_INT4_ASYM, AGOQ_FMT_INT5_ASYM,
    AGOQ_FMT_INT6_ASYM, AGOQ_FMT_INT7_ASYM, AGOQ_FMT_INT8_ASYM,
    AGOQ_FMT_NF4,
    AGOQ_FMT_DYN8,
    AGOQ_FMT_FP8_E4M3,
    AGOQ_FMT_FP8_E5M2,
    AGOQ_FMT_COUNT
} agoq_format;

typedef struct {
    const char *name;     /* CLI / JSON label, e.g. "fp4_e2m1", "int5", "int4_asym" */
    const char *desc;     /* one line for `agoq list` */
    agoq_code_kind kind;
    int bits;             /* bits per code: 2..8 */
    int default_block;    /* elements per block when none is given */
    float qmax;           /* largest code magnitude: 2^(k-1)-1, 2^k-1 (asym), or max |table value| */
    agoq_enc_kind enc;    /* the CUDA quantizers' encoder (round-to-nearest; stochastic table
                             formats go through AGOQ_ENC_TABLE) and fp4's byte-permute decoder */
    int fp8_mbits;        /* OCP FP8 formats: mantissa bits (E4M3 3, E5M2 2; the bitalloc error
                             proxy, the fp8lm wire dtype); 0 for every other format */
} agoq_format_traits;

/* 1 for the OCP FP8 formats (fp8lm's wire formats). */
#define AGOQ_FMT_IS_FP8(f) (agoq_formats[(f)].fp8_mbits > 0)

extern const agoq_format_traits agoq_formats[AGOQ_FMT_COUNT];

/* Value table of a table-coded format, built once (thread-safe). */
typedef struct {
    int ncodes;               /* 2^bits */
    float value[256];         /* decoded value by code (NaN/Inf for codes never produced) */
    int nsorted;              /* distinct finite values */
    float sorted[256];        /* ascending, one zero */
    uint8_t sorted_code[256]; /* code of sorted[i] */
    float mid[256];           /* mid[i] = 0.5f * (sorted[i] + sorted[i+1]), i < nsorted-1 */
    uint8_t zero_code;
} agoq_code_table;

const agoq_code_table *agoq_table(agoq_format f); /* NULL for integer formats */
/* Lookup by name; returns -1 (and no message) when unknown. */
int agoq_format_by_name(const char *name);
/* Comma-separated list of all names, for error messages. */
const char *agoq_format_names(void);

typedef enum { AGOQ_SCALE_FP32, AGOQ_SCALE_BF16 } agoq_scale_type;
typedef enum { AGOQ_ROUND_NEAREST, AGOQ_ROUND_STOCHASTIC } agoq_rounding;

typedef struct {
    agoq_format fmt;
    int block;                /* elements per block: multiple of 8 in [8, 65536] */
    agoq_scale_type scale;
    agoq_rounding rounding;
    uint64_t seed;            /* stochastic rounding only: draw i is agoq_u01(seed, i) */
} agoq_qconfig;

/* Default config of a format: its default block, fp32 scale, round-to-nearest-even. */
agoq_qconfig agoq_qconfig_default(agoq_format f);
/* 0 if valid, else prints which field is wrong and returns -1. */
int agoq_qconfig_check(const agoq_qconfig *c);

static inline size_t agoq_nblocks(const agoq_qconfig *c, size_t n) { return (n + (size_t)c->block - 1) / (size_t)c->block; }
static inline size_t agoq_block_code_bytes(const agoq_qconfig *c) { return (size_t)c->block * (size_t)agoq_formats[c->fmt].bits / 8; }
static inline size_t agoq_scale_elem_bytes(const agoq_qconfig *c) { return c->scale == AGOQ_SCALE_BF16 ? 2 : 4; }
static inline int agoq_has_zeros(const agoq_qconfig *c) { return agoq_formats[c->fmt].kind == AGOQ_CODE_INT_ASYM; }
static inline size_t agoq_codes_bytes(const agoq_qconfig *c, size_t n) { return agoq_nblocks(c, n) * agoq_block_code_bytes(c); }
static inline size_t agoq_scales_bytes(const agoq_qconfig *c, size_t n) { return agoq_nblocks(c, n) * agoq_scale_elem_bytes(c); }
static inline size_t agoq_zeros_bytes(const agoq_qconfig *c, size_t n) { return agoq_has_zeros(c) ? agoq_scales_bytes(c, n) : 0; }
static inline size_t agoq_qtensor_bytes(const agoq_qconfig *c, size_t n) {
    return agoq_codes_bytes(c, n) + agoq_scales_bytes(c, n) + agoq_zeros_bytes(c, n);
}
/* Storage bits per element including scales, zero points and tail padding. */
static inline double agoq_bits_per_element(const agoq_qconfig *c, size_t n) {
    return n ? 8.0 * (double)agoq_qtensor_bytes(c, n) / (double)n : 0.0;
}

/* Host view of a quantized tensor's three planes (device code uses the same layout). */
typedef struct {
    uint8_t *codes;
    uint8_t *scales;
    uint8_t *zeros; /* NULL unless agoq_has_zeros */
    size_t n;
} agoq_qtensor;

int agoq_qtensor_alloc(agoq_qtensor *q, const agoq_qconfig *c, size_t n); /* zeroed; 0 or -1 */
void agoq_qtensor_free(agoq_qtensor *q);
float agoq_qtensor_scale(const agoq_qconfig *c, const agoq_qtensor *q, size_t block);
float agoq_qtensor_zero(const agoq_qconfig *c, const agoq_qtensor *q, size_t block);

#ifdef __cplusplus
}
#endif
#endif
