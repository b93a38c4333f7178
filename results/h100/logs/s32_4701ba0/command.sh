# thirty-second session, call B: the fused GPU tests at 4701ba0 (device_kernels.sh tests: the quantizer,
# fused, rowq and gradient suites), experiments/kernels_fused.json, the AGOQ_RMS_BWD_FMA A/B (bd/agoq the
# default, nofma/agoq built with -DAGOQ_RMS_BWD_FMA=0 at the same commit; three rounds), ncu of the
# staged backward (FP4) at 1 GiB under both binaries; an archive after each step
source tools/device_env.sh > /tmp/env.txt; mkdir -p $OUT; W=/tmp/b; rm -rf $W; mkdir -p $W/ncu; cp /tmp/env.txt $W/gpu.txt; cp $AGOQ_B/commit.stamp $W/
head -1 $W/gpu.txt
OUT=$W T_TESTS=200 tools/device_kernels.sh $AGOQ_B tests fused > $W/k_stdout.log 2>&1; tail -2 $W/k_stdout.log; grep -h "passed, " $W/device_kernels.log | tail -1; grep -h "^FAIL" $W/device_kernels.log | head -5
tar czf $OUT/t.tgz -C $W .
rm -rf /tmp/vd; mkdir -p /tmp/vd; cp -a .carry/x/nofma /tmp/vd/
OUT=$W/ab VAR_DIR=/tmp/vd VAR_ROUNDS=3 VAR_ARGS="kernels --cases rmsnorm_bwd_fused,rmsnorm_bwd_bf16 --formats fp4_e2m1,int8 -b 64M -e 4G -f 4 -n 10 -w 3 -q" tools/device_kernels.sh $AGOQ_B varab > $W/ab_stdout.log 2>&1; cat $W/ab/varab_table.txt
tar czf $OUT/ab.tgz -C $W ab ab_stdout.log
sec="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats"
one="-n 1 -w 0 --no-check -q -o /tmp/n.json"
for s in 1G; do for v in bd nofma; do
  timeout 60 ncu $sec -k regex:rms_bwd -c 1 --log-file $W/ncu/rmsb_fp4_${s}_$v.log .carry/x/$v/agoq kernels --cases rmsnorm_bwd_fused --formats fp4_e2m1 -b $s -e $s $one > /dev/null 2>&1
  L=$W/ncu/rmsb_fp4_${s}_$v.log; echo "$s $v $(grep -h 'Duration' $L | head -1 | awk '{print $NF, $(NF-1)}') dram=$(grep -h 'DRAM Throughput' $L | head -1 | awk '{print $NF}') sm=$(grep -h 'Compute (SM) Throughput' $L | head -1 | awk '{print $NF}') instr=$(grep -h 'Executed Instructions  ' $L | head -1 | awk '{print $NF}') occ=$(grep -h 'Achieved Occupancy' $L | head -1 | awk '{print $NF}')"
done; done
tar czf $OUT/ncu.tgz -C $W ncu
