#!/usr/bin/env bash
# Device batch of the convergence check (issue #8), for the lead's final GPU-machine run.
# The training path is CPU-only (no CUDA training step exists yet), so this uses the machine's
# 16 CPU cores for two more seeds of experiments/train.json (same model, data, steps, runs):
# 4 processes in parallel (seed x half of the runs), 4 OpenMP threads each; results do not
# depend on the thread count. Expected ~2-3 minutes; every run also stops at TRAIN_RUN_LIMIT_S
# (evaluated, final record marked truncated) so the batch stays bounded.
#   tools/device_train.sh [BIN]      BIN: a built agoq (default build/agoq; carry the build dir)
#   env: OUT (default results/h200/logs/train_device: truncated CPU runs on the GPU machine, kept as logs), TRAIN_SEEDS ("2 3"), TRAIN_RUN_LIMIT_S (70)
# Writes $OUT/train_s<seed>_<a|b>.json and $OUT/train_device.log. The held-out gap of group b
# runs is taken against group a's bf16+fp32 of the same seed (docs/train.md).
set -u
BIN=${1:-build/agoq}
OUT=${OUT:-results/h200/logs/train_device}
SEEDS=${TRAIN_SEEDS:-2 3}
LIMIT=${TRAIN_RUN_LIMIT_S:-70}
[ -f tools/device_env.sh ] && source tools/device_env.sh
[ -x "$BIN" ] || { echo "device_train: no agoq binary at $BIN (build here, carry the build dir)" >&2; exit 1; }
missing=$(ldd "$BIN" 2>/dev/null | grep "not found")
[ -z "$missing" ] || { echo "device_train: $BIN lacks libraries (carry .carry/lib: libcjson, libgomp): $missing" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
log="$OUT/train_device.log"
echo "device_train: $(nproc) cores, seeds $SEEDS, ${LIMIT}s limit per run, $(date -u +%FT%TZ)" | tee "$log"

job() { # seed, group name, runs as a JSON list
  local seed="$1" name="train_s$1_$2" runs="$3"
  cat > "$tmp/$name.json" <<JSON
{ "kind": "train", "backend": "cpu", "seed": $seed,
  "description": "device batch: seed $seed, group $2 of the runs, the configuration of experiments/train.json",
  "config": { "runs": $runs, "baseline": "bf16+fp32",
    "layers": 4, "heads": 4, "d_model": 128, "d_ff": 352, "seq_len": 64, "micro_batch": 4, "ranks": 2,
    "steps": 300, "warmup": 20, "lr": 0.003, "min_lr_frac": 0.1, "weight_decay": 0.1, "grad_clip": 1.0,
    "eval_every": 25, "eval_windows": 64, "grad_probe": true, "act_block": 128,
    "grad_format": "int8", "grad_block": 256, "corpus": "grammar", "corpus_seed": 1,
    "train_bytes": 2097152, "heldout_bytes": 262144, "time_limit_s": $LIMIT } }
JSON
  OMP_NUM_THREADS=4 timeout $((3 * LIMIT + 60)) "$BIN" run "$tmp/$name.json" -q --out "$OUT/$name.json" \
    > "$tmp/$name.log" 2>&1
  echo "== $name: exit $?" >> "$tmp/$name.log"
}

start=$(date +%s)
for s in $SEEDS; do
  job "$s" a '["bf16+fp32", "agoq+fp32", "uniform4+fp32"]' &
  job "$s" b '["coat+fp32", "agoq+agoq8", "bf16+fp8lm"]' &
done
wait
for f in "$tmp"/*.log; do grep -A8 "^# final" "$f" || tail -3 "$f"; done | tee -a "$log"
# Held-out gap of every run against bf16+fp32 of its seed (group b has no baseline of its own).
cat "$tmp"/*.log | awk '
  /^# train:/ { ok = 0; next } /^# final/ { ok = 1; next } /^#/ || /^==/ { next }
  ok && NF >= 4 && $2 ~ /^[0-9]+$/ { run[++n] = $1; seed[n] = $2; h[n] = $4; if ($1 == "bf16+fp32") base[$2] = $4 }
  END { print "# run seed heldout gap_vs_bf16+fp32"
        for (i = 1; i <= n; i++) printf "  %-14s %4s %10.4f %+10.4f\n", run[i], seed[i], h[i], (seed[i] in base) ? h[i] - base[seed[i]] : 0/0 }' \
  2>/dev/null | tee -a "$log"
echo "device_train: done in $(( $(date +%s) - start ))s; files:" | tee -a "$log"
ls -l "$OUT"/train_s*_?.json 2>&1 | tee -a "$log"
rm -rf "$tmp"
