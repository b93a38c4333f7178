# Issue 16 (d): memory vs sequence length per policy for the paper's Table 2 stage (LLaMA-2-13B,
# TP=8 per-rank shapes, stage 0 of PP=4, 10 layers, 4 micro-batches in flight): lines are the
# step engine's exact dry-run allocation plan (SIMULATED, experiments/step_plan_seq_budget.json)
# of store-all runs and of each policy with the fewest recomputed layers that fit 48 GB; filled
# squares are the MEASURED peaks of results/h200/step_16_seq_13b_48gb.tsv when it exists. Right:
# recomputed layers k that fit, beside the paper's Table 2 R per stage (64 x RTX A6000, 48 GB;
# ../shared/paper/tables.json) as open circles.
#   gnuplot -e "in='results/step_plan_seq_budget.tsv'; out='results/figures/step_plan_seq_budget.png'" plots/step_plan_seq_budget.gp
# TSV columns: see plots/step_16_seq.gp (1 name, 8 seq, 10 recomputed_layers, 11 fits,
#   12 budget_bytes, 13 peak_bytes, 14 needed_bytes, 33 source).
if (!exists("in")) in = 'results/step_plan_seq_budget.tsv'
if (!exists("out")) out = 'results/figures/step_plan_seq_budget.png'
if (!exists("meas")) meas = 'results/h200/step_16_seq_13b_48gb.tsv'
budget = system("awk -F'\t' '!/^#/ { print $12/1e9; exit }' ".in) + 0
rows(name, fit) = sprintf("< awk -F'\t' '$1 == \"%s\" && (%d < 0 || $11 == %d)' %s", name, fit, fit, in)
have = system("test -f ".meas." && awk -F'\t' '!/^#/ && $33 == \"measured\" { n++ } END { exit n == 0 }' ".meas." && echo 1 || echo 0") + 0
measured(name) = have ? sprintf("< awk -F'\t' '$1 == \"%s\" && $33 == \"measured\" && $11 == 1' %s", name, meas) : "< true"
gpu = have ? system("awk -F'\t' '!/^#/ && $34 != \"nan\" { print $34; exit }' ".meas) : ""
pols = "bf16 coat agoq"
colors = "#1f77b4 #9467bd #2ca02c"
# paper Table 2 R per stage (of 10): seq_k megatron_R zero1_R agoq_R
$paper << EOD
32 3 2 0
40 4 4 0
48 6 6 0
56 8 8 0
64 8 8 0
72 10 10 0
80 10 10 0
EOD
set terminal pngcairo size 1600,600 font ",10" noenhanced
set output out
set multiplot layout 1,2 title "Issue 16: LLaMA-2-13B Table 2 stage (TP=8, stage 0 of PP=4, 10 layers, 4 micro-batches) -- lines: SIMULATED (step engine's dry allocation plan)".(have ? "; filled squares: MEASURED on 1 x ".gpu : "; no measured file yet")
set grid
set key top left
set xlabel "sequence length (K tokens)"
set title sprintf("device memory need vs seq (dashed: %g GB budget; x = no recomputation fits)", budget)
set ylabel "GB"
plot for [i=1:3] rows(word(pols,i)."_all", -1) using ($8/1024):($14/1e9) with lines lw 1 dt 2 lc rgb word(colors,i) title word(pols,i)." store-all (plan)", \
     for [i=1:3] rows(word(pols,i), 1) using ($8/1024):($14/1e9) with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(pols,i)." fewest recomputed layers that fit (plan)", \
     for [i=1:3] rows(word(pols,i), 0) using ($8/1024):($14/1e9) with points pt 2 ps 2 lw 2 lc rgb word(colors,i) notitle, \
     for [i=1:3] measured(word(pols,i)) using ($8/1024):($13/1e9) with points pt 5 ps 1.5 lc rgb word(colors,i) title word(pols,i)." measured peak", \
     budget with lines dt 3 lc rgb "black" notitle
set title "recomputed layers per stage that fit the budget"
set ylabel "k (of 10)"
set yrange [-0.5:10.5]
plot for [i=1:3] rows(word(pols,i), 1) using ($8/1024):10 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(pols,i)." (plan)", \
     $paper using 1:2 with points pt 6 ps 2 lw 2 lc rgb "#1f77b4" title "paper: Megatron R (64 x A6000, reported)", \
     $paper using 1:4 with points pt 6 ps 2 lw 2 lc rgb "#2ca02c" title "paper: AGoQ R (reported)"
unset multiplot
