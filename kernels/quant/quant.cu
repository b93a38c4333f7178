/* CUDA block quantize / dequantize of every format (quant_cuda.h), bit-exact with quant_ref.c.
 *
 * Kernels (quant_device.cuh): blocks of <= 256 elements use agoq_quant_seg_kernel (one thread
 * per 8 elements, one warp segment per block); larger blocks agoq_quant_warp_kernel. Both are
 * templates over the encoder, so the per-element path has no format dispatch. Dequantize is
 * one thread per group for every block size. Grids are capped at 8 CTAs of 256 threads per SM
 * (full occupancy at <= 32 registers) with grid-stride loops, so table formats stage their
 * table in shared memory once per CTA, not once per 2048 elements.
 *
 * Also here: the per-device value tables, the qparams, device qtensor helpers and the small
 * runtime wrappers C callers use. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "core/check.h"
#include "core/common.h"
#include "core/knob.h"
#include "kernels/quant/quant_cuda.h"
#include "kernels/quant/quant_device.cuh"
#include "kernels/quant/quant_flat.cuh"
#include "kernels/quant/quant_launch.cuh"
#include "kernels/quant/quant_ldst.cuh"
#include "kernels/quant/quant_tile.cuh"

/* ---- per-device tables and qparams ---- */
#define MAX_DEVICES 64
static const agoq_dev_table *g_tables[MAX_DEVICES][AGOQ_FMT_COUNT];
static agoq_tab_lut g_lut_grid[AGOQ_FMT_COUNT]; /* each table's LUT grid (the same on every device; e unused) */
static float g_grid_k[AGOQ_FMT_COUNT]; /* each table's uniform grid (tab_lut.h; 0: none) */
static_assert(offsetof(agoq_dev_table, lut.e) % 8 == 0, "LUT entries are read as 8-byte words");
static_assert(offsetof(agoq_dev_table, grid.e) % 8 == 0, "grid entries are read as 8-byte words");
/* tab_gk took padding: the kernels' parameter layout (and so the fused kernels' code) is unchanged */
static_assert(sizeof(agoq_cuda_qparams) == 80, "agoq_cuda_qparams grew");
static int g_sm_count[MAX_DEVICES];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static int current_device(void) {
    int dev = 0;
    cudaCheck(cudaGetDevice(&dev));
    if (dev >= MAX_DEVICES) agoq_die("CUDA device %d: at most %d devices are supported", dev, MAX_DEVICES);
    return dev;
}

