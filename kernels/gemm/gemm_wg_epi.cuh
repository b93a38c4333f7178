/* Epilogue warps of the Hopper GEMM (gemm_wg.cu; included there, inside its namespace): the
 * residual into the staging tile, C out of it, and the quantized copy of C; and store_direct, C
 * stored by the consumers themselves (AGOQ_WG_DEQ_SMEM=5).
 * Host knobs (gemm_wg.cu: epi_rows, gen_rows, bulk, with the measurements; read on every call) select
 * variants for the 3-stage, 256-wide bf16 kernels with A and B K-major (the forward GEMMs with a
 * residual or the fast FP4 copy); every other kernel takes ER = 1 and no bulk copies:
 *   AGOQ_WG_EPI_ROWS=4 (ER, the default; =1 the earlier one row a warp iteration, one serial
 *       chain a row)  a warp takes ER consecutive staged rows an iteration: loads of all ER
 *       rows first, then the C stores, then the FP4 copy of the ER rows as one strided tile
 *       (epi_rows_quantize: ER independent blocks a lane, one transpose reduction, one vote), so
 *       the ER rows' chains overlap instead of one serial chain a row. ER divides 8, and the
 *       staged rows inside C are a multiple of 8 (M % 8 == 0, tiles start at multiples of 64):
 *       a group of ER rows is all inside C or all outside.
 *   AGOQ_WG_EPI_ROWS=8  8 rows a warp iteration, the same way; those kernels run warpgroup 0
 *       at 136 registers and the consumers at 176 (gemm_wg.cu: REGS_*_ER8), and the careful
 *       path reads its values again from the staging tile (epi_rows_q), so that the 8 rows'
 *       values need no spills.
 *   AGOQ_WG_EPI_GEN=rows (default) | blocks  the quantized copy in the other formats whose tile
 *       encoders exist (int sym / asym, fp8, tables; 4- or 8-bit codes, blocks of 128, round to
 *       nearest, N % 256 == 0) through the same row tiles (epi_rows_general: ER = 8, or 4 with
 *       AGOQ_WG_EPI_ROWS=1 or 4) instead of a thread a block (quant_blocks, every other format, and
 *       every format with AGOQ_WG_FAST_EPI=0).
 *   AGOQ_WG_BULK=1 (off: slower on the H200)  the residual comes in by 1-D bulk copies (cp.async.bulk, one a staged row,
 *       issued by the lanes of epilogue warp 0) completing on the mbarrier rbar, on which the
 *       consumers wait before reading it; the epilogue warps no longer wait for it themselves. C
 *       leaves by bulk copies shared -> global (one a row, the 96 epilogue threads), after the
 *       consumers' fence.proxy.async; each issuing thread waits for their reads of the staging
 *       tile before the epilogue's barrier BAR_EPI frees it. Rows and columns outside C are never
 *       copied (a row's copy is its min(TN, N - n0) columns: a multiple of 16 bytes).
 * Codes and scales are those of the standalone quantizer (the same ranges, parameters and
 * encoders in every variant); tests/cuda/gemm/test_gemm_wg_cuda.c checks every variant bit for
 * bit against the default kernel and the reference quantizer. */
#ifndef AGOQ_GEMM_WG_EPI_CUH
#define AGOQ_GEMM_WG_EPI_CUH
/* AGOQ_WG_EPI_Q7 (compile time, default 1 since the thirty-fourth session; 0 for the encoder
 * before it, e.g. an A/B by a variant build: tools/variant_build.sh q0=-DAGOQ_WG_EPI_Q7=0): the
 * fast FP4 copy's codes from the staged bf16 words by the quantizers' q7 encoder
 * (agoq_q7_fp4_pack_bf16, quant_q7.h: no binade, the signs permuted from the words) instead of
 * agoq_tile_encode_finite on the converted values; the same block parameters, the same bits
 * (quant_tile.cuh's packed path takes it on the same fast path; test_gemm_wg_cuda.c passed under
 * it on an H100). Why: the small-K fused GEMMs (TP=8 out-projection, K = 512 / 640) are bound by
 * the three epilogue warps (docs/gemm.md), and the FP4 encode is most of their per-element
 * instructions. Measured (H100, cf3cb34, four rounds of median ms, results/h100/logs/s34_cf3cb34/): 1.05-1.11x
 * on the TP=8 out-projection fused FP4 GEMMs, 1.02-1.11x on the TP=8 FC2, 1.00-1.05 on the 7B
 * FC2 (GEMM-bound). */
