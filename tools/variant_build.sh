#!/usr/bin/env bash
# Builds `agoq` variants that differ from build/ by compile-time flags (the twenty-sixth session's
# cache-operator A/Bs: AGOQ_FZ_CACHE, kernels/fused/fused_dev.cuh), and packs them with build/'s
# own agoq for one device call (the device tool carries at most 64 MiB: the working tree plus
# about 11 MiB of xz per stripped agoq, so at most three or four binaries a call).
#   tools/variant_build.sh NAME=FLAGS [NAME=FLAGS ...]
#     e.g. tools/variant_build.sh fz0=-DAGOQ_FZ_CACHE=0
#   -> /tmp/agoq_var/NAME/agoq for each NAME (only the objects whose dependency files name the
#      headers listed in VARIANT_HEADERS are rebuilt; default: the fused, quantizer and
#      load-operator headers), then .carry/var.tar.xz holding base/agoq (build/agoq, with its
#      commit.stamp) and NAME/agoq. On the GPU machine (carry [".carry/lib", ".carry/var.tar.xz"]):
#        VAR_ARGS="kernels ..." tools/device_kernels.sh . varab   (rounds of every binary ->
#        $OUT/varab.tsv, varab_table.txt), or by hand: tar -C /tmp/v -xJf .carry/var.tar.xz, then
#        /tmp/v/base/agoq ... and /tmp/v/NAME/agoq ... (source tools/device_env.sh for libcjson).
# build/ must be complete and current (make build/agoq) and is not modified. VAR_BASE=0 leaves
# base/ out of the archive (~11 MiB less, so that it fits a call beside .carry/bins.tar.xz): the
# device's varab then takes its build directory's agoq as the base, checking that both were built
# at the same commit (each NAME/ holds the commit.stamp it was built from).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: tools/variant_build.sh NAME=FLAGS [NAME=FLAGS ...]" >&2; exit 2; }
[ -x build/agoq ] || { echo "variant_build: build/agoq missing: make build/agoq" >&2; exit 1; }
HDRS=${VARIANT_HEADERS:-"fused_dev.cuh quant_tile.cuh quant_ldst.cuh"}
NVCC_BIN=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
root=/tmp/agoq_var
mkdir -p "$root"
pack=$(mktemp -d); trap 'rm -rf "$pack"' EXIT
[ "${VAR_BASE:-1}" = 0 ] || { mkdir -p "$pack/base"; cp build/agoq build/commit.stamp "$pack/base/"; }
for spec in "$@"; do
  name=${spec%%=*}; flags=${spec#*=}
  case "$name" in ''|*[!A-Za-z0-9_]*) echo "variant_build: bad name '$name'" >&2; exit 2 ;; esac
  d="$root/$name"; rm -rf "$d"; cp -a build "$d"; rm -f "$d/agoq"
  pat=$(echo "$HDRS" | tr ' ' '|')
  grep -lE "$pat" $(find "$d" -name '*.d') | sed 's/\.d$/.o/' | xargs -r rm -f
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$NVCC_BIN" "$flags" > "$d/nvcc"; chmod +x "$d/nvcc"
  make -j"$(nproc)" BUILD="$d" NVCC="$d/nvcc" "$d/agoq" > "$d/build.log" 2>&1 || { echo "variant_build: $name failed: $d/build.log" >&2; exit 1; }
  mkdir -p "$pack/$name"; cp "$d/agoq" build/commit.stamp "$pack/$name/"
  echo "variant_build: $name ($flags) -> $d/agoq"
done
strip "$pack"/*/agoq
mkdir -p .carry
tar -C "$pack" -cf - . | xz -9 -T0 > .carry/var.tar.xz
echo "variant_build: .carry/var.tar.xz $(( $(stat -c %s .carry/var.tar.xz) / 1048576 )) MiB (base = build/agoq at $(cat build/commit.stamp)$([ "${VAR_BASE:-1}" = 0 ] && echo ', not packed'))"
