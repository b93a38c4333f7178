# Paper Table 2 (LLaMA2-13B, 64 x A6000, TP=8 PP=4 DP=2): iteration time, recomputed layers per
# stage and speedup over Megatron-LM vs sequence length. Lines with filled points: our
# simulation; open circles: the paper's reported values (never ours).
#   gnuplot -e "in='results/cpu/table2_llama2_13b.tsv'; out='results/cpu/table2_llama2_13b.png'" plots/table2_llama2_13b.gp
# Optional: note='...' is added to the title (which memory accounting chose R).
# columns: 1 seq_k 2 method_id 3 method 4 step_ms 5 paper_step_ms 6 recompute 7 paper_recompute
#          8 mem_GiB 9 fits 10 speedup 11 paper_speedup
# Rows cycle through the methods in order at every length, so `every n::i` selects one method.
if (!exists("in")) in = 'results/cpu/table2_llama2_13b.tsv'
if (!exists("out")) out = 'results/cpu/table2_llama2_13b.png'
if (!exists("note")) note = 'memory: real accounting'
set terminal pngcairo size 1500,560 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
methods = "megatron zero1 agoq"
colors = "#1f77b4 #ff7f0e #2ca02c"
n = words(methods)
set multiplot layout 1,3 title "Table 2: LLaMA2-13B, 64 x RTX A6000, TP=8 PP=4 DP=2 (".note.") -- lines: SIMULATED (ours); open circles: PAPER (reported)"
set grid
set key top left
set xlabel "sequence length (K tokens)"
set ylabel "iteration time (s)"
set title "iteration time"
plot for [i=1:n] in every n::(i-1) using 1:($4/1000) with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated", \
     for [i=1:n] in every n::(i-1) using 1:($5/1000) with points pt 6 ps 2 lw 2 lc rgb word(colors,i) title word(methods,i)." paper"
set title "recomputed layers per stage (R, of 10)"
set ylabel "R"
set yrange [-0.5:10.5]
plot for [i=1:n] in every n::(i-1) using 1:6 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated", \
     for [i=1:n] in every n::(i-1) using 1:7 with points pt 6 ps 2 lw 2 lc rgb word(colors,i) title word(methods,i)." paper"
set autoscale y
set title "speedup over Megatron-LM"
set ylabel "Megatron time / method time"
plot for [i=2:n] in every n::(i-1) using 1:10 with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated", \
     for [i=2:n] in every n::(i-1) using 1:11 with points pt 6 ps 2 lw 2 lc rgb word(colors,i) title word(methods,i)." paper"
unset multiplot
