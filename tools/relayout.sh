#!/usr/bin/env bash
# Rewrites source paths of the old flat layout (harness/ as both roof and ground, kernels/ flat,
# tests/ flat) to the layered one (core/ < kernels/<op>/ < collectives, models < train, sim,
# step < runners/ < harness/), from the one mapping table below.
#   tools/relayout.sh [FILES...]     default: every tracked or new (not ignored) C/C++/CUDA source,
#                                    tools/*.sh and *.md (README, docs/)
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
'

if [ "$print_map" = 1 ]; then echo "$MAP" | awk 'NF == 2'; exit 0; fi
if [ $# -eq 0 ]; then
    mapfile -t files < <(git ls-files -co --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' 'tools/*.sh' '*.md' | grep -v '^tools/relayout.sh$')
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
