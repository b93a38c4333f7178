# The training step per run vs sequence length (agoq step, experiment kind "step"): peak device
# memory (the arena's high-water mark; a cross = over the budget, drawn at its dry-run need) and
# tokens/s. One curve per (run, model, tp) of the TSV. A dry plan (no timing: every tokens/s is
# nan) draws the memory panel only and says it is the allocation plan, not a measurement.
#   gnuplot -e "in='results/h200/step_seq.tsv'; out='results/h200/step_seq.png'" plots/step.gp
# TSV columns (the "tsv" list of experiments/step_*.json, and of `agoq step`):
#   1 name 2 policy 3 model 4 tp 5 seq 6 recomputed_layers 7 fits 8 peak_bytes
#   9 saved_activation_bytes 10 step_ms 11 tokens_per_s 12 mfu 13 time_vs_bf16 14 peak_vs_bf16
#   15 saved_vs_bf16 16 time_vs_recompute 17 peak_vs_recompute 18 needed_bytes
if (!exists("in")) in = 'results/h200/step_seq.tsv'
if (!exists("out")) out = 'results/h200/step_seq.png'
# "name|model|tp" of every curve, in the order of the file; each curve reads only its rows
series = system("awk -F'\t' '!/^#/ && !seen[$1 \"|\" $3 \"|\" $4]++ { printf \"%s|%s|%s \", $1, $3, $4 }' ".in)
points = system("awk -F'\t' '!/^#/ && !seen[$3 \"|\" $4]++ { n++ } END { print n + 0 }' ".in) + 0
nseq = system("awk -F'\t' '!/^#/ && !seen[$5]++ { n++ } END { print n + 0 }' ".in) + 0
timed = system("awk -F'\t' '!/^#/ && $11 != \"nan\" { n++ } END { print n + 0 }' ".in) + 0
ns = words(series)
rows(i) = sprintf("< awk -F'\t' '($1 \"|\" $3 \"|\" $4) == \"%s\"' %s", word(series, i), in)
run(i) = word(series, i)[1:strstrt(word(series, i), "|") - 1]
rest(i) = word(series, i)[strstrt(word(series, i), "|") + 1:]
label(i) = points > 1 ? run(i)." ".rest(i)[1:strstrt(rest(i), "|") - 1]." tp".rest(i)[strstrt(rest(i), "|") + 1:] : run(i)
# one colour per run name, as in the other figures
color(m) = m eq "bf16" ? "#1f77b4" : m eq "recompute" ? "#ff7f0e" : m eq "selective" ? "#9467bd" : \
           m eq "coat" ? "#d62728" : m eq "agoq" ? "#2ca02c" : m eq "int8" ? "#8c564b" : \
           m eq "int4" ? "#e377c2" : "#17becf"
barw = nseq > 1 ? 700 : (ns * 45 + 200 > 700 ? ns * 45 + 200 : 700) # width of one panel
set terminal pngcairo size (timed > 0 ? 2 : 1) * barw,(nseq > 1 ? 600 : 720) font ",11" noenhanced
set output out
set datafile separator "\t"
set grid
set multiplot layout 1,(timed > 0 ? 2 : 1) title (timed > 0 ? \
    "Training step per run -- MEASURED (one GPU; TP/PP communication omitted)" : \
    "Allocation plan per run -- SIMULATED (dry run: the step's exact allocations, no kernel)")
if (nseq > 1) {
  # curves over the sequence length
  set logscale x 2
  set xlabel "sequence length (tokens)"
  set key outside bottom center horizontal
  set title "peak device memory (x = over the budget, at its need)"
  set ylabel "GB"
  plot for [i=1:ns] rows(i) using (strcol(7) ne "0" ? $5 : 1/0):($8 / 1e9) with linespoints lw 2 pt 7 \
           lc rgb color(run(i)) title label(i), \
       for [i=1:ns] rows(i) using (strcol(7) eq "0" ? $5 : 1/0):($18 / 1e9) with points pt 2 ps 2 lw 3 \
           lc rgb color(run(i)) notitle
  if (timed > 0) {
    set title "throughput"
    set ylabel "tokens/s"
    plot for [i=1:ns] rows(i) using (strcol(7) ne "0" ? $5 : 1/0):11 with linespoints lw 2 pt 7 \
             lc rgb color(run(i)) title label(i)
  }
} else {
  # one sequence length: a bar per run (hatched = over the budget, at its need)
  set style fill solid 0.8 border -1
  set boxwidth 0.8
  set xrange [0:ns + 1]
  set xtics rotate by -40 scale 0
  set yrange [0:*]
  set bmargin 10
  set title sprintf("peak device memory at seq %s (hatched = over the budget, at its need)", \
                    system("awk -F'\t' '!/^#/ { print $5; exit }' ".in))
  set ylabel "GB"
  plot for [i=1:ns] rows(i) using (i):(strcol(7) ne "0" ? $8 / 1e9 : 1/0):xtic(label(i)) with boxes \
           lc rgb color(run(i)) notitle, \
       for [i=1:ns] rows(i) using (i):(strcol(7) eq "0" ? $18 / 1e9 : 1/0) with boxes fill pattern 4 \
           lc rgb color(run(i)) notitle
  if (timed > 0) {
    set title "throughput"
    set ylabel "tokens/s"
    plot for [i=1:ns] rows(i) using (i):(strcol(7) ne "0" ? $11 : 1/0):xtic(label(i)) with boxes \
             lc rgb color(run(i)) notitle
  }
}
unset multiplot
