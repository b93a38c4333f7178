/* Where the tile kernels' transpose reduction (quant_tile.cuh, agoq_tile_reduce) leaves each
 * block's range, shared by the kernels and the host test that replays the reduction
 * (tests/quant/test_quant_math.c). K ranges per lane (block slots), LB lanes per block segment, both
 * powers of two: with K <= LB every lane holds one range, slot k in positions
 * [k*LB/K, (k+1)*LB/K) of the segment; with K > LB each lane holds K/LB consecutive slots. */
#ifndef AGOQ_QUANT_TILE_GEOM_H
#define AGOQ_QUANT_TILE_GEOM_H
#include "kernels/quant/quant_math.h"

/* A segment position holding slot k, and the index of slot k among that lane's held values. */
AGOQ_HD int agoq_tile_holder(int k, int K, int LB) { return K <= LB ? k * (LB / K) : k / (K / LB); }
AGOQ_HD int agoq_tile_held_index(int k, int K, int LB) { return K <= LB ? 0 : k % (K / LB); }
#endif
