# Micro-batch gradient accumulation error vs the number of micro-batches (MEASURED, C reference
# kernels): the accumulator is stored in 8 bits and requantized after every micro-batch, as the
# paper does; bf16 accumulation beside it. experiments/collectives_cpu_accumulate.json.
#   gnuplot -e "in='results/cpu/collectives_cpu_accumulate.tsv'; out='results/cpu/collectives_cpu_accumulate.png'" plots/collectives_cpu_accumulate.gp
# columns: 1 format 2 microbatches 3 snr_db 4 nmse 5 max_rel 6 bf16_accum_snr_db
if (!exists("in")) in = 'results/cpu/collectives_cpu_accumulate.tsv'
if (!exists("out")) out = 'results/cpu/collectives_cpu_accumulate.png'
set terminal pngcairo size 900,560 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set title "8-bit micro-batch accumulation error -- MEASURED (256 KiB N(0,1) gradients)"
set xlabel "micro-batches accumulated"
set ylabel "SNR vs fp32 sum (dB)"
set logscale x 2
set grid
set key outside right
# rows of one format (gnuplot breaks a line at every filtered-out row, so filter first)
rows(f) = sprintf("< awk -F'\t' '$1 == \"%s\"' %s", f, in)
plot rows("int8") using 2:3 with linespoints lw 2 title "int8 blocks", \
     rows("dyn8") using 2:3 with linespoints title "dyn8 (released code)", \
     rows("fp8_e4m3") using 2:3 with linespoints title "fp8 e4m3 blocks", \
     rows("fp8_e5m2") using 2:3 with linespoints title "fp8 e5m2 blocks", \
     rows("int8") using 2:6 with linespoints dt 2 title "bf16 accumulation"