#ifndef AGOQ_WG_EPI_Q7
#define AGOQ_WG_EPI_Q7 1
#endif

/* AGOQ_WG_STC_V4 (compile time, default 1 since the thirty-fourth session): a lane's 16 bytes of a
 * row of C by one st.global.v4 (__stwb: .wb, the default policy). The plain uint4 assignment it
 * replaces (=0) was compiled, after the zeros-or-staged select of h, into four st.global.u32 in
 * 68 of gemm_wg.cu's 161 such stores (PTX, nvcc 13.0; SASS STG.E x4 a row, each instruction's 32
 * lanes touching 16 sectors by 4 bytes), the default fused FP4 and plain kernels among them: four
 * times the store instructions and sector writes of the epilogue warps' C; the same bytes at the same (16-byte aligned: N % 8 == 0,
 * C 16-byte aligned, agoq_wg_gemm) addresses either way. */
#ifndef AGOQ_WG_STC_V4
#define AGOQ_WG_STC_V4 1
#endif
__device__ __forceinline__ void store_c16(uint16_t *dst, uint4 w) {
    if constexpr (AGOQ_WG_STC_V4) __stwb(reinterpret_cast<uint4 *>(dst), w);
    else *reinterpret_cast<uint4 *>(dst) = w;
}

/* AGOQ_WG_DEQ_SMEM=5: consumer thread lt (0..127) of the warpgroup whose first row is m0 stores its
 * accumulators as C (+ the residual, read here), each pair rounded once to bf16 as stage_acc does
 * (the same bits as the staged path: fp32 sum, one cvt.rn.bf16x2), 4 bytes a pair. The residual in
 * batches of 8 column groups (16 words), all loaded before the batch's stores: loads after a store
 * that may alias them are not hoisted above it, and one at a time they cost an L2 round trip each
 * (ncu, forty-first session: 14% of the samples in this function's first version). */
template <int TN>
__device__ __forceinline__ void store_direct(const wg_params &p, const float (&d)[TN / 2], int lt, int m0, int n0) {
    const int lane = lt & 31, row0 = m0 + (lt >> 5) * 16 + (lane >> 2), c0 = n0 + (lane & 3) * 2;
    /* pair i of the batch from column group j0: group j0 + i / 2, row half i % 2 (accumulators
     * 4 j0 + 2 i and + 1): its row and column; false outside C */
    auto at = [&](int j0, int i, int &r, int &col) {
        r = row0 + 8 * (i & 1), col = c0 + (j0 + (i >> 1)) * 8;
        return r < p.m && col < p.n;
    };
#pragma unroll /* whole: a partly unrolled loop indexes d at run time, and ptxas puts it on the stack */
    for (int j0 = 0; j0 < TN / 8; j0 += 8) {
        uint32_t rv[16];
        int r, col;
#pragma unroll
        for (int i = 0; i < 16; i++) /* 0: bf16 +0 twice */
            rv[i] = at(j0, i, r, col) && p.r
                        ? __ldg(reinterpret_cast<const unsigned int *>(p.r + (size_t)r * (size_t)p.n + (size_t)col))
                        : 0u;
#pragma unroll
        for (int i = 0; i < 16; i++) {
            if (!at(j0, i, r, col)) continue;
            float x0 = d[4 * j0 + 2 * i], x1 = d[4 * j0 + 2 * i + 1];
            if (p.r) {
                x0 += agoq_bf16_to_f32((uint16_t)(rv[i] & 0xFFFFu));
                x1 += agoq_bf16_to_f32((uint16_t)(rv[i] >> 16));
            }
            *reinterpret_cast<uint32_t *>(p.c + (size_t)r * (size_t)p.n + (size_t)col) = dqr_pack(x0, x1);
        }
    }
}
/* AGOQ_WG_DEQ_SMEM=5 with a residual: the half row of it that consumer thread lt will read in
 * store_direct (row m0 + lt / 2, columns n0 + 128 (lt % 2) .. + 127), for an L2 prefetch
 * AGOQ_WG_DIRECT_PF k-tiles before the tile's mainloop ends (dqs_mainloop); NULL: none. */
