#!/usr/bin/env bash
# Rewrites source paths of the old flat layout (harness/ as both roof and ground, kernels/ flat,
# tests/ flat) to the layered one (core/ < kernels/<op>/ < collectives, models < train, sim,
# step < runners/ < harness/), from the one mapping table below.
#   tools/relayout.sh [FILES...]     default: every tracked or new (not ignored) C/C++/CUDA source,
#                                    tools/*.sh, *.md (README, docs/), experiments/ JSON, plots/,
#                                    validation/*.py and the Makefile
#   tools/relayout.sh --print-map    the table, one `OLD NEW` pair a line
# Every whole-path occurrence of OLD (not part of a longer path) becomes NEW: `#include "OLD"`
# lines, comments, shell scripts, docs. Idempotent: no NEW path contains an OLD one, so a second
# run changes nothing. Prints the files it changed. After merging a branch written against the
# old layout: in a conflicted #include block take that branch's side, then run this on the file.
set -euo pipefail
print_map=0
[ "${1:-}" = "--print-map" ] && print_map=1 && shift
args=()
for f in "$@"; do args+=("$(realpath -m -- "$f")"); done # paths as given, before the cd
set -- "${args[@]+"${args[@]}"}"
cd "$(dirname "$(realpath "$0")")/.." # the repository of this script

