# Issue 16 (b): gradient storage between micro-batches (experiments/step_16_grad_bits.json): fp32
# main gradients (bf16) vs 8-bit storage (int8, dyn8, FP8 E4M3; bf16 activations) and AGoQ as a
# whole, over the number of micro-batches: gradient error against bf16 store-all (each 8-bit
# micro-batch adds a requantization), gradient bytes and step time. The paper's Table 13 GEMM
# weight error under AGoQ (0.026, ../shared/paper/tables.json) is a dashed reference line.
#   gnuplot -e "in='results/h200/step_16_grad_bits.tsv'; out='results/figures/h200_step_16_grad_bits.png'" plots/step_16_grad_bits.gp
# TSV columns: see plots/step_16_seq.gp (9 micro_batches, 17 grads_bytes, 21 step_ms, 30 grad_rel_err_mean).
if (!exists("in")) in = 'results/h200/step_16_grad_bits.tsv'
if (!exists("out")) out = 'results/figures/h200_step_16_grad_bits.png'
src = system("awk -F'\t' '!/^#/ { print $33; exit }' ".in)
gpu = system("awk -F'\t' '!/^#/ && $34 != \"nan\" { print $34; exit }' ".in)
what = src eq "measured" ? "MEASURED on 1 x ".gpu : "SIMULATED (dry-run allocation plan: no timing, no gradient error)"
setup = system("awk -F'\t' '!/^#/ { printf \"%s, %s layer(s), seq %s\", $3, $7, $8; exit }' ".in)
names = system("awk -F'\t' '!/^#/ && !seen[$1]++ { printf \"%s \", $1 }' ".in)
n = words(names)
rows(name) = sprintf("< awk -F'\t' '$1 == \"%s\"' %s | sort -t'\t' -k9,9n", name, in)
colors = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b"
timed = system("awk -F'\t' '!/^#/ && $30 != \"nan\" { n++ } END { print n + 0 }' ".in) + 0
set terminal pngcairo size 1800,560 font ",10" noenhanced
set output out
set multiplot layout 1,3 title "Issue 16: gradient storage bits over micro-batches -- ".setup." -- ".what
set grid
set xlabel "micro-batches per step"
set logscale x 2
set key top left
set title "gradient error vs bf16 store-all (mean relative L2 over tensors)"
set ylabel "relative error"
if (timed > 0) {
  set logscale y
  plot for [i=1:n] rows(word(names,i)) using 9:($30 > 0 ? $30 : 1/0) with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(names,i), \
       0.026 with lines dt 2 lc rgb "black" title "paper Table 13: GEMM weights, AGoQ (reported)"
  unset logscale y
} else {
  set label 1 "no gradient error in a dry plan" at graph 0.2, 0.5
  plot 0.026 with lines dt 2 lc rgb "black" title "paper Table 13: GEMM weights, AGoQ (reported)"
  unset label 1
}
set title "gradient storage (live at the peak)"
set ylabel "GB"
plot for [i=1:n] rows(word(names,i)) using 9:($17/1e9) with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(names,i)
set title "step time"
set ylabel "ms"
if (timed > 0) {
  plot for [i=1:n] rows(word(names,i)) using 9:21 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(names,i)
} else {
  set label 1 "no timing in a dry plan" at graph 0.3, 0.5
  plot 0 with lines lc rgb "white" notitle
  unset label 1
}
unset multiplot
