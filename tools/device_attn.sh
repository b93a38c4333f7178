#!/usr/bin/env bash
# Attention session on the GPU machine: the cuDNN flash-attention tests (tests/cuda/attn/test_attn_cuda.c,
# cuDNN vs the double-math reference) and the LLaMA-shape benchmark (AGOQ_ATTN_BENCH=1), with the
# chosen engines printed (AGOQ_ATTN_VERBOSE=1) and cuDNN's own error log kept. The binary is built
# on the host (make CUDA=1 build/agoq_test_cuda, stripped) and carried.
#   usage: bash tools/device_attn.sh DIR_WITH_agoq_test_cuda [nopad]
# nopad: also rerun the accuracy test without the backward padding-mask workaround (diagnostic).
# Logs go to $OUT (the device tool brings them back); results/h200/logs/attn_cudnn.log is one such log.
set -u
B=${1:-build}
OUT=${OUT:-/tmp/agoq_out}
mkdir -p "$OUT"
L=$OUT/attn_cudnn.log
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    ldd "$B/agoq_test_cuda" | grep -i "cudnn\|not found"
} >"$L" 2>&1
export AGOQ_ATTN_VERBOSE=1 AGOQ_ATTN_BENCH=1 CUDNN_LOGLEVEL_DBG=1 CUDNN_LOGERR_DBG=1 CUDNN_LOGDEST_DBG=$OUT/cudnn_dbg.log
timeout 420 "$B/agoq_test_cuda" attn >>"$L" 2>&1
rc=$?
echo "exit $rc" >>"$L"
if [ "${2:-}" = nopad ]; then
    echo "=== AGOQ_ATTN_NO_BWD_PAD=1 (diagnostic) ===" >>"$L"
    AGOQ_ATTN_NO_BWD_PAD=1 AGOQ_ATTN_BENCH=0 timeout 120 "$B/agoq_test_cuda" cuda_attn_matches >>"$L" 2>&1
    echo "exit $?" >>"$L"
fi
# cuDNN's debug log can be large: keep its tail only
if [ -f "$OUT/cudnn_dbg.log" ]; then
    tail -c 200000 "$OUT/cudnn_dbg.log" >"$OUT/cudnn_dbg_tail.log"
    rm -f "$OUT/cudnn_dbg.log"
fi
cat "$L"
exit $rc
