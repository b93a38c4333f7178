/* kernels/gemm/gemm_wg_knobs.c: the Hopper GEMM's environment knobs, read without a GPU. Every
 * default, every accepted value, and a bad value of each knob refused in one line naming it (in
 * a forked child: the reader exits). The GPU test (tests/cuda/gemm/test_gemm_wg_cuda.c) runs
 * the kernels behind each accepted value. */
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/gemm_wg_knobs.h"
#include "tests/test.h"

static const char *const names[] = {
    "AGOQ_WG_GRID_CAP", "AGOQ_WG_ONE_TILE", "AGOQ_WG_TILE_N",   "AGOQ_WG_STAGES",   "AGOQ_WG_EPI_ROWS",
    "AGOQ_WG_BULK",     "AGOQ_WG_EPI_GEN",  "AGOQ_WG_GROUP_M",  "AGOQ_WG_FAST_EPI", "AGOQ_WG_MN_SWAP",
    "AGOQ_WG_DEQ_SMEM", "AGOQ_WG_DEQ_PRODUCER", "AGOQ_WG_CLUSTER", "AGOQ_WG_DEQ_AHEAD", "AGOQ_WG_DEQ_FP4",
    "AGOQ_WG_STREAMK",
};
enum { NKNOBS = sizeof names / sizeof names[0] };

/* Unsets every knob; returns their saved values (the caller restores them). */
static void save_clear(char *saved[NKNOBS]) { agoq_test_env_save(names, NKNOBS, saved); }
static void restore(char *saved[NKNOBS]) { agoq_test_env_restore(names, NKNOBS, saved); }

/* the knobs read with name=value set (on top of what is set already) */
static agoq_wg_knobs knobs_with(const char *name, const char *value) {
    setenv(name, value, 1);
    return agoq_wg_knobs_read();
}

TEST(gemm_wg_knobs_defaults_and_accepted_values) {
    char *saved[NKNOBS];
    save_clear(saved);
    agoq_wg_knobs k = agoq_wg_knobs_read();
    const int defaults_ok = k.grid_cap == 0 && k.one_tile == 0 && k.tile_n == 0 && k.stages == 0 && k.epi_rows == 0 &&
                            k.bulk == 0 && k.gen_rows == 1 && k.group_m == 8 && k.fast_epi == 1 && k.mn_swap == 0 &&
                            k.deq_smem == 4 && k.deq_producer == 0 && k.cluster == 1 && k.cluster_all == 0 &&
                            k.deq_ahead == 0 && k.deq_fp4_arith == 1 && k.streamk == 1;
    /* each accepted value, alone: the field it sets */
    static const struct { const char *name, *value; int want; } good[] = {
        {"AGOQ_WG_GRID_CAP", "0", 0},    {"AGOQ_WG_GRID_CAP", "3", 3},     {"AGOQ_WG_ONE_TILE", "1", 1},
        {"AGOQ_WG_ONE_TILE", "0", 0},    {"AGOQ_WG_TILE_N", "256", 256},   {"AGOQ_WG_TILE_N", "128", 128},
        {"AGOQ_WG_TILE_N", "192", 192},  {"AGOQ_WG_TILE_N", "auto", 0},    {"AGOQ_WG_STAGES", "auto", 0},
        {"AGOQ_WG_STAGES", "3", 3},
        {"AGOQ_WG_STAGES", "4", 4},      {"AGOQ_WG_EPI_ROWS", "1", 1},     {"AGOQ_WG_EPI_ROWS", "4", 4},
        {"AGOQ_WG_EPI_ROWS", "8", 8},    {"AGOQ_WG_BULK", "0", 0},         {"AGOQ_WG_BULK", "1", 1},
        {"AGOQ_WG_EPI_GEN", "rows", 1},  {"AGOQ_WG_EPI_GEN", "blocks", 0}, {"AGOQ_WG_GROUP_M", "1", 1},
        {"AGOQ_WG_GROUP_M", "16", 16},   {"AGOQ_WG_GROUP_M", "64", 64},    {"AGOQ_WG_FAST_EPI", "0", 0},
        {"AGOQ_WG_FAST_EPI", "1", 1},    {"AGOQ_WG_MN_SWAP", "1", 1},      {"AGOQ_WG_DEQ_SMEM", "1", 1},
        {"AGOQ_WG_DEQ_SMEM", "4", 4},    {"AGOQ_WG_DEQ_SMEM", "5", 5},     {"AGOQ_WG_DEQ_SMEM", "6", 6},
        {"AGOQ_WG_DEQ_SMEM", "0", 0},
        {"AGOQ_WG_DEQ_PRODUCER", "1", 1}, {"AGOQ_WG_CLUSTER", "1", 1},     {"AGOQ_WG_CLUSTER", "2", 2},
        {"AGOQ_WG_CLUSTER", "2all", 2},
        {"AGOQ_WG_DEQ_AHEAD", "1", 1},    {"AGOQ_WG_DEQ_FP4", "table", 0},  {"AGOQ_WG_DEQ_FP4", "arith", 1},
        {"AGOQ_WG_STREAMK", "1", 1},      {"AGOQ_WG_STREAMK", "0", 0},     {"AGOQ_WG_STREAMK", "all", 2},
    };
    int bad = -1;
    for (size_t i = 0; i < sizeof good / sizeof good[0] && bad < 0; i++) {
        setenv(good[i].name, good[i].value, 1);
        k = agoq_wg_knobs_read();
        unsetenv(good[i].name);
        const int fields[NKNOBS] = {k.grid_cap, k.one_tile, k.tile_n,   k.stages,  k.epi_rows, k.bulk,
                                    k.gen_rows, k.group_m,  k.fast_epi, k.mn_swap, k.deq_smem, k.deq_producer, k.cluster,
                                    k.deq_ahead, k.deq_fp4_arith, k.streamk};
        for (int f = 0; f < NKNOBS; f++)
            if (!strcmp(names[f], good[i].name) && fields[f] != good[i].want) bad = (int)i;
    }
    /* the second field: AGOQ_WG_CLUSTER=2all also clusters the 3-stage forward kernels */
    k = knobs_with("AGOQ_WG_CLUSTER", "2all");
    const int all_ok = k.cluster == 2 && k.cluster_all == 1;
    k = knobs_with("AGOQ_WG_CLUSTER", "2");
    const int two_ok = k.cluster == 2 && k.cluster_all == 0;
    restore(saved);
    CHECK(defaults_ok);
    CHECK(all_ok && two_ok);
    CHECK_MSG(bad < 0, "%s=%s read wrong", good[bad].name, good[bad].value);
}

