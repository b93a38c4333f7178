#!/usr/bin/env bash
# The A/Bs prepared in the thirteenth and fourteenth sessions, never run (no GPU was lent once they
# were ready): on the GPU machine, from the repository root, with the binaries of
# tools/device_pack.sh carried (about 7 minutes):
#   source tools/device_env.sh && OUT=$OUT tools/device_ab_pending.sh $AGOQ_B
# 1. every GPU test (make test-cuda's run; it checks the new variants bit-exact);
# 2. issue 17, the register prologue on experiments/gemm_wg_deq.json (FC2 reading its stored FP4
#    input vs dequantize + cuBLASLt): the default against AGOQ_WG_DEQ_AHEAD=1 (scales a k-tile
#    ahead) and AGOQ_WG_DEQ_FP4=arith (FP4 decoded by arithmetic, implies AHEAD), two rounds, the
#    second in reverse order; ncu of the default and of AHEAD on the prologue alone
#    (experiments/gemm_wg_deq_ncu.json);
# 3. issue 15, the reduce core AGOQ_RED_LD=0|1|2 (int8_asym, int8; 64 MiB .. 4 GiB), two rounds;
# 4. issue 17, AGOQ_WG_CLUSTER=2 with CTA-scope barrier semantics (fourteenth session; the
#    cluster-scope forms had compiled to two GPU-scope MEMBARs per consumer warp and k-tile): the
#    GEMM GPU tests under =2, experiments/gemm_wg_cluster.json with =1, =2, =2, =1, ncu of one 7B FC1
#    launch (4096 tokens) with each, and the SASS of every MEMBAR / CCTL in the binary;
# 5. issue 15, ncu of the fp8 and int8 reduce cores at 1 GiB (behind torch.compile there).
# Everything into one archive, $OUT/r.tgz (the device tool returns at most 8 files a call).
# Tables: python3 tools/ab_pending_table.py DIR (DIR: the unpacked archive).
set -u
B=${1:?usage: device_ab_pending.sh BINDIR}
O=${OUT:?set OUT}; R=$(mktemp -d)
start=$(date +%s)
t() { echo "== $1 at $(( $(date +%s) - start ))s" | tee -a "$R/call.log"; }
cat "$B/commit.stamp" | tee -a "$R/call.log"
t tests
timeout 300 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" > "$R/test_cuda.log" 2>&1; echo "rc=$?" | tee -a "$R/call.log"
tail -1 "$R/test_cuda.log" | tee -a "$R/call.log"
deq() { # variant name, env...
  local n=$1; shift
  timeout 60 env "$@" "$B/agoq" run experiments/gemm_wg_deq.json --backend cuda --out "$R/deq_${n}_r$r.json" >> "$R/deq.log" 2>&1
  echo "deq $n r$r rc=$?" | tee -a "$R/call.log"
}
V="def ah arith"
for r in 1 2; do
  t "deq round $r"
  for v in $V; do
    case $v in
      def) deq def X=1 ;;
      ah) deq ah AGOQ_WG_DEQ_AHEAD=1 ;;
      arith) deq arith AGOQ_WG_DEQ_FP4=arith ;;
    esac
  done
  V=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
done
for r in 1 2; do
  order="0 1 2"; [ $r = 2 ] && order="2 1 0"
  for v in $order; do
    t "reduce r$r ld$v"
    AGOQ_RED_LD=$v timeout 120 "$B/agoq" kernels -n 15 -w 3 -q --cases grad_reduce --formats int8_asym,int8 -b 64M -e 4G -f 4 \
      --no-check -o "$R/ld${v}_r$r.json" > "$R/ld${v}_r$r.log" 2>&1
    echo "rc=$?" | tee -a "$R/call.log"
  done
done
t cluster_tests
timeout 90 env AGOQ_WG_CLUSTER=2 AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" wg_gemm > "$R/test_cl2.log" 2>&1
echo "rc=$?" | tee -a "$R/call.log"; tail -1 "$R/test_cl2.log" | tee -a "$R/call.log"
for v in 1 2 2b 1b; do
  t "cluster $v"
  timeout 60 env AGOQ_WG_CLUSTER=${v:0:1} "$B/agoq" run experiments/gemm_wg_cluster.json --backend cuda \
    --out "$R/cl$v.json" >> "$R/cluster.log" 2>&1
  echo "cl$v rc=$?" | tee -a "$R/call.log"
done
t ncu
for v in 1 2; do # the first wg_kernel launch of gemm_wg_ncu.json: 7B FC1, 4096 tokens
  timeout 90 env AGOQ_WG_CLUSTER=$v ncu --clock-control none -k regex:"wg_kernel" -c 1 --section SpeedOfLight \
    --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$B/agoq" run experiments/gemm_wg_ncu.json --backend cuda --out "$R/ncu_cl$v.json" > "$R/ncu_cl$v.log" 2>&1
  echo "ncu cl$v rc=$?" | tee -a "$R/call.log"
done
# issue 15: the fp8 / int8 reduce cores, behind torch.compile at 1-4 GiB (0.88-0.99x) with no ncu yet
timeout 90 ncu --clock-control none --kernel-name-base demangled -k regex:tile_reduce -c 2 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section Occupancy --section InstructionStats --section WarpStateStats \
  "$B/agoq" kernels --cases grad_reduce --formats fp8_e4m3,int8 -b 1G -e 1G -n 1 -w 0 --no-check -q \
  -o "$R/ncu_reduce.json" > "$R/ncu_reduce_fp8_int8.log" 2>&1
echo "ncu reduce rc=$?" | tee -a "$R/call.log"
timeout 120 bash -c "cuobjdump -sass '$B/agoq' | grep -oE 'MEMBAR[.A-Za-z0-9]*|CCTL[.A-Za-z0-9]*|UCGABAR[._A-Za-z0-9]*' | sort | uniq -c" \
  > "$R/sass_fences.txt" 2>&1
for v in def ah; do
  e=X=1; [ $v = ah ] && e=AGOQ_WG_DEQ_AHEAD=1
  timeout 90 env $e ncu --clock-control none -k regex:"wg_kernel" -c 1 --section SpeedOfLight --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$B/agoq" run experiments/gemm_wg_deq_ncu.json --backend cuda --out "$R/ncu_$v.json" > "$R/ncu_$v.log" 2>&1
  echo "ncu $v rc=$?" | tee -a "$R/call.log"
done
t done
tar -C "$R" -czf "$O/r.tgz" . && ls -la "$O"