#ifndef AGOQ_WG_DIRECT_PF
#define AGOQ_WG_DIRECT_PF 8
#endif
__device__ __forceinline__ const uint16_t *direct_pf(const wg_params &p, int m0, int n0, int lt, uint32_t &bytes) {
    const int r = m0 + (lt >> 1), c = n0 + 128 * (lt & 1);
    bytes = 0;
    if (!AGOQ_WG_DIRECT_PF || !p.r || r >= p.m || c >= p.n) return nullptr;
    bytes = 2u * (uint32_t)(p.n - c < 128 ? p.n - c : 128); /* n % 8 == 0: a multiple of 16 */
    return p.r + (size_t)r * (size_t)p.n + (size_t)c;
}
/* Epilogue warps, before a hand-off: the residual's rows m0 .. m0 + rows - 1 (the staged rows:
 * the tile, or half of it) into the staging tile (16-byte cp.async chunks, only those inside C),
 * complete when this returns. */
template <int TN>
__device__ __forceinline__ void load_residual(const wg_params &p, uint16_t *stage, int et, int m0, int n0, int rows) {
    constexpr int CS = c_stride<TN>(); /* bf16 per staged row */
    for (int i = et; i < rows * TN / 8; i += EPI_THREADS) {
        const int r = i / (TN / 8), g = i % (TN / 8), row = m0 + r, col = n0 + 8 * g;
        if (row < p.m && col < p.n)
            cp_async16(saddr(stage + r * CS + 8 * g), p.r + (size_t)row * (size_t)p.n + (size_t)col);
    }
    cp_async_wait_all();
}
/* Bytes of a staged row inside C, and the staged rows inside C (a multiple of 8, see above). */
template <int TN>
__device__ __forceinline__ uint32_t row_bytes(const wg_params &p, int n0) { return (uint32_t)min(TN, p.n - n0) * 2u; }
__device__ __forceinline__ int rows_in(const wg_params &p, int m0, int rows) { return min(rows, p.m - m0); }
/* AGOQ_WG_BULK: epilogue warp ew 0 starts the residual's bulk copies (complete on rbar, one phase
 * a tile); called after BAR_EPI, when no epilogue thread or bulk store reads the staging tile. */
template <int TN>
__device__ __forceinline__ void load_residual_bulk(const wg_params &p, uint16_t *stage, uint32_t rbar, int ew, int lane,
                                                   int m0, int n0, int rows) {
    if (ew != 0) return;
    constexpr int CS = c_stride<TN>();
    const int nr = rows_in(p, m0, rows);
    const uint32_t rb = row_bytes<TN>(p, n0);
    fence_proxy_async(); /* the generic reads of the previous tile before the copies' writes */
    if (lane == 0) mbar_expect_tx(rbar, (uint32_t)nr * rb);
    __syncwarp();
    for (int r = lane; r < nr; r += 32)
        bulk_g2s(saddr(stage + r * CS), p.r + (size_t)(m0 + r) * (size_t)p.n + (size_t)n0, rb, rbar);
}
/* AGOQ_WG_BULK: epilogue thread et copies staged rows et, et + EPI_THREADS, ... inside C to C;
 * the caller waits (bulk_wait_read) before the staging tile is freed. */
template <int TN>
__device__ __forceinline__ void store_c_bulk(const wg_params &p, const uint16_t *stage, int et, int m0, int n0, int rows) {
    constexpr int CS = c_stride<TN>();
    const int nr = rows_in(p, m0, rows);
    const uint32_t rb = row_bytes<TN>(p, n0);
    for (int r = et; r < nr; r += EPI_THREADS)
        bulk_s2g(p.c + (size_t)(m0 + r) * (size_t)p.n + (size_t)n0, saddr(stage + r * CS), rb);
    bulk_commit();
}

