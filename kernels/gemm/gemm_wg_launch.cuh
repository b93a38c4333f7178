/* Host side of the Hopper GEMM: the TMA maps, the grid, the choice of kernel variant from the
 * arguments and the environment knobs (gemm_wg_knobs.h, read once a call), and the entry points
 * of gemm_wg.h. Included last by gemm_wg.cu (and only there): the launches instantiate its kernel
 * templates, and the helpers below share its anonymous namespace (one per translation unit). */
#include "kernels/gemm/gemm_wg_knobs.h"

namespace {
PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        cudaDriverEntryPointQueryResult st;
        void *f = NULL;
        cudaCheck(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &st));
        if (st != cudaDriverEntryPointSuccess || !f) agoq_die("gemm_wg: cuTensorMapEncodeTiled not found in the driver");
        fn = (PFN_cuTensorMapEncodeTiled_v12000)f;
    }
    return fn;
}
/* A row-major bf16 matrix [outer][inner] as a TMA map with a box of box_outer x 64 and the
 * 128-byte swizzle; codes (bytes = true): [outer][inner] bytes, a box of box_outer x box_inner
 * bytes, no swizzle. */
void make_map(CUtensorMap *map, const void *ptr, int inner, int outer, int box_outer, bool bytes = false,
              int box_inner = 64) {
    const cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
    const cuuint64_t strides[1] = {(cuuint64_t)inner * (bytes ? 1u : 2u)};
    const cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer}, elem[2] = {1u, 1u};
    const CUresult r = encode_fn()(map, bytes ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                                   (void *)ptr, dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   bytes ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) agoq_die("gemm_wg: cuTensorMapEncodeTiled failed (%d) for [%d][%d]", (int)r, outer, inner);
}

