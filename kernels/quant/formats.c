/* The traits table and the value tables of the table-coded formats; see formats.h. */
#include "kernels/quant/formats.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/quant/quant_math.h"

#define INT_SYM(k) \
    [AGOQ_FMT_INT##k] = {"int" #k, #k "-bit symmetric integer, absmax scale", AGOQ_CODE_INT_SYM, k, 128, (float)((1 << ((k) - 1)) - 1), AGOQ_ENC_INT_SYM, 0}
#define INT_ASYM(k) \
    [AGOQ_FMT_INT##k##_ASYM] = {"int" #k "_asym", #k "-bit asymmetric integer, min/max scale + zero point", AGOQ_CODE_INT_ASYM, k, 128, (float)((1 << (k)) - 1), AGOQ_ENC_INT_ASYM, 0}

const agoq_format_traits agoq_formats[AGOQ_FMT_COUNT] = {
    [AGOQ_FMT_FP4_E2M1] = {"fp4_e2m1", "FP4 E2M1 (+-{0,.5,1,1.5,2,3,4,6}), absmax scale: AGoQ activations", AGOQ_CODE_TABLE, 4, 128, 6.0f, AGOQ_ENC_FP4, 0},
    INT_SYM(2), INT_SYM(3), INT_SYM(4), INT_SYM(5), INT_SYM(6), INT_SYM(7), INT_SYM(8),
    INT_ASYM(2), INT_ASYM(3), INT_ASYM(4), INT_ASYM(5), INT_ASYM(6), INT_ASYM(7), INT_ASYM(8),
    [AGOQ_FMT_NF4] = {"nf4", "4-bit normal-float code book (QLoRA), absmax scale", AGOQ_CODE_TABLE, 4, 64, 1.0f, AGOQ_ENC_TABLE, 0},
    [AGOQ_FMT_DYN8] = {"dyn8", "signed dynamic 8-bit code map (bitsandbytes-style), absmax scale", AGOQ_CODE_TABLE, 8, 256, 1.0f, AGOQ_ENC_TABLE, 0},
    [AGOQ_FMT_FP8_E4M3] = {"fp8_e4m3", "OCP FP8 E4M3 (max 448), per-block scale: COAT / gradients", AGOQ_CODE_TABLE, 8, 128, 448.0f, AGOQ_ENC_FP8_E4M3, 3},
    [AGOQ_FMT_FP8_E5M2] = {"fp8_e5m2", "OCP FP8 E5M2 (max 57344), per-block scale", AGOQ_CODE_TABLE, 8, 128, 57344.0f, AGOQ_ENC_FP8_E5M2, 2},
};

/* QLoRA's NF4 levels (quantiles of N(0,1) normalised to [-1, 1]). */
static const float nf4_levels[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
    0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

static agoq_code_table g_tables[AGOQ_FMT_COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Sort the finite, distinct values (dropping -0) and derive midpoints and the zero code. */
static void finish_table(agoq_code_table *t) {
    int n = 0;
    for (int c = 0; c < t->ncodes; c++) {
        float v = t->value[c];
        if (!isfinite(v) || (v == 0.0f && signbit(v))) continue;
        t->sorted[n++] = v;
    }
    qsort(t->sorted, (size_t)n, sizeof(float), cmp_float);
    t->nsorted = n;
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < t->ncodes; c++)
            if (t->value[c] == t->sorted[i] && !(t->value[c] == 0.0f && signbit(t->value[c]))) {
                t->sorted_code[i] = (uint8_t)c;
                break;
            }
        if (t->sorted[i] == 0.0f) t->zero_code = t->sorted_code[i];
    }
    for (int i = 0; i + 1 < n; i++) t->mid[i] = 0.5f * (t->sorted[i] + t->sorted[i + 1]);
}

/* bitsandbytes create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each
 * decade 10^(i-6), i = 0..6, the means of 2^i + 1 points linearly spaced in [0.1, 1]; plus
 * 0 and 1. Computed in double, stored as float, sorted: code = position. */
static void build_dyn8(agoq_code_table *t) {
    float v[256];
    int n = 0;
    for (int i = 0; i < 7; i++) {
        int k = (1 << i) + 1;
        for (int j = 0; j + 1 < k; j++) {
            double a = 0.1 + 0.9 * j / (k - 1), b = 0.1 + 0.9 * (j + 1) / (k - 1);
            double m = 0.5 * (a + b) * pow(10.0, i - 6);
            v[n++] = (float)m;
            v[n++] = (float)-m;
        }
    }
    v[n++] = 0.0f;
    v[n++] = 1.0f;
    qsort(v, (size_t)n, sizeof(float), cmp_float);
    t->ncodes = 256;
    for (int c = 0; c < 256; c++) t->value[c] = v[c];
}

static void build_tables(void) {
    agoq_code_table *t = &g_tables[AGOQ_FMT_FP4_E2M1];
    t->ncodes = 16;
    for (int c = 0; c < 16; c++) t->value[c] = agoq_fp4_decode((uint32_t)c);
    finish_table(t);

    t = &g_tables[AGOQ_FMT_NF4];
    t->ncodes = 16;
    memcpy(t->value, nf4_levels, sizeof nf4_levels);
    finish_table(t);

    build_dyn8(&g_tables[AGOQ_FMT_DYN8]);
    finish_table(&g_tables[AGOQ_FMT_DYN8]);

    for (int e5 = 0; e5 < 2; e5++) {
        t = &g_tables[e5 ? AGOQ_FMT_FP8_E5M2 : AGOQ_FMT_FP8_E4M3];
        t->ncodes = 256;
        for (int c = 0; c < 256; c++) t->value[c] = agoq_fp8_decode((uint32_t)c, e5);
        finish_table(t);
    }
}

const agoq_code_table *agoq_table(agoq_format f) {
    if ((int)f < 0 || f >= AGOQ_FMT_COUNT || agoq_formats[f].kind != AGOQ_CODE_TABLE) return NULL;
    pthread_once(&g_once, build_tables);
    return &g_tables[f];
}

int agoq_format_by_name(const char *name) {
    for (int f = 0; f < AGOQ_FMT_COUNT; f++)
        if (name && strcmp(name, agoq_formats[f].name) == 0) return f;
    return -1;
}

const char *agoq_format_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t len = 0;
        for (int f = 0; f < AGOQ_FMT_COUNT; f++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", f ? ", " : "", agoq_formats[f].name);
    }
    return buf;
}

agoq_qconfig agoq_qconfig_default(agoq_format f) {
    agoq_qconfig c = {f, agoq_formats[f].default_block, AGOQ_SCALE_FP32, AGOQ_ROUND_NEAREST, 0};
    return c;
}

int agoq_qconfig_check(const agoq_qconfig *c) {
    AGOQ_REQUIRE((int)c->fmt >= 0 && c->fmt < AGOQ_FMT_COUNT, "format id %d is out of range", (int)c->fmt);
    AGOQ_REQUIRE(c->block >= 8 && c->block <= 65536 && c->block % 8 == 0,
                 "block size %d: must be a multiple of 8 in [8, 65536]", c->block);
    AGOQ_REQUIRE(c->scale == AGOQ_SCALE_FP32 || c->scale == AGOQ_SCALE_BF16, "scale type %d unknown", (int)c->scale);
    AGOQ_REQUIRE(c->rounding == AGOQ_ROUND_NEAREST || c->rounding == AGOQ_ROUND_STOCHASTIC,
                 "rounding %d unknown", (int)c->rounding);
    return 0;
}

int agoq_qtensor_alloc(agoq_qtensor *q, const agoq_qconfig *c, size_t n) {
    memset(q, 0, sizeof *q);
    q->n = n;
    q->codes = calloc(agoq_codes_bytes(c, n) + 1, 1);
    q->scales = calloc(agoq_scales_bytes(c, n) + 1, 1);
    q->zeros = agoq_has_zeros(c) ? calloc(agoq_zeros_bytes(c, n) + 1, 1) : NULL;
    if (!q->codes || !q->scales || (agoq_has_zeros(c) && !q->zeros)) {
        agoq_qtensor_free(q);
        agoq_error("out of host memory for a quantized tensor of %zu elements", n);
        return -1;
    }
    return 0;
}

void agoq_qtensor_free(agoq_qtensor *q) {
    free(q->codes);
    free(q->scales);
    free(q->zeros);
    memset(q, 0, sizeof *q);
}

static float load_scale(const agoq_qconfig *c, const uint8_t *plane, size_t b) {
    if (c->scale == AGOQ_SCALE_BF16) {
        uint16_t h;
        memcpy(&h, plane + 2 * b, 2);
        return agoq_bf16_to_f32(h);
    }
    float f;
    memcpy(&f, plane + 4 * b, 4);
    return f;
}

float agoq_qtensor_scale(const agoq_qconfig *c, const agoq_qtensor *q, size_t block) {
    return load_scale(c, q->scales, block);
}

float agoq_qtensor_zero(const agoq_qconfig *c, const agoq_qtensor *q, size_t block) {
    return q->zeros ? load_scale(c, q->zeros, block) : 0.0f;
}
