#!/usr/bin/env bash
# The record of issues 15 and 17 in one device call (what each session's .carry/rec.sh did by hand):
# make test-cuda's suite, the torch.compile peer, experiments/kernels.json and kernels_fused.json
# (tools/device_kernels.sh tests peer kernels fused, about 240 s; the suite alone took over 280 s
# on an H100 at cf3cb34, hence its limit of 420 s), experiments/gemm_wg.json
# (tools/device_gemm.sh bench, about 15 s), and with `clocks` tools/device_gemm_clocks.sh (about
# 90 s), all into one archive that fits the call's return (at most 8 files). With AB_SPECS (a
# KNOB<TAB>VALUES<TAB>ARGS file, e.g. results/h100/logs/s31_f472939/ab_s31.tsv) also those A/Bs
# (AB_ROUNDS, default 3; tools/device_kernels.sh ab, about 40 s a knob of three values), into ab/
# with ab_table.py's tables.
#   tools/device_pack.sh build                          (here: the binaries of HEAD)
#   source tools/device_env.sh; [AB_SPECS=F] tools/device_record.sh $AGOQ_B $OUT [clocks]
#                                                       (on the GPU machine)
# Unpack DIR/record.tgz under results/<gpu>/logs/s<N>_<commit>/ and write its README.txt.
set -u
B=${1:?build dir}
DEST=${2:?output dir}
W=/tmp/agoq_record
rm -rf "$W"; mkdir -p "$W/g" "$DEST"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$W/gpu.txt" 2>&1
cp "$B/commit.stamp" "$W/" 2>/dev/null
OUT=$W TESTS=all T_TESTS=${T_TESTS:-420} tools/device_kernels.sh "$B" tests peer kernels fused > "$W/k_stdout.log" 2>&1
tail -3 "$W/k_stdout.log"
OUT=$W/g tools/device_gemm.sh "$B" bench > "$W/g_stdout.log" 2>&1
tail -2 "$W/g_stdout.log"
grep -h "passed, " "$W/device_kernels.log" | tail -1
if [ -n "${AB_SPECS:-}" ]; then
  OUT=$W/ab AB_ROUNDS=${AB_ROUNDS:-3} tools/device_kernels.sh "$B" ab > "$W/ab_stdout.log" 2>&1
  for f in "$W"/ab/ab_*.tsv; do [ -f "$f" ] && python3 tools/ab_table.py "$f" > "${f%.tsv}.txt" 2>&1 && tail -12 "${f%.tsv}.txt"; done
fi
if [ "${3:-}" = clocks ]; then OUT=$W/clocks tools/device_gemm_clocks.sh "$B" > "$W/clocks_stdout.log" 2>&1; tail -25 "$W/clocks_stdout.log"; fi
tar czf "$DEST/record.tgz" -C "$W" .
