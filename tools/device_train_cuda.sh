#!/usr/bin/env bash
# Device batch of the GPU training path (the trainer on the step engine, train/engine.h): the
# GPU tests of the engine-backed trainer, then the two experiments on the GPU. Build here first:
#   make -j2 BUILD=build-train build-train/agoq build-train/agoq_test_cuda
# and carry the build dir and .carry (libcjson for the GPU machine, see tools/device_env.sh):
#   tools/device_train_cuda.sh [BUILD_DIR]          (default build)
#   env: OUT (default results/h200; move its .log files to results/h200/logs/ before committing)
#        PARTS (default "tests train_cuda_small train_cuda"): which of the three to run, e.g.
#        PARTS=train_cuda for the large experiment in a device call of its own
# Order and budget (estimates, not measured when written): the GPU tests of the trainer and of
# the cuda-local collectives backend (cuda_train, cuda_coll_local; guarded at 90 s),
# experiments/train_cuda_small.json (the CPU table's configuration, guarded at 100 s),
# experiments/train_cuda.json (10 runs, each capped at 45 s by time_limit_s; guarded at 480 s).
# The ranks' gradients come to the host every step, but the agoq8 / fp8lm all-reduces run on
# GPU 0 (collectives' cuda-local backend), no longer quantizing on the host's CPU; fp32's exact
# mean stays on the host. Expected ~9 minutes for all three parts, 10+ in the worst case: run
# PARTS=train_cuda apart when the call has less than 10 minutes. The experiments run even
# when a test fails (one device batch: the data still comes back), but the log then says so
# and the exit status is 1.
# Writes up to 6 files: $OUT/test_train_cuda.log, $OUT/train_cuda_small.{json,tsv},
# $OUT/train_cuda.{json,tsv}, $OUT/device_train_cuda.log.
set -u -o pipefail
B=${1:-build}
OUT=${OUT:-results/h200}
PARTS=${PARTS:-tests train_cuda_small train_cuda}
[ -f tools/device_env.sh ] && source tools/device_env.sh
for f in "$B/agoq" "$B/agoq_test_cuda"; do
  [ -x "$f" ] || { echo "device_train_cuda: no $f (build here, carry $B)" >&2; exit 1; }
  missing=$(ldd "$f" 2>/dev/null | grep "not found")
  [ -z "$missing" ] || { echo "device_train_cuda: $f lacks libraries (carry .carry/lib): $missing" >&2; exit 1; }
done
mkdir -p "$OUT"
log="$OUT/device_train_cuda.log"
start=$(date +%s)
echo "device_train_cuda: $B, $(date -u +%FT%TZ)" | tee "$log"
command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader 2>&1 | tee -a "$log"

rc=0
if [[ " $PARTS " == *" tests "* ]]; then
  AGOQ_BIN="$B/agoq" timeout 90 "$B/agoq_test_cuda" cuda_train cuda_coll_local > "$OUT/test_train_cuda.log" 2>&1 || rc=1
  tail -1 "$OUT/test_train_cuda.log" | tee -a "$log"
  grep -E "^FAIL|FAIL " "$OUT/test_train_cuda.log" | tee -a "$log"
  [ "$rc" -eq 0 ] || echo "device_train_cuda: GPU TESTS FAILED: the results below are not validated" | tee -a "$log"
  echo "device_train_cuda: tests done at $(( $(date +%s) - start ))s" | tee -a "$log"
fi

# seconds per step of every run, from the last curve record (elapsed_s includes evaluations)
per_step() {
  awk -F'[:,]' '/"record":/ { gsub(/[\t" ]/, "", $2); rec = $2 } /"run":/ { gsub(/[\t" ]/, "", $2); run = $2 }
    /"seed":/ { seed = $2 + 0 } /"step":/ { step = $2 + 0 }
    /"elapsed_s":/ { if (rec == "curve" && step > 0) { k = run " seed " seed; s[k] = step; e[k] = $2 + 0 } }
    END { for (k in s) printf "  %-24s %5d steps %7.1f s %7.2f ms/step (with evaluations)\n", k, s[k], e[k], 1000 * e[k] / s[k] }' "$1"
}
for x in train_cuda_small:100 train_cuda:480; do
  name=${x%%:*} limit=${x##*:}
  [[ " $PARTS " == *" $name "* ]] || continue
  t0=$(date +%s)
  timeout "$limit" "$B/agoq" run "experiments/$name.json" -q --out "$OUT/$name.json" > "$OUT/$name.stdout" 2>&1 || rc=1
  echo "== $name: $(( $(date +%s) - t0 ))s" | tee -a "$log"
  grep -A40 "^# final" "$OUT/$name.stdout" | tee -a "$log" || tail -5 "$OUT/$name.stdout" | tee -a "$log"
  grep -v "^  \|^#" "$OUT/$name.stdout" | tee -a "$log" # errors, if any
  [ -f "$OUT/$name.json" ] && per_step "$OUT/$name.json" | sort | tee -a "$log"
  cat "$OUT/$name.stdout" >> "$log"
  rm -f "$OUT/$name.stdout"
done
echo "device_train_cuda: done in $(( $(date +%s) - start ))s, exit $rc; files:" | tee -a "$log"
ls -l "$OUT" | tee -a "$log"
exit "$rc"
