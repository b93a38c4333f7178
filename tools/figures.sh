#!/usr/bin/env bash
# make figures: run every experiment of the paper's figures and tables on the best backend
# available (simulated where no GPU can measure it) and draw one PNG per experiment under
# results/figures/ (plus NAME.txt, the experiment's `#` table). Every figure says in its title
# which values are SIMULATED, MEASURED or the PAPER's (reported, drawn beside ours, never in
# place of ours).
#   bash tools/figures.sh [build/agoq]        (make figures BUILD=... passes its binary)
# Which experiments: the table below (an experiment and the gnuplot script that draws it), then
# every other experiments/*.json that runs on a CPU, drawn by plots/<name>.gp when one exists.
# Not run here: experiments/default.json (make run) and GPU measurements (backend "cuda" or an
# output under results/h200/); their committed results/h200/<name>.tsv are drawn as they are.
# Slow experiments (kind "train": CPU training, minutes) are re-run only with
# AGOQ_FIGURES_RERUN_SLOW=1; otherwise their committed, measured results are plotted as they are
# (a listed one without committed results counts as failed, so the gap is visible).
# Environment: AGOQ_FIGURES_ONLY="name ..." runs just those; AGOQ_FIGURES_SKIP="name ..." leaves
# some out. Exit status 1 when an experiment or a plot failed (the others are still drawn).
set -u
bin="${1:-build/agoq}"
[ -x "$bin" ] || { echo "figures: agoq binary '$bin' not found (run make first)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "figures: gnuplot not found (tools/deps.sh installs gnuplot-nox)" >&2; exit 1; }
figdir=results/figures
mkdir -p "$figdir"

# name | gnuplot script | extra gnuplot variables (what the script cannot read from the TSV)
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
  "memory_sweep|memory|"
  "bitalloc_dbca_units|bitalloc|"
  "bitalloc_dbca_units_pp8|bitalloc|"
  "collectives_cpu_error|collectives_cpu_error|"
  "collectives_cpu_accumulate|collectives_cpu_accumulate|"
  "train|train|"
  "step_dry|step|"
)
# Measured GPU results: results/h200/<name>.tsv is drawn by plots/<name>.gp, or by the script
# of the first matching pattern here (issue 16's sweeps have their own: plots/step_16_*.gp).
measured_scripts=(
  "collectives*|collectives_gpu"
  "step_16_seq_*|step_16_seq"
  "step_*|step"
)

wanted() { # name -> 0 when it should run
  if [ -n "${AGOQ_FIGURES_ONLY:-}" ]; then [[ " $AGOQ_FIGURES_ONLY " == *" $1 "* ]] || return 1; fi
  [[ " ${AGOQ_FIGURES_SKIP:-} " == *" $1 "* ]] && return 1
  return 0
}
# The string value of top-level key $2 in experiment file $1 (empty when absent).
key_of() { sed -n 's/^[[:space:]]*"'"$2"'"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1" | head -1; }

ok=0; failed=(); notes=(); listed=" "; t0=$(date +%s)

# run_one NAME SCRIPT VARS REQUIRE_PLOT: runs experiments/NAME.json, draws plots/SCRIPT.gp.
run_one() {
  local name="$1" gp="$2" vars="$3" need_plot="$4" file="experiments/$1.json"
  if [ ! -f "$file" ]; then failed+=("$name (no $file)"); return; fi
  local out kind t1
  out=$(key_of "$file" out); out="${out:-results/$name.json}"
  kind=$(key_of "$file" kind)
  local tsv="${out%.json}.tsv"
  t1=$(date +%s)
  if [ "$kind" = train ] && [ "${AGOQ_FIGURES_RERUN_SLOW:-0}" != 1 ]; then
    if [ ! -f "$out" ] || [ ! -f "$tsv" ]; then
      local why="$name: slow (CPU training), no committed $out; AGOQ_FIGURES_RERUN_SLOW=1 runs it"
      if [ "$need_plot" = 1 ]; then failed+=("$why"); else notes+=("$why"); fi
      return
    fi
    echo "figures: $name: plotting the existing $out (slow; AGOQ_FIGURES_RERUN_SLOW=1 re-runs it)" >&2
  else
    echo "figures: $name: agoq run $file" >&2
    if ! "$bin" run "$file" --backend auto --out "$out" -q > "$figdir/$name.txt" 2> "$figdir/$name.log"; then
      echo "figures: $name: experiment failed (see $figdir/$name.log):" >&2
      tail -3 "$figdir/$name.log" >&2
      failed+=("$name (run)"); return
    fi
  fi
  if [ ! -f "plots/$gp.gp" ]; then
    rm -f "$figdir/$name.log"
    if [ "$need_plot" = 1 ]; then failed+=("$name (no plots/$gp.gp)"); else notes+=("$name: results written, no plots/$gp.gp to draw them"); fi
    return
  fi
  if [ ! -f "$tsv" ]; then failed+=("$name (no $tsv: add a \"tsv\" column list to $file)"); return; fi
  if ! gnuplot -e "in='$tsv'; out='$figdir/$name.png'; $vars" "plots/$gp.gp" 2>> "$figdir/$name.log"; then
    echo "figures: $name: gnuplot failed (see $figdir/$name.log)" >&2
    failed+=("$name (plot)"); return
  fi
  rm -f "$figdir/$name.log"
  echo "figures: $name -> $figdir/$name.png ($(( $(date +%s) - t1 )) s)" >&2
  ok=$((ok + 1))
}

for e in "${entries[@]}"; do
  IFS='|' read -r name gp vars <<<"$e"
  listed+="$name "
  wanted "$name" && run_one "$name" "$gp" "$vars" 1
done

# Every other CPU experiment (e.g. the memory model's tables, the other training runs).
for f in experiments/*.json; do
  name=$(basename "$f" .json)
  [[ "$listed" == *" $name "* ]] && continue
  [ "$name" = default ] && continue
  out=$(key_of "$f" out)
  [ "$(key_of "$f" backend)" = cuda ] && continue
  [[ "$out" == results/h200/* ]] && continue
  wanted "$name" && run_one "$name" "$name" "" 0
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
  [ -f "$gp" ] || { notes+=("h200/$n: measured, no plots/$n.gp to draw it"); continue; }
  if gnuplot -e "in='$tsv'; out='$figdir/h200_$n.png'" "$gp"; then
    echo "figures: $n (measured, results/h200) -> $figdir/h200_$n.png" >&2
    ok=$((ok + 1))
  else
    failed+=("h200/$n (plot)")
  fi
done

[ ${#notes[@]} -gt 0 ] && printf 'figures: note: %s\n' "${notes[@]}" >&2
echo "figures: $ok figures in $figdir, ${#failed[@]} failed, $(( $(date +%s) - t0 )) s" >&2
if [ ${#failed[@]} -gt 0 ]; then
  printf 'figures: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
