/* The row stores of gemm_wg.cu's epilogue (store_row: one staged row of C and its fast FP4 copy;
 * store_rows: the epilogue warps' rows) and its consumer-side epilogue (AGOQ_WG_EPI=consumer|auto;
 * off by default). Included by gemm_wg.cu inside its anonymous namespace. At small K a tile's
 * mainloop is only 8-22 k-steps, too short for the three epilogue warps to load a 128 x 256
 * residual tile, store C and encode its quantized copy, so the consumers wait on the hand-off.
 * AGOQ_WG_EPI makes two changes,
 * both in the 3-stage kernels' full-tile hand-off (the 4-stage half hand-off keeps only the
 * first):
 *   rg    the consumers read the residual straight from global memory (L2) into registers in
 *         stage_acc; the epilogue warps only prefetch the tile's residual rows into L2 (one
 *         prefetch per 128-byte line, issued a whole mainloop before the consumers read them)
 *         instead of copying them into the staging tile and waiting for the copy.
 *   crows each consumer warp stores (and quantizes, the fast FP4 encoder only) the first crows of
 *         the 16 staged rows it wrote itself, right after the hand-off, so only a __syncwarp
 *         orders them; the epilogue warps take the other 16 - crows of every 16 (epi_row).
 *         Needs rg with a residual (no residual copy may land in rows a consumer still reads).
 * The sums and roundings are those of the default path (fp32 accumulator + the residual, rounded
 * once): C and its codes are bit-identical. Tested by cuda_wg_gemm_knob_variants_match_default. */

/* Staged row r (row m0 + r of C) stored by one warp, 16 bytes a lane (one 512-byte run). FASTQ
 * (FP4 E2M1 / 128, round to nearest, N % 256 == 0; gemm_wg.h): a row's 256 values are one warp
 * vector of the flat rowq layout, so the standalone quantizer's fast tile encoder (fz_quantize)
 * takes them whole. */
template <bool FASTQ, int TN>
__device__ __forceinline__ void store_row(const wg_params &p, const agoq_smem_table *tab, const uint16_t *stage, int r,
                                          int lane, int m0, int n0) {
    static_assert(!FASTQ || TN == 256, "the fast FP4 encoder takes a row of 256");
    constexpr int CS = c_stride<TN>(); /* bf16 per staged row */
    const int col = n0 + 8 * lane;
    const bool mine = 8 * lane < TN; /* TN = 128: lanes 16-31 have no columns */
    const size_t row = (size_t)(m0 + r);
    const uint4 h = mine ? *reinterpret_cast<const uint4 *>(stage + r * CS + 8 * lane) : make_uint4(0, 0, 0, 0);
    if (mine && col < p.n) *reinterpret_cast<uint4 *>(p.c + row * (size_t)p.n + (size_t)col) = h;
    if constexpr (FASTQ) {
        float v[1][8];
        agoq_bf16x8_to_f32(h, v[0]);
        fz_quantize<AGOQ_ENC_FP4, 4, 7, 1>(p.q, tab, v, (row * (size_t)p.n + (size_t)n0) / 256,
                                           fz_qt(p.cq, (size_t)p.m * (size_t)p.n), lane);
    }
}
/* The i-th staged row of the epilogue warps when the consumer warps take the first cr (0..16) of
 * every 16: monotonic in i; cr = 0 is row i; cr = 16 leaves none (a row past any tile). */
__device__ __forceinline__ int epi_row(int i, int cr) {
    const int per = 16 - cr;
    return per > 0 ? i / per * 16 + cr + i % per : 1 << 20;
}

/* Epilogue warps, after the hand-off: warp ew stores the staged rows ew, ew + EPI_WARPS, ... <
 * rows (its first row is row m0 of C) of those the consumer warps leave them (epi_row; cr is 0
 * by default). */
template <bool FASTQ, int TN>
__device__ __forceinline__ void store_rows(const wg_params &p, const agoq_smem_table *tab, const uint16_t *stage,
                                           int ew, int lane, int m0, int n0, int rows, int cr) {
    for (int i = ew;; i += EPI_WARPS) { /* warp-uniform */
        const int r = epi_row(i, cr);
        if (r >= rows || m0 + r >= p.m) break;
        store_row<FASTQ, TN>(p, tab, stage, r, lane, m0, n0);
    }
}
/* Epilogue warps (epilogue thread et), in place of load_residual when rg: prefetch the residual's
 * rows m0 .. m0 + rows - 1, columns n0 .. n0 + TN - 1 (those inside C) into L2; returns at once. */
template <int TN>
__device__ __forceinline__ void prefetch_residual(const wg_params &p, int et, int m0, int n0, int rows) {
    constexpr int LINES = TN * 2 / 128; /* 128-byte lines a row */
    for (int i = et; i < rows * LINES; i += EPI_THREADS) {
        const int row = m0 + i / LINES, col = n0 + 64 * (i % LINES);
        if (row < p.m && col < p.n)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(p.r + (size_t)row * (size_t)p.n + (size_t)col));
    }
}

/* Consumer thread ct (0..255), after its stage_acc of the full tile at (m0, n0) and the hand-off:
 * its warp stores (and quantizes) the first p.crows of the 16 staged rows it wrote itself. */
template <bool FASTQ, int TN>
__device__ __forceinline__ void consumer_rows(const wg_params &p, const agoq_smem_table *tab, const uint16_t *stage,
                                              int ct, int m0, int n0) {
    __syncwarp(); /* every lane's staged values of these rows are visible to the warp */
    const int r0 = (ct >> 5) * 16, lane = ct & 31;
    for (int i = 0; i < p.crows && m0 + r0 + i < p.m; i++) /* warp-uniform */
        store_row<FASTQ, TN>(p, tab, stage, r0 + i, lane, m0, n0);
    __syncwarp(); /* done reading before this warp stages the next tile */
}

/* Host: AGOQ_WG_EPI for one GEMM with a residual (r), a quantized copy (q; fast: the fast FP4
 * encoder) and inner dimension k, on the half hand-off (st4) or not: sets p->rg and p->crows.
 * Unset or "0": the default (both 0). "consumer[:N]": rg with a residual, and crows = N (0..16,
 * default 8) where the full hand-off is used and the copy, if any, takes the fast encoder.
 * "auto": consumer for K <= 2048 with a residual or a copy, else the default. Anything else: the
 * default, after one line on stderr. */
inline void epi_knob(wg_params *p, bool r, bool q, bool fast, bool st4, int k) {
    const char *e = getenv("AGOQ_WG_EPI");
    p->rg = p->crows = 0;
    if (!e || !strcmp(e, "0")) return;
    long n = 8;
    if (!strcmp(e, "auto")) {
        if (k > 2048 || !(r || q)) return;
    } else if (!strncmp(e, "consumer", 8) && (!e[8] || e[8] == ':')) {
        if (e[8]) n = strtol(e + 9, NULL, 10);
        if (n < 0 || n > 16) n = 8;
    } else {
        static bool said = false;
        if (!said) fprintf(stderr, "gemm_wg: AGOQ_WG_EPI=%s unsupported (0, consumer[:N] or auto); using 0\n", e);
        said = true;
        return;
    }
    p->rg = r;
    p->crows = (st4 || (q && !fast)) ? 0 : (int)n;
}