int agoq_cuda_sm_count(void) {
    int dev = current_device();
    if (!g_sm_count[dev]) {
        int n = 0;
        cudaCheck(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
        g_sm_count[dev] = n;
    }
    return g_sm_count[dev];
}

/* The launch options (AGOQ_GRID, the tile encoders' knobs and defaults): quant_opts.cu. */

/* The device table of f (built on first use) and its LUT grid. */
static const agoq_dev_table *device_table(agoq_format f, agoq_cuda_qparams *p) {
    const int dev = current_device();
    pthread_mutex_lock(&g_lock);
    if (!g_tables[dev][f]) {
        const agoq_code_table *h = agoq_table(f);
        agoq_dev_table t;
        memset(&t, 0, sizeof t);
        t.nsorted = h->nsorted;
        t.ncodes = h->ncodes;
        memcpy(t.sorted, h->sorted, sizeof t.sorted);
        memcpy(t.mid, h->mid, sizeof t.mid);
        memcpy(t.value, h->value, sizeof t.value);
        memcpy(t.sorted_code, h->sorted_code, sizeof t.sorted_code);
        if (agoq_tab_lut_build(&t.lut, h->sorted, h->mid, h->sorted_code, h->nsorted))
            agoq_die("format %s: its table needs more than %d LUT entries (tab_lut.h)", agoq_formats[f].name,
                     AGOQ_TAB_LUT_MAX);
        agoq_tab_grid_build(&t.grid, h->sorted, h->mid, h->sorted_code, h->nsorted); /* k = 0 when none */
        agoq_dev_table *d = NULL;
        cudaCheck(cudaMalloc((void **)&d, sizeof *d));
        cudaCheck(cudaMemcpy(d, &t, sizeof t, cudaMemcpyHostToDevice));
        g_tables[dev][f] = d;
        memcpy(&g_lut_grid[f], &t.lut, offsetof(agoq_tab_lut, e));
        g_grid_k[f] = t.grid.k;
    }
    const agoq_dev_table *d = g_tables[dev][f];
    const agoq_tab_lut *g = &g_lut_grid[f];
    p->tab_shift = g->shift;
    p->tab_base = g->base;
    p->tab_nb = g->nb;
    p->tab_ident = g->ident;
    p->tab_lo = g->lo;
    p->tab_hi = g->hi;
    p->tab_gk = g_grid_k[f];
    pthread_mutex_unlock(&g_lock);
    return d;
}

int agoq_cuda_qparams_make(const agoq_qconfig *c, agoq_cuda_qparams *p) {
    if (!c || agoq_qconfig_check(c)) return -1;
    const agoq_format_traits *t = &agoq_formats[c->fmt];
    memset(p, 0, sizeof *p);
    p->fmt = c->fmt;
    p->kind = t->kind;
    p->bits = t->bits;
    p->block = c->block;
    p->bf16_scale = c->scale == AGOQ_SCALE_BF16;
    p->stochastic = c->rounding == AGOQ_ROUND_STOCHASTIC;
    p->qmax = t->qmax;
    p->seed = c->seed;
    p->enc = t->enc;
    /* fp4 decodes through its 16-entry value table in shared memory (one load, no branches);
     * fp8 through the hardware conversion; the arithmetic encoders are round-to-nearest only */
    p->dec = p->enc == AGOQ_ENC_FP4 ? AGOQ_ENC_TABLE : p->enc;
    if (p->stochastic && t->kind == AGOQ_CODE_TABLE) p->enc = AGOQ_ENC_TABLE;
    if (t->kind == AGOQ_CODE_TABLE) p->table = device_table(c->fmt, p);
    return 0;
}

int agoq_cuda_check_qtensor(const char *fn, const agoq_qconfig *c, const agoq_cuda_qtensor *q) {
    AGOQ_REQUIRE(q != NULL, "%s: qtensor is NULL", fn);
    if (q->n == 0) return 0;
    const uintptr_t a = (uintptr_t)agoq_scale_elem_bytes(c) - 1u;
    AGOQ_REQUIRE(q->codes && q->scales, "%s: qtensor of %zu elements has a NULL codes or scales plane", fn, q->n);
    AGOQ_REQUIRE(!agoq_has_zeros(c) || q->zeros, "%s: format %s needs a zeros plane", fn, agoq_formats[c->fmt].name);
    AGOQ_REQUIRE(((uintptr_t)q->scales & a) == 0 && ((uintptr_t)q->zeros & a) == 0,
                 "%s: scale/zero planes must be aligned to %zu bytes", fn, agoq_scale_elem_bytes(c));
    return 0;
}

/* AGOQ_Q5_OLD=1: the 8-bit gradient kernels before issue 15's q5 changes (quant_launch.cuh) */
int agoq_q5_old(void) {
    static int v = -1;
    if (v < 0) {
        v = agoq_knob_int("AGOQ_Q5_OLD", 0, 0, 1);
    }
    return v;
}

/* ---- quantize ---- */
template <typename T>
static int quantize(const char *fn, const agoq_qconfig *c, const T *x, size_t n, agoq_cuda_qtensor *q, void *stream) {
    agoq_cuda_qparams p;
    if (agoq_cuda_qparams_make(c, &p)) return -1;
    AGOQ_REQUIRE(q != NULL, "%s: qtensor is NULL", fn);
    q->n = n;
    if (agoq_cuda_check_qtensor(fn, c, q)) return -1;
    AGOQ_REQUIRE(n == 0 || x, "%s: input is NULL", fn);
    if (n == 0) return 0;
    agoq_src_input<T> src = {x, ((uintptr_t)x & 15u) == 0};
    using tile_src_t = typename std::conditional<std::is_same<T, float>::value, agoq_tile_src_f32, agoq_tile_src_bf16>::type;
    const tile_src_t tile_src = {x};
    agoq_dispatch_enc(p.enc, [&](auto enc) {
        agoq_launch_quant<decltype(enc)::value>(p, src, *q, stream, src.vec ? &tile_src : nullptr);
    });
    return 0;
}

int agoq_cuda_quantize_f32(const agoq_qconfig *c, const float *x, size_t n, agoq_cuda_qtensor *q, void *stream) {
    return quantize("agoq_cuda_quantize_f32", c, x, n, q, stream);
}
int agoq_cuda_quantize_bf16(const agoq_qconfig *c, const uint16_t *x, size_t n, agoq_cuda_qtensor *q, void *stream) {
    return quantize("agoq_cuda_quantize_bf16", c, x, n, q, stream);
}

/* ---- dequantize: one thread per group of 8, any block size ----
 * A warp decodes U x 32 consecutive groups per iteration, all loads first. fp32 output: the
 * lanes of a pair swap half groups so that each 16-byte store instruction writes whole 32-byte
 * sectors (a lane's own 32 bytes would take two half-sector stores: twice the L2 requests). */
#define DEQUANT_UNROLL 4

/* Lanes 2k (group A) and 2k+1 (group B, the next 8 elements): store 1 writes A[0..3] (even)
 * and A[4..7] (odd), store 2 B[0..3] (even) and B[4..7] (odd): each store one whole sector. */
__device__ __forceinline__ void store_pair_f32(float *y, size_t e0, const float v[8]) {
    const int odd = (int)(threadIdx.x & 1u);
    float r[4];
#pragma unroll
    for (int k = 0; k < 4; k++) r[k] = __shfl_xor_sync(0xffffffffu, odd ? v[k] : v[4 + k], 1);
    if (odd) {
        *(float4 *)(y + e0 - 4) = make_float4(r[0], r[1], r[2], r[3]);
        *(float4 *)(y + e0 + 4) = make_float4(v[4], v[5], v[6], v[7]);
    } else {
        *(float4 *)(y + e0) = make_float4(v[0], v[1], v[2], v[3]);
        *(float4 *)(y + e0 + 8) = make_float4(r[0], r[1], r[2], r[3]);
    }
}

template <int DEC, typename T>
__global__ void __launch_bounds__(AGOQ_QUANT_THREADS) dequant_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                                      T *__restrict__ y, int vec, int gshift, size_t g0) {
    __shared__ agoq_smem_table tab;
    if constexpr (DEC == AGOQ_ENC_TABLE) {
        agoq_dev_load_table(&tab, p.table);
        __syncthreads();
    }
    const size_t n = q.n, ngroups = (n + 7) / 8, G = (size_t)(p.block >> 3);
    const size_t lane = threadIdx.x & 31u, warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t tile = 32 * DEQUANT_UNROLL, stride = (((size_t)gridDim.x * blockDim.x) >> 5) * tile;
    for (size_t base = g0 + warp * tile; base < ngroups; base += stride) {
        float v[DEQUANT_UNROLL][8];
#pragma unroll
        for (int u = 0; u < DEQUANT_UNROLL; u++) {
            const size_t g = base + (size_t)u * 32 + lane;
            if (g < ngroups)
                agoq_dev_decode_group<DEC>(p, &tab, q.codes, q.scales, q.zeros, g, gshift >= 0 ? g >> gshift : g / G, v[u]);
        }
#pragma unroll
        for (int u = 0; u < DEQUANT_UNROLL; u++) {
            const size_t g0 = base + (size_t)u * 32, g = g0 + lane;
            if constexpr (std::is_same<T, float>::value) {
                if (vec && (g0 + 32) * 8 <= n) { /* the whole warp's 32 groups are full: uniform */
                    store_pair_f32(y, g * 8, v[u]);
                    continue;
                }
            }
            if (g < ngroups) agoq_dev_store8(y, g * 8, agoq_dev_group_valid(g * 8, n), vec, v[u]);
        }
    }
}

