# thirty-second session, call D (H200 only; on another GPU it stops at once): the AGOQ_RMS_BWD_FMA A/B
# at 4701ba0 (bd/agoq the default, nofma/agoq -DAGOQ_RMS_BWD_FMA=0; three rounds), experiments/kernels_fused.json,
# ncu of the staged backward (FP4) at 1 GiB under both binaries
source tools/device_env.sh > /tmp/env.txt; mkdir -p $OUT; W=/tmp/d; rm -rf $W; mkdir -p $W/ncu; cp /tmp/env.txt $W/gpu.txt; cp $AGOQ_B/commit.stamp $W/
head -1 $W/gpu.txt; grep -q H200 $W/gpu.txt || exit 0
rm -rf /tmp/vd; mkdir -p /tmp/vd; cp -a .carry/x/nofma /tmp/vd/
OUT=$W/ab VAR_DIR=/tmp/vd VAR_ROUNDS=3 VAR_ARGS="kernels --cases rmsnorm_bwd_fused,rmsnorm_bwd_bf16 --formats fp4_e2m1,int8 -b 64M -e 4G -f 4 -n 10 -w 3 -q" tools/device_kernels.sh $AGOQ_B varab > $W/ab_stdout.log 2>&1; cat $W/ab/varab_table.txt
tar czf $OUT/ab.tgz -C $W .
OUT=$W tools/device_kernels.sh $AGOQ_B fused > $W/k_stdout.log 2>&1
sec="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats"
one="-n 1 -w 0 --no-check -q -o /tmp/n.json"
for v in bd nofma; do
  timeout 60 ncu $sec -k regex:rms_bwd -c 1 --log-file $W/ncu/rmsb_fp4_1G_$v.log .carry/x/$v/agoq kernels --cases rmsnorm_bwd_fused --formats fp4_e2m1 -b 1G -e 1G $one > /dev/null 2>&1
  L=$W/ncu/rmsb_fp4_1G_$v.log; echo "1G $v $(grep -h 'Duration' $L | head -1 | awk '{print $NF, $(NF-1)}') dram=$(grep -h 'DRAM Throughput' $L | head -1 | awk '{print $NF}') sm=$(grep -h 'Compute (SM) Throughput' $L | head -1 | awk '{print $NF}') instr=$(grep -h 'Executed Instructions  ' $L | head -1 | awk '{print $NF}')"
done
tar czf $OUT/d.tgz -C $W .
