# Per-GPU memory from the memory model (SIMULATED: computed, not measured) against GPU count, one
# panel per model: bf16, COAT and AGoQ at ZeRO-3 (solid) and ZeRO-1 (dashed); the last panel is
# AGoQ's change against bf16 at the same layout, with the paper's headline (-51.6%, Table 8:
# LLaMA2-13B 46.1 -> 22.3 GB) marked. Reads the TSV of experiments/memory_sweep.json:
#   build/agoq run experiments/memory_sweep.json
#   gnuplot -e "in='results/cpu/memory_sweep.tsv'; out='results/cpu/memory_sweep.png'" plots/memory.gp
# columns: 1 model 2 policy 3 accounting 4 gpus 5 tp 6 pp 7 dp 8 zero 9 seq 10 weights_GB
#          11 grads_GB 12 optimizer_GB 13 activations_GB 14 act_scales_GB 15 comm_GB 16 total_GB
#          17 layer_act_U 18 vs_baseline_pct
# Row order is the runner's loop order: model, GPU count, ZeRO stage, policy (innermost), so
# `every stride::first::last` selects one (model, ZeRO, policy) line.
if (!exists("in")) in = 'results/cpu/memory_sweep.tsv'
if (!exists("out")) out = 'results/cpu/memory_sweep.png'
if (!exists("models")) models = "llama2-7b llama2-13b llama3-8b codellama-34b llama2-70b"
if (!exists("policies")) policies = "bf16 coat agoq"
if (!exists("ngpus")) ngpus = 8
if (!exists("zeros")) zeros = "1 3"
headline = -51.6
np = words(policies)
nz = words(zeros)
stride = nz * np
first(m, z, p) = ((m - 1) * ngpus * nz + (z - 1)) * np + (p - 1)
last(m, z, p) = first(m, z, p) + (ngpus - 1) * stride
colors = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd"
set terminal pngcairo size 1650,950 font ",10" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 2,3 title "Per-GPU memory, SIMULATED by the memory model (TP=8 + SP, PP=1, seq 4096, micro-batch 1; real accounting) -- solid ZeRO-3, dashed ZeRO-1"
set grid
set logscale x 2
set xrange [6:1300]
set xlabel "GPUs (DP = GPUs / 8)"
set ylabel "GB per GPU"
set key top right
set yrange [0:*]
do for [m = 1:words(models)] {
  set title word(models, m)
  plot for [p = 1:np] in every stride::first(m, nz, p)::last(m, nz, p) using 4:16 with linespoints lw 2 pt 7 lc rgb word(colors, p) title word(policies, p)." ZeRO-".word(zeros, nz), \
       for [p = 1:np] in every stride::first(m, 1, p)::last(m, 1, p) using 4:16 with lines dt 2 lw 1.5 lc rgb word(colors, p) title word(policies, p)." ZeRO-".word(zeros, 1), \
       in every stride::first(m, nz, 1)::last(m, nz, 1) using 4:($16 * (1 + headline / 100)) with lines dt 3 lw 1.5 lc rgb "#555555" title "bf16 ZeRO-3 x (1 - 0.516): paper headline"
}
set title "AGoQ vs bf16 at the same layout (ZeRO-".word(zeros, nz).")"
set ylabel "change in per-GPU memory (%)"
set yrange [-80:0]
set arrow 1 from graph 0, first headline to graph 1, first headline nohead dt 2 lw 2 lc rgb "#555555"
set label 1 "paper headline -51.6% (Table 8, LLaMA2-13B, TP=8, 12K)" at graph 0.03, first (headline - 4) tc rgb "#555555"
plot for [m = 1:words(models)] in every stride::first(m, nz, np)::last(m, nz, np) using 4:18 with linespoints lw 2 pt 7 lc rgb word(colors, m) title word(models, m)
unset multiplot