/* ---- dequantize, whole tiles: the layout of quant_tile.cuh ----
 * A warp writes U vectors of 32 lanes x 16 bytes (4 fp32 or 8 bf16 elements per lane), vector
 * j of lane l at byte j*512 + l*16 of the tile: every store instruction of the warp is one
 * contiguous 512-byte run (streaming stores: the output is not read back soon), and so is every
 * code load; the block scales come through agoq_tile_scales (one load per lane and tile).
 * Blocks: powers of two >= 32; codes: 2, 4 or 8 bits.
 *
 * Variants for issue 15's A/B runs (AGOQ_DEQ_VAR, the table deq_vars below; 0 = the default
 * kernel), all bit-identical in output (only the memory accesses differ):
 *  CM (codes): 0 = per-vector loads of the codes of a lane's vector (kB = E * BITS / 8 = 1-8
 *     bytes a lane: int8 to fp32 4 bytes, 128 bytes a warp instruction). 1 = the tile's
 *     TB = 256 kB code bytes as 16-byte loads (lane l loads bytes p*512 + 16 l, p < TB/512:
 *     every warp load one contiguous 512-byte run), stored to the warp's slice of shared memory
 *     and read back per vector (4- or 8-byte reads, consecutive lanes: no bank conflicts); the
 *     stores keep the default mapping (whole 32-byte sectors, 16 bytes a lane). 2 = as 1, the
 *     16-byte pieces copied by cp.async.cg (global -> shared without registers, L1 bypassed).
 *     Not built: remapping the decode so lane l owns elements [16 l, 16 l + 16) of a chunk (its
 *     four 16-byte fp32 stores at a stride of 64 bytes leave every 32-byte sector of each
 *     store instruction half written: two L2 requests per sector), and redistributing the
 *     16-byte pieces by shuffles (one shuffle per vector after a rotation, but ~7 selects per
 *     vector on both sides for the dynamic word and vector indices, against one LDS).
 *  LD, ST: the cache operators of the code / scale loads and of the output stores
 *     (quant_ldst.cuh). Code loads from shared memory (CM 1) are plain; LD applies to the
 *     16-byte global loads.
 * MINB: the register bound (CTAs per SM; AGOQ_DEQ_MINB for variant 0, the MB column of DEQ_VARS). */