int num_sms() {
    static int nsm = 0;
    if (!nsm) {
        int dev = 0;
        cudaCheck(cudaGetDevice(&dev));
        cudaCheck(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
    }
    return nsm;
}
long num_tiles(int m, int n, int tn) { return (long)((m + BM - 1) / BM) * ((n + tn - 1) / tn); }

/* One GEMM's launch: its TMA maps, kernel parameters, stream and grid knobs. */
struct wg_launch {
    CUtensorMap ma, mb;
    wg_params p;
    cudaStream_t s;
    int grid_cap;     /* AGOQ_WG_GRID_CAP (0: none) */
    bool one_tile;    /* AGOQ_WG_ONE_TILE */
    int sk_min_saved; /* AGOQ_WG_STREAMK: 1 AGOQ_WG_SK_MIN_SAVED, all 0 (gemm_wg_sk.h) */
    wg_launch(const agoq_wg_knobs &kn, void *stream)
        : s((cudaStream_t)stream), grid_cap(kn.grid_cap), one_tile(kn.one_tile),
          sk_min_saved(kn.streamk == 2 ? 0 : AGOQ_WG_SK_MIN_SAVED) {}
};

/* AGOQ_WG_CLUSTER=2: the kernel in clusters of two CTAs along M (cudaLaunchKernelEx with a
 * cluster dimension), grid 2 x (pairs of row tiles x column tiles), at most as many clusters as
 * fit at once (cudaOccupancyMaxActiveClusters, asked once per kernel: *fit; persistent) and
 * AGOQ_WG_GRID_CAP / 2 (at least 1). */
template <typename K>
void launch_cluster(K kernel, int smem, const wg_launch &l, int tn, int *fit) {
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(THREADS, 1, 1), cfg.dynamicSmemBytes = (size_t)smem, cfg.stream = l.s;
    cfg.attrs = at, cfg.numAttrs = 1;
    long clusters = (long)((l.p.m + BM - 1) / BM + 1) / 2 * ((l.p.n + tn - 1) / tn);
    if (!l.one_tile) {
        if (!*fit) {
            cfg.gridDim = dim3(2 * (unsigned)(num_sms() / 2), 1, 1);
            cudaCheck(cudaOccupancyMaxActiveClusters(fit, kernel, &cfg));
            if (*fit <= 0) agoq_die("gemm_wg: no cluster of 2 CTAs of %d B shared memory fits on this device", smem);
            /* once a kernel and process: fewer than num_sms() / 2 leaves SMs idle, a cost to weigh */
            fprintf(stderr, "gemm_wg: AGOQ_WG_CLUSTER=2: %d clusters of 2 CTAs fit at once (%d SMs)\n", *fit, num_sms());
        }
        if (clusters > *fit) clusters = *fit;
        if (l.grid_cap > 0 && clusters > l.grid_cap / 2) clusters = l.grid_cap > 1 ? l.grid_cap / 2 : 1;
    }
    cfg.gridDim = dim3(2 * (unsigned)clusters, 1, 1);
    cudaCheck(cudaLaunchKernelEx(&cfg, kernel, l.ma, l.mb, l.p));
}

/* AGOQ_WG_STREAMK's workspace on a device (gemm_wg_sk.h): `slots` partial tiles of BM x BN fp32
 * and their flags, zeroed once (every launch leaves them zero), at most 2 x 132 slots (33 MiB on
 * an H100 / H200), kept until the process ends. One per device, used by one split launch at a
 * time: under sk_mutex a launch on stream s first waits (on the GPU) for the event the previous
 * split launch recorded on another stream, and records its own after it, so split GEMMs on two
 * streams run one after the other and the memory does not grow with the streams a process makes.
 * Grows after a device synchronization. No split while the stream is captured into a CUDA graph
 * (sk_acquire returns false: the caller runs the unsplit kernel). */
struct sk_space {
    int slots;
    float4 *ws;
    unsigned *flags;
    cudaEvent_t done;   /* recorded after the last split launch */
    cudaStream_t last;  /* its stream */
    bool used;
};
std::mutex &sk_mutex() {
    static std::mutex mu;
    return mu;
}
sk_space &sk_of_device() {
    static sk_space per[64];
    int dev = 0;
    cudaCheck(cudaGetDevice(&dev));
    if (dev < 0 || dev >= 64) agoq_die("gemm_wg: split-wave workspace: device %d out of range", dev);
    return per[dev];
}
/* Under sk_mutex: the workspace for `slots` slots, ordered after its previous user on stream s. */
bool sk_acquire(cudaStream_t s, int slots, float4 **ws, unsigned **flags) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaCheck(cudaStreamIsCapturing(s, &cs));
    if (cs != cudaStreamCaptureStatusNone) return false;
    sk_space &e = sk_of_device();
    if (!e.done) cudaCheck(cudaEventCreateWithFlags(&e.done, cudaEventDisableTiming));
    if (e.slots < slots) {
        cudaCheck(cudaDeviceSynchronize()); /* no kernel may still use the old one */
        if (e.ws) {
            cudaCheck(cudaFree(e.ws));
            cudaCheck(cudaFree(e.flags));
        }
        cudaCheck(cudaMalloc(&e.ws, (size_t)slots * BM * BN * sizeof(float)));
        cudaCheck(cudaMalloc(&e.flags, (size_t)slots * sizeof(unsigned)));
        cudaCheck(cudaMemset(e.flags, 0, (size_t)slots * sizeof(unsigned)));
        cudaCheck(cudaDeviceSynchronize());
        e.slots = slots;
    } else if (e.used && e.last != s) {
        cudaCheck(cudaStreamWaitEvent(s, e.done, 0));
    }
    *ws = e.ws, *flags = e.flags;
    return true;
}
/* Under sk_mutex, after the split launch on stream s. */
void sk_release(cudaStream_t s) {
    sk_space &e = sk_of_device();
    cudaCheck(cudaEventRecord(e.done, s));
    e.last = s, e.used = true;
}

/* Five stages (off; docs/gemm_prologue.md "Forty-first session"). AGOQ_WG_DEQ_SMEM=5: two bf16 tiles a
 * consumer, C (+ residual) stored from the consumers' registers (store_direct), no staging tile;
 * =6: 128 x 192 tiles (28 KB stages), AGOQ_WG_DQS_BUFS4 bf16 tiles a consumer, C staged as with 4 */
