# thirty-second session, call A: the record at HEAD (GPU suite, torch.compile peer, kernels, fused,
# gemm) with the AGOQ_RMS_FMA A/B (.carry/ab_s32.tsv, three rounds), then ncu (instructions) of
# the pair RMSNorm forward at 64 / 256 MiB under AGOQ_RMS_FMA 0 / 1
source tools/device_env.sh > /tmp/env.txt; mkdir -p $OUT; W=/tmp/n; rm -rf $W; mkdir -p $W
AB_SPECS=.carry/ab_s32.tsv tools/device_record.sh $AGOQ_B $OUT
sec="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats"
one="-n 1 -w 0 --no-check -q -o /tmp/n.json"
for s in 64M 256M; do for v in 0 1; do
  AGOQ_RMS_FMA=$v timeout 40 ncu $sec -k regex:rms_fwd -c 1 --log-file $W/rms_fp4_${s}_fma$v.log $AGOQ_B/agoq kernels --cases rmsnorm_fwd_fused --formats fp4_e2m1 -b $s -e $s $one > /dev/null 2>&1
  L=$W/rms_fp4_${s}_fma$v.log; echo "$s fma$v $(grep -h 'Duration' $L | head -1 | awk '{print $NF, $(NF-1)}') dram=$(grep -h 'DRAM Throughput' $L | head -1 | awk '{print $NF}') sm=$(grep -h 'Compute (SM) Throughput' $L | head -1 | awk '{print $NF}') instr=$(grep -h 'Executed Instructions  ' $L | head -1 | awk '{print $NF}') occ=$(grep -h 'Achieved Occupancy' $L | head -1 | awk '{print $NF}')"
done; done
tar czf $OUT/ncu.tgz -C $W .
