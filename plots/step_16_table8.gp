# Issue 16 (e): the counterpart of the paper's Table 8 (LLaMA-2-13B, TP=8, seq 12K, per-rank peak
# memory of all layers; experiments/step_16_table8.json): one stacked bar per run with the
# at-peak components (weights, gradients, optimizer, saved activations, workspace and the rest:
# stage input/output, fragmentation), the measured peak as a filled dot and the paper's reported
# totals (Megatron 46.1, +O 37.7, +O+G 35.3, +A+O+G 22.3 GB, ../shared/paper/tables.json
# table8_llama2_13b_tp8_pp1_seq12k_peak_GB) as open circles on the matching runs.
#   gnuplot -e "in='results/h200/step_16_table8.tsv'; out='results/figures/h200_step_16_table8.png'" plots/step_16_table8.gp
# TSV columns: see plots/step_16_seq.gp (1 name, 13 peak_bytes, 16 weights, 17 grads,
#   18 optimizer, 19 saved, 20 workspace _bytes).
if (!exists("in")) in = 'results/h200/step_16_table8.tsv'
if (!exists("out")) out = 'results/figures/h200_step_16_table8.png'
src = system("awk -F'\t' '!/^#/ { print $33; exit }' ".in)
gpu = system("awk -F'\t' '!/^#/ && $34 != \"nan\" { print $34; exit }' ".in)
what = src eq "measured" ? "MEASURED on 1 x ".gpu : "SIMULATED (dry-run allocation plan, no GPU)"
setup = system("awk -F'\t' '!/^#/ { printf \"%s, TP=%s, %s layers, seq %s\", $3, $4, $7, $8; exit }' ".in)
# the paper's total for each run of the file, by name (nan where the paper has none)
paper = sprintf("< awk -F'\t' 'BEGIN { p[\"bf16\"] = 46.1; p[\"bf16_O\"] = 37.7; p[\"bf16_OG\"] = 35.3; p[\"agoq\"] = 22.3 } !/^#/ { print (i++), ($1 in p ? p[$1] : \"nan\") }' %s", in)
set terminal pngcairo size 1200,620 font ",10" noenhanced
set output out
set title "Issue 16 / Table 8 counterpart: per-rank peak memory, ".setup."\nbars: ".what."; open circles: PAPER (reported)"
set grid y
set style data histograms
set style histogram rowstacked
set style fill solid 0.75
set boxwidth 0.6
set ylabel "GB"
set yrange [0:*]
set key outside right
plot in using ($16/1e9):xtic(1) title "weights (bf16)" lc rgb "#1f77b4", \
     '' using ($17/1e9) title "gradients" lc rgb "#ff7f0e", \
     '' using ($18/1e9) title "optimizer (master + moments)" lc rgb "#2ca02c", \
     '' using ($19/1e9) title "saved activations" lc rgb "#d62728", \
     '' using ($20/1e9) title "workspace" lc rgb "#9467bd", \
     '' using (($13 - $16 - $17 - $18 - $19 - $20)/1e9) title "other (I/O, fragmentation)" lc rgb "#8c564b", \
     '' using 0:($13/1e9) with points pt 7 ps 1.5 lc rgb "black" title "peak (".src.")", \
     paper using 1:2 with points pt 6 ps 2.5 lw 2 lc rgb "black" title "paper Table 8 (reported)"
