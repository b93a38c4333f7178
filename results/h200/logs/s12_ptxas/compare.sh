#!/usr/bin/env bash
# Run from the repository root: bash results/h200/logs/s12_ptxas/compare.sh
D=results/h200/logs/s12_ptxas
# the start's kept kernels in the end's spelling (the removed LUT32 / PF template parameters)
norm() { sed -E \
  -e 's/tile_reduce<([^,]+),([^,]+),([^,]+),([^,]+),false,([^,>]+)>/tile_reduce<\1,\2,\3,\4,\5>/g' \
  -e 's/tile_accumulate<([^,]+),([^,]+),([^,]+),([^,]+),false>/tile_accumulate<\1,\2,\3,\4>/g' \
  -e 's/rms_fwd_warp_kernel<([^,]+),([^,]+),([^,]+),([^,>]+),false>/rms_fwd_warp_kernel<\1,\2,\3,\4>/g' "$1" | sort; }
for f in grad8 fused_rmsnorm; do
  s=$(wc -l < $D/${f}_start.txt); e=$(wc -l < $D/${f}_end.txt)
  notin=$(comm -13 <(norm $D/${f}_start.txt) <(sort $D/${f}_end.txt) | wc -l)
  echo "$f: $s kernels at the start, $e at the end; kept kernels whose name, registers or spills differ from the start's: $notin"
done
q=$(comm -3 <(sort results/h200/logs/s11_ptxas/quant_end.txt) <(sort $D/quant_end.txt) | wc -l)
echo "quant: $(wc -l < $D/quant_end.txt) kernels; lines that differ from the eleventh session's end: $q"
