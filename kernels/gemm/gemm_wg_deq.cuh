/* Stored-A prologue of the Hopper GEMM (gemm_wg.cu, agoq_wg_fwd_deqa): A's packed codes (4 or 8
 * bits, rowq layout, block a multiple of 64) arrive in the stage by TMA (a box of bytes, row pitch
 * BK bits / 8), and the consumers decode them with the standalone decoder (quant_device.cuh's
 * agoq_dev_decode, scale and zero point of the row's block), rounding each value once to bf16.
 * Two ways, chosen on the host (docs/gemm_prologue.md):
 *   shared memory (AGOQ_WG_DEQ_SMEM=4, the default since the thirty-ninth session, or 1: 3 stages)
 *       each consumer warpgroup decodes its 64 rows of a k-tile into a 128-byte-swizzled bf16
 *       tile (two per warpgroup, three with 4 stages) while the wgmma of its previous k-tiles run;
 *       fence.proxy.async and a warpgroup barrier hand it to the descriptor wgmma.
 *   registers (AGOQ_WG_DEQ_SMEM=0)  each consumer thread decodes its own wgmma A fragment
 *       straight into registers (wgmma with A in registers: 4 x 2 bf16 a k-step), one k-step
 *       ahead of the tensor core, double-buffered; no shared-memory copy, no barrier.
 * Register fragment of A (m64k16, bf16; as the accumulator's layout for 16 columns): thread lt of
 * the warpgroup owns rows r = 16 (lt / 32) + (lt % 32) / 4 and r + 8, columns 2q, 2q + 1 (q = lt % 4)
 * in registers 0 (row r) and 1 (row r + 8), columns 2q + 8, 2q + 9 in registers 2 and 3; the low
 * half of a register is the even column. A 4-bit table decoder (FP4 E2M1 decodes by its table, NF4)
 * looks a register's two codes up at once: pairs[byte] = (value[byte & 15], value[byte >> 4]),
 * built in shared memory at the kernel's start. Included by gemm_wg.cu only (after wg_params). */
#ifndef AGOQ_GEMM_WG_DEQ_CUH
#define AGOQ_GEMM_WG_DEQ_CUH

/* AGOQ_WG_DQR_FP4_TAB (compile time, default 1; 0: the kernels before the thirty-ninth session, for
 * the A/B): the register prologue decodes FP4 through the rows' bf16 tables (dq_fp4_make, two a
 * k-tile; 11 integer instructions for a row's four codes of a k-step) instead of by arithmetic
 * (agoq_tile_decode's permutes, 4 FMUL and 2 cvt: about 24). Same bits. */
#ifndef AGOQ_WG_DQR_FP4_TAB
#define AGOQ_WG_DQR_FP4_TAB 1
#endif

/* d[64 x 256] += A(64 x 16, registers) B(16 x 256); TB: B is N-major in shared memory. */
template <int TB>
__device__ __forceinline__ void wgmma_256_ra(float (&d)[128], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %134, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" AGOQ_WG_ACC_REGS
                 "}, {%128, %129, %130, %131}, %132, p, 1, 1, %133;\n"
                 "}\n"
                 : AGOQ_WG_ACC_OPERANDS(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(TB), "r"(1));
}

/* Scale (and, DEC = INT_ASYM, zero point) of a row at column k0 (the block: one per row per k-tile,
 * block >= 64); a row past M keeps what it had (its codes are TMA zero fill). dqr_scales: rows row0
 * and row0 + 8 (the register prologue's two). */
