# Throughput vs GPU count (weak scaling) per method, one panel per model: tokens/s per GPU and
# peak memory per GPU. Every value is SIMULATED; a point whose memory exceeds the GPU is drawn
# as a cross (does not fit).
#   gnuplot -e "in='results/cpu/throughput_h200.tsv'; out='results/cpu/throughput_h200.png'; models='llama2-7b llama2-13b'; methods='zero3 zeropp coat agoq agoq_zero1'; machine='H200'" plots/throughput.gp
# Rows cycle through the methods in order at every point, so `every nk::i` selects one method.
# columns: 1 model 2 method_id 3 method 4 gpus 5 step_ms 6 tokens_per_s 7 tokens_per_s_per_gpu
#          8 mem_GiB 9 fits 10 recompute 11 dp_comm_ms 12 speedup
if (!exists("in")) in = 'results/cpu/throughput_h200.tsv'
if (!exists("out")) out = 'results/cpu/throughput_h200.png'
if (!exists("models")) models = 'llama2-7b llama2-13b'
if (!exists("methods")) methods = 'zero3 zeropp coat agoq agoq_zero1'
if (!exists("machine")) machine = 'H200'
# one colour per method name, the same in every throughput figure
color(m) = m eq "megatron" ? "#1f77b4" : m eq "zero1" ? "#ff7f0e" : m eq "zero3" ? "#9467bd" : \
           m eq "zeropp" ? "#8c564b" : m eq "coat" ? "#d62728" : m eq "agoq" ? "#2ca02c" : "#17becf"
nm = words(models)
nk = words(methods)
set terminal pngcairo size 700*nm+100,900 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 2,nm title "Throughput vs GPU count on ".machine." -- SIMULATED (no measured point here)"
set grid
set logscale x 2
set xlabel "GPUs"
set key outside right top
do for [j=1:nm] {
  set title word(models,j)." : tokens/s per GPU"
  set ylabel "tokens/s per GPU"
  plot for [i=1:nk] in every nk::(i-1) using (strcol(1) eq word(models,j) ? $4 : 1/0):7 with linespoints lw 2 pt 7 lc rgb color(word(methods,i)) title word(methods,i), \
       for [i=1:nk] in using (strcol(1) eq word(models,j) && $2 == i-1 && $9 == 0 ? $4 : 1/0):7 with points pt 2 ps 2.5 lw 3 lc rgb "black" notitle
}
do for [j=1:nm] {
  set title word(models,j)." : peak memory per GPU (x = does not fit)"
  set ylabel "GiB"
  plot for [i=1:nk] in every nk::(i-1) using (strcol(1) eq word(models,j) ? $4 : 1/0):8 with linespoints lw 2 pt 7 lc rgb color(word(methods,i)) title word(methods,i), \
       for [i=1:nk] in using (strcol(1) eq word(models,j) && $2 == i-1 && $9 == 0 ? $4 : 1/0):8 with points pt 2 ps 2.5 lw 3 lc rgb "black" notitle
}
unset multiplot
