# Paper Table 4 (TP=8 DP=8 on the A6000 cluster): gradient all-reduce time vs buffer size at
# 200 Gb/s and 10 Gb/s, fp32 all-reduce vs AGoQ's quantized all-to-all + all-gather.
# Lines: our simulation (alpha-beta model); open symbols: the paper's reported values.
#   gnuplot -e "in='results/cpu/table4_comm.tsv'; out='results/cpu/table4_comm.png'" plots/table4_comm.gp
# columns: 1 machine_id 2 machine 3 bytes 4 MiB 5 allreduce_ms 6 paper_allreduce_ms 7 a2a_ms
#          8 paper_a2a_ms 9 quant_ms 10 paper_quant_ms 11 allgather_ms 12 paper_allgather_ms
#          13 agoq_total_ms 14 paper_agoq_total_ms 15 speedup
if (!exists("in")) in = 'results/cpu/table4_comm.tsv'
if (!exists("out")) out = 'results/cpu/table4_comm.png'
set terminal pngcairo size 1200,520 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 1,2 title "Table 4: gradient all-reduce, TP=8 DP=8 -- lines: SIMULATED (ours); open symbols: PAPER (reported)"
set logscale xy
set grid
set key top left
set xlabel "fp32 gradient buffer (MiB)"
set ylabel "time (ms)"
nets = "200_Gb/s 10_Gb/s"
do for [m=0:1] {
  set title "network ".word(nets, m+1)." per node"
  plot in using ($1 == m ? $4 : 1/0):5 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "fp32 all-reduce simulated", \
       in using ($1 == m ? $4 : 1/0):13 with linespoints lw 2 pt 7 lc rgb "#2ca02c" title "AGoQ total simulated", \
       in using ($1 == m ? $4 : 1/0):7 with linespoints lw 1 dt 2 pt 1 lc rgb "#2ca02c" title "AGoQ all-to-all simulated", \
       in using ($1 == m ? $4 : 1/0):6 with points pt 6 ps 2 lw 2 lc rgb "#1f77b4" title "all-reduce paper", \
       in using ($1 == m ? $4 : 1/0):14 with points pt 6 ps 2 lw 2 lc rgb "#2ca02c" title "AGoQ total paper", \
       in using ($1 == m ? $4 : 1/0):8 with points pt 4 ps 1.5 lw 1 lc rgb "#2ca02c" title "AGoQ all-to-all paper"
}
unset multiplot