template <int DEC>
__device__ __forceinline__ void dq_row_scale(const wg_params &p, int row, int k0, size_t nbpr, float &sc, float &zc) {
    if (row >= p.m) return;
    const size_t blk = (size_t)row * nbpr + (size_t)(k0 / p.qa.block);
    sc = agoq_dev_load_scale(p.aq.scales, blk, p.qa.bf16_scale);
    if constexpr (DEC == AGOQ_ENC_INT_ASYM) zc = agoq_dev_load_scale(p.aq.zeros, blk, p.qa.bf16_scale);
}
template <int DEC>
__device__ __forceinline__ void dqr_scales(const wg_params &p, int row0, int k0, size_t nbpr, float (&sc)[2],
                                           float (&zc)[2]) {
#pragma unroll
    for (int h = 0; h < 2; h++) dq_row_scale<DEC>(p, row0 + 8 * h, k0, nbpr, sc[h], zc[h]);
}
/* Codes of columns 2q, 2q + 1, 2q + 8, 2q + 9 of k-step kk from one row (BITS = 4 or 8). */
template <int BITS>
__device__ __forceinline__ void dqr_codes(uint32_t row, int kk, int q, uint32_t (&c)[4]) {
    if constexpr (BITS == 4) { /* 16 codes = 8 bytes: columns 0-7 in the low word */
        uint32_t x, y;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "r"(row + kk * 8) : "memory");
        c[0] = (x >> (8 * q)) & 15u;
        c[1] = (x >> (8 * q + 4)) & 15u;
        c[2] = (y >> (8 * q)) & 15u;
        c[3] = (y >> (8 * q + 4)) & 15u;
    } else { /* 16 bytes: column j is byte j; this thread's are in words q / 2 and 2 + q / 2 */
        uint32_t lo, hi;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(lo) : "r"(row + kk * 16 + 4 * (q >> 1)) : "memory");
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(hi) : "r"(row + kk * 16 + 8 + 4 * (q >> 1)) : "memory");
        const int sh = 16 * (q & 1);
        c[0] = (lo >> sh) & 255u;
        c[1] = (lo >> (sh + 8)) & 255u;
        c[2] = (hi >> sh) & 255u;
        c[3] = (hi >> (sh + 8)) & 255u;
    }
}
/* dqr_pack (gemm_wg.cu): two values rounded to bf16 by one cvt.rn.bf16x2.f32 (a NaN in A gives
 * NaN in C either way). */
/* FP4 E2M1 of one row straight to bf16: the row's 8 magnitudes times its scale, each rounded once
 * to bf16 (P[m] = bf16(e2m1[m] s), as value[code] * s and then bf16 elementwise), kept as their
 * low bytes (lo0: m 0-3, lo1: m 4-7) and high bytes (hi0, hi1), so that one byte permute looks up
 * four codes' low (or high) bytes. A negative code is the positive one's bf16 with the sign bit
 * set: exact, as (-v) s = -(v s) and rounding to nearest even is symmetric (code 8, -0: 0x8000). */
struct dq_fp4_tab {
    uint32_t lo0, lo1, hi0, hi1;
};
__device__ __forceinline__ dq_fp4_tab dq_fp4_make(float s) {
    const uint32_t p01 = dqr_pack(0.0f * s, 0.5f * s), p23 = dqr_pack(1.0f * s, 1.5f * s);
    const uint32_t p45 = dqr_pack(2.0f * s, 3.0f * s), p67 = dqr_pack(4.0f * s, 6.0f * s);
    return {__byte_perm(p01, p23, 0x6420u), __byte_perm(p45, p67, 0x6420u), __byte_perm(p01, p23, 0x7531u),
            __byte_perm(p45, p67, 0x7531u)};
}
/* Four FP4 codes (c's low 16 bits: code e in bits 4e .. 4e + 3) -> two words of two bf16 (the
 * byte permutes read only their selector's low 16 bits: four magnitudes). Word j's signs: byte j
 * of c << 4 (bit 7: code 2j's sign) and byte j of c (bit 7: code 2j + 1's) permuted to bits 15, 31. */
