#!/usr/bin/env bash
# Device batch of the convergence check (issue #8), for the lead's final GPU-machine run.
# The training path is CPU-only (no CUDA training step exists yet), so this uses the machine's
# 16 CPU cores for a second seed of the key runs of experiments/train.json (same model, data,
# steps): 4 runs in parallel, 4 OpenMP threads each (results do not depend on the thread count).
#   tools/device_train.sh [BIN]      BIN: a built agoq (default build/agoq; carry the build dir)
#   env: OUT (default results/train), TRAIN_SEED (2), TRAIN_BUDGET_S (200: seconds per run, after
#        which a run stops early, is evaluated and its final record is marked truncated)
# Writes $OUT/train_s<seed>_<act>-<grad>.json (one per run) and $OUT/train_device.log.
set -u
BIN=${1:-build/agoq}
OUT=${OUT:-results/train}
SEED=${TRAIN_SEED:-2}
BUDGET=${TRAIN_BUDGET_S:-200}
[ -f tools/device_env.sh ] && source tools/device_env.sh
[ -x "$BIN" ] || { echo "device_train: no agoq binary at $BIN (build here, carry the build dir)" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
log="$OUT/train_device.log"
echo "device_train: $(nproc) cores, seed $SEED, budget ${BUDGET}s per run, $(date -u +%FT%TZ)" | tee "$log"

job() { # run spec "act+grad"
  local run="$1" name="train_s${SEED}_${1/+/-}"
  cat > "$tmp/$name.json" <<JSON
{ "kind": "train", "backend": "cpu", "seed": $SEED,
  "description": "device batch: seed $SEED of $run, the configuration of experiments/train.json",
  "config": { "runs": ["$run"], "baseline": "bf16+fp32",
    "layers": 4, "heads": 4, "d_model": 128, "d_ff": 352, "seq_len": 64, "micro_batch": 4, "ranks": 2,
    "steps": 300, "warmup": 20, "lr": 0.003, "min_lr_frac": 0.1, "weight_decay": 0.1, "grad_clip": 1.0,
    "eval_every": 25, "eval_windows": 64, "grad_probe": true, "act_block": 128,
    "grad_format": "int8", "grad_block": 256, "corpus": "grammar", "corpus_seed": 1,
    "train_bytes": 2097152, "heldout_bytes": 262144, "time_limit_s": $BUDGET } }
JSON
  OMP_NUM_THREADS=4 timeout $((BUDGET + 60)) "$BIN" run "$tmp/$name.json" -q --out "$OUT/$name.json" \
    > "$tmp/$name.log" 2>&1
  echo "== $run: exit $?" >> "$tmp/$name.log"
}

start=$(date +%s)
for run in bf16+fp32 agoq+agoq8 uniform4+fp32 bf16+fp8lm; do job "$run" & done
wait
for f in "$tmp"/*.log; do tail -4 "$f"; done | tee -a "$log"
echo "device_train: done in $(( $(date +%s) - start ))s; files:" | tee -a "$log"
ls -l "$OUT"/train_s"${SEED}"_*.json 2>&1 | tee -a "$log"
rm -rf "$tmp"
