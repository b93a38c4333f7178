# Ablations over AGoQ variants (activation formats, or which layer types stay high precision):
# peak memory per GPU against the GPU's capacity, and speedup over Megatron-LM, vs sequence
# length. SIMULATED; a variant that does not fit (AGoQ never recomputes) is drawn as a cross.
#   gnuplot -e "in='results/cpu/ablation_act_bits.tsv'; out='results/cpu/ablation_act_bits.png'; variants='fp4_e2m1 int8 fp8_e4m3 bf16'; what='activation format'; capacity=48" plots/ablation_variants.gp
# columns: 1 seq_k 2 variant_id 3 variant 4 step_ms 5 mem_GiB 6 act_GiB 7 fits 8 quant_ms 9 speedup
# Rows cycle through the variants in order at every length, so `every nv::i` selects one.
if (!exists("in")) in = 'results/cpu/ablation_act_bits.tsv'
if (!exists("out")) out = 'results/cpu/ablation_act_bits.png'
if (!exists("variants")) variants = 'fp4_e2m1 int8 fp8_e4m3 bf16'
if (!exists("what")) what = 'activation format'
if (!exists("capacity")) capacity = 48
colors = "#2ca02c #1f77b4 #ff7f0e #d62728 #9467bd #8c564b"
nv = words(variants)
set terminal pngcairo size 1200,520 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 1,2 title "Ablation (".what."): LLaMA2-13B, 64 x A6000, TP=8 PP=4 -- SIMULATED"
set grid
set key top left
set xlabel "sequence length (K tokens)"
set title "peak memory per GPU (x = exceeds the GPU)"
set key bottom right
set ylabel "GiB"
plot for [i=1:nv] in every nv::(i-1) using 1:5 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(variants,i), \
     for [i=1:nv] in every nv::(i-1) using 1:($7 == 0 ? $5 : 1/0) with points pt 2 ps 2.5 lw 3 lc rgb "black" notitle, \
     capacity with lines dt 2 lw 2 lc rgb "gray40" title sprintf("GPU memory %g GiB", capacity)
set title "speedup over Megatron-LM (which recomputes to fit)"
set key top left
set ylabel "Megatron time / variant time"
plot for [i=1:nv] in every nv::(i-1) using 1:9 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(variants,i), \
     for [i=1:nv] in every nv::(i-1) using 1:($7 == 0 ? $9 : 1/0) with points pt 2 ps 2.5 lw 3 lc rgb "black" notitle
unset multiplot