template <int DEC, int BITS, typename T, int MINB = 1, int CM = 0, int LD = AGOQ_LD_PLAIN, int ST = AGOQ_ST_CS>
__global__ void __launch_bounds__(AGOQ_QUANT_THREADS, MINB) dequant_tile_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                                           T *__restrict__ y, int log2b, size_t ntiles) {
    constexpr int E = 16 / (int)sizeof(T), U = AGOQ_TILE_U, TILE = 32 * U * E;
    constexpr int kB = E * BITS / 8, TB = 32 * U * kB, NP = (TB + 511) / 512; /* code bytes: vector, tile; 512-byte runs */
    constexpr bool kAsym = DEC == AGOQ_ENC_INT_ASYM;
    __shared__ agoq_smem_table tab;
    if constexpr (DEC == AGOQ_ENC_TABLE) {
        agoq_dev_load_table(&tab, p.table);
        __syncthreads();
    }
    const int lane = (int)(threadIdx.x & 31u);
    uint4 *stage = nullptr; /* CM 1, 2: this warp's NP x 32 16-byte pieces */
    if constexpr (CM != 0) {
        __shared__ uint4 stage_all[AGOQ_QUANT_THREADS / 32 * NP * 32];
        stage = stage_all + (threadIdx.x >> 5) * NP * 32;
    }
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5, nblocks = (q.n + ((size_t)1 << log2b) - 1) >> log2b;
    for (size_t tile = warp; tile < ntiles; tile += nwarps) {
        const size_t e_tile = tile * TILE;
        if constexpr (CM == 2) {
            const uint4 *src = (const uint4 *)(q.codes + e_tile * BITS / 8);
            __syncwarp(); /* the previous tile's reads of stage are done */
#pragma unroll
            for (int k = 0; k < NP; k++)
                if (TB >= 512 || lane * 16 < TB) {
                    const uint32_t sa = (uint32_t)__cvta_generic_to_shared(stage + k * 32 + lane);
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(src + k * 32 + lane) : "memory");
                }
        }
        agoq_tile_scales<E, kAsym, U, LD> sc;
        sc.load(p, q.scales, q.zeros, e_tile, log2b, nblocks, lane);
        uint64_t codes[U];
        if constexpr (CM == 0) {
#pragma unroll
            for (int j = 0; j < U; j++)
                codes[j] = agoq_tile_load_codes<BITS, E, LD>(q.codes, e_tile + (size_t)(j * 32 * E + lane * E));
        } else {
            if constexpr (CM == 1) {
                const uint4 *src = (const uint4 *)(q.codes + e_tile * BITS / 8);
                uint4 w[NP];
#pragma unroll
                for (int k = 0; k < NP; k++)
                    if (TB >= 512 || lane * 16 < TB) w[k] = agoq_ld<LD>(src + k * 32 + lane);
                __syncwarp(); /* the previous tile's reads of stage are done */
#pragma unroll
                for (int k = 0; k < NP; k++)
                    if (TB >= 512 || lane * 16 < TB) stage[k * 32 + lane] = w[k];
            } else {
                asm volatile("cp.async.wait_all;" ::: "memory");
            }
            __syncwarp();
#pragma unroll
            for (int j = 0; j < U; j++) codes[j] = agoq_tile_load_codes<BITS, E>((const uint8_t *)stage, (size_t)(j * 32 * E + lane * E));
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            float s, m, v[E];
            sc.get(j, lane, s, m);
            agoq_tile_decode<DEC, BITS, E>(p, &tab, codes[j], s, m, v);
            T *dst = y + e_tile + (size_t)(j * 32 * E + lane * E);
            if constexpr (ST == AGOQ_ST_CS) { /* the default kernel's statements (its PTX unchanged) */
                if constexpr (std::is_same<T, float>::value) __stcs((float4 *)dst, make_float4(v[0], v[1], v[2], v[3]));
                else __stcs((uint4 *)dst, agoq_f32x8_to_bf16(v));
            } else if constexpr (std::is_same<T, float>::value) {
                agoq_st16<ST>(dst, make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                                              __float_as_uint(v[3])));
            } else {
                agoq_st16<ST>(dst, agoq_f32x8_to_bf16(v));
            }
        }
    }
}

