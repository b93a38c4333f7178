# All-reduce error vs rank count (MEASURED on the cpu backend: simulated ranks, the real
# algorithms with the C reference kernels): SNR of the result against the fp32 reference sum.
# AGoQ quantizes every element twice whatever N; the naive quantized ring N times; FP8-LM's
# shared scale grows with N. experiments/collectives_cpu_error.json writes the TSV.
#   gnuplot -e "in='results/cpu/collectives_cpu_error.tsv'; out='results/cpu/collectives_cpu_error.png'" plots/collectives_cpu_error.gp
# columns: 1 algo 2 format 3 sum 4 ranks 5 quantizations 6 wire_bytes 7 snr_db 8 nmse 9 max_rel 10 time_ms
if (!exists("in")) in = 'results/cpu/collectives_cpu_error.tsv'
if (!exists("out")) out = 'results/cpu/collectives_cpu_error.png'
set terminal pngcairo size 900,560 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set title "All-reduce error vs ranks -- MEASURED (cpu backend, simulated ranks, 256 KiB per rank)"
set xlabel "ranks"
set ylabel "SNR vs fp32 sum (dB, higher is better)"
set logscale x 2
set grid
set key outside right
# rows of one algorithm + sum (gnuplot breaks a line at every filtered-out row, so filter first)
rows(a, s) = sprintf("< awk -F'\t' '$1 == \"%s\" && $3 == \"%s\"' %s", a, s, in)
plot rows("agoq", "fp32") using 4:7 with linespoints lw 2 title "agoq int8, fp32 sum", \
     rows("agoq", "bf16") using 4:7 with linespoints title "agoq int8, bf16 sum", \
     rows("ring_q", "fp32") using 4:7 with linespoints lw 2 title "naive ring int8", \
     rows("qgz", "fp32") using 4:7 with linespoints title "qgZ-style int4 (8/node)", \
     rows("fp8lm", "-") using 4:7 with linespoints title "FP8-LM shared scale e4m3", \
     rows("bf16", "-") using 4:7 with linespoints title "NCCL ring bf16"
