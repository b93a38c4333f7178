#!/usr/bin/env bash
# Fused-kernel and GEMM session on the GPU machine (k2): bit-exact CUDA tests of
# kernels/fused*.cu and kernels/gemm/gemm.cu (and of the quantizers whose tile code they share), then (if the benchmark driver is built) the fused and
# GEMM benchmark suites. Binaries are built on the host (make CUDA=1 BUILD=build-k2) and carried.
#   usage: bash tools/device_fused.sh BUILD_DIR [tests|bench|all]
# Logs and JSON go to $OUT (the device tool brings them back).
set -u
B=${1:-build-k2}
WHAT=${2:-all}
OUT=${OUT:-/tmp/agoq_out}
mkdir -p "$OUT"
rc=0
if [ "$WHAT" != bench ]; then
    for t in cuda_fused cuda_rowq cuda_gemm cuda_quant; do
        "$B/agoq_test_cuda" "$t" >>"$OUT/test_cuda_fused.log" 2>&1 || rc=1
    done
    tail -n 40 "$OUT/test_cuda_fused.log"
fi
if [ "$WHAT" != tests ]; then
    "$B/agoq" run experiments/kernels_fused.json --backend cuda --out "$OUT/kernels_fused.json" >"$OUT/bench_fused.log" 2>&1 || rc=1
    "$B/agoq" run experiments/gemm.json --backend cuda --out "$OUT/gemm.json" >"$OUT/bench_gemm.log" 2>&1 || rc=1
    tail -n 60 "$OUT/bench_fused.log" "$OUT/bench_gemm.log"
fi
exit $rc