/* The variants of AGOQ_DEQ_VAR: X(index, CM, LD, ST, MB, name); see dequant_tile_kernel. MB:
 * a register bound (CTAs per SM) where it is above the default's (5 for the 4-bit table / FP4
 * decoders, else 1). ptxas -v at the variants' commit, no bound (fp32 / bf16 out): int8 64 / 112
 * registers, int8_asym 85 / 128, fp8 63 / 114, dyn8 96 / 128, int4 62 / 107: the bf16-output
 * kernels keep 2 CTAs of 256 threads per SM. MB 3 / 4 (<= 80 / 64 registers) are untried. */
#define DEQ_VARS(X)                                                             \
    X(0, 0, AGOQ_LD_PLAIN, AGOQ_ST_CS, 0, "default")                            \
    X(1, 1, AGOQ_LD_PLAIN, AGOQ_ST_CS, 0, "A_codes16_smem")                     \
    X(2, 2, AGOQ_LD_PLAIN, AGOQ_ST_CS, 0, "A_codes16_cpasync")                  \
    X(3, 0, AGOQ_LD_NC_NA, AGOQ_ST_CS, 0, "B_ld_nc_noalloc")                    \
    X(4, 0, AGOQ_LD_CS, AGOQ_ST_CS, 0, "B_ld_cs")                               \
    X(5, 0, AGOQ_LD_LU, AGOQ_ST_CS, 0, "B_ld_lu")                               \
    X(6, 0, AGOQ_LD_NC_256, AGOQ_ST_CS, 0, "B_ld_nc_noalloc_L2_256B")           \
    X(7, 0, AGOQ_LD_PLAIN, AGOQ_ST_PLAIN, 0, "B_st_plain")                      \
    X(8, 0, AGOQ_LD_PLAIN, AGOQ_ST_NA, 0, "B_st_noalloc")                       \
    X(9, 0, AGOQ_LD_PLAIN, AGOQ_ST_CG, 0, "B_st_cg")                            \
    X(10, 1, AGOQ_LD_NC_NA, AGOQ_ST_CS, 0, "AB_codes16_smem_ld_nc_noalloc")     \
    X(11, 1, AGOQ_LD_NC_256, AGOQ_ST_NA, 0, "AB_codes16_smem_ld_L2_256B_st_noalloc") \
    X(12, 0, AGOQ_LD_PLAIN, AGOQ_ST_CS, 3, "C_minb3")                           \
    X(13, 0, AGOQ_LD_PLAIN, AGOQ_ST_CS, 4, "C_minb4")                           \
    X(14, 1, AGOQ_LD_PLAIN, AGOQ_ST_CS, 3, "AC_codes16_smem_minb3")             \
    X(15, 1, AGOQ_LD_PLAIN, AGOQ_ST_CS, 4, "AC_codes16_smem_minb4")             \
    X(16, 0, AGOQ_LD_PLAIN, AGOQ_ST_PLAIN, 3, "BC_st_plain_minb3")                \
    X(17, 1, AGOQ_LD_PLAIN, AGOQ_ST_PLAIN, 4, "ABC_codes16_smem_st_plain_minb4")
#define DEQ_VAR_NAME(I, CM, LD, ST, MB, NAME) NAME,
#define DEQ_FLAT_NAME(I, THREADS, U, P, MINB, ST, NAME) NAME,
static const char *const deq_tile_var_names[] = {DEQ_VARS(DEQ_VAR_NAME)};
static const char *const deq_var_names[] = {DEQ_VARS(DEQ_VAR_NAME) AGOQ_DEQ_FLAT_VARS(DEQ_FLAT_NAME)};
#undef DEQ_VAR_NAME
#undef DEQ_FLAT_NAME
#define DEQ_NVARS ((int)(sizeof deq_var_names / sizeof deq_var_names[0]))
static_assert(sizeof deq_tile_var_names / sizeof deq_tile_var_names[0] == AGOQ_DEQ_FLAT_FIRST,
              "the flat variants (quant_flat.cuh) follow DEQ_VARS");
