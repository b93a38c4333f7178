/* The quantizers' launch options, read from the environment once (quant_cuda.h): the grid
 * (AGOQ_GRID) and the tile kernels' optional encoders (AGOQ_Q8, AGOQ_Q8_PF, AGOQ_Q8_LUT32; the
 * q6 / q7 ones, AGOQ_Q6_* and AGOQ_Q7, are fixed since the eleventh session: quant_launch.cuh),
 * with the per-encoder defaults of q8 / pf. Moved out of quant.cu (c45540f); the ninth session
 * added INT8-asym's q8 and NF4's pf to the defaults. */
#include "core/knob.h"
#include "kernels/quant/quant_cuda.h"

static int g_grid_resident = -1; /* -1: from AGOQ_GRID at the first launch */

int agoq_grid_resident_only(void) {
    if (g_grid_resident < 0) {
        static const char *const grids[] = {"units", "resident", NULL};
        g_grid_resident = agoq_knob_choice("AGOQ_GRID", 0, grids) == 1;
    }
    return g_grid_resident;
}

void agoq_cuda_grid_force(int mode) { g_grid_resident = mode < 0 ? -1 : mode != 0; }

static int g_tile_opts = -1; /* -1: from AGOQ_Q8, AGOQ_Q8_PF, AGOQ_Q8_LUT32 at the first launch */
static int g_tile_auto = 0;  /* AGOQ_TILE_OPT_Q8 / _PF / _LUT32: that knob unset, so each encoder's default below */

int agoq_cuda_tile_opts(void) {
    if (g_tile_opts < 0) {
        g_tile_auto = (agoq_knob_str("AGOQ_Q8") ? 0 : AGOQ_TILE_OPT_Q8) | (agoq_knob_str("AGOQ_Q8_PF") ? 0 : AGOQ_TILE_OPT_PF) |
                      (agoq_knob_str("AGOQ_Q8_LUT32") ? 0 : AGOQ_TILE_OPT_LUT32);
        g_tile_opts = (agoq_knob_int("AGOQ_Q8", 0, 0, 1) ? AGOQ_TILE_OPT_Q8 : 0) |
                      (agoq_knob_int("AGOQ_Q8_PF", 0, 0, 1) ? AGOQ_TILE_OPT_PF : 0) |
                      (agoq_knob_int("AGOQ_Q8_LUT32", 0, 0, 1) ? AGOQ_TILE_OPT_LUT32 : 0);
    }
    return g_tile_opts;
}

/* q8, pf and LUT32 where AGOQ_Q8 / AGOQ_Q8_PF / AGOQ_Q8_LUT32 are unset, per encoder and code width, from the A/B of
 * the eighth session (H200, ca17d3f, two rounds, results/h200/logs/s8_callB_ca17d3f/), bf16 input,
 * copy ratio at 256 MiB / 1 GiB / 4 GiB:
 *   INT4-asym  q8: 0.81 / 0.85 / 0.86 -> 0.95 / 0.96 / 0.96 (pf: 0.93-0.94; q8 alone kept)
 *   dyn8       q8 + pf: 0.64 / 0.72 / 0.74 -> 0.70 / 0.78 / 0.80 (q8 alone 0.70 / 0.77 / 0.79)
 *   FP4 E2M1   pf: 0.87 / 0.92 / 0.93 -> 0.93 / 0.93 / 0.92
 * and of the ninth (87f7ea8, with the benchmark arena, results/h200/logs/s9_callF_q8/):
 *   INT8-asym  q8: 0.91 / 0.92 / 0.93 -> 0.92-0.95 / 0.95 / 0.94-0.95 (pf alone 0.89-0.90, q8 + pf 0.90-0.92)
 *   NF4        pf: 0.80-0.82 / 0.88 / 0.89 -> 0.83 / 0.90 / 0.90-0.91 (q8 does not apply: NF4 takes the grid)
 * and of the twelfth (1dbd92e, two rounds, results/h200/logs/s12_ab_1dbd92e/; faster at every size
 * in both rounds, 64 MiB within 1%):
 *   dyn8       q8 + pf + LUT32: 0.53 / 0.70 / 0.78 / 0.80 -> 0.54 / 0.72 / 0.80 / 0.83 (with 64 MiB) */
int agoq_cuda_tile_opts_enc(int enc, int bits) {
    int o = agoq_cuda_tile_opts();
    int def = 0;
    if (enc == AGOQ_ENC_INT_ASYM) def = AGOQ_TILE_OPT_Q8; /* 4 and 8 bits */
    else if (enc == AGOQ_ENC_TABLE && bits == 8) def = AGOQ_TILE_OPT_Q8 | AGOQ_TILE_OPT_PF | AGOQ_TILE_OPT_LUT32;
    else if (enc == AGOQ_ENC_TABLE && bits == 4) def = AGOQ_TILE_OPT_PF;
    else if (enc == AGOQ_ENC_FP4) def = AGOQ_TILE_OPT_PF;
    return o | (def & g_tile_auto);
}

void agoq_cuda_tile_opts_force(int mask) {
    g_tile_opts = mask < 0 ? -1 : mask;
    g_tile_auto = 0; /* a forced mask is taken as it is; -1 reads the environment (and its defaults) again */
}

/* Default 1 from the twenty-second session's A/B (H200, 42279ba, AGOQ_G8_LUT32 0 / 1 / 1 / 0,
 * results/h200/logs/s22_42279ba/ab/), copy ratio at 64 MiB / 256 MiB / 1 GiB / 4 GiB: dyn8 bf16
 * accumulation 0.49 / 0.62 / 0.67 / 0.69 -> 0.59 / 0.75 / 0.82 / 0.84, the dyn8 reduce core 0.46 /
 * 0.50 / 0.52 / 0.52 -> 0.50 / 0.54 / 0.55 / 0.55, fp32 accumulation unchanged (+-0.005). */
int agoq_cuda_g8_lut32(void) { return agoq_knob_int("AGOQ_G8_LUT32", 1, 0, 1); }
