#!/usr/bin/env bash
# make figures: walk experiments/*.json; every experiment whose results land under results/cpu/
# (CPU and simulated runs) is run on this machine, and every experiment that names a figure
# ({"figure": {"script": "plots/X.gp", "vars": "..."}}) is drawn beside its results:
# gnuplot -e "in='OUT.tsv'; out='OUT.png'; VARS" plots/X.gp, OUT = the experiment's "out" without
# .json (results/<machine>/<experiment>, the path rule of runners/cmdline.h). NAME.txt beside it
# holds the experiment's `#` table. Every figure says in its title which values are SIMULATED,
# MEASURED or the PAPER's (reported, drawn beside ours, never in place of ours).
#   bash tools/figures.sh [build/agoq]        (make figures BUILD=... passes its binary)
# Not run here: GPU measurements (results/<gpu>/, e.g. results/h200/): their committed TSV is
# drawn as it is. Slow experiments (kind "train": CPU training, minutes) are re-run only with
# AGOQ_FIGURES_RERUN_SLOW=1; otherwise their committed, measured results are plotted as they are
# (one with a figure and without committed results counts as failed, so the gap is visible).
# Environment: AGOQ_FIGURES_ONLY="name ..." runs just those; AGOQ_FIGURES_SKIP="name ..." leaves
# some out. Exit status 1 when an experiment or a plot failed (the others are still drawn).
# The experiment files are read through `agoq list --experiments` (name, kind, results path,
# figure script and vars), so the path rule and the JSON reading live in the binary only.
set -u
bin="${1:-build/agoq}"
[ -x "$bin" ] || { echo "figures: agoq binary '$bin' not found (run make first)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "figures: gnuplot not found (tools/deps.sh installs gnuplot-nox)" >&2; exit 1; }

wanted() { # name -> 0 when it should run
  if [ -n "${AGOQ_FIGURES_ONLY:-}" ]; then [[ " $AGOQ_FIGURES_ONLY " == *" $1 "* ]] || return 1; fi
  [[ " ${AGOQ_FIGURES_SKIP:-} " == *" $1 "* ]] && return 1
  return 0
}

ok=0; failed=(); notes=(); t0=$(date +%s)

# run_one NAME KIND OUT SCRIPT VARS: runs (CPU) or reads (GPU) experiments/NAME.json, draws its figure.
run_one() {
  local name="$1" kind="$2" out="$3" gp="$4" vars="$5" file="experiments/$1.json" base t1
  [ "$gp" = - ] && gp=""
  [ "$vars" = - ] && vars=""
  base="${out%.json}"
  t1=$(date +%s)
  mkdir -p "$(dirname "$out")"
  if [[ "$out" != results/cpu/* ]]; then
    [ -n "$gp" ] || return 0
    if [ ! -f "$base.tsv" ]; then notes+=("$name: measured on a GPU, no committed $base.tsv to draw"); return; fi
  elif [ "$kind" = train ] && [ "${AGOQ_FIGURES_RERUN_SLOW:-0}" != 1 ]; then
    if [ ! -f "$out" ] || [ ! -f "$base.tsv" ]; then
      local why="$name: slow (CPU training), no committed $out; AGOQ_FIGURES_RERUN_SLOW=1 runs it"
      if [ -n "$gp" ]; then failed+=("$why"); else notes+=("$why"); fi
      return
    fi
    echo "figures: $name: plotting the existing $out (slow; AGOQ_FIGURES_RERUN_SLOW=1 re-runs it)" >&2
  else
    echo "figures: $name: agoq run $file" >&2
    if ! "$bin" run "$file" --backend auto --out "$out" -q > "$base.txt" 2> "$base.log"; then
      echo "figures: $name: experiment failed (see $base.log):" >&2
      tail -3 "$base.log" >&2
      failed+=("$name (run)"); return
    fi
    rm -f "$base.log"
  fi
  if [ -z "$gp" ]; then notes+=("$name: no figure named in $file"); return; fi
  if [ ! -f "$gp" ]; then failed+=("$name (no $gp)"); return; fi
  if [ ! -f "$base.tsv" ]; then failed+=("$name (no $base.tsv: add a \"tsv\" column list to $file)"); return; fi
  if ! gnuplot -e "in='$base.tsv'; out='$base.png'; $vars" "$gp" 2> "$base.log"; then
    echo "figures: $name: gnuplot failed (see $base.log)" >&2
    failed+=("$name (plot)"); return
  fi
  rm -f "$base.log"
  echo "figures: $name -> $base.png ($(( $(date +%s) - t1 )) s)" >&2
  ok=$((ok + 1))
}

list=$("$bin" list --experiments) || { echo "figures: agoq list --experiments failed" >&2; exit 1; }
while IFS=$'\t' read -r -u 3 name kind out gp vars; do
  wanted "$name" && run_one "$name" "$kind" "$out" "$gp" "$vars"
done 3<<<"$list"

[ ${#notes[@]} -gt 0 ] && printf 'figures: note: %s\n' "${notes[@]}" >&2
echo "figures: $ok figures beside their results (results/<machine>/), ${#failed[@]} failed, $(( $(date +%s) - t0 )) s" >&2
if [ ${#failed[@]} -gt 0 ]; then
  printf 'figures: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