static int g_deq_var = -2; /* -2: from AGOQ_DEQ_VAR at the first launch; -1: the defaults below */

/* The variant each (format, output) runs when AGOQ_DEQ_VAR is not set: {format, fp32 out, bf16
 * out}, one row per format with variants (the rest: 0). Set from the A/B runs (issue 15): at
 * a16a6c6 (results/h200/logs/s7_a16a6c6/deq_ab.tsv, 256 MiB / 1 / 4 GiB, two rounds) the flat
 * variant 21 was ahead of 0 on the mean over the sizes for every pair but int4 and lost more than
 * 0.01 of copy at no size of those (int4: to bf16 -0.013 at 1 GiB; to fp32 -0.094 at 4 GiB, the
 * bimodal 4 GiB mode): 21 everywhere but int4. The ninth session's A/B with the benchmark
 * arena (87f7ea8, results/h200/logs/s9_callE_quant/, two rounds) has int4 ahead with 21 too: to
 * bf16 0.88-0.89 / 0.92 / 0.93 -> 0.92 / 0.94 / 0.95, to fp32 0.91-0.94 -> 0.92-0.94. So 21
 * everywhere. */
static const struct {
    int fmt, var_f32, var_bf16;
} deq_defaults[] = {
    {AGOQ_FMT_FP4_E2M1, 21, 21}, {AGOQ_FMT_INT4, 21, 21},     {AGOQ_FMT_INT4_ASYM, 21, 21},
    {AGOQ_FMT_NF4, 21, 21},      {AGOQ_FMT_INT8, 21, 21},     {AGOQ_FMT_INT8_ASYM, 21, 21},
    {AGOQ_FMT_FP8_E4M3, 21, 21}, {AGOQ_FMT_FP8_E5M2, 21, 21}, {AGOQ_FMT_DYN8, 21, 21},
};
static int deq_default_variant(int fmt, bool bf16_out) {
    for (size_t i = 0; i < sizeof deq_defaults / sizeof deq_defaults[0]; i++)
        if (deq_defaults[i].fmt == fmt) return bf16_out ? deq_defaults[i].var_bf16 : deq_defaults[i].var_f32;
    return 0;
}

int agoq_cuda_deq_variant_count(void) { return DEQ_NVARS; }
const char *agoq_cuda_deq_variant_name(int v) { return v >= 0 && v < DEQ_NVARS ? deq_var_names[v] : NULL; }
void agoq_cuda_deq_variant_force(int v) {
    if (v >= DEQ_NVARS) agoq_die("agoq_cuda_deq_variant_force: variant %d (valid: -1 .. %d)", v, DEQ_NVARS - 1);
    g_deq_var = v < 0 ? -2 : v;
}
int agoq_cuda_deq_variant(void) {
    if (g_deq_var == -2) {
        g_deq_var = agoq_knob_int("AGOQ_DEQ_VAR", -1, 0, DEQ_NVARS - 1); /* DEQ_VARS and quant_flat.cuh */
    }
    return g_deq_var;
}

/* Whole tiles through dequant_tile_kernel, or whole units through a flat variant
 * (quant_flat.cuh), when the planes allow; returns the elements done (from element 0). */