/* agoq_tile_quantize (quant_tile.cuh) over R vectors that lie vstride elements apart (R rows of
 * C) instead of R consecutive ones: vector j of lane l is element j vstride + l E of out, and a
 * block lies in one vector (VB == 1; vstride a multiple of the block). The same ranges,
 * transpose reduction, parameters, vote and encoders; false (nothing written) when the fast path
 * meets a non-finite range, and the caller redoes the R rows with CAREFUL. st: this lane's
 * columns are inside C (false for the lanes of a last tile's blocks past N when N % 256 == 128:
 * their values must be finite, zeros, and nothing of theirs is stored; a block's lanes agree). */
template <int ENC, int BITS, int LOG2B, int E, bool CAREFUL, int R, bool PACK8>
__device__ __forceinline__ bool epi_rows_quantize(const agoq_cuda_qparams &p, const agoq_smem_table *t,
                                                  const float (&v)[R][E], size_t vstride, agoq_cuda_qtensor out,
                                                  int lane, bool st, const uint4 *hw = nullptr) {
    using G = agoq_tile_geom<LOG2B, E, R>;
    static_assert(G::VB == 1 && G::K == R, "one vector holds whole blocks");
    constexpr bool kAsym = ENC == AGOQ_ENC_INT_ASYM;
    float a[G::K], lo[G::K], hi[G::K];
    agoq_tile_ranges<ENC, G, CAREFUL>(agoq_tile_view_f32<R, E>{v}, a, lo, hi);
    float s[G::H], m[G::H], inv[G::H];
    if (!agoq_tile_params<ENC, G::K, G::LB, G::H, CAREFUL>(p, a, lo, hi, s, m, inv, lane)) return false;
    const int seg = lane / G::LB, pos = lane % G::LB;
    constexpr int kSpread = G::K <= G::LB ? G::LB / G::K : 1; /* lanes holding one slot */
#pragma unroll
    for (int i = 0; i < G::H; i++) {
        const int k = pos / kSpread * G::H + i; /* vector k's block seg */
        if (st && pos % kSpread == 0)
            agoq_dev_store_params(p, out, ((size_t)k * vstride >> LOG2B) + (size_t)seg, s[i], m[i]);
    }
#pragma unroll
    for (int k = 0; k < G::K; k++) {
        float inv_k, m_k;
        agoq_tile_held<G::K, G::LB, G::H, kAsym>(k, seg, inv, m, inv_k, m_k);
        uint64_t packed;
        if constexpr (AGOQ_WG_EPI_Q7 && !CAREFUL && ENC == AGOQ_ENC_FP4 && E == 8) { /* hw[k]: v[k]'s bf16 words */
            const uint32_t w4[4] = {hw[k].x, hw[k].y, hw[k].z, hw[k].w};
            packed = agoq_q7_fp4_pack_bf16(w4, inv_k);
        } else {
            packed = CAREFUL ? agoq_tile_encode_any<ENC, BITS, E>(p, t, v[k], inv_k, m_k)
                             : agoq_tile_encode_finite<ENC, BITS, E, PACK8>(p, t, v[k], inv_k, m_k);
        }
        if (st) agoq_tile_store_codes<BITS, E>(out.codes, (size_t)k * vstride + (size_t)lane * E, packed);
    }
    return true;
}

/* epi_rows_quantize of ER staged rows (their values v, the first at element e0 of C, a multiple
 * of 128; this lane's 8 values of row j at src + j CS in the staging tile, st: inside C) in
 * format (ENC, BITS) / 128: the fast encoders, or the careful ones when a range is not finite,
 * on values read again from the staging tile (v is not kept for them: no spills with 8 rows;
 * a lane outside C takes zeros). */
template <int ENC, int BITS, int ER, int CS>
__device__ __forceinline__ void epi_rows_q(const agoq_cuda_qparams &p, const agoq_smem_table *tab,
                                           const float (&v)[ER][8], const uint16_t *src, size_t e0, size_t n,
                                           const agoq_cuda_qtensor &qt, int lane, bool st, const uint4 *hw = nullptr) {
    const agoq_cuda_qtensor q = fz_qt_at<BITS, 7>(p, qt, e0);
    if (!epi_rows_quantize<ENC, BITS, 7, 8, false, ER, false>(p, tab, v, n, q, lane, st, hw)) {
        float w[ER][8];
#pragma unroll
        for (int j = 0; j < ER; j++)
            agoq_bf16x8_to_f32(st ? *reinterpret_cast<const uint4 *>(src + j * CS) : make_uint4(0, 0, 0, 0), w[j]);
        epi_rows_quantize<ENC, BITS, 7, 8, true, ER, false>(p, tab, w, n, q, lane, st);
    }
}
/* GQ (AGOQ_WG_EPI_GEN=rows): the formats other than FP4 whose tile encoders take blocks of 128
 * with 4- or 8-bit codes (the host checks: round to nearest, N % 256 == 0), by kind (warp-uniform). */