static void read_knobs(void *arg) {
    const char *const *kv = arg;
    for (int i = 0; i < NKNOBS; i++) unsetenv(names[i]);
    setenv(kv[0], kv[1], 1);
    agoq_wg_knobs_read();
}

TEST(gemm_wg_knobs_bad_values_die_in_one_line) {
    /* the values the GPU test used to run as the default after a warning ("7", "x", "3"), and
     * garbage the old readers took silently */
    static const char *const bad[][3] = {
        {"AGOQ_WG_STAGES", "7", "AGOQ_WG_STAGES=7: expected one of auto, 3, 4"},
        {"AGOQ_WG_TILE_N", "x", "AGOQ_WG_TILE_N=x: expected one of 256, 128, 192, auto"},
        {"AGOQ_WG_EPI_ROWS", "3", "AGOQ_WG_EPI_ROWS=3: expected one of 1, 4, 8"},
        {"AGOQ_WG_EPI_GEN", "x", "AGOQ_WG_EPI_GEN=x: expected one of rows, blocks"},
        {"AGOQ_WG_BULK", "2", "AGOQ_WG_BULK=2: expected 0 or 1"},
        {"AGOQ_WG_GROUP_M", "65", "AGOQ_WG_GROUP_M=65: expected an integer in 1..64"},
        {"AGOQ_WG_GROUP_M", "0", "AGOQ_WG_GROUP_M=0: expected an integer in 1..64"},
        {"AGOQ_WG_GRID_CAP", "-2", "AGOQ_WG_GRID_CAP=-2: expected an integer >= 0"},
        {"AGOQ_WG_GRID_CAP", "4k", "AGOQ_WG_GRID_CAP=4k: expected an integer >= 0"},
        {"AGOQ_WG_ONE_TILE", "yes", "AGOQ_WG_ONE_TILE=yes: expected 0 or 1"},
        {"AGOQ_WG_FAST_EPI", "off", "AGOQ_WG_FAST_EPI=off: expected 0 or 1"},
        {"AGOQ_WG_MN_SWAP", "2", "AGOQ_WG_MN_SWAP=2: expected 0 or 1"},
        {"AGOQ_WG_DEQ_SMEM", "true", "AGOQ_WG_DEQ_SMEM=true: expected one of 0, 1, 4, 5, 6"},
        {"AGOQ_WG_DEQ_PRODUCER", "11", "AGOQ_WG_DEQ_PRODUCER=11: expected 0 or 1"},
        {"AGOQ_WG_CLUSTER", "4", "AGOQ_WG_CLUSTER=4: expected one of 1, 2, 2all"},
        {"AGOQ_WG_DEQ_AHEAD", "2", "AGOQ_WG_DEQ_AHEAD=2: expected 0 or 1"},
        {"AGOQ_WG_DEQ_FP4", "1", "AGOQ_WG_DEQ_FP4=1: expected one of table, arith"},
        {"AGOQ_WG_STREAMK", "on", "AGOQ_WG_STREAMK=on: expected one of 0, 1, all"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(agoq_test_expect_die(read_knobs, (void *)bad[i], bad[i][2]), "%s=%s", bad[i][0], bad[i][1]);
}