# old -> new (one pair a line). Keep sorted by area; a moved file appears exactly once.
MAP='
harness/backend.c            core/backend.c
harness/backend.h            core/backend.h
harness/check.h              core/check.h
harness/cli.c                core/cli.c
harness/cli.h                core/cli.h
harness/common.c             core/common.c
harness/common.h             core/common.h
harness/jconf.c              core/jconf.c
harness/jconf.h              core/jconf.h
harness/metrics.c            core/metrics.c
harness/metrics.h            core/metrics.h
harness/provenance.c         core/provenance.c
harness/provenance.h         core/provenance.h
harness/results.c            core/results.c
harness/results.h            core/results.h
harness/rng.c                core/rng.c
harness/rng.h                core/rng.h
kernels/cuda_info.cu         core/cuda_info.cu
harness/qspec.c              kernels/quant/qspec.c
harness/qspec.h              kernels/quant/qspec.h
harness/cmdline.c            runners/cmdline.c
harness/cmdline.h            runners/cmdline.h
harness/commands.h           runners/commands.h
harness/experiment.c         runners/experiment.c
harness/experiment.h         runners/experiment.h
harness/cmd_quant.c          runners/quant.c
harness/cmd_kernels.c        runners/kernels.c
harness/cmd_collectives.c    runners/collectives.c
harness/cmd_memory.c         runners/memory.c
harness/cmd_bitalloc.c       runners/bitalloc.c
harness/cmd_simulate.c       runners/simulate.c
harness/cmd_train.c          runners/train.c
harness/cmd_list.c           runners/list.c
harness/cmd_run.c            runners/run.c
kernels/bench.cu             kernels/bench/bench.cu
kernels/bench_cases.h        kernels/bench/bench_cases.h
kernels/formats.c            kernels/quant/formats.c
kernels/formats.h            kernels/quant/formats.h
kernels/quant.cu             kernels/quant/quant.cu
kernels/quant_cuda.h         kernels/quant/quant_cuda.h
kernels/quant_device.cuh     kernels/quant/quant_device.cuh
kernels/quant_fast.h         kernels/quant/quant_fast.h
kernels/quant_launch.cuh     kernels/quant/quant_launch.cuh
kernels/quant_math.h         kernels/quant/quant_math.h
kernels/quant_ref.c          kernels/quant/quant_ref.c
kernels/quant_ref.h          kernels/quant/quant_ref.h
kernels/quant_tile.cuh       kernels/quant/quant_tile.cuh
kernels/quant_tile_geom.h    kernels/quant/quant_tile_geom.h
kernels/bench_quant.cu       kernels/quant/bench_quant.cu
kernels/grad8.cu             kernels/grad8/grad8.cu
kernels/grad8.h              kernels/grad8/grad8.h
kernels/grad8_ref.c          kernels/grad8/grad8_ref.c
kernels/fused.cu             kernels/fused/fused.cu
kernels/fused.h              kernels/fused/fused.h
kernels/fused_dev.cuh        kernels/fused/fused_dev.cuh
kernels/fused_math.h         kernels/fused/fused_math.h
kernels/fused_ref.c          kernels/fused/fused_ref.c
kernels/fused_gelu.cu        kernels/fused/fused_gelu.cu
kernels/fused_rmsnorm.cu     kernels/fused/fused_rmsnorm.cu
kernels/fused_swiglu.cu      kernels/fused/fused_swiglu.cu
kernels/gelu_ref.c           kernels/fused/gelu_ref.c
kernels/rmsnorm_ref.c        kernels/fused/rmsnorm_ref.c
kernels/swiglu_ref.c         kernels/fused/swiglu_ref.c
kernels/bench_fused.cu       kernels/fused/bench_fused.cu
kernels/gemm.cu              kernels/gemm/gemm.cu
kernels/gemm.h               kernels/gemm/gemm.h
kernels/gemm_ref.c           kernels/gemm/gemm_ref.c
kernels/bench_stream.cu      kernels/stream/bench_stream.cu
tests/test_quant_ref.c       tests/quant/test_quant_ref.c
tests/test_quant_math.c      tests/quant/test_quant_math.c
tests/test_fused.c           tests/fused/test_fused_ref.c
tests/cuda/test_quant_cuda.c tests/cuda/quant/test_quant_cuda.c
tests/cuda/test_quant_util.h tests/cuda/quant/test_quant_util.h
tests/cuda/test_grad8_cuda.c tests/cuda/grad8/test_grad8_cuda.c
tests/cuda/test_fused.c      tests/cuda/fused/test_fused_cuda.c
tests/cuda/test_fused_util.h tests/cuda/fused/test_fused_util.h
tests/cuda/test_gemm.c       tests/cuda/gemm/test_gemm_cuda.c
# results/<machine>/<experiment> (issue 12 phase 2; fused_run1 was removed: its latest is kernels_fused)
results/ablation_act_bits.json               results/cpu/ablation_act_bits.json
results/ablation_act_bits.tsv                results/cpu/ablation_act_bits.tsv
results/ablation_error_quant.json            results/cpu/ablation_error_quant.json
results/ablation_error_quant.tsv             results/cpu/ablation_error_quant.tsv
results/ablation_grad_bits.json              results/cpu/ablation_grad_bits.json
results/ablation_grad_bits.tsv               results/cpu/ablation_grad_bits.tsv
results/ablation_layer_placement.json        results/cpu/ablation_layer_placement.json
results/ablation_layer_placement.tsv         results/cpu/ablation_layer_placement.tsv
results/bitalloc_dbca_units.json             results/cpu/bitalloc_dbca_units.json
results/bitalloc_dbca_units.tsv              results/cpu/bitalloc_dbca_units.tsv
results/bitalloc_dbca_units_pp8.json         results/cpu/bitalloc_dbca_units_pp8.json
results/bitalloc_dbca_units_pp8.tsv          results/cpu/bitalloc_dbca_units_pp8.tsv
results/bitalloc_llama2_13b_32k_tight.json   results/cpu/bitalloc_llama2_13b_32k_tight.json
results/bitalloc_llama2_13b_32k_tight.tsv    results/cpu/bitalloc_llama2_13b_32k_tight.tsv
results/bitalloc_llama2_13b_80k.json         results/cpu/bitalloc_llama2_13b_80k.json
results/bitalloc_llama2_13b_80k.tsv          results/cpu/bitalloc_llama2_13b_80k.tsv
results/default.json                         results/cpu/default.json
results/default.png                          results/cpu/default.png
results/default.tsv                          results/cpu/default.tsv
results/memory_sweep.json                    results/cpu/memory_sweep.json
results/memory_sweep.tsv                     results/cpu/memory_sweep.tsv
results/memory_table1.json                   results/cpu/memory_table1.json
results/memory_table1.tsv                    results/cpu/memory_table1.tsv
results/memory_table14_32k.json              results/cpu/memory_table14_32k.json
results/memory_table14_32k.tsv               results/cpu/memory_table14_32k.tsv
results/memory_table14_64k.json              results/cpu/memory_table14_64k.json
results/memory_table14_64k.tsv               results/cpu/memory_table14_64k.tsv
results/memory_table8.json                   results/cpu/memory_table8.json
results/memory_table8.tsv                    results/cpu/memory_table8.tsv
results/quant_error.json                     results/cpu/quant_error.json
results/step_dry.json                        results/cpu/step_dry.json
results/step_dry.tsv                         results/cpu/step_dry.tsv
results/table2_llama2_13b.json               results/cpu/table2_llama2_13b.json
results/table2_llama2_13b.tsv                results/cpu/table2_llama2_13b.tsv
results/table2_llama2_13b_paper_accounting.json results/cpu/table2_llama2_13b_paper_accounting.json
results/table2_llama2_13b_paper_accounting.tsv results/cpu/table2_llama2_13b_paper_accounting.tsv
results/table3_olmo1b_coat.json              results/cpu/table3_olmo1b_coat.json
results/table3_olmo1b_coat.tsv               results/cpu/table3_olmo1b_coat.tsv
results/table4_comm.json                     results/cpu/table4_comm.json
results/table4_comm.tsv                      results/cpu/table4_comm.tsv
results/throughput_a6000.json                results/cpu/throughput_a6000.json
results/throughput_a6000.tsv                 results/cpu/throughput_a6000.tsv
results/throughput_h200.json                 results/cpu/throughput_h200.json
results/throughput_h200.tsv                  results/cpu/throughput_h200.tsv
results/throughput_h200_long.json            results/cpu/throughput_h200_long.json
results/throughput_h200_long.tsv             results/cpu/throughput_h200_long.tsv
results/cpu/collectives_accumulate.json      results/cpu/collectives_cpu_accumulate.json
results/cpu/collectives_accumulate.tsv       results/cpu/collectives_cpu_accumulate.tsv
results/cpu/collectives_error.json           results/cpu/collectives_cpu_error.json
results/cpu/collectives_error.tsv            results/cpu/collectives_cpu_error.tsv
results/cpu/collectives_formats.json         results/cpu/collectives_cpu_formats.json
results/cpu/collectives_formats.tsv          results/cpu/collectives_cpu_formats.tsv
results/train/train.json                     results/cpu/train.json
results/train/train.png                      results/cpu/train.png
results/train/train.tsv                      results/cpu/train.tsv
results/train/train_control.json             results/cpu/train_control.json
results/train/train_control.tsv              results/cpu/train_control.tsv
results/train/train_ranks8.json              results/cpu/train_ranks8.json
results/train/train_ranks8.png               results/cpu/train_ranks8.png
results/train/train_ranks8.tsv               results/cpu/train_ranks8.tsv
results/train/train_seed2.json               results/cpu/train_seed2.json
results/train/train_seed2.tsv                results/cpu/train_seed2.tsv
results/train/train_seed3.json               results/cpu/train_seed3.json
results/train/train_seed3.tsv                results/cpu/train_seed3.tsv
results/train/train_sensitivity.json         results/cpu/train_sensitivity.json
results/train/cuda/device_train_cuda.log     results/h200/logs/device_train_cuda.log
results/train/cuda/test_train_cuda.log       results/h200/logs/test_train_cuda.log
results/train/cuda/train_cuda.json           results/h200/train_cuda.json
results/train/cuda/train_cuda.png            results/h200/train_cuda.png
results/train/cuda/train_cuda.tsv            results/h200/train_cuda.tsv
results/train/cuda/train_cuda_small.json     results/h200/train_cuda_small.json
results/train/cuda/train_cuda_small.tsv      results/h200/train_cuda_small.tsv
results/train/device/outer.log               results/h200/logs/train_device/outer.log
results/train/device/train_device.log        results/h200/logs/train_device/train_device.log
results/train/device/train_s2_a.json         results/h200/logs/train_device/train_s2_a.json
results/train/device/train_s2_b.json         results/h200/logs/train_device/train_s2_b.json
results/train/device/train_s3_a.json         results/h200/logs/train_device/train_s3_a.json
results/train/device/train_s3_b.json         results/h200/logs/train_device/train_s3_b.json
results/validation/saved_tensors.json        results/h200/saved_tensors.json
results/h200/fused.json                      results/h200/kernels_fused.json
results/h200/fused.tsv                       results/h200/kernels_fused.tsv
results/h200/attn_cudnn.log                  results/h200/logs/attn_cudnn.log
results/h200/bench_fused.log                 results/h200/logs/bench_fused.log
results/h200/bench_gemm.log                  results/h200/logs/bench_gemm.log
results/h200/collectives_device.log          results/h200/logs/collectives_device.log
results/h200/kernels.log                     results/h200/logs/kernels.log
results/h200/kernels_run2.log                results/h200/logs/kernels_run2.log
results/h200/ncu_tile_kernels.log            results/h200/logs/ncu_tile_kernels.log
results/h200/step_kernels.log                results/h200/logs/step_kernels.log
results/h200/test_cuda.log                   results/h200/logs/test_cuda.log
results/h200/test_cuda_all.log               results/h200/logs/test_cuda_all.log
results/figures/ablation_act_bits.png        results/cpu/ablation_act_bits.png
results/figures/ablation_act_bits.txt        results/cpu/ablation_act_bits.txt
results/figures/ablation_error_quant.png     results/cpu/ablation_error_quant.png
results/figures/ablation_error_quant.txt     results/cpu/ablation_error_quant.txt
results/figures/ablation_grad_bits.png       results/cpu/ablation_grad_bits.png
results/figures/ablation_grad_bits.txt       results/cpu/ablation_grad_bits.txt
results/figures/ablation_layer_placement.png results/cpu/ablation_layer_placement.png
results/figures/ablation_layer_placement.txt results/cpu/ablation_layer_placement.txt
results/figures/bitalloc_dbca_units.png      results/cpu/bitalloc_dbca_units.png
results/figures/bitalloc_dbca_units.txt      results/cpu/bitalloc_dbca_units.txt
results/figures/bitalloc_dbca_units_pp8.png  results/cpu/bitalloc_dbca_units_pp8.png
results/figures/bitalloc_dbca_units_pp8.txt  results/cpu/bitalloc_dbca_units_pp8.txt
results/figures/bitalloc_llama2_13b_32k_tight.txt results/cpu/bitalloc_llama2_13b_32k_tight.txt
results/figures/bitalloc_llama2_13b_80k.txt  results/cpu/bitalloc_llama2_13b_80k.txt
results/figures/collectives_cpu_accumulate.png results/cpu/collectives_cpu_accumulate.png
results/figures/collectives_cpu_accumulate.txt results/cpu/collectives_cpu_accumulate.txt
results/figures/collectives_cpu_error.png    results/cpu/collectives_cpu_error.png
results/figures/collectives_cpu_error.txt    results/cpu/collectives_cpu_error.txt
results/figures/collectives_cpu_formats.txt  results/cpu/collectives_cpu_formats.txt
results/figures/h200_collectives_1gpu.png    results/h200/collectives_1gpu.png
results/figures/h200_kernels.png             results/h200/kernels.png
results/figures/memory_sweep.png             results/cpu/memory_sweep.png
results/figures/memory_sweep.txt             results/cpu/memory_sweep.txt
results/figures/memory_table1.txt            results/cpu/memory_table1.txt
results/figures/memory_table14_32k.txt       results/cpu/memory_table14_32k.txt
results/figures/memory_table14_64k.txt       results/cpu/memory_table14_64k.txt
results/figures/memory_table8.txt            results/cpu/memory_table8.txt
results/figures/step_dry.png                 results/cpu/step_dry.png
results/figures/step_dry.txt                 results/cpu/step_dry.txt
results/figures/table2_llama2_13b.png        results/cpu/table2_llama2_13b.png
results/figures/table2_llama2_13b.txt        results/cpu/table2_llama2_13b.txt
results/figures/table2_llama2_13b_paper_accounting.png results/cpu/table2_llama2_13b_paper_accounting.png
results/figures/table2_llama2_13b_paper_accounting.txt results/cpu/table2_llama2_13b_paper_accounting.txt
results/figures/table3_olmo1b_coat.png       results/cpu/table3_olmo1b_coat.png
results/figures/table3_olmo1b_coat.txt       results/cpu/table3_olmo1b_coat.txt
results/figures/table4_comm.png              results/cpu/table4_comm.png
results/figures/table4_comm.txt              results/cpu/table4_comm.txt
results/figures/throughput_a6000.png         results/cpu/throughput_a6000.png
results/figures/throughput_a6000.txt         results/cpu/throughput_a6000.txt
results/figures/throughput_h200.png          results/cpu/throughput_h200.png
results/figures/throughput_h200.txt          results/cpu/throughput_h200.txt
results/figures/throughput_h200_long.png     results/cpu/throughput_h200_long.png
results/figures/throughput_h200_long.txt     results/cpu/throughput_h200_long.txt
results/figures/train.png                    results/cpu/train.png
results/figures/train_control.png            results/cpu/train_control.png
results/h200/fused_run1.json                 results/h200/kernels_fused.json
results/h200/fused_run1.tsv                  results/h200/kernels_fused.tsv
'

if [ "$print_map" = 1 ]; then echo "$MAP" | awk 'NF == 2'; exit 0; fi
if [ $# -eq 0 ]; then
    mapfile -t files < <(git ls-files -co --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' 'tools/*.sh' '*.md' 'experiments/*.json' \
                      'experiments/*/*.json' 'plots/*.gp' 'validation/*.py' Makefile | grep -v '^tools/relayout.sh$')
else
    files=()
    for f in "$@"; do [ "$f" = "$PWD/tools/relayout.sh" ] || files+=("$f"); done
fi

# One perl program: a hash of old -> new, one alternation of the old paths (longest first), a
# match only where no path character precedes or follows.
MAP="$MAP" perl -i -ne '
    BEGIN {
        for (split /\n/, $ENV{MAP}) { my @f = split " "; $m{$f[0]} = $f[1] if @f == 2; }
        $alt = join "|", map { quotemeta } sort { length $b <=> length $a } keys %m;
    }
    $o = $_;
    s{(?<![\w./-])($alt)(?![\w/-])}{$m{$1}}g;
    print;
    $changed{$ARGV} = 1 if $_ ne $o;
    END { print STDOUT "relayout: $_\n" for sort keys %changed; }
' "${files[@]}"
