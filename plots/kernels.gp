# Measured on the GPU: achieved bandwidth of the quantization kernels as a fraction of the
# device-to-device copy bandwidth measured in the same run, against input size, one line per
# format; the issue's 0.90 target dashed; in black the streaming ceiling that fits the panel's
# traffic (read-only for quantizers, write-only for dequantizers, the copy kernel for the
# gradient kernels), measured in the same run. Reads results/h200/kernels.tsv (agoq kernels).
#   gnuplot -e "in='results/h200/kernels.tsv'; out='results/h200/kernels.png'" plots/kernels.gp
if (!exists("in")) in = 'results/h200/kernels.tsv'
if (!exists("out")) out = 'results/h200/kernels.png'
set terminal pngcairo size 1500,900 font ",10" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
# columns: 1 case 2 format 3 block 4 scale 5 rounding 6 n 7 bytes 8 bytes_moved 9 median_ms ... 14 copy_ratio
set logscale x 2
set format x "%.0b %BB"
set xlabel "input size (fp32 bytes)"
set ylabel "achieved / copy bandwidth"
set yrange [0:1.05]
set grid
set key at graph 0.98, graph 0.72 right top font ",8" maxrows 6 spacing 0.9
set multiplot layout 2,3 margins 0.06,0.98,0.07,0.92 spacing 0.06,0.1 title "CUDA quantization kernels on the H200 (MEASURED; ratio to cudaMemcpy D2D of the same run)"
fmts = "fp4_e2m1 int4 int4_asym int8 int8_asym fp8_e4m3 fp8_e5m2 nf4 dyn8"
cases = "quantize_f32 quantize_bf16 dequantize_f32 dequantize_bf16 grad_accumulate_bf16 grad_reduce"
ceiling = "stream_read stream_read stream_write stream_write stream_copy stream_read"
do for [i = 1:words(cases)] {
  c = word(cases, i); r = word(ceiling, i)
  set title sprintf("%s", c) offset 0,-0.5
  plot for [k = 1:words(fmts)] in using ((strcol(1) eq c && strcol(2) eq word(fmts, k)) ? $7 : 1/0):14 \
         with points lc k pt (k > 8 ? 5 : 7) ps 0.9 title word(fmts, k), \
       in using ((strcol(1) eq r) ? $7 : 1/0):14 with linespoints lc rgb "black" pt 6 title r." (ceiling)", \
       0.9 with lines dt 2 lc rgb "gray40" title "target 0.90"
}
unset multiplot
