/* The Hopper GEMM's environment knobs; see gemm_wg_knobs.h. */
#include "kernels/gemm/gemm_wg_knobs.h"

#include <limits.h>
#include <stddef.h>

#include "core/knob.h"

agoq_wg_knobs agoq_wg_knobs_read(void) {
    static const char *const tile_n[] = {"256", "128", "192", "auto", NULL}, *const stages[] = {"auto", "3", "4", NULL},
                             *const epi_rows[] = {"1", "4", "8", NULL}, *const epi_gen[] = {"rows", "blocks", NULL},
                             *const cluster[] = {"1", "2", "2all", NULL}, *const deq_fp4[] = {"table", "arith", NULL},
                             *const streamk[] = {"0", "1", "all", NULL}, *const deq_smem[] = {"0", "1", "4", "5", "6", NULL};
    static const int tile_n_v[] = {256, 128, 192, 0}, stages_v[] = {0, 3, 4}, epi_rows_v[] = {1, 4, 8}, deq_smem_v[] = {0, 1, 4, 5, 6};
    const int er = agoq_knob_choice("AGOQ_WG_EPI_ROWS", -1, epi_rows), cl = agoq_knob_choice("AGOQ_WG_CLUSTER", 0, cluster);
    agoq_wg_knobs k = {
        .grid_cap = agoq_knob_int("AGOQ_WG_GRID_CAP", 0, 0, INT_MAX),
        .one_tile = agoq_knob_int("AGOQ_WG_ONE_TILE", 0, 0, 1),
        .tile_n = tile_n_v[agoq_knob_choice("AGOQ_WG_TILE_N", 3, tile_n)],
        .stages = stages_v[agoq_knob_choice("AGOQ_WG_STAGES", 0, stages)],
        .epi_rows = er < 0 ? 0 : epi_rows_v[er],
        .bulk = agoq_knob_int("AGOQ_WG_BULK", 0, 0, 1),
        .gen_rows = agoq_knob_choice("AGOQ_WG_EPI_GEN", 0, epi_gen) == 0,
        .group_m = agoq_knob_int("AGOQ_WG_GROUP_M", 8, 1, 64),
        .fast_epi = agoq_knob_int("AGOQ_WG_FAST_EPI", 1, 0, 1),
        .mn_swap = agoq_knob_int("AGOQ_WG_MN_SWAP", 0, 0, 1),
        .deq_smem = deq_smem_v[agoq_knob_choice("AGOQ_WG_DEQ_SMEM", 2, deq_smem)],
        .deq_producer = agoq_knob_int("AGOQ_WG_DEQ_PRODUCER", 0, 0, 1),
        .cluster = cl == 0 ? 1 : 2,
        .cluster_all = cl == 2,
        .deq_ahead = agoq_knob_int("AGOQ_WG_DEQ_AHEAD", 0, 0, 1),
        .deq_fp4_arith = agoq_knob_choice("AGOQ_WG_DEQ_FP4", 1, deq_fp4) == 1,
        .streamk = agoq_knob_choice("AGOQ_WG_STREAMK", 1, streamk),
    };
    return k;
}
