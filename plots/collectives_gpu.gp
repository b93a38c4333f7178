# GPU collectives sweep (MEASURED by tools/device_collectives.sh, `agoq collectives --backend
# cuda`): all-reduce time and bus bandwidth per algorithm vs size per rank.
#   gnuplot -e "in='results/h200/collectives_1gpu.tsv'; out='results/h200/collectives_1gpu.png'" plots/collectives_gpu.gp
# columns (runners/collectives.c): 1 algo 2 op 3 format 4 sum 5 ranks 6 bytes 7 time_ms
#   8 algbw_GBps 9 busbw_GBps 10 wire_bytes 11 quantizations 12 snr_db 13 nmse 14 max_rel
if (!exists("in")) in = 'results/h200/collectives_1gpu.tsv'
if (!exists("out")) out = 'results/h200/collectives_1gpu.png'
if (!exists("op")) op = 'allreduce'
set terminal pngcairo size 1300,540 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 1,2 title sprintf("%s per algorithm -- MEASURED on GPU (%s)", op, in)
set logscale xy
set grid
set xlabel "bytes per rank (fp32 logical)"
set key top left
# rows of one algorithm (fp32 local sum where it has one), filtered first: gnuplot breaks lines
rows(a) = sprintf("< awk -F'\t' '$1 == \"%s\" && $2 == \"%s\" && ($4 == \"-\" || $4 == \"fp32\")' %s", a, op, in)
algos = "fp32 bf16 fp8lm agoq qgz ring_q"
set ylabel "time (ms, median)"
plot for [a in algos] rows(a) using 6:7 with linespoints title a
set ylabel "algbw (GB/s, logical fp32 bytes)"
plot for [a in algos] rows(a) using 6:8 with linespoints title a
unset multiplot
