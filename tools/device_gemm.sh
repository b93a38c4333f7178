#!/usr/bin/env bash
# The GEMM batch of issue 17 (kernels/gemm/gemm_wg.cu, the sm_90a wgmma GEMM), for one device
# call. Build here first:
#   make -j2 BUILD=build-dev build-dev/agoq build-dev/agoq_test_cuda && strip build-dev/agoq build-dev/agoq_test_cuda
# carry the build dir and .carry (libcjson for the GPU machine), then on the GPU machine:
#   tools/device_gemm.sh BUILD_DIR [PART...]     parts (default: tests bench genq): tests bench genq raster deq deqsmem
#            knobtests knobs epi deqprod cluster sass ncu
#     tests  the GEMM GPU tests (wgmma layouts vs float64 and cuBLASLt, fused epilogue bit-exact;
#            the mma.sync GEMM's tests too)
#     bench  experiments/gemm_wg.json (ours vs cuBLASLt, fused vs cuBLASLt + quantize)
#     genq   the fused-epilogue pairs again with AGOQ_WG_FAST_EPI=0 (the general per-block
#            encoders instead of the default fast FP4 tile encoder): $OUT/gemm_wg_genq.json
#     raster a few shapes with AGOQ_WG_GROUP_M=16 (16 row tiles per rasterization group instead
#            of 8): $OUT/gemm_wg_raster.json
#     deq    the prologue pairs alone (experiments/gemm_wg_deq.json): $OUT/gemm_wg_deq.json
#     deqsmem the same with AGOQ_WG_DEQ_SMEM=1 (codes decoded through a shared-memory tile instead
#            of the default A-operand registers): $OUT/logs/gemm_wg_deqsmem.json
#     deqprod the prologue decoded by the epilogue warps (AGOQ_WG_DEQ_PRODUCER=1, gemm_wg_dqp.cuh):
#            the GEMM GPU tests with it set (the prologue test runs it either way), then
#            experiments/gemm_wg_deq.json with it off and on: $OUT/gemm_wg_deq_{def,prod}.json
#     knobtests the GEMM GPU tests again with AGOQ_WG_STAGES=3 (every GEMM on 3 stages), then with AGOQ_WG_TILE_N=128
#     knobs  experiments/gemm_wg_knobs.json four times: the default kernel ($OUT/gemm_wg_knobs.json),
#            then (variants, kept with the logs) AGOQ_WG_STAGES=3 and =4 (every GEMM), AGOQ_WG_TILE_N=128 and
#            AGOQ_WG_TILE_N=auto: $OUT/logs/gemm_wg_knobs_{st3,st4,tn128,tnauto}.json
#     epi    experiments/gemm_wg_epi.json once per epilogue variant (gemm_wg_epi.cuh): AGOQ_WG_EPI_ROWS=1,
#            =4 (the default) and =8, 1 and 4 also with AGOQ_WG_BULK=1: $OUT/gemm_wg_epi_{rows1,rows4,rows8,bulk1,bulk4}.json;
#            then experiments/gemm_wg_epi_gen.json (INT8 / FP8 / INT4-asym copies) with AGOQ_WG_EPI_GEN=blocks,
#            and the row tiles of 4 and of 8 (the default): $OUT/gemm_wg_epi_gen_{blocks,rows4,rows8}.json
#     cluster the GEMM GPU tests with AGOQ_WG_CLUSTER=2 (2-CTA clusters sharing B by TMA multicast;
#            the cluster test compares it with =1 bit for bit either way), then
#            experiments/gemm_wg_cluster.json with AGOQ_WG_CLUSTER=1, =2, =1, =2: $OUT/gemm_wg_cluster_{cl1,cl2,cl1b,cl2b}.json
#     sass   HGMMA / UTMALDG counts of the binary (is the wgmma path in it)
#     ncu    one FC1 launch of ours and of cuBLASLt under ncu (tensor pipe, stalls)
# EXP=DIR reads the experiment files from DIR instead of experiments/ (a carried copy).
# Each part is guarded by a timeout and runs even when an earlier one failed (except after tests
# that timed out: a hung kernel would hang the rest too); logs and results
# land in $OUT (default results/h200).
set -u -o pipefail
B=${1:?build dir}; shift
[ $# -eq 0 ] && set -- tests bench genq
OUT=${OUT:-results/h200}
EXP=${EXP:-experiments}
[ -f tools/device_env.sh ] && source tools/device_env.sh
mkdir -p "$OUT"
log="$OUT/device_gemm.log"
start=$(date +%s)
echo "device_gemm: $B, parts: $*, $(date -u +%FT%TZ), commit $(cat "$B/commit.stamp" 2>/dev/null)" | tee -a "$log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$log" 2>&1
rc=0
part() { # name timeout command...
  local name=$1 t=$2; shift 2
  echo "== $name (limit ${t}s) at $(( $(date +%s) - start ))s" | tee -a "$log"
  timeout "$t" "$@" >> "$log" 2>&1
  local st=$?
  [ $st -ne 0 ] && { echo "== $name FAILED ($st)" | tee -a "$log"; rc=1; }
  [ $st -eq 124 ] && [ "$name" = tests ] && { echo "== tests timed out (a hang?): skipping the GPU parts after them" | tee -a "$log"; hung=1; }
  return 0
}
for p in "$@"; do
  case "$p" in
    tests) part tests 60 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" gemm ;;
    bench) [ "${hung:-0}" = 1 ] && continue; part bench 150 "$B/agoq" run "$EXP/gemm_wg.json" --backend cuda --out "$OUT/gemm_wg.json" ;;
    genq)  [ "${hung:-0}" = 1 ] && continue; part genq 60 env AGOQ_WG_FAST_EPI=0 "$B/agoq" run "$EXP/gemm_wg_genq.json" --backend cuda \
             --out "$OUT/gemm_wg_genq.json" ;;
    raster) [ "${hung:-0}" = 1 ] && continue; part raster 60 env AGOQ_WG_GROUP_M=16 "$B/agoq" run "$EXP/gemm_wg_raster.json" --backend cuda \
             --out "$OUT/gemm_wg_raster.json" ;;
    deq)   [ "${hung:-0}" = 1 ] && continue; part deq 60 "$B/agoq" run "$EXP/gemm_wg_deq.json" --backend cuda \
             --out "$OUT/gemm_wg_deq.json" ;;
    deqsmem) [ "${hung:-0}" = 1 ] && continue; mkdir -p "$OUT/logs" # a variant of gemm_wg_deq.json's run: kept with the logs
             part deqsmem 60 env AGOQ_WG_DEQ_SMEM=1 "$B/agoq" run "$EXP/gemm_wg_deq.json" \
             --backend cuda --out "$OUT/logs/gemm_wg_deqsmem.json" ;;
    deqprod) [ "${hung:-0}" = 1 ] && continue
             part tests 60 env AGOQ_WG_DEQ_PRODUCER=1 AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" gemm
             [ "${hung:-0}" = 1 ] && continue
             part deq_def 60 "$B/agoq" run "$EXP/gemm_wg_deq.json" --backend cuda --out "$OUT/gemm_wg_deq_def.json"
             part deq_prod 60 env AGOQ_WG_DEQ_PRODUCER=1 "$B/agoq" run "$EXP/gemm_wg_deq.json" --backend cuda \
               --out "$OUT/gemm_wg_deq_prod.json" ;;
    knobtests) [ "${hung:-0}" = 1 ] && continue
             for kv in AGOQ_WG_STAGES=3 AGOQ_WG_TILE_N=128; do
               part tests 60 env $kv AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" wg_gemm
               [ "${hung:-0}" = 1 ] && break
             done ;;
    knobs) [ "${hung:-0}" = 1 ] && continue; mkdir -p "$OUT/logs"
             part knobs 45 "$B/agoq" run "$EXP/gemm_wg_knobs.json" --backend cuda --out "$OUT/gemm_wg_knobs.json"
             for kv in st3:AGOQ_WG_STAGES=3 st4:AGOQ_WG_STAGES=4 tn128:AGOQ_WG_TILE_N=128 tnauto:AGOQ_WG_TILE_N=auto; do
               part "knobs_${kv%%:*}" 45 env "${kv#*:}" "$B/agoq" run "$EXP/gemm_wg_knobs.json" --backend cuda \
                 --out "$OUT/logs/gemm_wg_knobs_${kv%%:*}.json"
             done ;;
    epi)   [ "${hung:-0}" = 1 ] && continue
             for kv in rows1:AGOQ_WG_EPI_ROWS=1 rows4:AGOQ_WG_EPI_ROWS=4 rows8:AGOQ_WG_EPI_ROWS=8 \
                       bulk1:AGOQ_WG_EPI_ROWS=1,AGOQ_WG_BULK=1 bulk4:AGOQ_WG_EPI_ROWS=4,AGOQ_WG_BULK=1; do
               part "epi_${kv%%:*}" 45 env $(tr , ' ' <<< "${kv#*:}") "$B/agoq" run "$EXP/gemm_wg_epi.json" --backend cuda \
                 --out "$OUT/gemm_wg_epi_${kv%%:*}.json"
             done
             for kv in blocks:AGOQ_WG_EPI_GEN=blocks rows4:AGOQ_WG_EPI_ROWS=4 rows8:AGOQ_WG_EPI_ROWS=8; do
               part "epigen_${kv%%:*}" 45 env "${kv#*:}" "$B/agoq" run "$EXP/gemm_wg_epi_gen.json" --backend cuda \
                 --out "$OUT/gemm_wg_epi_gen_${kv%%:*}.json"
             done ;;
    cluster) [ "${hung:-0}" = 1 ] && continue
             part tests 60 env AGOQ_WG_CLUSTER=2 AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" wg_gemm
             [ "${hung:-0}" = 1 ] && continue
             for r in cl1 cl2 cl1b cl2b; do # interleaved twice: drift between runs shows as cl1 vs cl1b
               part "cluster_$r" 45 env AGOQ_WG_CLUSTER=${r:2:1} "$B/agoq" run "$EXP/gemm_wg_cluster.json" --backend cuda \
                 --out "$OUT/gemm_wg_cluster_$r.json"
             done ;;
    sass)  part sass 120 bash -c "cuobjdump --dump-sass '$B/agoq' | grep -oE 'HGMMA[.A-Za-z0-9]*|UTMALDG[.A-Za-z0-9]*|HMMA[.A-Za-z0-9]*|UCGABAR[._A-Za-z0-9]*|MEMBAR[.A-Za-z0-9]*' | sort | uniq -c" ;;
    ncu)   [ "${hung:-0}" = 1 ] && continue; part ncu 90 ncu --clock-control none -k regex:"wg_kernel|sm90" -c 12 --section SpeedOfLight --section WarpStateStats \
             --section ComputeWorkloadAnalysis "$B/agoq" run "$EXP/gemm_wg_ncu.json" --backend cuda --out /tmp/agoq_gemm_wg_ncu.json ;;
    *) echo "device_gemm: unknown part $p" | tee -a "$log"; rc=1 ;;
  esac
done
echo "device_gemm: done at $(( $(date +%s) - start ))s, status $rc" | tee -a "$log"
exit $rc