__device__ __forceinline__ void dq_fp4_quad(uint32_t c, const dq_fp4_tab &t, uint32_t &w0, uint32_t &w1) {
    const uint32_t m = c & 0x7777u, c4 = c << 4;
    const uint32_t l = __byte_perm(t.lo0, t.lo1, m), h = __byte_perm(t.hi0, t.hi1, m);
    w0 = __byte_perm(l, h, 0x5140u) | (__byte_perm(c4, c, 0x4000u) & 0x80008000u);
    w1 = __byte_perm(l, h, 0x7362u) | (__byte_perm(c4, c, 0x5010u) & 0x80008000u);
}
/* This thread's A fragment of k-step kk: rows r0 (codes at c0) and r0 + 8 (c1), the decoder DEC; PRE
 * (AGOQ_WG_DEQ_AHEAD=1): the 4-bit table decoder takes the codes from w (the two rows' 32 bytes of
 * the k-tile, loaded by dqr_mainloop at the k-tile's start; k-step kk: words 2 kk and 2 kk + 1), and so does FP4 decoded by
 * arithmetic (the standalone tile dequantizer's byte permutes, agoq_tile_decode: bit-exact with
 * value[code] * s; no shared-memory table, whose random lookups share the shared-memory bandwidth
 * with wgmma's B reads). */
template <int DEC, int BITS, bool PRE>
__device__ __forceinline__ void dqr_frag(const wg_params &p, const agoq_smem_table *tab, uint32_t c0,
                                         uint32_t c1, int kk, int q, const float (&sc)[2], const float (&zc)[2],
                                         const float2 *pairs, const uint32_t (&w)[2][8], const dq_fp4_tab (&ft)[2],
                                         uint32_t (&a)[4]) {
    if constexpr (DEC == AGOQ_ENC_TABLE && BITS == 4) { /* a byte = the two codes of a register */
        uint32_t x0, y0, x1, y1;
        if constexpr (PRE) {
            x0 = w[0][2 * kk], y0 = w[0][2 * kk + 1], x1 = w[1][2 * kk], y1 = w[1][2 * kk + 1];
        } else {
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x0), "=r"(y0) : "r"(c0 + kk * 8) : "memory");
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x1), "=r"(y1) : "r"(c1 + kk * 8) : "memory");
        }
        const int sh = 8 * q;
        const float2 p0 = pairs[(x0 >> sh) & 255u], p1 = pairs[(x1 >> sh) & 255u];
        const float2 p2 = pairs[(y0 >> sh) & 255u], p3 = pairs[(y1 >> sh) & 255u];
        a[0] = dqr_pack(p0.x * sc[0], p0.y * sc[0]); /* value[code] * s, as agoq_dev_decode */
        a[1] = dqr_pack(p1.x * sc[1], p1.y * sc[1]);
        a[2] = dqr_pack(p2.x * sc[0], p2.y * sc[0]);
        a[3] = dqr_pack(p3.x * sc[1], p3.y * sc[1]);
        return;
    }
    if constexpr (DEC == AGOQ_ENC_FP4 && BITS == 4 && (PRE || AGOQ_WG_DQR_FP4_TAB)) { /* AGOQ_WG_DEQ_FP4=arith */
        const uint32_t sel = (uint32_t)q | (uint32_t)(4 + q) << 4; /* byte q of each word */
        uint32_t x[2], y[2]; /* the rows' 16 codes of k-step kk: the k-tile's preloaded (PRE) or loaded now */
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if constexpr (PRE) x[h] = w[h][2 * kk], y[h] = w[h][2 * kk + 1];
            else
                asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x[h]), "=r"(y[h]) : "r"((h ? c1 : c0) + kk * 8) : "memory");
        }