template <int ER, int CS>
__device__ __forceinline__ void epi_rows_general(const agoq_cuda_qparams &p, const agoq_smem_table *tab,
                                                 const float (&v)[ER][8], const uint16_t *src, size_t e0, size_t n,
                                                 const agoq_cuda_qtensor &qt, int lane, bool st) {
    const bool b4 = p.bits == 4;
    switch (p.enc) {
    case AGOQ_ENC_INT_SYM:
        if (b4) epi_rows_q<AGOQ_ENC_INT_SYM, 4, ER, CS>(p, tab, v, src, e0, n, qt, lane, st);
        else epi_rows_q<AGOQ_ENC_INT_SYM, 8, ER, CS>(p, tab, v, src, e0, n, qt, lane, st);
        break;
    case AGOQ_ENC_INT_ASYM:
        if (b4) epi_rows_q<AGOQ_ENC_INT_ASYM, 4, ER, CS>(p, tab, v, src, e0, n, qt, lane, st);
        else epi_rows_q<AGOQ_ENC_INT_ASYM, 8, ER, CS>(p, tab, v, src, e0, n, qt, lane, st);
        break;
    case AGOQ_ENC_FP8_E4M3: epi_rows_q<AGOQ_ENC_FP8_E4M3, 8, ER, CS>(p, tab, v, src, e0, n, qt, lane, st); break;
    case AGOQ_ENC_FP8_E5M2: epi_rows_q<AGOQ_ENC_FP8_E5M2, 8, ER, CS>(p, tab, v, src, e0, n, qt, lane, st); break;
    default:
        if (b4) epi_rows_q<AGOQ_ENC_TABLE, 4, ER, CS>(p, tab, v, src, e0, n, qt, lane, st);
        else epi_rows_q<AGOQ_ENC_TABLE, 8, ER, CS>(p, tab, v, src, e0, n, qt, lane, st);
        break;
    }
}

/* Epilogue warps, after the hand-off: warp ew stores ER-row groups ew, ew + EPI_WARPS, ... of the
 * staged rows inside C (ER = 1: rows ew, ew + EPI_WARPS, ...; the first staged row is row m0 of
 * C), 16 bytes a lane (one 512-byte run a row); STC = false: C leaves by bulk copies instead.
 * FASTQ (FP4 E2M1 / 128, round to nearest; gemm_wg.h): a row's 256 values are two blocks of the
 * flat rowq layout, so the standalone quantizer's fast tile encoder takes them whole (fz_quantize,
 * a row, N % 256 == 0; epi_rows_quantize, ER rows, N % 128 == 0: the lanes of a last tile's
 * half past N hold zeros and store nothing). GQ: the same through epi_rows_general. */
