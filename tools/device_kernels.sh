#!/usr/bin/env bash
# On the GPU machine (after `source tools/device_env.sh`): the bit-exact CUDA tests of the
# quantization and 8-bit gradient kernels (the test-cuda binary, filtered to those tests),
# then `agoq kernels`. Nothing is benchmarked when a test fails. Build on the dev machine:
#   make -j2 CUDA=1 BUILD=build-k1 build-k1/agoq build-k1/agoq_test_cuda
# usage: tools/device_kernels.sh BUILD_DIR OUT_DIR quick|full [ncu]
#   quick: -b 1M -e 256M -f 16, 10 reps     full: the default sweep (1 MiB .. 4 GiB, x4)
#   ncu:   also profile the fp4 quantize / dequantize kernels at 256 MiB (Speed Of Light)
set -o pipefail
B=${1:?build dir}
OUT=${2:?output dir}
MODE=${3:-quick}
mkdir -p "$OUT"
rc=0
"$B/agoq_test_cuda" cuda_quant 2>&1 | tee "$OUT/test_cuda.log" || rc=1
"$B/agoq_test_cuda" cuda_grad 2>&1 | tee -a "$OUT/test_cuda.log" || rc=1
if [ "$rc" -ne 0 ]; then
    echo "device_kernels: CUDA tests FAILED, no benchmark"
    exit 1
fi
case "$MODE" in
quick) "$B/agoq" run experiments/kernels_quick.json -q -o "$OUT/kernels_quick.json" 2>&1 | tee "$OUT/kernels_quick.log" || rc=1 ;;
full) "$B/agoq" run experiments/kernels.json -q --out "$OUT/kernels.json" 2>&1 | tee "$OUT/kernels.log" || rc=1 ;;
*) echo "device_kernels: unknown mode '$MODE' (quick|full)"; exit 2 ;;
esac
if [ "${4:-}" = ncu ] && command -v ncu >/dev/null; then
    ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
        --section LaunchStats --section InstructionStats --section WarpStateStats --section ComputeWorkloadAnalysis \
        -k regex:'quant_seg_kernel|dequant_kernel' -c 6 \
        "$B/agoq" kernels --cases quantize_f32,quantize_bf16,dequantize_f32 --formats fp4_e2m1,dyn8 \
        -b 256M -e 256M -n 1 -w 0 --no-check -q -o /tmp/ncu_kernels.json >"$OUT/ncu.log" 2>&1 || echo "ncu failed (see ncu.log)"
fi
exit "$rc"
