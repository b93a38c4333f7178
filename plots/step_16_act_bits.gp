# Issue 16 (a): AGoQ's stored activation classes (norm inputs, SwiGLU input) at 2..8 bits and bf16
# (experiments/step_16_act_bits.json): gradient error against bf16 store-all, saved activations
# and step time vs bits; integer formats and FP4/FP8 as separate curves, the bf16-stored variant
# at 16 bits, bf16 store-all's own run-to-run spread as a dotted line. The paper's Table 13
# normalized L2 gradient error of the GEMM weights under AGoQ (0.026, ../shared/paper/tables.json)
# is an open circle at 4 bits (their metric and model, not ours).
#   gnuplot -e "in='results/h200/step_16_act_bits.tsv'; out='results/figures/h200_step_16_act_bits.png'" plots/step_16_act_bits.gp
# TSV columns: see plots/step_16_seq.gp (1 name, 15 saved_activation_bytes, 21 step_ms,
#   26 time_vs_bf16, 29 grad_rel_err_max, 30 grad_rel_err_mean, 32 grad_ref_spread_max, 33 source, 34 gpu).
if (!exists("in")) in = 'results/h200/step_16_act_bits.tsv'
if (!exists("out")) out = 'results/figures/h200_step_16_act_bits.png'
src = system("awk -F'\t' '!/^#/ { print $33; exit }' ".in)
gpu = system("awk -F'\t' '!/^#/ && $34 != \"nan\" { print $34; exit }' ".in)
what = src eq "measured" ? "MEASURED on 1 x ".gpu : "SIMULATED (dry-run allocation plan: no timing, no gradient error)"
setup = system("awk -F'\t' '!/^#/ { printf \"%s, %s layers, seq %s\", $3, $7, $8; exit }' ".in)
# rows "bits value..." of one family: int (agoq_intK), fp (agoq_fp4, agoq_fp8), bf16 (agoq_bf16)
fam(f) = sprintf("< awk -F'\t' '!/^#/ { n = $1; b = -1; if (\"%s\" == \"int\" && n ~ /^agoq_int[0-9]$/) b = substr(n, 9) + 0; if (\"%s\" == \"fp\" && n ~ /^agoq_fp[48]$/) b = substr(n, 8) + 0; if (\"%s\" == \"bf16\" && n == \"agoq_bf16\") b = 16; if (b > 0) print b, $0 }' %s | sort -n", f, f, f, in)
ref = system("awk -F'\t' '!/^#/ && $32 != \"nan\" && !v { v = $32 } END { print v + 0 }' ".in) + 0
base_saved = system("awk -F'\t' '$1 == \"bf16\" { print $15 / 1e9; exit }' ".in) + 0
$paper << EOD
4 0.026
EOD
set terminal pngcairo size 1800,560 font ",10" noenhanced
set output out
set multiplot layout 1,3 title "Issue 16: activation bits of AGoQ's stored classes (norm_in, fc1_out), fp32 gradients and moments -- ".setup." -- ".what
set grid
set xlabel "bits per stored activation (16 = kept bf16)"
set xtics (2, 3, 4, 5, 6, 8, 16)
set xrange [1.5:17]
set logscale y
set key top right
set title "gradient error vs bf16 store-all (relative L2 per tensor)"
set ylabel "relative error"
# columns after the prepended bits: name = 2, so TSV column c is c + 1
plot fam("int") using 1:31 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "int, mean over tensors", \
     fam("int") using 1:30 with linespoints lw 1 dt 2 pt 6 lc rgb "#1f77b4" title "int, worst tensor", \
     fam("fp") using 1:31 with linespoints lw 2 pt 5 lc rgb "#d62728" title "FP4 E2M1 / FP8 E4M3, mean", \
     fam("fp") using 1:30 with linespoints lw 1 dt 2 pt 4 lc rgb "#d62728" title "FP, worst", \
     fam("bf16") using 1:31 with points pt 9 ps 2 lc rgb "black" title "bf16 stored (recomputation only)", \
     (ref > 0 ? ref : 1/0) with lines dt 3 lc rgb "gray" title "bf16 store-all run-to-run spread", \
     $paper using 1:2 with points pt 6 ps 2.5 lw 2 lc rgb "#2ca02c" title "paper Table 13: GEMM weights, AGoQ (reported)"
unset logscale y
set title "saved activations (one micro-batch, all layers)"
set ylabel "GB"
plot fam("int") using 1:($16/1e9) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "int", \
     fam("fp") using 1:($16/1e9) with linespoints lw 2 pt 5 lc rgb "#d62728" title "FP", \
     fam("bf16") using 1:($16/1e9) with points pt 9 ps 2 lc rgb "black" title "bf16 stored", \
     base_saved with lines dt 2 lc rgb "gray" title "bf16 store-all"
set title "step time relative to bf16 store-all"
set ylabel "step time / bf16 step time"
timed = system("awk -F'\t' '!/^#/ && $21 != \"nan\" { n++ } END { print n + 0 }' ".in) + 0
if (timed > 0) {
  plot fam("int") using 1:27 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "int", \
       fam("fp") using 1:27 with linespoints lw 2 pt 5 lc rgb "#d62728" title "FP", \
       fam("bf16") using 1:27 with points pt 9 ps 2 lc rgb "black" title "bf16 stored", 1 with lines dt 2 lc rgb "gray" notitle
} else {
  set label 1 "no timing in a dry plan" at graph 0.3, 0.5
  plot 1 with lines dt 2 lc rgb "gray" notitle
  unset label 1
}
unset multiplot
