# agoq train figure: held-out and training loss curves per (activation policy + gradient
# all-reduce) run, and the relative L2 error each activation policy puts into the gradients
# (against fp32 storage, same weights and batch). Reads the TSV `agoq run experiments/train.json`
# writes beside its JSON:
#   gnuplot -e "in='results/cpu/train.tsv'; out='results/cpu/train.png'" plots/train.gp
# Optional: where='GPU (H200)' names the machine in the title (default CPU); seed=N picks one seed when the file holds several (default 1); runs='a+b c+d' the
# runs to draw; allreduce=1 puts the all-reduce's error against the exact mean (column 12, in
# files written from commit d9f088d on) in the last panel instead of the activation policy's.
if (!exists("in")) in = 'results/cpu/train.tsv'
if (!exists("out")) out = 'results/cpu/train.png'
if (!exists("seed")) seed = 1
set terminal pngcairo size 1400,1000 font ",10" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
# columns: 1 record 2 run 3 seed 4 step 5 tokens 6 train_loss 7 heldout_loss 8 grad_norm
#          9 grad_rel_l2_vs_fp32_act 10 grad_cosine_vs_fp32_act 11 lr 12 allreduce_rel_l2_vs_exact
# the runs to draw (override with -e "runs='a+b c+d'"), colours in the same order
if (!exists("runs")) runs = "bf16+fp32 agoq+fp32 uniform4+fp32 coat+fp32 agoq+agoq8 bf16+fp8lm"
colors = "#000000 #d62728 #9467bd #2ca02c #ff7f0e #1f77b4 #7f7f7f #8c564b #e377c2"
sel(r, col) = (strcol(1) eq "curve" && strcol(2) eq r && $3 == seed) ? column(col) : 1/0
stats in using 5 nooutput
tmax = STATS_max
if (!exists("where")) where = "CPU"
set multiplot layout 2,2 title sprintf("Convergence check (measured %s training runs, seed %d; lower is better)", where, seed)
set grid
set key top right
set xlabel "training tokens"
set logscale y
set title "held-out loss (nats/byte)"
plot for [i=1:words(runs)] in using 5:(sel(word(runs, i), 7)) with lines lw 2 lc rgb word(colors, i) title word(runs, i)
set title "held-out loss, second half of training (zoom, linear)"
unset logscale y
set xrange [tmax / 2:tmax]
plot for [i=1:words(runs)] in using 5:(sel(word(runs, i), 7)) with linespoints pt 7 ps 0.6 lw 2 lc rgb word(colors, i) title word(runs, i)
set xrange [*:*]
set logscale y
set title "training loss (mean over each evaluation interval)"
plot for [i=1:words(runs)] in using 5:(sel(word(runs, i), 6)) with lines lw 2 lc rgb word(colors, i) title word(runs, i)
if (!exists("allreduce")) allreduce = 0
ecol = allreduce ? 12 : 9
set title allreduce ? "gradient all-reduce error vs the exact mean (relative L2)" : "gradient error of the activation policy vs fp32 storage (relative L2)"
set key bottom right
plot for [i=1:words(runs)] in using 5:(sel(word(runs, i), ecol)) with linespoints pt 7 ps 0.5 lw 1.5 lc rgb word(colors, i) title word(runs, i)
unset multiplot
