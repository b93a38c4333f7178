# Quantization error per layer type: left, the relative L2 storage error sqrt(NMSE) of each
# format on the distributions that stand in for layer inputs (MEASURED, CPU reference, kind
# "quant"); right, the paper's Table 13 per-layer gradient errors (REPORTED by the paper, not
# measured here; different quantity: gradient error after training steps, not storage error).
#   gnuplot -e "in='results/cpu/ablation_error_quant.tsv'; out='results/cpu/ablation_error_quant.png'" plots/ablation_error_quant.gp
# columns: 1 format 2 bits 3 block 4 dist 5 bits_per_element 6 nmse 7 snr_db 8 max_rel
if (!exists("in")) in = 'results/cpu/ablation_error_quant.tsv'
if (!exists("out")) out = 'results/cpu/ablation_error_quant.png'
set terminal pngcairo size 1300,540 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
# Source: AGoQ paper (arXiv 2605.00539) Table 13, as reported (../shared/paper/tables.json).
$paper << EOD
0 layernorm 0.003
1 gemm 0.026
2 silu 0.051
3 attn_q 0.14
4 attn_k 0.15
5 attn_v 0.059
EOD
set multiplot layout 1,2 title "Error per layer type -- left: MEASURED storage error (ours); right: PAPER (reported gradient error)"
set grid y
set logscale y
set style fill solid 0.8 border -1
set key top left
dists = "normal outliers heavy"
colors = "#1f77b4 #ff7f0e #d62728"
set title "relative L2 error of one quantize/dequantize (block-wise)"
set ylabel "sqrt(NMSE)"
set xtics ("fp4_e2m1" 0, "nf4" 1, "int4" 2, "int8" 3, "fp8_e4m3" 4, "dyn8" 5) rotate by 20 right
set xrange [-0.6:5.6]
set boxwidth 0.25
# rows cycle through the 6 formats for each distribution, in the experiment's order
plot for [d=1:3] in using ((int($0) % 6) + (d-2)*0.27):(strcol(4) eq word(dists,d) ? sqrt($6) : 1/0) with boxes lc rgb word(colors,d) title word(dists,d)
set title "paper Table 13: per-layer normalized gradient L2 error (reported)"
set ylabel "normalized L2 error"
set xtics ("LayerNorm" 0, "GEMM" 1, "SiLU" 2, "attn Q" 3, "attn K" 4, "attn V" 5)
set boxwidth 0.6
set datafile separator whitespace
plot $paper using 1:3 with boxes lc rgb "gray60" title "paper (reported)"
unset multiplot
