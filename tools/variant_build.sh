#!/usr/bin/env bash
# Builds `agoq` variants that differ from a build directory by compile-time flags (the twenty-sixth session's
# cache-operator A/Bs: AGOQ_FZ_CACHE, kernels/fused/fused_dev.cuh), and packs them for one device
# call (the device tool carries at most 64 MiB: the working tree plus about 11 MiB of xz per
# stripped agoq, so at most three or four binaries a call).
#   tools/variant_build.sh NAME=FLAGS [NAME=FLAGS ...]
#     e.g. tools/variant_build.sh fz0=-DAGOQ_FZ_CACHE=0
#   -> /tmp/agoq_var/NAME/agoq for each NAME (only the objects whose dependency files name the
#      headers listed in VARIANT_HEADERS are rebuilt; default: the fused, quantizer and
#      load-operator headers), then .carry/var.tar.xz holding base/agoq (the build's agoq, with its
#      commit.stamp) and NAME/agoq. On the GPU machine (carry [".carry/lib", ".carry/var.tar.xz"]):
#        VAR_ARGS="kernels ..." tools/device_kernels.sh . varab   (rounds of every binary ->
#        $OUT/varab.tsv, varab_table.txt), or by hand: tar -C /tmp/v -xJf .carry/var.tar.xz, then
#        /tmp/v/base/agoq ... and /tmp/v/NAME/agoq ... (source tools/device_env.sh for libcjson).
# Environment:
#   VAR_BUILD   the build directory the variants start from (default build; e.g. build_dev, made
#               with CUDA_CODE=sass: pass the same CUDA_CODE here, make reads it from the
#               environment, so that the rebuilt objects match the others)
#   VAR_BASE=0  base/ left out of var.tar.xz (~11 MiB less): the device's varab then takes its
#               build directory's agoq as the base, checking that both were built at the same
#               commit (each NAME/ holds the commit.stamp it was built from)
#   VAR_TESTS=1 each variant's agoq_test_cuda too (NAME/agoq_test_cuda: its GPU tests under the flags)
#   VAR_BINS=1  instead of var.tar.xz, .carry/bins.tar.xz by tools/device_pack.sh VAR_BUILD with
#               the variants beside bd/ as vars/NAME/ (PACK_VARS), one xz stream that stores the
#               near-identical binaries about once (the thirty-fourth session: bd/ and one variant
#               with its test binary, 9.5 MiB against 8 for bd/ alone; VAR_BUILD must be built at
#               the clean HEAD, as device_pack checks). On the GPU machine, after `source tools/device_env.sh`:
#               VAR_DIR=.carry/x/vars VAR_ARGS="kernels ..." tools/device_kernels.sh $AGOQ_B varab,
#               and .carry/x/vars/NAME/agoq_test_cuda [filters] for the tests.
# The build directory must be complete and current (make VAR_BUILD/agoq) and is not modified.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: tools/variant_build.sh NAME=FLAGS [NAME=FLAGS ...]" >&2; exit 2; }
B=${VAR_BUILD:-build}
[ -x "$B/agoq" ] || { echo "variant_build: $B/agoq missing: make $B/agoq" >&2; exit 1; }
bins=0; [ "${VAR_BINS:-0}" = 1 ] && bins=1
targets=agoq; [ "${VAR_TESTS:-0}" = 1 ] && targets="agoq agoq_test_cuda"
HDRS=${VARIANT_HEADERS:-"fused_dev.cuh quant_tile.cuh quant_ldst.cuh"}
NVCC_BIN=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
root=/tmp/agoq_var
mkdir -p "$root"
pack=$(mktemp -d); trap 'rm -rf "$pack"' EXIT
vdir=$pack; [ $bins = 1 ] && vdir=$pack/vars
mkdir -p "$vdir"
[ $bins = 1 ] || [ "${VAR_BASE:-1}" = 0 ] || { mkdir -p "$pack/base"; cp "$B/agoq" "$B/commit.stamp" "$pack/base/"; }
for spec in "$@"; do
  name=${spec%%=*}; flags=${spec#*=}
  case "$name" in ''|*[!A-Za-z0-9_]*) echo "variant_build: bad name '$name'" >&2; exit 2 ;; esac
  d="$root/$name"; rm -rf "$d"; cp -a "$B" "$d"; for t in $targets; do rm -f "$d/$t"; done
  pat=$(echo "$HDRS" | tr ' ' '|')
  grep -lE "$pat" $(find "$d" -name '*.d') | sed 's/\.d$/.o/' | xargs -r rm -f
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$NVCC_BIN" "$flags" > "$d/nvcc"; chmod +x "$d/nvcc"
  make -j"$(nproc)" BUILD="$d" NVCC="$d/nvcc" $(for t in $targets; do echo "$d/$t"; done) > "$d/build.log" 2>&1 ||
    { echo "variant_build: $name failed: $d/build.log" >&2; exit 1; }
  mkdir -p "$vdir/$name"; cp "$B/commit.stamp" "$vdir/$name/"
  for t in $targets; do cp "$d/$t" "$vdir/$name/"; strip "$vdir/$name/$t"; done
  echo "variant_build: $name ($flags) -> $d ($targets)"
done
[ -d "$pack/base" ] && strip "$pack/base/agoq"
mkdir -p .carry
if [ $bins = 1 ]; then
  PACK_VARS="$vdir" tools/device_pack.sh "$B"
  echo "variant_build: .carry/bins.tar.xz with vars/: $*"
else
  tar -C "$pack" -cf - . | xz -9 -T0 > .carry/var.tar.xz
  echo "variant_build: .carry/var.tar.xz $(( $(stat -c %s .carry/var.tar.xz) / 1048576 )) MiB (base = $B/agoq at $(cat "$B/commit.stamp")$([ "${VAR_BASE:-1}" = 0 ] && echo ', not packed'))"
fi
