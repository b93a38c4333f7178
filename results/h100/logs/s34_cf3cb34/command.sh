# thirty-fourth session, call A (SASS-only build_dev of HEAD in bd/, the AGOQ_WG_EPI_Q7=1 variant in vars/q7/):
# PF A/B (tools/ab_s33.tsv, 3 rounds), the q7 variant's GEMM tests and its timing A/B, the whole GPU suite, ncu
source tools/device_env.sh > /tmp/env.txt; mkdir -p $OUT; W=/tmp/a; rm -rf $W; mkdir -p $W; cp /tmp/env.txt $W/gpu.txt; cp $AGOQ_B/commit.stamp $W/
head -1 $W/gpu.txt; SECONDS=0; LIM=${LIM:-580}
OUT=$W/ab AB_SPECS=tools/ab_s33.tsv AB_ROUNDS=3 tools/device_kernels.sh $AGOQ_B ab > $W/ab_stdout.log 2>&1
for f in $W/ab/ab_*.tsv; do python3 tools/ab_table.py $f > ${f%.tsv}.txt 2>&1; cat ${f%.tsv}.txt; done
tar czf $OUT/ab.tgz -C $W ab ab_stdout.log gpu.txt commit.stamp; echo "ab done at $SECONDS s"
timeout 100 .carry/x/vars/q7/agoq_test_cuda gemm > $W/q7_tests.log 2>&1; echo "q7 tests rc=$?"; grep "^FAIL" $W/q7_tests.log | head; tail -1 $W/q7_tests.log
OUT=$W/var VAR_DIR=.carry/x/vars VAR_ROUNDS=4 VAR_ARGS="kernels --cases gemmwg_7b_tp8_out_wgq,gemmwg_13b_tp8_out_wgq,gemmwg_7b_tp8_fc2_wgq,gemmwg_7b_fc2_wgq --formats fp4_e2m1 -b 64M -e 1G -f 4 -n 10 -w 3 -q" tools/device_kernels.sh $AGOQ_B varab > $W/var_stdout.log 2>&1
cat $W/var/varab_table.txt; tar czf $OUT/var.tgz -C $W var var_stdout.log q7_tests.log; echo "varab done at $SECONDS s"
OUT=$W TESTS=all T_TESTS=280 tools/device_kernels.sh $AGOQ_B tests > $W/t_stdout.log 2>&1; grep -h "passed, " $W/device_kernels.log | tail -1; grep -h "^FAIL" $W/device_kernels.log | head -5
tar czf $OUT/t.tgz -C $W device_kernels.log t_stdout.log; echo "tests done at $SECONDS s"
N=$W/ncu; mkdir -p $N
sec="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats"
one="-n 1 -w 0 --no-check -q -o /tmp/n.json"
nc() { # name size kernel-regex agoq-args...
  local nm=$1 s=$2 k=$3; shift 3
  [ $SECONDS -lt $((LIM - 45)) ] || return 0
  timeout 40 ncu $sec --kernel-name-base demangled -k regex:"$k" -c 4 --log-file $N/$nm.log $AGOQ_B/agoq kernels "$@" -b $s -e $s $one > /dev/null 2>&1
  L=$N/$nm.log; echo "$nm $s dur=$(grep -h 'Duration' $L | tail -1 | awk '{print $NF, $(NF-1)}') dram=$(grep -h 'DRAM Throughput' $L | tail -1 | awk '{print $NF}') sm=$(grep -h 'Compute (SM) Throughput' $L | tail -1 | awk '{print $NF}') instr=$(grep -h 'Executed Instructions  ' $L | tail -1 | awk '{print $NF}') occ=$(grep -h 'Achieved Occupancy' $L | tail -1 | awk '{print $NF}')" | tee -a $N/summary.txt
  tar czf $OUT/ncu.tgz -C $W ncu
}
nc swiglu_fwd_fp4_1G 1G swiglu_fwd --cases swiglu_fwd_fused --formats fp4_e2m1
AGOQ_FWD_PF=1 nc swiglu_fwd_fp4_1G_pf 1G swiglu_fwd --cases swiglu_fwd_fused --formats fp4_e2m1
nc gelu_fwd_fp4_256M 256M gelu_fwd --cases gelu_fwd_fused --formats fp4_e2m1
AGOQ_FWD_PF=1 nc gelu_fwd_fp4_256M_pf 256M gelu_fwd --cases gelu_fwd_fused --formats fp4_e2m1
echo "ncu done at $SECONDS s"