#pragma unroll
        for (int h = 0; h < 2; h++) { /* row r0 + 8 h: columns 2q, 2q + 1 (x) and 2q + 8, 2q + 9 (y) */
            const uint32_t c = __byte_perm(x[h], y[h], sel);
            if constexpr (AGOQ_WG_DQR_FP4_TAB) {
                dq_fp4_quad(c, ft[h], a[h], a[2 + h]);
            } else {
                float v[4];
                agoq_tile_decode<AGOQ_ENC_FP4, 4, 4>(p.qa, tab, c, sc[h], 0.0f, v);
                a[h] = dqr_pack(v[0], v[1]);
                a[2 + h] = dqr_pack(v[2], v[3]);
            }
        }
        return;
    }
    uint32_t u[4], v[4];
    dqr_codes<BITS>(c0, kk, q, u);
    dqr_codes<BITS>(c1, kk, q, v);
    const agoq_cuda_qparams &qa = p.qa;
    a[0] = dqr_pack(agoq_dev_decode<DEC>(qa, tab, u[0], sc[0], zc[0]), agoq_dev_decode<DEC>(qa, tab, u[1], sc[0], zc[0]));
    a[1] = dqr_pack(agoq_dev_decode<DEC>(qa, tab, v[0], sc[1], zc[1]), agoq_dev_decode<DEC>(qa, tab, v[1], sc[1], zc[1]));
    a[2] = dqr_pack(agoq_dev_decode<DEC>(qa, tab, u[2], sc[0], zc[0]), agoq_dev_decode<DEC>(qa, tab, u[3], sc[0], zc[0]));
    a[3] = dqr_pack(agoq_dev_decode<DEC>(qa, tab, v[2], sc[1], zc[1]), agoq_dev_decode<DEC>(qa, tab, v[3], sc[1], zc[1]));
}

/* Shared-memory prologue (AGOQ_WG_DEQ_SMEM=1 / 4). Thread lt (0..127) of a consumer decodes row
 * lt / 2 of its 64 x 64 k-tile, columns 32 (lt % 2) .. + 31 (four 8-column groups), so warp w of
 * the warpgroup writes rows 16 w .. 16 w + 15: the rows of A that its own part of the wgmma (its
 * 16 accumulator rows) reads. The block (>= 64 columns, a multiple of BK) is one per row per
 * k-tile: one scale (and zero point) a thread, of row m0 + 64 cw + lt / 2, streamed by
 * dq_scale_run: the current block's and the next one's held, the one after loaded when a block
 * starts. */
/* The raw bits of element blk of a scale / zero-point plane (fp32, or bf16 in the low half) by two
 * predicated loads into one register: nothing reads it until dq_raw_f32, a block later. As C++
 * (agoq_dev_load_scale into a held float, under a branch) nvcc moved the loaded value into the
 * held register right after the load, so every block's first k-tile waited for the L2 round trip
 * there (ncu per SASS line, fortieth session: 7.5% of the smem prologue's samples). */
__device__ __forceinline__ uint32_t dq_raw_load(const uint8_t *plane, size_t blk, int bf16) {
    uint32_t r;
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.s32 p, %3, 0;\n\t@p ld.global.u16 %0, [%1];\n\t@!p ld.global.u32 %0, [%2];\n\t}"
                 : "=r"(r)
                 : "l"(plane + 2 * blk), "l"(plane + 4 * blk), "r"(bf16)
                 : "memory");
    return r;
}
__device__ __forceinline__ float dq_raw_f32(uint32_t r, int bf16) { return __uint_as_float(bf16 ? r << 16 : r); }
template <int DEC>
struct dq_scale_run {
    const wg_params &p;
    size_t blk, last;  /* the next block to load; the row's last (loads past it repeat it) */
    int per, left;     /* k-tiles a block; k-tiles left in the current one */
    uint32_t ns, nz;   /* the next block's raw scale (zero point) */
    float s = 0.0f, z = 0.0f;
    __device__ __forceinline__ dq_scale_run(const wg_params &p_, int row) : p(p_) {
        const size_t nbpr = (size_t)(p.k / p.qa.block);
        /* a row past M reads row 0's first block: its codes are TMA zero fill and its row of C is
         * never stored (a row of C depends on its row of A only), so any value will do */
        blk = row < p.m ? (size_t)row * nbpr : 0;
        last = row < p.m ? blk + nbpr - 1 : 0;
        per = left = p.qa.block / BK;
        load();
        take();
        load();
    }
    __device__ __forceinline__ void load() {
        const size_t b = blk < last ? blk : last;
        blk++;
        ns = dq_raw_load(p.aq.scales, b, p.qa.bf16_scale);
        if constexpr (DEC == AGOQ_ENC_INT_ASYM) nz = dq_raw_load(p.aq.zeros, b, p.qa.bf16_scale);
    }
    __device__ __forceinline__ void take() {
        s = dq_raw_f32(ns, p.qa.bf16_scale);
        if constexpr (DEC == AGOQ_ENC_INT_ASYM) z = dq_raw_f32(nz, p.qa.bf16_scale);
    }
    /* after a k-tile's fence (which compiles to MEMBAR.ALL.CTA: it would wait for a load in flight
     * there): on to the next k-tile; when it starts a block, its scale is the one loaded a block
     * ago and the block after it is loaded */
    __device__ __forceinline__ void next() {
        if (--left == 0) {
            left = per;
            take();
            load();
        }
    }
};
/* Eight columns (four words of two bf16, the low half the even column) stored as 16-byte chunk c
 * of row r in the 128-byte-swizzled K-major layout of the TMA's A tiles. */