template <int DEC, typename T>
static size_t dequantize_tiles(const agoq_cuda_qparams &p, const agoq_cuda_qtensor *q, T *y, void *stream) {
    int var = agoq_cuda_deq_variant();
    if (var < 0) var = deq_default_variant(p.fmt, std::is_same<T, uint16_t>::value);
    if (var >= AGOQ_DEQ_FLAT_FIRST) { /* quant_flat.cuh, where the config allows; else the default tile kernel */
        const size_t done = agoq_dequantize_flat<DEC>(p, q, y, var, stream);
        if (done) return done;
        var = 0;
    }
    constexpr int E = 16 / (int)sizeof(T);
    const size_t tile = (size_t)32 * AGOQ_TILE_U * E, ntiles = q->n / tile;
    const size_t vec_code_bytes = (size_t)E * (size_t)p.bits / 8;
    const bool pow2 = (p.block & (p.block - 1)) == 0;
    if (ntiles == 0 || !pow2 || p.block < 32 || tile > 64 * (size_t)p.block || (p.bits != 2 && p.bits != 4 && p.bits != 8) ||
        ((uintptr_t)y & 15u) != 0 || ((uintptr_t)q->codes & (vec_code_bytes - 1)) != 0)
        return 0;
    const int log2b = __builtin_ctz((unsigned)p.block);
    /* the variant's; those with 16-byte code loads (CM != 0) need a 16-byte aligned codes plane
     * and run the default kernel otherwise */
    auto launch = [&](auto dec, auto bits) {
        constexpr int D = decltype(dec)::value, B = decltype(bits)::value;
        /* The register bound: 5 CTAs per SM for the 4-bit table / FP4 decoders, none for the rest.
         * Measured on the H200 at d872aa6 (results/h200/logs/deq_minb_s5.log, two runs each,
         * 256 MiB-4 GiB): NF4 0.86-0.89 -> 0.89-0.92 of copy from fp32 and 0.82-0.88 -> 0.84-0.91
         * to bf16, FP4 to bf16 at 4 GiB 0.87 -> 0.89, the rest unchanged; int8 to bf16 slower
         * (0.93-0.95 -> 0.82-0.86) and a bound of 6 slower everywhere. AGOQ_DEQ_MINB=1|5|6
         * overrides it for every decoder (1: no bound) for A/B runs (variant 0 only). */
        constexpr int kMb = B == 4 && (D == AGOQ_ENC_TABLE || D == AGOQ_ENC_FP4) ? 5 : 1;
        static int env_mb = -1;
        if (env_mb < 0) env_mb = agoq_knob_int("AGOQ_DEQ_MINB", 0, 1, 16);
        const int mb = env_mb > 0 ? env_mb : kMb;
#define DEQ_GO(K)                                                                                                  \
    do {                                                                                                           \
        constexpr auto kk = K;                                                                                     \
        kk<<<agoq_grid_units<kk>(ntiles, false), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(p, *q, y, log2b, ntiles); \
    } while (0)
        /* variants only for the (decoder, width) pairs a format has */
        constexpr bool kHasVars = (D == AGOQ_ENC_INT_SYM || D == AGOQ_ENC_INT_ASYM) ||
                                  ((D == AGOQ_ENC_FP8_E4M3 || D == AGOQ_ENC_FP8_E5M2) && B == 8) ||
                                  (D == AGOQ_ENC_FP4 && B == 4) || (D == AGOQ_ENC_TABLE && B != 2);
        if constexpr (kHasVars) {
            const bool aligned16 = ((uintptr_t)q->codes & 15u) == 0;
#define DEQ_VAR_CASE(I, CM, LD, ST, MB, NAME)                                     \
    case I:                                                                       \
        if (CM == 0 || aligned16) {                                               \
            DEQ_GO((dequant_tile_kernel<D, B, T, (MB > kMb ? MB : kMb), CM, LD, ST>)); \
            return;                                                               \
        }                                                                         \
        break;
            if (var != 0) switch (var) { DEQ_VARS(DEQ_VAR_CASE) default: break; }
#undef DEQ_VAR_CASE
        }
        if (mb == 5) DEQ_GO((dequant_tile_kernel<D, B, T, 5>));
        else if (mb == 6) DEQ_GO((dequant_tile_kernel<D, B, T, 6>));
        else DEQ_GO((dequant_tile_kernel<D, B, T, 1>));
#undef DEQ_GO
    };
    /* fp4 decodes by byte permutes here (its group kernel reads the shared-memory table) */
    if constexpr (DEC == AGOQ_ENC_TABLE)
        if (agoq_formats[p.fmt].enc == AGOQ_ENC_FP4) {
            launch(agoq_enc_t<AGOQ_ENC_FP4>(), agoq_enc_t<4>());
            cudaCheckLaunch();
            return ntiles * tile;
        }
    if (p.bits == 2) launch(agoq_enc_t<DEC>(), agoq_enc_t<2>());
    else if (p.bits == 4) launch(agoq_enc_t<DEC>(), agoq_enc_t<4>());
    else launch(agoq_enc_t<DEC>(), agoq_enc_t<8>());
    cudaCheckLaunch();
    return ntiles * tile;
}