template <bool FASTQ, int TN, int ER, bool STC, bool GQ = false>
__device__ __forceinline__ void store_rows(const wg_params &p, const agoq_smem_table *tab, const uint16_t *stage,
                                           int ew, int lane, int m0, int n0, int rows) {
    static_assert(!(FASTQ || GQ) || TN == 256, "the tile encoders take a row of 256");
    static_assert(8 % ER == 0, "a group of ER rows is all inside C or all outside");
    if constexpr (!FASTQ && !GQ && !STC) return;
    constexpr int CS = c_stride<TN>(); /* bf16 per staged row */
    const int col = n0 + 8 * lane, nr = rows_in(p, m0, rows);
    /* TN = 128 / 192: lanes 16-31 / 24-31 have no columns; col >= N: a last tile's columns past C */
    const bool mine = 8 * lane < TN && col < p.n;
    const agoq_cuda_qtensor qt = fz_qt(p.cq, (size_t)p.m * (size_t)p.n);
    for (int r0 = ew * ER; r0 < nr; r0 += EPI_WARPS * ER) { /* warp-uniform */
        uint4 h[ER];
#pragma unroll
        for (int j = 0; j < ER; j++)
            h[j] = mine ? *reinterpret_cast<const uint4 *>(stage + (r0 + j) * CS + 8 * lane) : make_uint4(0, 0, 0, 0);
        const size_t e0 = (size_t)(m0 + r0) * (size_t)p.n + (size_t)n0; /* element (row m0 + r0, n0) */
        if (STC && mine) {
#pragma unroll
            for (int j = 0; j < ER; j++) store_c16(p.c + e0 + (size_t)j * p.n + 8 * lane, h[j]);
        }
        if constexpr (FASTQ) {
            float v[ER][8];
#pragma unroll
            for (int j = 0; j < ER; j++) agoq_bf16x8_to_f32(h[j], v[j]);
            if constexpr (ER == 1) {
                fz_quantize<AGOQ_ENC_FP4, 4, 7, 1>(p.q, tab, v, e0 / 256, qt, lane);
            } else {
                epi_rows_q<AGOQ_ENC_FP4, 4, ER, CS>(p.q, tab, v, stage + r0 * CS + 8 * lane, e0, (size_t)p.n, qt, lane,
                                                    mine, h);
            }
        } else if constexpr (GQ) {
            float v[ER][8];
#pragma unroll
            for (int j = 0; j < ER; j++) agoq_bf16x8_to_f32(h[j], v[j]);
            epi_rows_general<ER, CS>(p.q, tab, v, stage + r0 * CS + 8 * lane, e0, (size_t)p.n, qt, lane, mine);
        }
    }
}
/* Epilogue warps, general quantized copy: epilogue thread et quantizes whole blocks of the staged
 * rows (block b: row b % rows, the (b / rows)-th block of the row; consecutive lanes take
 * consecutive rows, so their 16-byte reads hit distinct banks), its range reduced in the thread
 * (max / min are exact in any order), then the standalone quantizer's parameters and encoder
 * (quant_device.cuh), group by group: the same codes and scales as the reference. */
template <int TN>
__device__ __forceinline__ void quant_blocks(const wg_params &p, const agoq_smem_table *tab, const uint16_t *stage,
                                             int et, int m0, int n0, int rows) {
    constexpr int CS = c_stride<TN>(); /* bf16 per staged row */
    const int B = p.q.block, G = B >> 3, bpr = TN / B;
    const size_t nbpr = (size_t)(p.n / B);
    const agoq_cuda_qtensor qt = fz_qt(p.cq, (size_t)p.m * (size_t)p.n);
    agoq_dispatch_enc(p.q.enc, [&](auto kind) {
        constexpr int ENC = decltype(kind)::value;
        for (int b = et; b < rows * bpr; b += EPI_THREADS) {
            const int r = b % rows, col0 = n0 + (b / rows) * B;
            if (m0 + r >= p.m || col0 >= p.n) continue; /* block | N: a block is all in or all out */
            const uint16_t *src = stage + r * CS + (col0 - n0);
            float amax = 0.0f, lo = __int_as_float(0x7f800000), hi = __int_as_float(0xff800000);
#pragma unroll 4
            for (int g = 0; g < G; g++) {
                float v[8];
                agoq_bf16x8_to_f32(*reinterpret_cast<const uint4 *>(src + 8 * g), v);
                fz_range8(v, 8, amax, lo, hi);
            }
            float s, mz, inv;
            agoq_dev_block_params(p.q, amax, lo, hi, &s, &mz, &inv);
            const size_t row = (size_t)(m0 + r), bi = row * nbpr + (size_t)(col0 / B), e0 = row * (size_t)p.n + col0;
#pragma unroll 4
            for (int g = 0; g < G; g++) {
                float v[8];
                agoq_bf16x8_to_f32(*reinterpret_cast<const uint4 *>(src + 8 * g), v);
                agoq_dev_store_group(p.cq.codes, bi * (size_t)G + (size_t)g, p.q.bits,
                                     agoq_dev_encode8<ENC>(p.q, tab, v, 8, inv, mz, (uint64_t)(e0 + 8 * (size_t)g)));
            }
            agoq_dev_store_params(p.q, qt, bi, s, mz);
        }
    });
}
#endif
