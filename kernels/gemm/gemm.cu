/* Tensor-core bf16 GEMM with the quantized copy of its output fused into the epilogue and the
 * dequantization of a stored 4/8-bit A operand fused into the prologue; cuBLAS baseline.
 * Layout, shapes and exactness contract: gemm.h. Tested by tests/cuda/gemm/test_gemm_cuda.c.
 *
 * Pipeline per CTA (128x128 output tile, 8 warps of 64x32): 4 stages of cp.async loads of the
 * A and B k-tiles (32 wide) into XOR-swizzled shared memory (16-byte chunk c of row r lives at
 * chunk c ^ ((r >> 1) & 3), so the 8 rows an ldmatrix reads hit 8 different bank groups),
 * ldmatrix.x4 into mma.sync m16n8k16 fragments, fp32 accumulators in registers. With a stored
 * A, the stage holds its codes (16 or 32 bytes per row) and each thread decodes two 8-element
 * groups into one bf16 tile before the MMAs (code -> value through a shared-memory table of the
 * format, times the block scale loaded one k-tile ahead). Epilogue: accumulators -> bf16 tile in shared
 * memory -> coalesced 16-byte stores of C, and (fused) one thread per 8-element group of that tile,
 * a block = B/8 consecutive lanes, quantized by the general rowq path of the fused kernels
 * (fused_dev.cuh on quant_device.cuh: range, scale, codes), reading the same bf16 values. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/common.h"
#include "kernels/fused/fused_dev.cuh"
#include "kernels/gemm/gemm.h"

namespace {
constexpr int BM = AGOQ_GEMM_TILE_M, BN = AGOQ_GEMM_TILE_N, BK = AGOQ_GEMM_TILE_K;
constexpr int STAGES = 4, THREADS = 256, kGroupM = 8;
constexpr int TILE_BYTES = BM * BK * 2;  /* one bf16 k-tile of A or B */
constexpr int CODE_STAGE_BYTES = BM * BK; /* codes of one A k-tile at <= 8 bits */
constexpr int C_STRIDE = BN + 8;          /* bf16 per staged C row: 272 bytes, keeps 16-byte alignment */

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ void ldmatrix_x4(uint32_t *r, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void mma_bf16(float *d, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* byte offset of 16-byte chunk c (0..3) of row r in a swizzled [rows][BK] bf16 tile */
__device__ __forceinline__ int swz(int r, int c) { return r * (BK * 2) + ((c ^ ((r >> 1) & 3)) << 4); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    return (uint32_t)agoq_f32_to_bf16(lo) | (uint32_t)agoq_f32_to_bf16(hi) << 16;
}

/* Scales (and zero points) of this thread's two 8-element groups of the A k-tile at k0: group
 * g = threadIdx.x + i * THREADS is row g / 4, columns k0 + 8 (g % 4) .. + 7. Loaded one k-tile
 * ahead so their latency hides behind the MMAs. */
__device__ __forceinline__ void tile_scales(const agoq_cuda_qparams &q, agoq_dqt aq, int m0, int k0, int k, float *s,
                                            float *z) {
    const size_t nbpr = (size_t)(k / q.block);
#pragma unroll
    for (int i = 0; i < BM * 4 / THREADS; i++) {
        const int g = threadIdx.x + i * THREADS, r = g >> 2, gc = g & 3;
        const size_t b = (size_t)(m0 + r) * nbpr + (size_t)((k0 + gc * 8) / q.block);
        s[i] = agoq_dev_load_scale(aq.scales, b, q.bf16_scale);
        z[i] = q.kind == AGOQ_CODE_INT_ASYM ? agoq_dev_load_scale(aq.zeros, b, q.bf16_scale) : 0.0f;
    }
}

/* Code -> value before the scale, for every code of the format, so that a decode is one
 * shared-memory load and one multiply (plus the zero point): bit-identical to agoq_dev_decode,
 * which computes (code - 2^(b-1)) * s, code * s + m, or value[code] * s (fp4 and fp8 values
 * are their tables' entries). */
__device__ __forceinline__ void build_lut(const agoq_cuda_qparams &q, float *lut) {
    for (int c = threadIdx.x; c < (1 << q.bits); c += THREADS)
        lut[c] = q.kind == AGOQ_CODE_INT_SYM    ? (float)(c - (1 << (q.bits - 1)))
                 : q.kind == AGOQ_CODE_INT_ASYM ? (float)c
                                                : q.table->value[c];
}
/* 8 codes of 4 or 8 bits (4 / 8 bytes at src) -> values. */
__device__ __forceinline__ void lut_group(const float *lut, const uint8_t *src, int bits, bool asym, float s, float z,
                                          float *v) {
    uint32_t w[2];
    if (bits == 4) {
        w[0] = *reinterpret_cast<const uint32_t *>(src);
    } else {
        const uint2 u = *reinterpret_cast<const uint2 *>(src);
        w[0] = u.x;
        w[1] = u.y;
    }
#pragma unroll
    for (int e = 0; e < 8; e++) {
        const uint32_t code = bits == 4 ? (w[0] >> (4 * e)) & 15u : (w[e >> 2] >> (8 * (e & 3))) & 255u;
        const float d = lut[code] * s;
        v[e] = asym ? d + z : d;
    }
}

/* Stored A k-tile (codes in shared memory) -> swizzled bf16 tile, with the scales above. */
__device__ __forceinline__ void dequant_tile(const agoq_cuda_qparams &q, const float *lut, const uint8_t *codes, uint8_t *dst,
                                             const float *s, const float *z, int code_row_bytes) {
    const bool asym = q.kind == AGOQ_CODE_INT_ASYM;
#pragma unroll
    for (int i = 0; i < BM * 4 / THREADS; i++) {
        const int g = threadIdx.x + i * THREADS, r = g >> 2, gc = g & 3;
        float v[8];
        lut_group(lut, codes + r * code_row_bytes + gc * q.bits, q.bits, asym, s[i], z[i], v);
        *reinterpret_cast<uint4 *>(dst + swz(r, gc)) =
            make_uint4(pack_bf16x2(v[0], v[1]), pack_bf16x2(v[2], v[3]), pack_bf16x2(v[4], v[5]), pack_bf16x2(v[6], v[7]));
    }
}

template <bool QOUT, bool DEQA>
__global__ void __launch_bounds__(THREADS, 1) gemm_kernel(agoq_cuda_qparams q, const uint16_t *__restrict__ a, agoq_dqt aq,
                                                       const uint16_t *__restrict__ b, int n, int k,
                                                       uint16_t *__restrict__ c, agoq_dqt cq) {
    extern __shared__ __align__(128) uint8_t smem[];
    constexpr int A_STAGE = DEQA ? CODE_STAGE_BYTES : TILE_BYTES;
    uint8_t *s_a = smem, *s_b = smem + STAGES * A_STAGE, *s_adq = s_b + STAGES * TILE_BYTES;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp & 1, wn = warp >> 1;
    /* grouped rasterization: consecutive CTAs cover a column of kGroupM row tiles, so the A
     * rows and B columns of CTAs running together are reused from L2 */
    const int tiles_m = gridDim.x / (n / BN), tiles_n = n / BN, pid = blockIdx.x;
    const int first_m = pid / (kGroupM * tiles_n) * kGroupM, gsize = min(tiles_m - first_m, kGroupM);
    const int local = pid % (kGroupM * tiles_n);
    const int m0 = (first_m + local % gsize) * BM, n0 = local / gsize * BN, ktiles = k / BK;
    const int code_row_bytes = DEQA ? BK * q.bits / 8 : 0;

    auto load_stage = [&](int stage, int kt) {
        const int k0 = kt * BK;
        for (int i = tid; i < BN * 4; i += THREADS)
            cp_async16(s_b + stage * TILE_BYTES + swz(i >> 2, i & 3), b + (size_t)(n0 + (i >> 2)) * k + k0 + (i & 3) * 8);
        if constexpr (DEQA) {
            const int cpr = code_row_bytes / 16;
            const size_t row_bytes = (size_t)k * q.bits / 8;
            for (int i = tid; i < BM * cpr; i += THREADS)
                cp_async16(s_a + stage * A_STAGE + (i / cpr) * code_row_bytes + (i % cpr) * 16,
                           aq.codes + (size_t)(m0 + i / cpr) * row_bytes + (size_t)k0 * q.bits / 8 + (i % cpr) * 16);
        } else {
            for (int i = tid; i < BM * 4; i += THREADS)
                cp_async16(s_a + stage * A_STAGE + swz(i >> 2, i & 3), a + (size_t)(m0 + (i >> 2)) * k + k0 + (i & 3) * 8);
        }
    };

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles) load_stage(s, s);
        cp_async_commit();
    }
    float a_s[BM * 4 / THREADS], a_z[BM * 4 / THREADS];
    __shared__ float s_lut[DEQA ? 256 : 1];
    __shared__ agoq_smem_table s_tab;                                      /* table encoders of the epilogue */
    if (QOUT && q.enc == AGOQ_ENC_TABLE) agoq_dev_load_table(&s_tab, q.table); /* visible after the main loop's barriers */
    if (DEQA) {
        build_lut(q, s_lut); /* visible after the first __syncthreads of the main loop */
        tile_scales(q, aq, m0, 0, k, a_s, a_z);
    }
    for (int kt = 0; kt < ktiles; kt++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); /* stage kt landed for everyone; stage kt-1 is free to refill */
        if (kt + STAGES - 1 < ktiles) load_stage((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
        cp_async_commit();
        const int st = kt % STAGES;
        const uint8_t *t_a = s_a + st * A_STAGE, *t_b = s_b + st * TILE_BYTES;
        if (DEQA) {
            dequant_tile(q, s_lut, t_a, s_adq, a_s, a_z, code_row_bytes);
            if (kt + 1 < ktiles) tile_scales(q, aq, m0, (kt + 1) * BK, k, a_s, a_z);
            __syncthreads();
            t_a = s_adq;
        }
#pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            uint32_t af[4][4], bf[4][2];
#pragma unroll
            for (int i = 0; i < 4; i++) ldmatrix_x4(af[i], t_a + swz(wm * 64 + i * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
            for (int j = 0; j < 2; j++) {
                uint32_t t[4];
                ldmatrix_x4(t, t_b + swz(wn * 32 + j * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
                bf[2 * j][0] = t[0];
                bf[2 * j][1] = t[1];
                bf[2 * j + 1][0] = t[2];
                bf[2 * j + 1][1] = t[3];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) mma_bf16(acc[i][j], af[i], bf[j]);
        }
    }
    cp_async_wait<0>();
    __syncthreads();

    /* epilogue: bf16 tile in shared memory, then coalesced C stores and the fused quantization */
    uint16_t *s_c = reinterpret_cast<uint16_t *>(smem);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int r = wm * 64 + i * 16 + (lane >> 2), col = wn * 32 + j * 8 + (lane & 3) * 2;
            *reinterpret_cast<uint32_t *>(s_c + r * C_STRIDE + col) = pack_bf16x2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<uint32_t *>(s_c + (r + 8) * C_STRIDE + col) = pack_bf16x2(acc[i][j][2], acc[i][j][3]);
        }
    __syncthreads();
    for (int i = tid; i < BM * BN / 8; i += THREADS) {
        const int r = i / (BN / 8), ch = i % (BN / 8);
        *reinterpret_cast<uint4 *>(c + (size_t)(m0 + r) * n + n0 + ch * 8) =
            *reinterpret_cast<const uint4 *>(s_c + r * C_STRIDE + ch * 8);
    }
    if (QOUT) { /* a block = G consecutive lanes (G = B/8 divides 16 and 32), 8 rounds of the CTA */
        const int G = q.block >> 3;
        const size_t nbpr = (size_t)(n / q.block);
        const agoq_cuda_qtensor qt = fz_qt(cq, 0);
        for (int i = tid; i < BM * BN / 8; i += THREADS) { /* the same trip count for every thread */
            const int r = i / (BN / 8), gc = i % (BN / 8), pos = gc % G, col = n0 + 8 * gc;
            float v[8], s, m, inv;
            agoq_dev_load8(s_c + r * C_STRIDE, (size_t)(8 * gc), 8, 1, v);
            fz_params_seg(q, v, 8, G, pos, &s, &m, &inv);
            const size_t bi = (size_t)(m0 + r) * nbpr + (size_t)(col / q.block);
            agoq_dev_store_group(cq.codes, bi * (size_t)G + (size_t)pos, q.bits,
                                 fz_encode8(q, &s_tab, v, 8, inv, m, (size_t)(m0 + r) * (size_t)n + (size_t)col));
            if (pos == 0) agoq_dev_store_params(q, qt, bi, s, m);
        }
    }
}

template <bool QOUT, bool DEQA>
void launch(const agoq_cuda_qparams &q, const uint16_t *a, agoq_dqt aq, const uint16_t *b, int m, int n, int k, uint16_t *c,
            agoq_dqt cq, cudaStream_t s) {
    const int smem = STAGES * ((DEQA ? CODE_STAGE_BYTES : TILE_BYTES) + TILE_BYTES) + (DEQA ? TILE_BYTES : 0);
    cudaCheck(cudaFuncSetAttribute(gemm_kernel<QOUT, DEQA>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const unsigned grid = (unsigned)((n / BN) * (m / BM));
    gemm_kernel<QOUT, DEQA><<<grid, THREADS, smem, s>>>(q, a, aq, b, n, k, c, cq);
    cudaCheckLaunch();
}
const agoq_cuda_qparams kNoQuant = {};
} // namespace

/* Shape rules of gemm.h; eblock = epilogue block (0: none), pbits/pblock = prologue A format (0: none). */
static int check_shape(int m, int n, int k, int eblock, int pbits, int pblock) {
    AGOQ_REQUIRE(m > 0 && n > 0 && k > 0 && m % BM == 0 && n % BN == 0 && k % BK == 0,
                 "gemm: shape M=%d N=%d K=%d unsupported (need M %% %d, N %% %d, K %% %d == 0)", m, n, k, BM, BN, BK);
    AGOQ_REQUIRE(!eblock || BN % eblock == 0, "gemm: fused epilogue needs block %d to divide %d", eblock, BN);
    AGOQ_REQUIRE(!pbits || pbits == 4 || pbits == 8, "gemm: fused prologue reads 4- or 8-bit codes, not %d-bit", pbits);
    AGOQ_REQUIRE(!pbits || k % pblock == 0, "gemm: fused prologue needs K=%d to be a multiple of block %d", k, pblock);
    return 0;
}

extern "C" int agoq_gemm_check(int m, int n, int k, const agoq_qconfig *eq, const agoq_qconfig *pq) {
    if ((eq && agoq_qconfig_check(eq)) || (pq && agoq_qconfig_check(pq))) return -1;
    return check_shape(m, n, k, eq ? eq->block : 0, pq ? agoq_formats[pq->fmt].bits : 0, pq ? pq->block : 0);
}

extern "C" int agoq_gemm_cuda(const agoq_fq *q, const uint16_t *a, const uint16_t *b, int m, int n, int k, uint16_t *c,
                              agoq_dqt cq, void *stream) {
    if (check_shape(m, n, k, q ? q->p.block : 0, 0, 0)) return -1;
    if (q) launch<true, false>(q->p, a, cq, b, m, n, k, c, cq, (cudaStream_t)stream);
    else launch<false, false>(kNoQuant, a, cq, b, m, n, k, c, cq, (cudaStream_t)stream);
    return 0;
}

extern "C" int agoq_gemm_deqa_cuda(const agoq_fq *qa, agoq_dqt aq, const uint16_t *b, int m, int n, int k, uint16_t *c,
                                   void *stream) {
    AGOQ_REQUIRE(qa, "gemm deqa: no quantization config for A");
    if (check_shape(m, n, k, 0, qa->p.bits, qa->p.block)) return -1;
    launch<false, true>(qa->p, NULL, aq, b, m, n, k, c, agoq_dqt{}, (cudaStream_t)stream);
    return 0;
}

extern "C" void *agoq_cublas_create(void) {
    cublasHandle_t h;
    cublasCheck(cublasCreate(&h));
    return h;
}
extern "C" void agoq_cublas_destroy(void *h) { cublasCheck(cublasDestroy((cublasHandle_t)h)); }

extern "C" int agoq_cublas_gemm(void *handle, const uint16_t *a, const uint16_t *b, int m, int n, int k, uint16_t *c,
                                void *stream) {
    AGOQ_REQUIRE(m > 0 && n > 0 && k > 0, "cublas gemm: bad shape M=%d N=%d K=%d", m, n, k);
    cublasHandle_t h = (cublasHandle_t)handle;
    const float one = 1.0f, zero = 0.0f;
    cublasCheck(cublasSetStream(h, (cudaStream_t)stream));
    /* column-major view: C^T[N, M] = B[N, K] (stored K x N, transposed) * A^T (stored K x M) */
    cublasCheck(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_16BF, k, a, CUDA_R_16BF, k, &zero, c,
                             CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
}