template <typename T>
static int dequantize(const char *fn, const agoq_qconfig *c, const agoq_cuda_qtensor *q, T *y, void *stream) {
    agoq_cuda_qparams p;
    if (agoq_cuda_qparams_make(c, &p) || agoq_cuda_check_qtensor(fn, c, q)) return -1;
    AGOQ_REQUIRE(q->n == 0 || y, "%s: output is NULL", fn);
    if (q->n == 0) return 0;
    const int G = p.block >> 3, gshift = (G & (G - 1)) == 0 ? __builtin_ctz((unsigned)G) : -1;
    const size_t ngroups = (q->n + 7) / 8;
    const int vec = ((uintptr_t)y & 15u) == 0;
    agoq_dispatch_enc(p.dec, [&](auto dec) {
        constexpr int D = decltype(dec)::value;
        const size_t g0 = dequantize_tiles<D>(p, q, y, stream) / 8;
        if (g0 == ngroups) return;
        dequant_kernel<D, T><<<agoq_grid_for((ngroups - g0 + DEQUANT_UNROLL - 1) / DEQUANT_UNROLL), AGOQ_QUANT_THREADS, 0,
                               (cudaStream_t)stream>>>(p, *q, y, vec, gshift, g0);
    });
    cudaCheckLaunch();
    return 0;
}

int agoq_cuda_dequantize_f32(const agoq_qconfig *c, const agoq_cuda_qtensor *q, float *y, void *stream) {
    return dequantize("agoq_cuda_dequantize_f32", c, q, y, stream);
}
int agoq_cuda_dequantize_bf16(const agoq_qconfig *c, const agoq_cuda_qtensor *q, uint16_t *y, void *stream) {
    return dequantize("agoq_cuda_dequantize_bf16", c, q, y, stream);
}

/* ---- device qtensors ---- */
int agoq_cuda_qtensor_alloc(agoq_cuda_qtensor *q, const agoq_qconfig *c, size_t n) {
    if (agoq_qconfig_check(c)) return -1;
    memset(q, 0, sizeof *q);
    q->n = n;
    /* +8 bytes: word access to the last group never leaves the allocation */
    q->codes = (uint8_t *)agoq_cuda_malloc(agoq_codes_bytes(c, n) + 8);
    q->scales = (uint8_t *)agoq_cuda_malloc(agoq_scales_bytes(c, n) + 8);
    if (agoq_has_zeros(c)) q->zeros = (uint8_t *)agoq_cuda_malloc(agoq_zeros_bytes(c, n) + 8);
    cudaCheck(cudaMemset(q->codes, 0, agoq_codes_bytes(c, n) + 8));
    cudaCheck(cudaMemset(q->scales, 0, agoq_scales_bytes(c, n) + 8));
    if (q->zeros) cudaCheck(cudaMemset(q->zeros, 0, agoq_zeros_bytes(c, n) + 8));
    return 0;
}

void agoq_cuda_qtensor_free(agoq_cuda_qtensor *q) {
    if (!q) return;
    agoq_cuda_free(q->codes);
    agoq_cuda_free(q->scales);
    agoq_cuda_free(q->zeros);
    memset(q, 0, sizeof *q);
}

int agoq_cuda_qtensor_download(const agoq_qconfig *c, const agoq_cuda_qtensor *d, agoq_qtensor *h) {
    AGOQ_REQUIRE(d && h && d->n == h->n, "agoq_cuda_qtensor_download: sizes differ (device %zu, host %zu)",
                 d ? d->n : 0, h ? h->n : 0);
    agoq_cuda_d2h(h->codes, d->codes, agoq_codes_bytes(c, d->n));
    agoq_cuda_d2h(h->scales, d->scales, agoq_scales_bytes(c, d->n));
    if (agoq_has_zeros(c)) agoq_cuda_d2h(h->zeros, d->zeros, agoq_zeros_bytes(c, d->n));
    return 0;
}

int agoq_cuda_qtensor_upload(const agoq_qconfig *c, const agoq_qtensor *h, agoq_cuda_qtensor *d) {
    AGOQ_REQUIRE(d && h && d->n == h->n, "agoq_cuda_qtensor_upload: sizes differ (host %zu, device %zu)",
                 h ? h->n : 0, d ? d->n : 0);
    agoq_cuda_h2d(d->codes, h->codes, agoq_codes_bytes(c, h->n));
    agoq_cuda_h2d(d->scales, h->scales, agoq_scales_bytes(c, h->n));
    if (agoq_has_zeros(c)) agoq_cuda_h2d(d->zeros, h->zeros, agoq_zeros_bytes(c, h->n));
    return 0;
}

/* ---- runtime helpers (device memory, copies, the benchmark arena, fills): quant_rt.cu ---- */
