# Gradient bit-width ablation: step time and exposed data-parallel communication of AGoQ with
# 8-bit (dyn8), 4-bit (int4) or bf16 gradients, and Megatron's fp32 all-reduce (= step time x
# speedup), at 200 Gb/s and 10 Gb/s per node. SIMULATED.
#   gnuplot -e "in='results/cpu/ablation_grad_bits.tsv'; out='results/cpu/ablation_grad_bits.png'" plots/ablation_grad_bits.gp
# columns: 1 machine 2 variant_id 3 variant 4 method 5 grad_wire_bits 6 step_ms 7 dp_comm_ms
#          8 dp_comm_total_ms 9 mem_GiB 10 speedup
if (!exists("in")) in = 'results/cpu/ablation_grad_bits.tsv'
if (!exists("out")) out = 'results/cpu/ablation_grad_bits.png'
set terminal pngcairo size 1200,520 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 1,2 title "Gradient bits: LLaMA2-7B, seq 8K, TP=8 DP=8 on the A6000 cluster -- SIMULATED"
set grid y
set style fill solid 0.8 border -1
set boxwidth 0.35
set key outside bottom center horizontal
set xtics ("dyn8 (8.125 b)" 0, "int4 (4.125 b)" 1, "bf16 (16 b)" 2)
set xrange [-0.6:2.6]
set ylabel "time per step (s)"
nets = "a6000-8x8-ib200 a6000-8x8-ib10"
do for [m=1:2] {
  set title word(nets, m)
  plot in using (strcol(1) eq word(nets,m) ? $2 - 0.18 : 1/0):($6/1000) with boxes lc rgb "#2ca02c" title "AGoQ step", \
       in using (strcol(1) eq word(nets,m) ? $2 + 0.18 : 1/0):($7/1000) with boxes lc rgb "#9467bd" title "of which exposed DP comm", \
       in using (strcol(1) eq word(nets,m) ? $2 : 1/0):($6*$10/1000) with points pt 9 ps 2.5 lc rgb "#1f77b4" title "Megatron (fp32 all-reduce) step"
}
unset multiplot