__device__ __forceinline__ void dq_put8(uint32_t buf, int r, int c, const uint32_t (&h)[4]) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(buf + (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4))),
                 "r"(h[0]), "r"(h[1]), "r"(h[2]), "r"(h[3])
                 : "memory");
}
/* Codes of this consumer's 64 rows at `codes` (row pitch BK BITS / 8 bytes: thread lt's 32 codes
 * at lt * 4 BITS, one or two 16-byte loads) -> bf16 values in the 128-byte-swizzled K-major layout
 * at buf (a quarter warp stores 8 distinct 16-byte bank groups). NH = 2 (the decoder warpgroup,
 * gemm_wg_dqp.cuh): thread lt decodes both halves of row lt, i.e. what threads 2 lt and 2 lt + 1
 * would, on one FP4 table. FP4 by its row table above; the other decoders by the tile
 * dequantizer's (agoq_tile_decode: bit-exact with agoq_dev_decode), rounded once to bf16 by
 * dqr_pack. */
template <int DEC, int BITS, int NH = 1>
__device__ __forceinline__ void dq_tile(const wg_params &p, const agoq_smem_table *tab, uint32_t codes, uint32_t buf,
                                        int lt, float s, float z) {
    [[maybe_unused]] dq_fp4_tab t;
    if constexpr (DEC == AGOQ_ENC_FP4) t = dq_fp4_make(s);
#pragma unroll
    for (int hv = 0; hv < NH; hv++) {
        const int l2 = lt * NH + hv, r = l2 >> 1, c0 = 4 * (l2 & 1);
        uint32_t w[BITS];
#pragma unroll
        for (int v = 0; v < BITS / 4; v++)
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(w[4 * v]), "=r"(w[4 * v + 1]), "=r"(w[4 * v + 2]), "=r"(w[4 * v + 3])
                         : "r"(codes + (uint32_t)(l2 * 4 * BITS + 16 * v))
                         : "memory");
        if constexpr (DEC == AGOQ_ENC_FP4) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                uint32_t h[4];
                dq_fp4_quad(w[i], t, h[0], h[1]);
                dq_fp4_quad(w[i] >> 16, t, h[2], h[3]);
                dq_put8(buf, r, c0 + i, h);
            }
        } else {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const uint64_t packed = BITS == 4 ? (uint64_t)w[i] : (uint64_t)w[2 * i] | (uint64_t)w[2 * i + 1] << 32;
                float v[8];
                agoq_tile_decode<DEC, BITS, 8>(p.qa, tab, packed, s, z, v);
                uint32_t h[4];
#pragma unroll
                for (int e = 0; e < 4; e++) h[e] = dqr_pack(v[2 * e], v[2 * e + 1]);
                dq_put8(buf, r, c0 + i, h);
            }
        }
    }
}
/* The shared-memory prologue's mainloop over one tile (thirty-ninth session; before it the same
 * hand-off with the generic per-group decoder dispatched in the loop and integer bf16 rounding,
 * 0.24-0.29x of dequantize + cuBLASLt on the H200): consumer warpgroup cw decodes k-tile kt's 64
 * rows into its bf16 tile kt % NB while its wgmma of the NB - 1 k-tiles before run (4 x
 * m64n256k16 each, instead of one k-step queued in the register prologue), then
 * fence.proxy.async and a warpgroup barrier hand the tile to the descriptor wgmma. No barrier
 * before the decode (there was one until the fortieth session): a warp overwrites only its own 16
 * rows of tile kt % NB, which the wgmma of k-tile kt - NB read for its own accumulator rows, done
 * once its own wait returned. Scales (zero points) by dq_scale_run, a block ahead, loaded after
 * the fence. bufs: this warpgroup's NB tiles;
 * a ring of ST stages of SB bytes, B at AB in each. The stages of the tile's last NB - 1 k-tiles
 * but the last are freed here after the last wait, the last one by the caller. pf (AGOQ_WG_DEQ_SMEM=5,
 * direct_pf): pfb bytes of the residual asked of L2 AGOQ_WG_DIRECT_PF k-tiles before the end. */
