# Issue 16: hold-out check of the step-time model calibrated by measured H200 steps
# (experiments/sim_16_holdout.json -> results/cpu/sim_16_holdout.tsv). Left: predicted vs
# measured step time per record (filled = held-out seqs, open = the calibration seqs), with
# y = x and the +-10% goal. Right: peak memory error per record vs seq, the memory model's total
# (goal +-3%) and the step engine's dry plan + cuDNN workspace, both against the measured arena
# peak. Predictions are SIMULATED; the values they are checked against are MEASURED (gpu column).
#   gnuplot -e "in='results/cpu/sim_16_holdout.tsv'; out='results/cpu/sim_16_holdout.png'" plots/sim_16_holdout.gp
# TSV columns: 1 model 2 tp 3 name 4 seq 5 micro_batches 6 recomputed_layers 7 role 8 measured_ms
#   9 predicted_ms 10 time_err 11-14 predicted gemm/attn/other/optimizer ms 15 measured_peak_bytes
#   16 predicted_peak_bytes 17 peak_err 18 plan_peak_bytes 19 plan_err 20 gpu
if (!exists("in")) in = 'results/cpu/sim_16_holdout.tsv'
if (!exists("out")) out = 'results/cpu/sim_16_holdout.png'
gpu = system("awk -F'\t' '!/^#/ { print $20; exit }' ".in)
summary = system("awk -F'\t' '$7 == \"held_out\" { n++; if ($10 < 0.1 && $10 > -0.1) k++ } END { printf \"%d of %d held-out records within 10%%\", k, n }' ".in)
role(r) = sprintf("< awk -F'\t' '$7 == \"%s\"' %s", r, in)
set terminal pngcairo size 1500,600 font ",10" noenhanced
set output out
set multiplot layout 1,2 title "Issue 16 hold-out: step-time model calibrated on MEASURED steps (".gpu.") predicting other seqs -- predictions SIMULATED; ".summary
set grid
set key top left
set title "step time: predicted vs measured"
set logscale xy
set xlabel "measured step ms"
set ylabel "predicted step ms"
plot role("held_out") using 8:9 with points pt 7 ps 1.5 lc rgb "#d62728" title "held-out seqs", \
     role("calibration") using 8:9 with points pt 6 ps 1.5 lc rgb "#1f77b4" title "calibration seqs", \
     x with lines lc rgb "black" title "y = x", 1.1*x with lines dt 2 lc rgb "gray" title "+-10%", 0.9*x with lines dt 2 lc rgb "gray" notitle
unset logscale xy
set title "peak memory: prediction / measured - 1"
set xlabel "sequence length (K tokens)"
set ylabel "relative error"
set format y "%+.0f%%"
plot in using ($4/1024):(100*$17) with points pt 7 lc rgb "#2ca02c" title "memory model (models/memory.c)", \
     in using ($4/1024):(100*$19) with points pt 4 lc rgb "#9467bd" title "engine's dry plan + cuDNN workspace", \
     3 with lines dt 2 lc rgb "gray" title "+-3%", -3 with lines dt 2 lc rgb "gray" notitle
unset multiplot
