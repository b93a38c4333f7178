#!/bin/bash
# g8's device call: GEMM tests, then experiments/gemm_wg_epi.json and gemm_wg_epi_gen.json under
# each epilogue setting; everything into $OUT/g8.tar.gz (+ log.txt, gpu.txt).
set -u
cd "$(dirname "$0")"
W=$OUT/w; mkdir -p "$W"
L=$OUT/log.txt
for f in bd/*.gz; do gunzip -f "$f"; done
chmod +x bd/agoq bd/agoq_test_cuda
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt" 2>&1
echo "commit $(cat bd/commit.stamp)" >> "$L"
step() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  echo "== $n start $(date +%s)" >> "$L"
  timeout "$t" "$@" > "$W/$n.log" 2>&1
  echo "== $n rc=$? $(date +%s)" >> "$L"
}
step tests 90 env AGOQ_BIN=bd/agoq bd/agoq_test_cuda gemm
tail -3 "$W/tests.log" >> "$L"
ep() { # name json env...
  local n=$1 j=$2; shift 2
  step "$n" 40 env "$@" bd/agoq run "experiments/$j" --backend cuda --out "$W/$n.json"
}
ep epi_def gemm_wg_epi.json AGOQ_X=0
ep epi_rows8 gemm_wg_epi.json AGOQ_WG_EPI_ROWS=8
ep epi_rows1 gemm_wg_epi.json AGOQ_WG_EPI_ROWS=1
ep epi_fast0 gemm_wg_epi.json AGOQ_WG_FAST_EPI=0
ep epi_def2 gemm_wg_epi.json AGOQ_X=0
ep gen_blocks gemm_wg_epi_gen.json AGOQ_WG_EPI_GEN=blocks
ep gen_rows4 gemm_wg_epi_gen.json AGOQ_WG_EPI_GEN=rows
ep gen_rows8 gemm_wg_epi_gen.json AGOQ_WG_EPI_GEN=rows AGOQ_WG_EPI_ROWS=8
ep gen_fast0 gemm_wg_epi_gen.json AGOQ_WG_FAST_EPI=0
ep gen_rows4b gemm_wg_epi_gen.json AGOQ_WG_EPI_GEN=rows
ep epi_rows8b gemm_wg_epi.json AGOQ_WG_EPI_ROWS=8
ep epi_def3 gemm_wg_epi.json AGOQ_X=0
tar -C "$OUT" -czf "$OUT/g8.tar.gz" w && rm -rf "$W"
echo "done $(date +%s)" >> "$L"
