#!/usr/bin/env bash
# The step engine's GPU batch (issues 13 and 16), for one device call. Build here first:
#   make -j2 BUILD=build-dev build-dev/agoq build-dev/agoq_test_cuda && strip build-dev/agoq build-dev/agoq_test_cuda
# carry build-dev and .carry (libcjson for the GPU machine), then on the GPU machine:
#   tools/device_step.sh BUILD_DIR PART...      parts: tests testsall attn quick main validate seq sweeps exp:NAME
# Each part is guarded by a timeout and runs even when an earlier one failed (one device
# call: the data still comes back); logs and results land in $OUT (default results/h200).
set -u -o pipefail
B=${1:?build dir}; shift
OUT=${OUT:-results/h200}
[ -f tools/device_env.sh ] && source tools/device_env.sh
mkdir -p "$OUT"
log="$OUT/device_step.log"
start=$(date +%s)
echo "device_step: $B, parts: $*, $(date -u +%FT%TZ), commit $(cat "$B/commit.stamp" 2>/dev/null)" | tee -a "$log"
rc=0
part() { # name timeout command...
  local name=$1 t=$2; shift 2
  echo "== $name (limit ${t}s) at $(( $(date +%s) - start ))s" | tee -a "$log"
  timeout "$t" "$@" >> "$log" 2>&1 || { echo "== $name FAILED ($?)" | tee -a "$log"; rc=1; }
}
for p in "$@"; do
  case "$p" in
    tests) part tests 150 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" step ;;
    testsall) part testsall 300 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" ;;
    attn) part attn 120 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" attn ;;
    quick) part quick 120 "$B/agoq" run experiments/step_quick.json --out "$OUT/step_quick.json" ;;
    main) part main 300 "$B/agoq" run experiments/step_llama2_7b.json --out "$OUT/step_llama2_7b.json"
          part mb8 120 "$B/agoq" run experiments/step_llama2_7b_mb8.json --out "$OUT/step_llama2_7b_mb8.json" ;;
    validate)
      part dumps 120 "$B/agoq" run experiments/step_validate.json --out "$OUT/step_validate.json"
      part pytorch 300 python3 validation/hf_step.py --out "$OUT/step_pytorch.json" --check /tmp/agoq_step_dumps/* \
        --time --model-json models/llama2-7b.json --layers 4 --seqs 4096 16384 ;;
    seq) part seq 300 "$B/agoq" run experiments/step_seq.json --out "$OUT/step_seq.json" ;;
    sweeps) for f in experiments/step_16_*.json; do
              n=$(basename "$f" .json); part "$n" 200 "$B/agoq" run "$f" --out "$OUT/$n.json"; done ;;
    exp:*) n=${p#exp:}; part "$n" 330 "$B/agoq" run "experiments/$n.json" --out "$OUT/$n.json" ;;
    *) echo "device_step: unknown part $p" | tee -a "$log"; rc=1 ;;
  esac
done
echo "device_step: done at $(( $(date +%s) - start ))s, status $rc" | tee -a "$log"
exit $rc
