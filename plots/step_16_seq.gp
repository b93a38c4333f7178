# Issue 16 (d): sequence length under a memory budget, the measured counterpart of the paper's
# Table 2 (experiments/step_16_seq_*.json: one pipeline stage at TP=8 per-rank shapes on one GPU,
# each policy with the fewest fully recomputed layers that fit the budget). Three panels: peak
# memory per policy vs seq (x = over the budget, drawn at its dry-run need; dashed = the budget),
# tokens/s with the recomputed layers k, and AGoQ's speedup over the best baseline per seq; for
# LLaMA-2-13B at 48 GB the paper's Megatron / AGoQ ratios (Table 2, 64 x RTX A6000: another GPU
# and whole-model iterations) as open circles. The title says MEASURED (and the GPU) or
# SIMULATED (a dry run's allocation plan, no timing) from the TSV's source column.
#   gnuplot -e "in='results/h200/step_16_seq_13b_48gb.tsv'; out='results/figures/h200_step_16_seq_13b_48gb.png'" plots/step_16_seq.gp
# TSV columns: the "tsv" list of experiments/step_16_*.json (1 name, 8 seq, 10 recomputed_layers,
#   11 fits, 12 budget_bytes, 13 peak_bytes, 14 needed_bytes, 21 step_ms, 24 tokens_per_s,
#   33 source, 34 gpu, 35 model_total_bytes: the analytic memory model's total, drawn as thin
#   dashed lines beside the measured points when the TSV has it).
if (!exists("in")) in = 'results/h200/step_16_seq_13b_48gb.tsv'
if (!exists("out")) out = 'results/figures/h200_step_16_seq_13b_48gb.png'
src = system("awk -F'\t' '!/^#/ && $11 != 0 { print $33; exit }' ".in)
gpu = system("awk -F'\t' '!/^#/ && $34 != \"nan\" { print $34; exit }' ".in)
what = src eq "measured" ? "MEASURED on 1 x ".gpu : "SIMULATED (dry-run allocation plan, no GPU, no timing)"
setup = system("awk -F'\t' '!/^#/ { printf \"%s, TP=%s per-rank shapes, stage %s of PP=%s (%s layers, %s micro-batches), budget %g GB\", $3, $4, $6, $5, $7, $9, $12/1e9; exit }' ".in)
budget = system("awk -F'\t' '!/^#/ { print $12/1e9; exit }' ".in) + 0
timed = system("awk -F'\t' '!/^#/ && $21 != \"nan\" { n++ } END { print n + 0 }' ".in) + 0
names = system("awk -F'\t' '!/^#/ && !seen[$1]++ { printf \"%s \", $1 }' ".in)
n = words(names)
rows(name, fit) = sprintf("< awk -F'\t' '$1 == \"%s\" && $11 == %d' %s", name, fit, in)
# timed rows: the experiments' first point (seq < 4K) is a warm-up that takes the process's
# first-use costs (lazy kernel loading) into its own step time, so it is not drawn in the timing panels
trows(name) = sprintf("< awk -F'\t' '$1 == \"%s\" && $11 == 1 && $8 >= 4096' %s", name, in)
colors = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b"
# best baseline (every run but agoq*) / agoq at each seq where both ran
speed = sprintf("< awk -F'\t' '!/^#/ && $11 == 1 && $8 >= 4096 && $21 != \"nan\" { if ($1 ~ /^agoq/) a[$8] = $21; else if (!($8 in b) || $21 < b[$8]) b[$8] = $21 } END { for (s in a) if (s in b) print s / 1024, b[s] / a[s] }' %s | sort -n", in)
paper = (strstrt(in, "13b_48gb") > 0)
# paper Table 2 (../shared/paper/tables.json table2_llama2_13b_64gpu_tp8_pp4): seq_k, megatron_ms / agoq_ms
$paper << EOD
32 1.0292
40 1.1389
48 1.1908
56 1.2683
64 1.2657
72 1.3121
80 1.3432
EOD
set terminal pngcairo size 1800,560 font ",10" noenhanced
set output out
set multiplot layout 1,3 title "Issue 16 / Table 2 counterpart: ".setup." -- ".what
set grid
set key bottom right
set xlabel "sequence length (K tokens)"
has_model = system("awk -F'\t' '!/^#/ && NF >= 35 && $35 != \"nan\" { n++ } END { print n + 0 }' ".in) + 0
set title "peak memory (points: measured; dashed: memory model; x: need over budget)"
set datafile separator "\t" # the gpu column has a space; back to whitespace after this panel
set ylabel "GB"
plot for [i=1:n] rows(word(names,i), 1) using ($8/1024):($13/1e9) with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(names,i), \
     for [i=1:n] rows(word(names,i), 0) using ($8/1024):($14/1e9) with points pt 2 ps 2 lw 2 lc rgb word(colors,i) notitle, \
     for [i=1:(has_model ? n : 0)] rows(word(names,i), 1) using ($8/1024):($35/1e9) with lines lw 1 dt 2 lc rgb word(colors,i) notitle, \
     budget with lines dt 3 lw 2 lc rgb "black" title "budget"
set datafile separator whitespace
if (timed == 0) {
  set title "no timing (dry plan): recomputed layers k per policy"
  set ylabel "k (layers recomputed to fit)"
  plot for [i=1:n] rows(word(names,i), 1) using ($8/1024):10 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(names,i)
} else {
  set title "tokens/s of the stage (labels: recomputed layers k)"
  set ylabel "tokens/s"
  plot for [i=1:n] trows(word(names,i)) using ($8/1024):24 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(names,i), \
       for [i=1:n] trows(word(names,i)) using ($8/1024):24:(sprintf("k=%d", $10)) with labels offset 0,1 tc rgb word(colors,i) notitle
  set title "AGoQ speedup over the best baseline"
  set ylabel "best baseline step time / AGoQ step time"
  if (paper) {
    plot speed using 1:2 with linespoints lw 2 pt 7 lc rgb "#2ca02c" title "ours (".src.")", \
         $paper using 1:2 with points pt 6 ps 2 lw 2 lc rgb "black" title "paper Table 2: Megatron / AGoQ (64 x A6000, reported)", \
         1 with lines dt 3 lc rgb "gray" notitle
  } else {
    plot speed using 1:2 with linespoints lw 2 pt 7 lc rgb "#2ca02c" title "ours (".src.")", 1 with lines dt 3 lc rgb "gray" notitle
  }
}
unset multiplot
