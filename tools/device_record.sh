#!/usr/bin/env bash
# The record of issues 15 and 17 in one device call (what each session's .carry/rec.sh did by hand):
# make test-cuda's suite, the torch.compile peer, experiments/kernels.json and kernels_fused.json
# (tools/device_kernels.sh tests peer kernels fused, about 240 s), experiments/gemm_wg.json
# (tools/device_gemm.sh bench, about 15 s), and with `clocks` tools/device_gemm_clocks.sh (about
# 90 s), all into one archive that fits the call's return (at most 8 files).
#   tools/device_pack.sh build                          (here: the binaries of HEAD)
#   source tools/device_env.sh; tools/device_record.sh $AGOQ_B $OUT [clocks]   (on the GPU machine)
# Unpack DIR/record.tgz under results/<gpu>/logs/s<N>_<commit>/ and write its README.txt.
set -u
B=${1:?build dir}
DEST=${2:?output dir}
W=/tmp/agoq_record
rm -rf "$W"; mkdir -p "$W/g" "$DEST"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$W/gpu.txt" 2>&1
cp "$B/commit.stamp" "$W/" 2>/dev/null
OUT=$W TESTS=all T_TESTS=${T_TESTS:-280} tools/device_kernels.sh "$B" tests peer kernels fused > "$W/k_stdout.log" 2>&1
tail -3 "$W/k_stdout.log"
OUT=$W/g tools/device_gemm.sh "$B" bench > "$W/g_stdout.log" 2>&1
tail -2 "$W/g_stdout.log"
grep -h "passed, " "$W/device_kernels.log" | tail -1
if [ "${3:-}" = clocks ]; then OUT=$W/clocks tools/device_gemm_clocks.sh "$B" > "$W/clocks_stdout.log" 2>&1; tail -25 "$W/clocks_stdout.log"; fi
tar czf "$DEST/record.tgz" -C "$W" .
