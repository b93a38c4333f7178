# DBCA-PP widths derived from the pipeline schedule (SIMULATED: activation units, no hardware):
# per stage, activation memory N_i * bits_i of the paper's rounding (bits_i = rint(4 N_0 / N_i),
# capped at 8) and of the exact widest width that fits the budget N_0 * 4; the dashed line is the
# budget, labels give the bits. Reads the TSV of experiments/bitalloc_dbca_units*.json:
#   build/agoq run experiments/bitalloc_dbca_units.json
#   gnuplot -e "in='results/cpu/bitalloc_dbca_units.tsv'; out='results/cpu/bitalloc_dbca_units.png'" plots/bitalloc.gp
# columns: 1 stage 2 inflight 3 budget_units 4 paper_bits 5 paper_units 6 paper_over_units
#          7 exact_bits 8 exact_units
if (!exists("in")) in = 'results/cpu/bitalloc_dbca_units.tsv'
if (!exists("out")) out = 'results/cpu/bitalloc_dbca_units.png'
if (!exists("note")) note = ''
set terminal pngcairo size 900,520 font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "nan"
stats in using 3 nooutput
budget = STATS_max
nstages = STATS_records
set title "DBCA-PP from the schedule (SIMULATED, activation units), ".nstages." stages ".note."\npaper's rounding vs exact widest-that-fits; dashed: budget N_0 x 4 = ".sprintf("%g", budget)
set xlabel "pipeline stage (in-flight chunk micro-batches in brackets)"
set ylabel "activation memory (units: micro-batch x bit)"
set grid ytics
set key top right
set style fill solid 0.8 border -1
set boxwidth 0.38
set yrange [0:budget * 1.3]
set xrange [-0.6:*]
plot in using 1:(1/0):xtic(sprintf("%d (%d)", $1, $2)) notitle, \
     in using ($1 - 0.2):5 with boxes lc rgb "#ff7f0e" title "paper rounding", \
     in using ($1 + 0.2):8 with boxes lc rgb "#2ca02c" title "exact", \
     in using ($1 - 0.2):5:(sprintf("%d b", $4)) with labels offset 0,0.7 notitle, \
     in using ($1 + 0.2):8:(sprintf("%d b", $7)) with labels offset 0,0.7 notitle, \
     budget with lines dt 2 lw 2 lc rgb "#555555" title "budget"