template <int DEC, int BITS, int ST, int SB, int AB, int NB, int TN>
__device__ __forceinline__ void dqs_mainloop(const wg_params &p, const agoq_smem_table *tab, float (&d)[TN / 2],
                                             uint32_t ring_s, uint32_t full_s, uint32_t empty_s, uint32_t bufs, int m0,
                                             int cw, int lt, int ktiles, int &it, const uint16_t *pf, uint32_t pfb) {
    const int kpf = ktiles > AGOQ_WG_DIRECT_PF ? ktiles - AGOQ_WG_DIRECT_PF : 0;
    constexpr int RB = BK * BITS / 8; /* code bytes of a row in a k-tile */
    dq_scale_run<DEC> rs(p, m0 + cw * 64 + (lt >> 1));
    for (int kt = 0; kt < ktiles; kt++, it++) {
        const uint32_t s = (uint32_t)it % ST;
        mbar_wait(full_s + 8u * s, ((uint32_t)it / ST) & 1u);
        const uint32_t buf = bufs + (uint32_t)(kt % NB) * DQ_TILE_BYTES, st = ring_s + s * SB;
        dq_tile<DEC, BITS>(p, tab, st + (uint32_t)(cw * 64 * RB), buf, lt, rs.s, rs.z);
        fence_proxy_async(); /* the decoded tile visible to wgmma */
        rs.next();
        if (pf != nullptr && kt == kpf) fz_l2_prefetch(pf, pfb);
        nbar_sync(2 + cw, 128);
        wg_fence();
        const uint64_t da0 = sdesc(buf, 16, 1024), db0 = sdesc(st + AB, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            if constexpr (TN == 256) wgmma_256<0, 0>(d, da0 + (uint64_t)(kk * 2), db0 + (uint64_t)(kk * 2));
            else wgmma_192<0, 0>(d, da0 + (uint64_t)(kk * 2), db0 + (uint64_t)(kk * 2)); /* AGOQ_WG_DEQ_SMEM=6 */
        }
        wg_commit();
        wg_wait<NB - 1>(); /* k-tile kt - NB + 1's wgmma are done: free its stage */
        if (kt >= NB - 1 && (lt & 31) == 0) mbar_arrive(empty_s + 8u * ((uint32_t)(it - NB + 1) % ST));
    }
    if constexpr (NB > 2) {
        wg_wait<0>();
        if ((lt & 31) == 0)
            for (int j = ktiles - NB + 1 < 0 ? 0 : ktiles - NB + 1; j < ktiles - 1; j++)
                mbar_arrive(empty_s + 8u * ((uint32_t)(it - ktiles + j) % ST));
    }
}

