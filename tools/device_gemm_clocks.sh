#!/usr/bin/env bash
# Clocks and power while cuBLASLt and our GEMM run (issue 17; twenty-ninth session; first run in
# the thirtieth, results/h100/logs/s30_63e58db/clocks/):
# whether the plain GEMM's lower ratio at 16K-64K tokens than at 4096 (7B / 13B QKV and FC1 on an
# H100; 7B QKV: ours 739 -> 657 / 611 TFLOP/s, cuBLASLt 806 -> 806 / 678; results/h100/logs/s29_e62d202/g/)
# is a clock the power limit takes away from the kernel that issues more (ours: 1.02 instructions
# a cycle against cuBLASLt's 0.65 at 7B FC1, docs/gemm.md) rather than its mainloop alone.
# nvidia-smi samples SM clock, power and temperature every 20 ms while `agoq kernels` runs each
# case of three shapes at 4096 / 16384 / 65536 tokens, 100 timed iterations, in the order
# lt, wg, wg, lt (then AGOQ_WG_CLUSTER=2 for 7B QKV), each run's start and end marked.
#   tools/device_gemm_clocks.sh BUILD_DIR        (OUT: where the files go, default /tmp/gemm_clocks)
#   python3 tools/gemm_clocks.py OUT             (per run: median ms, mean clock and power)
set -u
B=${1:?build dir}
W=${OUT:-/tmp/gemm_clocks}
rm -rf "$W"; mkdir -p "$W"
[ -f tools/device_env.sh ] && source tools/device_env.sh > "$W/gpu.txt"
cp "$B/commit.stamp" "$W/" 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 20 > "$W/smi.csv" 2> "$W/smi.err" &
smi=$!
sleep 1
run() { # case size tag
  sleep 0.5
  echo "$(date +%s.%N) start $1 $2 $3" >> "$W/marks.txt"
  "$B/agoq" kernels --cases "$1" --formats fp4_e2m1 -b "$2" -e "$2" -n "${N:-100}" -w 5 --no-check -q \
    -o "$W/$1_$2_$3.json" > /dev/null 2>&1
  echo "$(date +%s.%N) end $1 $2 $3" >> "$W/marks.txt"
}
for s in 7b_qkv 13b_qkv 7b_fc1; do
  for sz in 64M 256M 1G; do
    run "gemmwg_${s}_lt" $sz a; run "gemmwg_${s}_wg" $sz a; run "gemmwg_${s}_wg" $sz b; run "gemmwg_${s}_lt" $sz b
  done
done
for sz in 256M 1G; do
  export AGOQ_WG_CLUSTER=2; run gemmwg_7b_qkv_wg $sz c
  unset AGOQ_WG_CLUSTER; run gemmwg_7b_qkv_lt $sz c
done
kill $smi
nvidia-smi -q -d PERFORMANCE,POWER > "$W/smi_q.txt" 2>&1
python3 tools/gemm_clocks.py "$W"
