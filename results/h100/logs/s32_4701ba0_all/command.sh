# thirty-second session, call C: the whole GPU suite at 4701ba0 and experiments/kernels_fused.json; on an
# H200 also the AGOQ_RMS_BWD_FMA A/B (bd/agoq the default, nofma/agoq -DAGOQ_RMS_BWD_FMA=0; three rounds)
source tools/device_env.sh > /tmp/env.txt; mkdir -p $OUT; W=/tmp/c; rm -rf $W; mkdir -p $W; cp /tmp/env.txt $W/gpu.txt; cp $AGOQ_B/commit.stamp $W/
head -1 $W/gpu.txt
OUT=$W TESTS=all T_TESTS=280 tools/device_kernels.sh $AGOQ_B tests fused > $W/k_stdout.log 2>&1; tail -2 $W/k_stdout.log; grep -h "passed, " $W/device_kernels.log | tail -1; grep -h "^FAIL" $W/device_kernels.log | head -5
tar czf $OUT/t.tgz -C $W .
if grep -q H200 $W/gpu.txt; then
  rm -rf /tmp/vd; mkdir -p /tmp/vd; cp -a .carry/x/nofma /tmp/vd/
  OUT=$W/ab VAR_DIR=/tmp/vd VAR_ROUNDS=3 VAR_ARGS="kernels --cases rmsnorm_bwd_fused,rmsnorm_bwd_bf16 --formats fp4_e2m1,int8 -b 64M -e 4G -f 4 -n 10 -w 3 -q" tools/device_kernels.sh $AGOQ_B varab > $W/ab_stdout.log 2>&1; cat $W/ab/varab_table.txt
  tar czf $OUT/ab.tgz -C $W ab ab_stdout.log
fi
