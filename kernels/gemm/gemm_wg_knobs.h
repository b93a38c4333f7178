/* The environment knobs of the Hopper GEMM (gemm_wg.cu; what each variant does, and what was
 * measured: gemm_wg_launch.cuh, docs/gemm.md), read at every call through core/knob.h (the tests
 * switch them between calls). Unset or empty: the default; any other value than those listed is
 * refused in one line naming the variable, the value and what is valid (exit 1). Plain C: the
 * host tests (tests/gemm/test_gemm_wg_knobs.c) read them without a GPU. */
#ifndef AGOQ_GEMM_WG_KNOBS_H
#define AGOQ_GEMM_WG_KNOBS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int grid_cap;     /* AGOQ_WG_GRID_CAP=N (>= 0): at most N persistent CTAs; 0 (default): one per SM */
    int one_tile;     /* AGOQ_WG_ONE_TILE=0|1: one tile per CTA, not persistent (a diagnostic; default 0) */
    int tile_n;       /* AGOQ_WG_TILE_N=256|128|192|auto: the bf16 tile's width, 256, 128, 192, 0 = auto (default) */
    int stages;       /* AGOQ_WG_STAGES=auto|3|4: the bf16 ring, 0 = auto (default: by epilogue), 3, 4 */
    int epi_rows;     /* AGOQ_WG_EPI_ROWS=1|4|8: rows a warp iteration; 0 when unset (by epilogue) */
    int bulk;         /* AGOQ_WG_BULK=0|1: bulk copies of the residual and C (default 0) */
    int gen_rows;     /* AGOQ_WG_EPI_GEN=rows|blocks: the general formats' copy, 1 = rows (default) */
    int group_m;      /* AGOQ_WG_GROUP_M=1..64: row tiles of a rasterization group (default 8) */
    int fast_epi;     /* AGOQ_WG_FAST_EPI=0|1: the fast FP4 epilogue where it applies (default 1) */
    int mn_swap;      /* AGOQ_WG_MN_SWAP=0|1: swap the MN-major LBO and SBO (a diagnostic; default 0) */
    int deq_smem;     /* AGOQ_WG_DEQ_SMEM=0|1|4|5|6: stored-A decode in registers (0), through shared memory
                       * (1), the same on 4 stages where the codes allow (4: 4-bit FP4 and integers, else
                       * as 1; the default since the thirty-ninth session), on 5 stages with C stored
                       * by the consumers (5: the same formats; measured slower, forty-first session),
                       * on 5 stages of 128 x 192 tiles (6: the same formats; not yet run on a GPU) */
    int deq_producer; /* AGOQ_WG_DEQ_PRODUCER=0|1: stored-A decode by a decoder warpgroup (default 0) */
    int deq_ahead;     /* AGOQ_WG_DEQ_AHEAD=0|1: the register prologue loads its scales a k-tile
                        * ahead and 4-bit codes once per k-tile (default 0; FP4 by arithmetic implies it) */
    int deq_fp4_arith; /* AGOQ_WG_DEQ_FP4=table|arith: the register prologue decodes FP4 codes by
                        * the 4-bit pairs table (0) or by arithmetic (1, default since the sixteenth
                        * session; implies AHEAD) */
    int cluster;      /* AGOQ_WG_CLUSTER=1|2|2all: CTAs a cluster of the 4-stage bf16 kernels, 2 sharing B
                       * by TMA multicast (gemm_wg_launch.cuh; default 1) */
    int cluster_all;  /* AGOQ_WG_CLUSTER=2all: the 3-stage forward kernels too (residual, fused copy;
                       * fourteenth session, not yet run on a GPU) */
    int streamk;      /* AGOQ_WG_STREAMK=0|1|all: the partial last wave's tiles split into chunks of
                       * k-tiles over the CTAs where that saves AGOQ_WG_SK_MIN_SAVED k-tiles (1) or
                       * any (all, 2) (gemm_wg_sk.h; seventeenth session; default 1: 1.017x on
                       * an H100; off at 31ec4da-61ae2dd until the workspace hand-off between
                       * streams of 77b4d7e had run on a GPU: H100, nineteenth session) */
} agoq_wg_knobs;

/* Every knob above, read now. */
agoq_wg_knobs agoq_wg_knobs_read(void);

#ifdef __cplusplus
}
#endif
#endif
