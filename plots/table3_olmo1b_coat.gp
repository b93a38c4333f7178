# Paper Table 3 (OLMo-1B, 16 x RTX PRO 6000, global batch 64): iteration time and peak memory
# per GPU of COAT and AGoQ at 24K and 32K. Filled points + lines: our simulation; open circles:
# the paper's reported values (never ours).
#   gnuplot -e "in='results/cpu/table3_olmo1b_coat.tsv'; out='results/cpu/table3_olmo1b_coat.png'" plots/table3_olmo1b_coat.gp
# columns: 1 seq_k 2 method_id 3 method 4 step_ms 5 paper_step_ms 6 mem_MB 7 paper_mem_MB
#          8 recompute 9 fits 10 speedup 11 paper_speedup   (rows cycle through the methods)
if (!exists("in")) in = 'results/cpu/table3_olmo1b_coat.tsv'
if (!exists("out")) out = 'results/cpu/table3_olmo1b_coat.png'
set terminal pngcairo size 1200,520 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
methods = "coat agoq"
colors = "#d62728 #2ca02c"
n = words(methods)
set multiplot layout 1,2 title "Table 3: OLMo-1B, 16 x RTX PRO 6000 -- lines: SIMULATED (ours); open circles: PAPER (reported)"
set grid
set key top left
set xlabel "sequence length (K tokens)"
set xrange [22:34]
set title "iteration time"
set ylabel "iteration time (s)"
plot for [i=1:n] in every n::(i-1) using 1:($4/1000) with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated", \
     for [i=1:n] in every n::(i-1) using 1:($5/1000) with points pt 6 ps 2 lw 2 lc rgb word(colors,i) title word(methods,i)." paper"
set title "peak memory per GPU (capacity 96 GB; R = layers COAT recomputes)"
set key bottom right
set ylabel "memory (GiB = 1024 MB of 2^20 bytes)"
plot for [i=1:n] in every n::(i-1) using 1:($6/1024) with linespoints lw 2 pt 7 lc rgb word(colors,i) title word(methods,i)." simulated", \
     for [i=1:n] in every n::(i-1) using 1:($7/1024) with points pt 6 ps 2 lw 2 lc rgb word(colors,i) title word(methods,i)." paper", \
     in every n::0 using 1:($8 > 0 ? $6/1024 : 1/0):(sprintf("R=%d", $8)) with labels offset 0,-1.2 tc rgb word(colors,1) notitle
unset multiplot