constexpr int DQ5_SMEM_BYTES = 5 * DQ4_STAGE_BYTES + 2 * 2 * DQ_TILE_BYTES + 1024;
constexpr int DQ6_SMEM_BYTES = 5 * dq4_stage_bytes(DQP_TN) + 2 * AGOQ_WG_DQS_BUFS4 * DQ_TILE_BYTES + HALF_ROWS * C_STRIDE * 2 + 1024;
static_assert(DQ5_SMEM_BYTES + 256 <= 232448 && DQ6_SMEM_BYTES + 256 <= 232448, "5-stage prologues exceed 227 KB");
template <int TA, int TB, bool QOUT, int DQ = 0, bool FASTQ = false, int ST = STAGES, int TN = BN, int ER = 1,
          bool BULK = false, bool GQ = false, int CL = 1, bool SK = false>
void launch(const wg_launch &l) {
    constexpr int smem = DQ == 1 || DQ == 4 ? (ST == 5 ? (TN == BN ? DQ5_SMEM_BYTES : DQ6_SMEM_BYTES) : ST == 4 ? DQ4_SMEM_BYTES : DQ_SMEM_BYTES) : DQ >= 2 ? DQR_SMEM_BYTES : smem_bytes<ST, TN>();
    static bool attr = false;
    if (!attr) {
        cudaCheck(cudaFuncSetAttribute(wg_kernel<TA, TB, QOUT, DQ, FASTQ, ST, TN, ER, BULK, GQ, CL, SK>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr = true;
    }
    if constexpr (CL == 2) {
        static int fit = 0; /* clusters of this kernel that fit at once */
        launch_cluster(wg_kernel<TA, TB, QOUT, DQ, FASTQ, ST, TN, ER, BULK, GQ, CL>, smem, l, TN, &fit);
        cudaCheckLaunch();
        return;
    }
    /* persistent: one CTA per SM at most; AGOQ_WG_GRID_CAP=N caps the grid (the tests use it to
     * run several tiles per CTA on small shapes); AGOQ_WG_ONE_TILE=1: one tile per CTA */
    long grid = num_tiles(l.p.m, l.p.n, TN);
    if (!l.one_tile) {
        if (grid > num_sms()) grid = num_sms();
        if (l.grid_cap > 0 && grid > l.grid_cap) grid = l.grid_cap;
    }
    wg_params p = l.p;
    std::unique_lock<std::mutex> hold; /* SK: the workspace's, from acquire to release */
    if constexpr (SK) { /* AGOQ_WG_STREAMK: the schedule on this grid; none: the kernel without */
        p.sk = agoq_wg_sk_plan((int)num_tiles(p.m, p.n, TN), (int)grid, (p.k + BK - 1) / BK, 1, l.sk_min_saved);
        if (p.sk.r) hold = std::unique_lock<std::mutex>(sk_mutex());
        if (!p.sk.r || !sk_acquire(l.s, p.sk.r * (p.sk.s - 1), &p.sk_ws, &p.sk_flags)) {
            if (hold) hold.unlock();
            launch<TA, TB, QOUT, DQ, FASTQ, ST, TN, ER, BULK, GQ, CL, false>(l);
            return;
        }
    }
    wg_kernel<TA, TB, QOUT, DQ, FASTQ, ST, TN, ER, BULK, GQ, CL, SK><<<(unsigned)grid, DQ == 4 ? DQP_THREADS : THREADS, smem, l.s>>>(l.ma, l.mb, p);
    cudaCheckLaunch();
    if constexpr (SK) sk_release(l.s);
}
template <bool QOUT, int ST, int TN = BN, int CL = 1, bool SK = false>
void launch_t(int ta, int tb, const wg_launch &l) {
    if (!ta && !tb) launch<0, 0, QOUT, 0, false, ST, TN, 1, false, false, CL, SK>(l);
    else if (!ta && tb) launch<0, 1, QOUT, 0, false, ST, TN, 1, false, false, CL, SK>(l);
    else if (ta && !tb) launch<1, 0, QOUT, 0, false, ST, TN, 1, false, false, CL, SK>(l);
    else launch<1, 1, QOUT, 0, false, ST, TN, 1, false, false, CL, SK>(l);
}
/* The epilogue variants (gemm_wg_epi.cuh): AGOQ_WG_EPI_ROWS=1|4|8 rows a warp iteration (unset:
 * 4 for the fast FP4 copy and the plain epilogues, 8 for the general formats' row tiles),
 * AGOQ_WG_BULK=0|1 bulk copies of the residual and C (default 0), AGOQ_WG_EPI_GEN=rows|blocks:
 * the quantized copy in a format other than the fast FP4 one through the row tiles
 * (epi_rows_general: int sym / asym, fp8, tables with 4- or 8-bit codes, blocks of 128, round
 * to nearest, N % 128 == 0, A and B K-major, 3 stages; the default) or a thread a block
 * (quant_blocks, every other format).
 * Measured on the H200 at 2ed72c8 (experiments/gemm_wg_epi.json, results/h200/logs/
 * gemm_wg_epirows_g7/), vs cuBLASLt (+ quantize) at 4096 / 65536 tokens: 4 rows raise the FP4
 * copies of TP=8 out-projection 0.53 / 0.48 -> 0.78 / 0.69 and TP=8 FC2 0.70 / 0.69 -> 0.94 /
 * 0.92, the plain residual TP=8 out-projection 0.82 / 0.98 -> 0.93 / 1.10; bulk copies lose
 * (0.46-0.64 fused with 1 row, 0.64-0.86 with 4).
 * Measured at 5883341 (results/h200/logs/gemm_wg_epi_g8/, docs/gemm.md): 8 rows leave the FP4
 * copy within the noise of 4 (4 stays its default); the general formats at block 128 (INT8, FP8
 * E4M3, INT4-asym) go from a thread a block (0.46-0.55 of cuBLASLt + quantize, TP=8 out) to row
 * tiles of 4 (0.63-0.78) and of 8 (0.69-0.87; TP=8 FC2 0.65-0.72 -> 0.80-0.95 -> 0.91-1.01).
 * launch_epi: the 3-stage forward kernels (A, B K-major, 256 wide) with the epilogue variants er
 * (1, 4 or 8) and bulk: FASTQ, the fast FP4 copy; else a plain epilogue (+ residual). */
template <bool FASTQ>
void launch_epi(int er, bool bulk, const wg_launch &l) {
    if (er == 8 && bulk) launch<0, 0, FASTQ, 0, FASTQ, STAGES, BN, 8, true>(l);
    else if (er == 8) launch<0, 0, FASTQ, 0, FASTQ, STAGES, BN, 8, false>(l);
    else if (er == 4 && bulk) launch<0, 0, FASTQ, 0, FASTQ, STAGES, BN, 4, true>(l);
    else if (er == 4) launch<0, 0, FASTQ, 0, FASTQ, STAGES, BN, 4, false>(l);
    else if (bulk) launch<0, 0, FASTQ, 0, FASTQ, STAGES, BN, 1, true>(l);
    else launch<0, 0, FASTQ, 0, FASTQ, STAGES, BN, 1, false>(l);
}
/* The general formats' copy through the row tiles (AGOQ_WG_EPI_GEN=rows): 8 rows a warp
 * iteration (the default, er = 8), else 4 (no bulk copies). */
void launch_gen(int er, const wg_launch &l) {
    if (er == 8) launch<0, 0, true, 0, false, STAGES, BN, 8, false, true>(l);
    else launch<0, 0, true, 0, false, STAGES, BN, 4, false, true>(l);
}
/* Width of the bf16 kernels' tile (AGOQ_WG_TILE_N): auto, the default since the twelfth session:
 * 192 (m64n192k16; 3 or 4 stages as for BN) for a GEMM without a quantized copy (whose blocks of
 * 128 would straddle two 192-wide tiles) where its tiles fill the persistent CTAs' waves better
 * than BN's by more than 10% of a wave, else BN (256). Measured on the H200 at 9b97292
 * (experiments/gemm_wg.json, two rounds, results/h200/logs/s12_callE_9b97292/): of the 66 plain
 * points auto changes one, 7B TP=8 QKV at 4096 tokens (192 tiles of 256 fill 73% of two waves,
 * 256 of 192 97%): 0.71 -> 0.88 of cuBLASLt; 192 everywhere: median 0.94 -> 0.88 (the narrower
 * tile moves more A per flop). 256, 192 and 128 force a width (128: 3 stages, the general
 * epilogue quantizer, a block dividing 128, else BN; 192: BN for a quantized copy). The earlier
 * auto's 128-wide tiles lost their A/B (fb7cc8a: 0.43-0.79x of cuBLASLt); so did 320-wide ones
 * (m64n256k16 + m64n64k16, three stages, C staged in halves; twenty-seventh session, H100,
 * results/h100/logs/s27_1272be5/: vs_cublas geomean 0.820 of auto over the 66 plain points). */
static double wave_fill(long tiles) { /* busy share of the persistent CTAs' waves */
    const long nsm = num_sms();
    return (double)tiles / (double)(((tiles + nsm - 1) / nsm) * nsm);
}
int tile_n(const agoq_wg_args *g, int knob) {
    if (knob == BN) return BN;
    if (knob == 192) return g->q ? BN : 192;
    if (knob == 128) return g->q && 128 % g->q->p.block ? BN : 128;
    if (g->q) return BN;
    return wave_fill(num_tiles(g->m, g->n, 192)) > wave_fill(num_tiles(g->m, g->n, BN)) + 0.1 ? 192 : BN;
}
/* Stages of the bf16 kernels' ring (AGOQ_WG_STAGES): by epilogue (the default: 4 for a plain
 * epilogue, 3 with a residual or a quantized copy), or 3 or 4 for every GEMM; table encoders
 * stay on 3 (no shared memory left for the table). Measured on the H200 at fb7cc8a
 * (experiments/gemm_wg_knobs.json, results/h200/logs/gemm_wg_knobs_s5/): 4 stages raise the
 * plain GEMMs (7B FC1 dgrad 0.84 -> 0.97 of cuBLASLt at 65536 tokens, wgrad 0.81 -> 0.97, FC1
 * 0.90 -> 0.93, 13B QKV 0.87 -> 0.90) and lower those whose epilogue has more to do with C
 * staged in halves (the residual out-projection 0.95 -> 0.82, TP=8 FC2 1.04 -> 0.96, fused FP4
 * copies 0.98-1.02 -> 0.82-0.88). */
bool four_stages(const agoq_wg_args *g, int knob) {
    return (knob == 4 || (knob == 0 && !g->q && !g->r)) && !(g->q && g->q->p.enc == AGOQ_ENC_TABLE);
}
bool al16(const void *p) { return ((uintptr_t)p & 15u) == 0; }
} // namespace

/* agoq_wg_check: gemm_wg_check.c (plain C: the step planner's dry runs use it in every build) */
static_assert(BN == AGOQ_WG_TILE_N, "gemm_wg_check.c checks the block against AGOQ_WG_TILE_N");

extern "C" int agoq_wg_gemm(const agoq_wg_args *g, void *stream) {
    AGOQ_REQUIRE(g && g->a && g->b && g->c, "gemm_wg: missing operand");
    if (agoq_wg_check(g->m, g->n, g->k, g->q ? &g->q->c : NULL)) return -1;
    AGOQ_REQUIRE(al16(g->a) && al16(g->b) && al16(g->c) && (!g->r || al16(g->r)),
                 "gemm_wg: operands must be 16-byte aligned");
    AGOQ_REQUIRE(!g->q || g->cq.codes, "gemm_wg: quantized copy requested without its planes");
    const agoq_wg_knobs kn = agoq_wg_knobs_read();
    const bool st4 = four_stages(g, kn.stages), bk = kn.bulk;
    const int er = kn.epi_rows;
    /* The fast FP4 epilogue encoder where it applies (store_rows); AGOQ_WG_FAST_EPI=0 sends
     * every format through the general per-block path (the tests cover both). N % 256 == 128
     * (13B TP=8 FC1: N = 3456) through the row tiles (ER 4 or 8; nineteenth session), whose last
     * tile's second block lies past N; one row a warp (ER = 1: AGOQ_WG_EPI_ROWS=1, or the
     * 4-stage kernel) addresses whole rows of 256 */
    const bool rows256 = g->n % 256 == 0 || (er != 1 && !st4);
    bool fast = g->q && kn.fast_epi && !g->a_mn && !g->b_mn && g->q->c.fmt == AGOQ_FMT_FP4_E2M1 &&
                g->q->p.block == 128 && g->q->p.enc == AGOQ_ENC_FP4 && !g->q->p.stochastic && g->n % 128 == 0 && rows256;
    const int tn = tile_n(g, kn.tile_n);
    if (tn != BN) fast = false; /* the fast encoder takes rows of 256 */
    /* the general formats' row-tile copy (AGOQ_WG_EPI_GEN; ER 4 or 8 whatever the knob says) */
    const bool gen = g->q && !fast && tn == BN && kn.fast_epi && !g->a_mn && !g->b_mn && g->q->p.block == 128 &&
                     g->q->p.enc != AGOQ_ENC_FP4 && fz_fast_quant(g->q->p, g->cq) && g->n % 128 == 0 && kn.gen_rows;
    /* AGOQ_WG_CLUSTER=2: the 4-stage kernels without a quantized copy (plain, or a residual with
     * AGOQ_WG_STAGES=4) in clusters of two CTAs along M sharing B; every other kernel as before.
     * AGOQ_WG_CLUSTER=2all (fourteenth session, not yet run on a GPU): also the 3-stage forward
     * kernels with their default epilogue rows and no bulk copies: a residual (4 rows), the fast
     * FP4 copy (4 rows), the general formats' row tiles (8 rows) */
    const bool epi3 = kn.cluster_all && !st4 && !g->a_mn && !g->b_mn && !bk && kn.epi_rows == 0 && (fast || gen || !g->q);
    const bool cl2 = kn.cluster == 2 && tn == BN && ((st4 && !g->q) || epi3);
    /* AGOQ_WG_STREAMK=1|all (seventeenth session): the 256-wide kernels of a plain epilogue on 4
     * stages (every layout), and the forward ones on 3 stages with a residual or the fast FP4
     * copy (4 epilogue rows), split the partial last wave's tiles by k (gemm_wg_sk.h; launch()
     * runs the unsplit kernel where the plan splits nothing). H200, e664521, every split (=all):
     * geomean 1.010x of the unsplit kernel's vs_cublas over 12 points, 0.95-1.11x each, 0.995-
     * 1.11x where =1 splits; H100, 9c32540 (one releasing thread a PART): =1 1.018x, =all 1.008x
     * (docs/gemm.md); default 1 (gemm_wg_knobs.h) */
    const bool skk = kn.streamk && tn == BN && !cl2 && !bk && (er == 0 || er == 4) && !kn.one_tile;
    wg_launch l(kn, stream);
    if (g->a_mn) make_map(&l.ma, g->a, g->m, g->k, 64); /* A stored [K][M] */
    else make_map(&l.ma, g->a, g->k, g->m, BM);         /* A stored [M][K] */
    if (g->b_mn) make_map(&l.mb, g->b, g->n, g->k, 64); /* B stored [K][N] */
    else make_map(&l.mb, g->b, g->k, g->n, cl2 ? tn / 2 : tn); /* B stored [N][K]; CL = 2: a rank's half */
    /* AGOQ_WG_MN_SWAP=1 swaps the MN-major LBO and SBO: a diagnostic for the one reading of the
     * descriptor that the device test did not confirm (gemm_wg.cu's top comment); not for use. */
    const uint32_t lbo = kn.mn_swap ? 1024u : (uint32_t)MN_BOX_BYTES, sbo = kn.mn_swap ? (uint32_t)MN_BOX_BYTES : 1024u;
    l.p = {g->m, g->n, g->k, g->r, g->c, g->q ? g->q->p : agoq_cuda_qparams{}, g->cq, lbo, sbo,
           agoq_cuda_qparams{}, agoq_dqt{}, kn.group_m, agoq_wg_sk{}, NULL, NULL};
    if (skk && st4 && !g->q) launch_t<false, 4, BN, 1, true>(g->a_mn, g->b_mn, l);
    else if (skk && fast && !st4) launch<0, 0, true, 0, true, STAGES, BN, 4, false, false, 1, true>(l);
    else if (skk && !g->q && !st4 && !g->a_mn && !g->b_mn) launch<0, 0, false, 0, false, STAGES, BN, 4, false, false, 1, true>(l);
    else if (tn == 192 && st4) launch_t<false, 4, 192>(g->a_mn, g->b_mn, l);
    else if (tn == 192) launch_t<false, STAGES, 192>(g->a_mn, g->b_mn, l);
    else if (tn == 128 && g->q) launch_t<true, STAGES, 128>(g->a_mn, g->b_mn, l);
    else if (tn == 128) launch_t<false, STAGES, 128>(g->a_mn, g->b_mn, l);
    else if (fast && st4) launch<0, 0, true, 0, true, 4>(l);
    else if (fast && cl2) launch<0, 0, true, 0, true, STAGES, BN, 4, false, false, 2>(l);
    else if (fast) launch_epi<true>(er ? er : 4, bk, l);
    else if (gen && !st4 && cl2) launch<0, 0, true, 0, false, STAGES, BN, 8, false, true, 2>(l);
    else if (gen && !st4) launch_gen(er ? er : 8, l);
    else if (g->q && st4) launch_t<true, 4>(g->a_mn, g->b_mn, l);
    else if (g->q) launch_t<true, STAGES>(g->a_mn, g->b_mn, l);
    else if (cl2 && st4) launch_t<false, 4, BN, 2>(g->a_mn, g->b_mn, l);
    else if (st4) launch_t<false, 4>(g->a_mn, g->b_mn, l);
    else if (cl2) launch<0, 0, false, 0, false, STAGES, BN, 4, false, false, 2>(l);
    else if (!g->a_mn && !g->b_mn) launch_epi<false>(er ? er : 4, bk, l);
    else launch_t<false, STAGES>(g->a_mn, g->b_mn, l);
    return 0;
}

extern "C" int agoq_wg_fwd(int M, int N, int K, const uint16_t *X, const uint16_t *W, const uint16_t *R, uint16_t *Y,
                           const agoq_fq *q, agoq_dqt yq, void *stream) {
    const agoq_wg_args g = {M, N, K, X, 0, W, 0, R, Y, q, yq};
    return agoq_wg_gemm(&g, stream);
}
extern "C" int agoq_wg_dgrad(int M, int N, int K, const uint16_t *dY, const uint16_t *W, const uint16_t *R, uint16_t *dX,
                             void *stream) {
    const agoq_wg_args g = {M, K, N, dY, 0, W, 1, R, dX, NULL, agoq_dqt{}};
    return agoq_wg_gemm(&g, stream);
}
extern "C" int agoq_wg_wgrad(int M, int N, int K, const uint16_t *dY, const uint16_t *X, uint16_t *dW, void *stream) {
    const agoq_wg_args g = {N, K, M, dY, 1, X, 1, NULL, dW, NULL, agoq_dqt{}};
    return agoq_wg_gemm(&g, stream);
}

extern "C" int agoq_wg_fwd_deqa(int M, int N, int K, const agoq_fq *qx, agoq_dqt xq, const uint16_t *W,
                                const uint16_t *R, uint16_t *Y, void *stream) {
    AGOQ_REQUIRE(qx && xq.codes && xq.scales && W && Y, "gemm_wg deqa: missing operand");
    if (agoq_wg_check(M, N, K, NULL) || agoq_qconfig_check(&qx->c)) return -1;
    const int bits = qx->p.bits, block = qx->p.block;
    AGOQ_REQUIRE(bits == 4 || bits == 8, "gemm_wg deqa: stored A must be 4- or 8-bit codes, not %d-bit", bits);
    AGOQ_REQUIRE(block % BK == 0 && K % block == 0, "gemm_wg deqa: block %d must be a multiple of %d dividing K=%d",
                 block, BK, K);
    AGOQ_REQUIRE(al16(xq.codes) && al16(W) && al16(Y) && (!R || al16(R)), "gemm_wg deqa: operands must be 16-byte aligned");
    const agoq_wg_knobs kn = agoq_wg_knobs_read();
    wg_launch l(kn, stream);
    make_map(&l.ma, xq.codes, K * bits / 8, M, BM, true, BK * bits / 8); /* codes [M][K bits / 8] */
    const bool b4 = bits == 4 && (qx->p.enc == AGOQ_ENC_FP4 || qx->p.dec == AGOQ_ENC_INT_SYM || qx->p.dec == AGOQ_ENC_INT_ASYM);
    const bool dqp = kn.deq_producer && b4; /* the decoder warpgroup: 192-wide tiles (gemm_wg_dqp.cuh) */
    const bool s6 = kn.deq_smem == 6 && b4; /* five stages of 128 x 192 tiles */
    make_map(&l.mb, W, K, N, dqp || s6 ? DQP_TN : BN);
    l.p = {M, N, K, R, Y, agoq_cuda_qparams{}, agoq_dqt{}, MN_BOX_BYTES, 1024u, qx->p, xq, kn.group_m, agoq_wg_sk{}, NULL, NULL};
    /* AGOQ_WG_DEQ_SMEM=4 (the default since the thirty-ninth session; docs/gemm_prologue.md has the
     * A/B; 4 stages where the codes are 4-bit and need no shared table, FP4 and int4, else 3) or 1:
     * a k-tile at a time into a shared bf16 tile while the previous k-tiles' wgmma run
     * (gemm_wg_deq.cuh's dqs_mainloop: FP4 by a per-row bf16 table); =0: the A fragments decoded in
     * registers; AGOQ_WG_DEQ_PRODUCER=1 (before SMEM, the same formats as =4): by a fourth
     * warpgroup of decoders for the consumers' plain mainloop (gemm_wg_dqp.cuh); =5 / =6: five stages
     * (C stored by the consumers / 128 x 192 tiles; off, forty-first session), the formats of =4 */
    if (dqp) launch<0, 0, false, 4, false, 4, DQP_TN>(l);
    else if (kn.deq_smem == 4 && b4) launch<0, 0, false, 1, false, 4>(l);
    else if (kn.deq_smem == 5 && b4) launch<0, 0, false, 1, false, 5>(l);
    else if (s6) launch<0, 0, false, 1, false, 5, DQP_TN>(l);
    else if (kn.deq_smem) launch<0, 0, false, 1>(l);
    else {
        /* AGOQ_WG_DEQ_AHEAD=1 (thirteenth session, off): kernels 5 / 6, the register prologue with
         * the scales a k-tile ahead and the 4-bit codes loaded once per k-tile.
         * AGOQ_WG_DEQ_FP4=arith (the default since the sixteenth session; =table: the pairs table)
         * decodes FP4 by arithmetic in kernel 5 (it reads the preloaded codes: implies AHEAD). A
         * 4-stage ring for 4-bit codes was dropped before any run: ptxas serialized its wgmma
         * (C7513). Sixteenth session, H100 (one device call, two rounds, FC2 of 7B / 13B reading
         * its stored FP4 input, docs/gemm.md): against the pairs table without AHEAD, geometric
         * mean of vs_cublas_quant over 6 points, arith 1.068x, AHEAD 1.039x; a k-tile's four
         * fragments before one wait (AGOQ_WG_DEQ_BUFS=4, kernels 7 / 8) 0.959x and the same with
         * the warpgroups issuing in turn (=4o, kernels 9 / 10) 0.930x, slower at every point:
         * both removed (docs/gemm.md). */
        const bool fp4a = l.p.qa.enc == AGOQ_ENC_FP4 && kn.deq_fp4_arith, ah = kn.deq_ahead || fp4a;
        const bool intk = l.p.qa.dec == AGOQ_ENC_INT_SYM || l.p.qa.dec == AGOQ_ENC_INT_ASYM || fp4a;
        if (ah) intk ? launch<0, 0, false, 5>(l) : launch<0, 0, false, 6>(l);
        else intk ? launch<0, 0, false, 2>(l) : launch<0, 0, false, 3>(l);
    }
    return 0;
}
