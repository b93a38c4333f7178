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
    const tile_src_t tile_src = {x, agoq_ld_nc(n * sizeof(T))};
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
    if constexpr (DEC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
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
 * Blocks: powers of two >= 32; codes: 2, 4 or 8 bits. MINB: the register bound (CTAs per SM).
 *
 * Since the seventh session the flat kernel of quant_flat.cuh is the default for every format
 * (measured ahead, docs/kernels.md "CUDA kernels"); this tile kernel runs where the flat one's config does
 * not apply, and under AGOQ_DEQ_VAR=0. The A/B variants the sixth and seventh sessions measured
 * against it (16-byte code loads through shared memory or cp.async, load and store cache
 * operators, register bounds of 3, 4 and 6 CTAs per SM, four other flat
 * shapes; results/h200/logs/s6_callA_50c205c/, s7_a16a6c6/, deq_minb_s5.log) lost to the flat
 * kernel and were removed in the eleventh session (the code is in git history before that). */
template <int DEC, int BITS, typename T, int MINB>
__global__ void __launch_bounds__(AGOQ_QUANT_THREADS, MINB) dequant_tile_kernel(agoq_cuda_qparams p, agoq_cuda_qtensor q,
                                                                           T *__restrict__ y, int log2b, size_t ntiles) {
    constexpr int E = 16 / (int)sizeof(T), U = AGOQ_TILE_U, TILE = 32 * U * E;
    constexpr bool kAsym = DEC == AGOQ_ENC_INT_ASYM;
    __shared__ agoq_smem_table tab;
    if constexpr (DEC == AGOQ_ENC_TABLE) AGOQ_STAGE_TABLE(tab, p.table);
    const int lane = (int)(threadIdx.x & 31u);
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5, nblocks = (q.n + ((size_t)1 << log2b) - 1) >> log2b;
    for (size_t tile = warp; tile < ntiles; tile += nwarps) {
        const size_t e_tile = tile * TILE;
        agoq_tile_scales<E, kAsym, U> sc;
        sc.load(p, q.scales, q.zeros, e_tile, log2b, nblocks, lane);
        uint64_t codes[U];
#pragma unroll
        for (int j = 0; j < U; j++) codes[j] = agoq_tile_load_codes<BITS, E>(q.codes, e_tile + (size_t)(j * 32 * E + lane * E));
#pragma unroll
        for (int j = 0; j < U; j++) {
            float s, m, v[E];
            sc.get(j, lane, s, m);
            agoq_tile_decode<DEC, BITS, E>(p, &tab, codes[j], s, m, v);
            T *dst = y + e_tile + (size_t)(j * 32 * E + lane * E);
            if constexpr (std::is_same<T, float>::value) __stcs((float4 *)dst, make_float4(v[0], v[1], v[2], v[3]));
            else __stcs((uint4 *)dst, agoq_f32x8_to_bf16(v));
        }
    }
}

/* The dequantizer's kernels (AGOQ_DEQ_VAR, quant_cuda.h): 0 = the tile kernel above, 1 = the
 * flat kernel of quant_flat.cuh (the seventh session's variant 21), the default. */
static const char *const deq_var_names[] = {"tile", "flat16_u2_minb16"};
#define DEQ_NVARS ((int)(sizeof deq_var_names / sizeof deq_var_names[0]))
static int g_deq_var = -2; /* -2: from AGOQ_DEQ_VAR at the first launch */

int agoq_cuda_deq_variant_count(void) { return DEQ_NVARS; }
const char *agoq_cuda_deq_variant_name(int v) { return v >= 0 && v < DEQ_NVARS ? deq_var_names[v] : NULL; }
void agoq_cuda_deq_variant_force(int v) {
    if (v >= DEQ_NVARS) agoq_die("agoq_cuda_deq_variant_force: variant %d (valid: -1 .. %d)", v, DEQ_NVARS - 1);
    g_deq_var = v < 0 ? -2 : v;
}
int agoq_cuda_deq_variant(void) {
    if (g_deq_var == -2) g_deq_var = agoq_knob_int("AGOQ_DEQ_VAR", 1, 0, DEQ_NVARS - 1);
    return g_deq_var;
}

/* Whole units through the flat kernel (quant_flat.cuh), or whole tiles through
 * dequant_tile_kernel, when the planes allow; returns the elements done (from element 0). */
template <int DEC, typename T>
static size_t dequantize_tiles(const agoq_cuda_qparams &p, const agoq_cuda_qtensor *q, T *y, void *stream) {
    if (agoq_cuda_deq_variant() == 1) { /* quant_flat.cuh, where the config allows; else the tile kernel */
        const size_t done = agoq_dequantize_flat<DEC>(p, q, y, stream);
        if (done) return done;
    }
    constexpr int E = 16 / (int)sizeof(T);
    const size_t tile = (size_t)32 * AGOQ_TILE_U * E, ntiles = q->n / tile;
    const size_t vec_code_bytes = (size_t)E * (size_t)p.bits / 8;
    const bool pow2 = (p.block & (p.block - 1)) == 0;
    if (ntiles == 0 || !pow2 || p.block < 32 || tile > 64 * (size_t)p.block || (p.bits != 2 && p.bits != 4 && p.bits != 8) ||
        ((uintptr_t)y & 15u) != 0 || ((uintptr_t)q->codes & (vec_code_bytes - 1)) != 0)
        return 0;
    const int log2b = __builtin_ctz((unsigned)p.block);
    auto launch = [&](auto dec, auto bits) {
        constexpr int D = decltype(dec)::value, B = decltype(bits)::value;
        /* The register bound: 5 CTAs per SM for the 4-bit table / FP4 decoders, none for the rest.
         * Measured on the H200 at d872aa6 (results/h200/logs/deq_minb_s5.log, two runs each,
         * 256 MiB-4 GiB): NF4 0.86-0.89 -> 0.89-0.92 of copy from fp32 and 0.82-0.88 -> 0.84-0.91
         * to bf16, FP4 to bf16 at 4 GiB 0.87 -> 0.89, the rest unchanged; int8 to bf16 slower
         * (0.93-0.95 -> 0.82-0.86) and a bound of 6 slower everywhere. */
        constexpr int kMb = B == 4 && (D == AGOQ_ENC_TABLE || D == AGOQ_ENC_FP4) ? 5 : 1;
        constexpr auto kk = dequant_tile_kernel<D, B, T, kMb>;
        kk<<<agoq_grid_units<kk>(ntiles, false), AGOQ_QUANT_THREADS, 0, (cudaStream_t)stream>>>(p, *q, y, log2b, ntiles);
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
