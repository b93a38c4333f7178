# Issue 16 (f): DBCA-PP, pipeline-stage bit balancing (experiments/step_16_dbca_pp.json): each
# stage of PP=4 run on one GPU with its layers and the micro-batches 1F1B keeps in flight there
# (4, 3, 2, 1); peak memory and saved activations per stage under agoq (FP4 everywhere) and
# agoq_balanced (DBCA-PP's per-stage widths; the paper allocates 4/5/6/8 bits to stages 0..3
# with 11/9/7/5 micro-batches in flight, ../shared/paper/tables.json dbca_pp).
#   gnuplot -e "in='results/h200/step_16_dbca_pp.tsv'; out='results/figures/h200_step_16_dbca_pp.png'" plots/step_16_dbca_pp.gp
# TSV columns: see plots/step_16_seq.gp (1 name, 6 stage, 13 peak_bytes, 15 saved_activation_bytes, 21 step_ms).
if (!exists("in")) in = 'results/h200/step_16_dbca_pp.tsv'
if (!exists("out")) out = 'results/figures/h200_step_16_dbca_pp.png'
src = system("awk -F'\t' '!/^#/ { print $33; exit }' ".in)
gpu = system("awk -F'\t' '!/^#/ && $34 != \"nan\" { print $34; exit }' ".in)
what = src eq "measured" ? "MEASURED on 1 x ".gpu : "SIMULATED (dry-run allocation plan, no GPU)"
setup = system("awk -F'\t' '!/^#/ { printf \"%s, TP=%s, PP=%s, %s layers per stage, seq %s, %s micro-batches\", $3, $4, $5, $7, $8, $9; exit }' ".in)
rows(name) = sprintf("< awk -F'\t' '$1 == \"%s\"' %s | sort -t'\t' -k6,6n", name, in)
spread(name) = system(sprintf("awk -F'\t' '$1 == \"%s\" { if (!n++ || $13 > mx) mx = $13; if (n == 1 || $13 < mn) mn = $13 } END { printf \"%%.2f\", (mx - mn) / 1e9 }' %s", name, in))
set terminal pngcairo size 1500,560 font ",10" noenhanced
set output out
set multiplot layout 1,2 title "Issue 16: DBCA-PP per-stage memory -- ".setup." -- ".what."  (paper: 4/5/6/8 bits on stages 0..3)"
set grid y
set style fill solid 0.7
set boxwidth 0.35
set xlabel "pipeline stage (micro-batches in flight: 4, 3, 2, 1)"
set xtics 1
set yrange [0:*]
set key top right
set title "peak device memory per stage (GB); max - min across stages in the key"
plot rows("agoq") using ($6 - 0.18):($13/1e9) with boxes lc rgb "#1f77b4" title "agoq (spread ".spread("agoq")." GB)", \
     rows("agoq_balanced") using ($6 + 0.18):($13/1e9) with boxes lc rgb "#2ca02c" title "agoq_balanced (spread ".spread("agoq_balanced")." GB)"
set title "saved activations of one micro-batch (GB)"
plot rows("agoq") using ($6 - 0.18):($15/1e9) with boxes lc rgb "#1f77b4" title "agoq", \
     rows("agoq_balanced") using ($6 + 0.18):($15/1e9) with boxes lc rgb "#2ca02c" title "agoq_balanced"
unset multiplot
