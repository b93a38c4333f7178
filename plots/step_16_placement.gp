# Issue 16 (c): layer placements (experiments/step_16_placement.json, the variants of
# experiments/ablation_layer_placement.json the engine can produce): one bar per run for peak
# memory, saved activations, step time relative to bf16 store-all and gradient error.
#   gnuplot -e "in='results/h200/step_16_placement.tsv'; out='results/figures/h200_step_16_placement.png'" plots/step_16_placement.gp
# TSV columns: see plots/step_16_seq.gp (1 name, 13 peak_bytes, 15 saved_activation_bytes,
#   26 time_vs_bf16, 30 grad_rel_err_mean, 33 source, 34 gpu).
if (!exists("in")) in = 'results/h200/step_16_placement.tsv'
if (!exists("out")) out = 'results/figures/h200_step_16_placement.png'
src = system("awk -F'\t' '!/^#/ { print $33; exit }' ".in)
gpu = system("awk -F'\t' '!/^#/ && $34 != \"nan\" { print $34; exit }' ".in)
what = src eq "measured" ? "MEASURED on 1 x ".gpu : "SIMULATED (dry-run allocation plan: no timing, no gradient error)"
setup = system("awk -F'\t' '!/^#/ { printf \"%s, %s layers, seq %s\", $3, $7, $8; exit }' ".in)
set terminal pngcairo size 1900,560 font ",10" noenhanced
set output out
set multiplot layout 1,4 title "Issue 16: layer placement (which classes AGoQ quantizes) -- ".setup." -- ".what
set grid y
set style fill solid 0.7
set boxwidth 0.7
set xtics rotate by -35
set yrange [0:*]
set title "peak device memory (GB)"
plot in using 0:($13/1e9):xtic(1) with boxes lc rgb "#1f77b4" notitle
set title "saved activations (GB)"
plot in using 0:($15/1e9):xtic(1) with boxes lc rgb "#2ca02c" notitle
set title "step time / bf16 store-all"
plot in using 0:($26 == $26 ? $26 : 0):xtic(1) with boxes lc rgb "#ff7f0e" notitle, 1 with lines dt 2 lc rgb "black" notitle
set title "gradient error vs bf16 store-all (mean relative L2)"
timed = system("awk -F'\t' '!/^#/ && $30 != \"nan\" { n++ } END { print n + 0 }' ".in) + 0
if (timed > 0) {
  set logscale y
  set yrange [*:*]
  plot in using 0:($30 > 0 ? $30 : 1/0):xtic(1) with boxes lc rgb "#d62728" notitle
} else {
  set label 1 "no gradient error in a dry plan" at graph 0.2, 0.5
  plot in using 0:(0):xtic(1) with boxes lc rgb "#d62728" notitle
}
unset multiplot