/* The shared-memory prologue's tile: one mainloop per decoder and width (FP4, whose decoder is its
 * table, by its row table); 4 stages: 4-bit FP4 and integers only (the host's choice). */
template <int ST, int SB, int AB, int NB, int TN>
__device__ __forceinline__ void dqs_run(const wg_params &p, const agoq_smem_table *tab, float (&d)[TN / 2], uint32_t ring_s,
                                        uint32_t full_s, uint32_t empty_s, uint32_t bufs, int m0, int cw, int lt,
                                        int ktiles, int &it, const uint16_t *pf, uint32_t pfb) {
    auto run = [&](auto dec, auto bits) {
        dqs_mainloop<decltype(dec)::value, decltype(bits)::value, ST, SB, AB, NB, TN>(p, tab, d, ring_s, full_s, empty_s, bufs,
                                                                                  m0, cw, lt, ktiles, it, pf, pfb);
    };
    using I4 = agoq_enc_t<4>;
    using I8 = agoq_enc_t<8>;
    const bool b4 = p.qa.bits == 4;
    const int dec = p.qa.dec;
    if (p.qa.enc == AGOQ_ENC_FP4) run(agoq_enc_t<AGOQ_ENC_FP4>(), I4());
    else if constexpr (ST >= 4) {
        if (dec == AGOQ_ENC_INT_SYM) run(agoq_enc_t<AGOQ_ENC_INT_SYM>(), I4());
        else run(agoq_enc_t<AGOQ_ENC_INT_ASYM>(), I4());
    } else if (dec == AGOQ_ENC_FP8_E4M3) run(agoq_enc_t<AGOQ_ENC_FP8_E4M3>(), I8());
    else if (dec == AGOQ_ENC_FP8_E5M2) run(agoq_enc_t<AGOQ_ENC_FP8_E5M2>(), I8());
    else if (dec == AGOQ_ENC_INT_SYM) b4 ? run(agoq_enc_t<AGOQ_ENC_INT_SYM>(), I4()) : run(agoq_enc_t<AGOQ_ENC_INT_SYM>(), I8());
    else if (dec == AGOQ_ENC_INT_ASYM) b4 ? run(agoq_enc_t<AGOQ_ENC_INT_ASYM>(), I4()) : run(agoq_enc_t<AGOQ_ENC_INT_ASYM>(), I8());
    else b4 ? run(agoq_enc_t<AGOQ_ENC_TABLE>(), I4()) : run(agoq_enc_t<AGOQ_ENC_TABLE>(), I8());
}

/* The register prologue's mainloop over one tile, consumer warpgroup cw, thread lt of it: per
 * k-step decode this thread's A fragment (while the previous k-step's wgmma runs), fence, issue,
 * keep one wgmma in flight; the stage of the previous k-tile is freed once its last wgmma is
 * done. `it` counts k-tiles over the CTA's tiles (the ring's phases; 3 stages: a 4-stage ring for
 * 4-bit codes, tried in the thirteenth session, made ptxas serialize the wgmma, C7513, and was
 * dropped).
 * AH (AGOQ_WG_DEQ_AHEAD=1, thirteenth session, not yet run on a GPU; off by default): the
 * scales (and zero points) of the next k-tile are loaded from global memory a whole k-tile ahead
 * (at its first k-step, into sn / zn; the last k-tile loads those of k-tile 0 of the CTA's next
 * tile, m0_next, or nothing: -1), so that no decode waits for an L2 round trip; without it the
 * next k-tile's are loaded after this one's last decode and the next first decode waits on them.
 * sc / zc then carry them across tiles (first: the CTA's first tile loads its own). The 4-bit
 * table decoder (FP4, NF4) and FP4 by arithmetic: a row's 32 bytes of the k-tile are loaded once,
 * right after the full barrier, instead of 8 bytes before each k-step's decode (the other
 * decoders keep their per-k-step loads: with all 4-bit ones preloading, the integer / FP4 kernel
 * spilled 8 bytes, ptxas -v). Same values, same bits. */
