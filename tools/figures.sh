#!/usr/bin/env bash
# make figures: run every experiment of the paper's figures and tables on the best backend
# available (simulated where no GPU can measure it) and draw one PNG per experiment under
# results/figures/. Every figure says in its title which values are SIMULATED, MEASURED or the
# PAPER's (reported, drawn beside ours, never in place of ours).
#   bash tools/figures.sh [build/agoq]        (make figures BUILD=... passes its binary)
# Environment: AGOQ_FIGURES_ONLY="name ..." runs just those entries; AGOQ_FIGURES_SKIP="name ..."
# leaves some out. Entries marked slow (the CPU training run, minutes) are re-run only when
# their results file is missing or AGOQ_FIGURES_RERUN_SLOW=1; otherwise their committed,
# measured results are plotted as they are. Exit status 1 when any listed experiment or plot
# failed (the others are still drawn); a summary line ends the run.
# GPU measurements (results/h200/*.json, written by `agoq kernels` / `agoq collectives` on a
# GPU) are never re-run here: when a plots/<name>.gp exists for results/h200/<name>.tsv it is
# drawn as is.
set -u
bin="${1:-build/agoq}"
[ -x "$bin" ] || { echo "figures: agoq binary '$bin' not found (run make first)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "figures: gnuplot not found (tools/deps.sh installs gnuplot-nox)" >&2; exit 1; }
figdir=results/figures
mkdir -p "$figdir"

# name | gnuplot script | extra gnuplot variables (what the script cannot read from the TSV) | slow
entries=(
  "table2_llama2_13b|table2_llama2_13b|"
  "table2_llama2_13b_paper_accounting|table2_llama2_13b|note='memory: paper Table 1 accounting'"
  "table3_olmo1b_coat|table3_olmo1b_coat|"
  "table4_comm|table4_comm|"
  "throughput_h200|throughput|models='llama2-7b llama2-13b'; methods='zero3 zeropp coat agoq agoq_zero1'; machine='H200 (8 per node, 8 x 400 Gb/s)'"
  "throughput_h200_long|throughput|models='llama2-13b llama2-70b'; methods='megatron zero1 zero3 coat agoq agoq_zero1'; machine='H200, seq 64K, TP=8'"
  "throughput_a6000|throughput|models='llama2-7b'; methods='megatron zero1 zero3 zeropp coat agoq agoq_zero1'; machine='RTX A6000 (8 per node, 200 Gb/s)'"
  "ablation_act_bits|ablation_variants|variants='fp4_e2m1 int8 fp8_e4m3 bf16 balanced'; what='activation format'; capacity=48"
  "ablation_layer_placement|ablation_variants|variants='agoq attention-fp4 norm-bf16 outproj-bf16 fc1out-bf16'; what='high-precision layer types'; capacity=48"
  "ablation_grad_bits|ablation_grad_bits|"
  "ablation_error_quant|ablation_error_quant|"
  "collectives_cpu_error|collectives_cpu_error|"
  "collectives_cpu_accumulate|collectives_cpu_accumulate|"
  "train|train||slow"
)
# Measured GPU results: results/h200/<name>.tsv is drawn by plots/<name>.gp, or by the script
# of the first matching pattern here.
measured_scripts=(
  "collectives*|collectives_gpu"
)
# The memory model's experiments (Tables 1, 8, 14): experiments/memory_*.json, plotted by
# plots/<name>.gp when its owner wrote one.
for f in experiments/memory_*.json; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .json)
  entries+=("$n|$n|")
done

wanted() { # name -> 0 when it should run
  local n="$1"
  if [ -n "${AGOQ_FIGURES_ONLY:-}" ]; then [[ " $AGOQ_FIGURES_ONLY " == *" $n "* ]] || return 1; fi
  [[ " ${AGOQ_FIGURES_SKIP:-} " == *" $n "* ]] && return 1
  return 0
}

# Where an experiment writes: its "out" key (default results/<name>.json); the TSV sits beside it.
out_of() {
  local f="$1" n="$2" o
  o=$(sed -n 's/^[[:space:]]*"out"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | head -1)
  echo "${o:-results/$n.json}"
}

ok=0; failed=(); t0=$(date +%s)
for e in "${entries[@]}"; do
  IFS='|' read -r name gp vars slow <<<"$e"
  wanted "$name" || continue
  file="experiments/$name.json"
  if [ ! -f "$file" ]; then failed+=("$name (no $file)"); continue; fi
  out=$(out_of "$file" "$name")
  tsv="${out%.json}.tsv"
  t1=$(date +%s)
  if [ "${slow:-}" = slow ] && [ -f "$out" ] && [ -f "$tsv" ] && [ "${AGOQ_FIGURES_RERUN_SLOW:-0}" != 1 ]; then
    echo "figures: $name: plotting the existing $out (slow; AGOQ_FIGURES_RERUN_SLOW=1 re-runs it)" >&2
  elif echo "figures: $name: agoq run $file" >&2 && ! "$bin" run "$file" --backend auto --out "$out" -q > "$figdir/$name.txt" 2> "$figdir/$name.log"; then
    echo "figures: $name: experiment failed (see $figdir/$name.log):" >&2
    tail -3 "$figdir/$name.log" >&2
    failed+=("$name (run)"); continue
  fi
  if [ ! -f "plots/$gp.gp" ]; then failed+=("$name (no plots/$gp.gp)"); continue; fi
  if ! gnuplot -e "in='$tsv'; out='$figdir/$name.png'; $vars" "plots/$gp.gp" 2>> "$figdir/$name.log"; then
    echo "figures: $name: gnuplot failed (see $figdir/$name.log)" >&2
    failed+=("$name (plot)"); continue
  fi
  rm -f "$figdir/$name.log"
  echo "figures: $name -> $figdir/$name.png ($(( $(date +%s) - t1 )) s)" >&2
  ok=$((ok + 1))
done

# Measured GPU results: plotted from the files, never re-run (no GPU is assumed here).
for tsv in results/h200/*.tsv; do
  [ -e "$tsv" ] || continue
  n=$(basename "$tsv" .tsv)
  wanted "$n" || continue
  gp="plots/$n.gp"
  for m in "${measured_scripts[@]}"; do
    IFS='|' read -r pat script <<<"$m"
    # shellcheck disable=SC2053  # $pat is a glob on purpose
    [ -f "$gp" ] || [[ $n != $pat ]] || gp="plots/$script.gp"
  done
  [ -f "$gp" ] || continue
  if gnuplot -e "in='$tsv'; out='$figdir/h200_$n.png'" "$gp"; then
    echo "figures: $n (measured, results/h200) -> $figdir/h200_$n.png" >&2
    ok=$((ok + 1))
  else
    failed+=("h200/$n (plot)")
  fi
done

echo "figures: $ok figures in $figdir, ${#failed[@]} failed, $(( $(date +%s) - t0 )) s" >&2
if [ ${#failed[@]} -gt 0 ]; then
  printf 'figures: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
