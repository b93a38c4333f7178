# make run figure: SNR (dB) against storage bits per element (scales included) for every format,
# one panel per input distribution. Reads the TSV `agoq run experiments/default.json` writes.
#   gnuplot -e "in='results/cpu/default.tsv'; out='results/cpu/default.png'" plots/default.gp
if (!exists("in")) in = 'results/cpu/default.tsv'
if (!exists("out")) out = 'results/cpu/default.png'
set terminal pngcairo size 1500,520 font ",10" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 1,3 title "Block-wise quantization error vs storage (measured, C reference; higher is better)"
set xlabel "bits per element (codes + scales + zero points)"
set ylabel "SNR (dB)"
set grid
set key off
set xrange [1.5:9.5]
# columns: 1 format 2 bits 3 block 4 scale 5 dist 6 n 7 bits_per_element 8 snr_db
do for [d in "normal outliers heavy"] {
  set title "input: ".d
  plot in using (strcol(5) eq d ? $7 : 1/0):8 with points pt 7 ps 1.2 lc rgb "#1f77b4", \
       in using (strcol(5) eq d ? $7 : 1/0):8:1 with labels offset 0,0.9 font ",8" rotate by 30 left
}
unset multiplot