template <int DEC, int BITS, bool AH>
__device__ __forceinline__ void dqr_mainloop(const wg_params &p, const agoq_smem_table *tab, const float2 *pairs,
                                             float (&d)[128], uint32_t ring_s, uint64_t *full, uint64_t *empty,
                                             int m0, int m0_next, bool first, float (&sc)[2], float (&zc)[2], int cw,
                                             int lt, int ktiles, int &it) {
    constexpr int RB = BK * BITS / 8; /* code bytes of a row in a k-tile */
    /* the k-tile's codes at once (FP4 through the row tables: per k-step, their 8 registers instead of 16) */
    constexpr bool kPre = AH && (DEC == AGOQ_ENC_TABLE || (DEC == AGOQ_ENC_FP4 && !AGOQ_WG_DQR_FP4_TAB)) && BITS == 4;
    const int q = lt & 3, r0 = cw * 64 + (lt >> 5) * 16 + ((lt & 31) >> 2);
    const size_t nbpr = (size_t)(p.k / p.qa.block);
    if (!AH || first) dqr_scales<DEC>(p, m0 + r0, 0, nbpr, sc, zc);
    float sn[2] = {sc[0], sc[1]}, zn[2] = {zc[0], zc[1]};
    uint32_t af[2][4], w[2][8];
    for (int kt = 0; kt < ktiles; kt++, it++) {
        const int s = it % STAGES;
        mbar_wait(saddr(&full[s]), (uint32_t)((it / STAGES) & 1));
        const uint32_t c0 = ring_s + s * DQ_STAGE_BYTES + r0 * RB, b = ring_s + s * DQ_STAGE_BYTES + CODE_BYTES;
        if constexpr (kPre)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int v = 0; v < 2; v++)
                    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(w[h][4 * v]), "=r"(w[h][4 * v + 1]), "=r"(w[h][4 * v + 2]), "=r"(w[h][4 * v + 3])
                                 : "r"(c0 + h * 8 * RB + 16 * v)
                                 : "memory");
        dq_fp4_tab ft[2] = {};
        if constexpr (DEC == AGOQ_ENC_FP4 && BITS == 4 && AGOQ_WG_DQR_FP4_TAB) ft[0] = dq_fp4_make(sc[0]), ft[1] = dq_fp4_make(sc[1]);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            dqr_frag<DEC, BITS, kPre>(p, tab, c0, c0 + 8 * RB, kk, q, sc, zc, pairs, w, ft, af[kk & 1]);
            if (AH && kk == 0) { /* a k-tile ahead: the next k-tile's scales, or the next tile's first */
                if (kt + 1 < ktiles) dqr_scales<DEC>(p, m0 + r0, (kt + 1) * BK, nbpr, sn, zn);
                else if (m0_next >= 0) dqr_scales<DEC>(p, m0_next + r0, 0, nbpr, sn, zn);
            }
            /* without AH: the next k-tile's scales, once this one's last fragment is decoded */
            if (!AH && kk == BK / 16 - 1 && kt + 1 < ktiles) dqr_scales<DEC>(p, m0 + r0, (kt + 1) * BK, nbpr, sc, zc);
            wg_fence();
            wgmma_256_ra<0>(d, af[kk & 1], sdesc(b + kk * 32, 16, 1024));
            wg_commit();
            wg_wait<1>(); /* the previous k-step's wgmma is done: its fragment registers are free */
            if (kk == 0 && kt > 0 && (lt & 31) == 0) mbar_arrive(saddr(&empty[(it - 1) % STAGES]));
        }
        if constexpr (AH)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                sc[h] = sn[h];
                zc[h] = zn[h];
            }
    }
}
#endif
