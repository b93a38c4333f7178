#!/usr/bin/env bash
# Run from the repository root: bash results/h200/logs/s11_ptxas/compare.sh
D=results/h200/logs/s11_ptxas
# the start's names of the kernels kept, in the end's spelling (template parameters removed)
norm() { sed -E \
  -e 's/dequant_tile_kernel<([^,]+),([^,]+),([^,]+),([^,]+),0,0,0>/dequant_tile_kernel<\1,\2,\3,\4>/' \
  -e 's/agoq_dequant_flat_kernel<([^>]*),16,1>/agoq_dequant_flat_kernel<\1,16>/' \
  -e 's/tile_reduce<([^,]+),([^,]+),([^,]+),([^,]+),false,([^,]+),([^>]+)>/tile_reduce<\1,\2,\3,\4,\5,\6>/g' \
  -e 's/swiglu_fwd_kernel<([^,]+),([^,]+),([^,]+),true,true,false,1,2>/swiglu_fwd_kernel<\1,\2,\3,true,2>/' \
  -e 's/swiglu_fwd_kernel<0,0,0,false,false,false,([0-9]),([0-9])>/swiglu_fwd_kernel<0,0,0,false,\2>/' "$1" | sort; }
for f in quant grad8 fused_swiglu; do
  s=$(norm $D/${f}_start.txt | wc -l); e=$(wc -l < $D/${f}_end.txt)
  notin=$(comm -13 <(norm $D/${f}_start.txt) $D/${f}_end.txt | wc -l)
  echo "$f: $s kernels at the start, $e at the end; kept kernels whose name, registers or spills differ from the start's: $notin"
done
