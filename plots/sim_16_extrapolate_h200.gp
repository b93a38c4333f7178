# Issue 16: what one GPU cannot show, SIMULATED on the H200 machine file calibrated by the
# measured steps (experiments/sim_16_extrapolate_h200.json): LLaMA2-13B in the paper's Table 2
# layout (TP=8 PP=4 VPP=2). Left: speedup over Megatron at 64 GPUs vs seq, with the paper's
# Table 2 speedups (64 x RTX A6000, reported) as open circles. Middle: tokens/s per GPU at 64 GPUs
# vs seq. Right: tokens/s per GPU vs GPU count at seq 32K. Where results/h200/step_16_seq_13b_*.tsv
# exist, their MEASURED single-GPU points are drawn beside the curves as squares: one pipeline
# stage's rank (TP=8 shapes, 4 micro-batches in flight, under a 48 or 80 GB budget, TP/PP
# communication omitted, no pipeline bubble) with tokens/s divided by TP x PP = 32, i.e. what
# every GPU of a replica would do if the pipeline were perfect: an upper bound, not a prediction.
#   gnuplot -e "in='results/sim_16_extrapolate_h200.tsv'; out='results/figures/sim_16_extrapolate_h200.png'" plots/sim_16_extrapolate_h200.gp
# TSV columns: 1 seq_k 2 gpus 3 method_id 4 method 5 step_ms 6 paper_step_ms 7 recompute
#   8 paper_recompute 9 mem_GiB 10 fits 11 tokens_per_s_per_gpu 12 speedup 13 paper_speedup
if (!exists("in")) in = 'results/sim_16_extrapolate_h200.tsv'
if (!exists("out")) out = 'results/figures/sim_16_extrapolate_h200.png'
if (!exists("meas48")) meas48 = 'results/h200/step_16_seq_13b_48gb.tsv'
if (!exists("meas80")) meas80 = 'results/h200/step_16_seq_13b_80gb.tsv'
methods = system("awk -F'\t' '!/^#/ && !seen[$4]++ { printf \"%s \", $4 }' ".in)
n = words(methods)
colors = "#1f77b4 #ff7f0e #9467bd #2ca02c #d62728"
at64(m) = sprintf("< awk -F'\t' '$2 == 64 && $4 == \"%s\"' %s", m, in)
at32k(m) = sprintf("< awk -F'\t' '$1 == 32 && $4 == \"%s\"' %s", m, in)
have(f) = system("test -f ".f." && awk -F'\t' '!/^#/ && $33 == \"measured\" { n++ } END { exit n == 0 }' ".f." && echo 1 || echo 0") + 0
# measured stage runs of one TSV (plots/step_16_seq.gp columns): seq_k, tokens/s / (tp pp), run name;
# the sweeps' 1K warm-up points (their step time includes first-use costs) are left out
meas(f, seqk) = !have(f) ? "< true" : sprintf("< awk -F'\t' '!/^#/ && $33 == \"measured\" && $11 == 1 && $24 != \"nan\" && $8 > 1024 && (%d == 0 || $8 == %d * 1024) { print $8 / 1024, $24 / ($4 * $5), $1 }' %s", seqk, seqk, f)
mcolor(name) = name eq "agoq" ? 0x2ca02c : name eq "coat" ? 0x9467bd : 0x1f77b4
set terminal pngcairo size 1900,600 font ",10" noenhanced
set output out
if (!exists("mem")) mem = "140 GiB per GPU"
set multiplot layout 1,3 title "Issue 16: LLaMA2-13B, TP=8 PP=4 VPP=2 on H200, ".mem." -- lines: SIMULATED (machine file calibrated by measured steps where present: see meta.calibration); open circles: PAPER (64 x A6000); squares: MEASURED single-GPU stage points (upper bounds)"
set grid
set key top left
set xlabel "sequence length (K tokens)"
set title "speedup over Megatron at 64 GPUs"
set ylabel "Megatron step time / method step time"
plot for [i=1:n] at64(word(methods,i)) using 1:12 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated (H200)", \
     for [i=1:n] at64(word(methods,i)) using 1:13 with points pt 6 ps 2 lw 2 lc rgb word(colors,i) title word(methods,i)." paper (A6000)"
set title "tokens/s per GPU at 64 GPUs"
set ylabel "tokens/s per GPU"
plot for [i=1:n] at64(word(methods,i)) using 1:11 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated", \
     meas(meas48, 0) using 1:2:(mcolor(strcol(3))) with points pt 5 ps 1.5 lc rgb variable title "measured stage / 32, 48 GB budget", \
     meas(meas80, 0) using 1:2:(mcolor(strcol(3))) with points pt 4 ps 1.5 lw 2 lc rgb variable title "measured stage / 32, 80 GB budget"
set title "tokens/s per GPU vs GPU count, seq 32K"
set xlabel "GPUs"
set logscale x 2
plot for [i=1:n] at32k(word(methods,i)) using 2:11 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated", \
     meas(meas48, 32) using (32):2:(mcolor(strcol(3))) with points pt 5 ps 1.5 lc rgb variable title "measured stage / 32 (one replica), 48 GB", \
     meas(meas80, 32) using (32):2:(mcolor(strcol(3))) with points pt 4 ps 1.5 lw 2 lc rgb variable title "measured stage / 32 (one replica), 80 GB"
unset multiplot
