#!/usr/bin/env bash
# Packs the binaries built here for the GPU machine (the device tool carries at most 64 MiB per
# call): BUILD/agoq, BUILD/agoq_test_cuda and BUILD/commit.stamp, stripped, as one xz archive,
# .carry/bins.tar.xz, and libcjson.so.1 (the GPU machine has no cJSON) in .carry/lib. On the GPU
# machine `source tools/device_env.sh` unpacks the archive once and sets AGOQ_B to the binaries'
# directory. Refuses binaries whose commit stamp is not this checkout's clean HEAD, so that every
# result they write names the code that made it.
#   tools/device_pack.sh [BUILD]     (default build; then carry .carry/bins.tar.xz and .carry/lib)
# The working tree takes 40 MiB of a call's 64; binaries built as usual (-arch: SASS and PTX) pack to
# 27-30 MiB, too many beside it. Built without the PTX, which only newer GPUs would JIT, the fatbins
# are a third of the size (fused_rms_pair.o: 7.7 -> 2.5 MB) and the archive 9 MiB instead of 27 (2d72d2e):
#   make BUILD=build_dev CUDA_CODE=sass build_dev/agoq build_dev/agoq_test_cuda; tools/device_pack.sh build_dev
# Such binaries had not yet run on a GPU at 2d72d2e.
# PACK_VARS=DIR: DIR's NAME/ folders (variant binaries of the same commit, tools/variant_build.sh
# VAR_BINS=1) go into the archive too, as vars/NAME/ beside bd/ (one xz stream stores the
# near-identical binaries about once).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
head=$(git rev-parse --short=12 HEAD)
stamp=$(cat "$B/commit.stamp" 2>/dev/null || echo none)
git diff --quiet HEAD -- || { echo "device_pack: the checkout has uncommitted changes: commit, then rebuild" >&2; exit 1; }
[ "$stamp" = "$head" ] || { echo "device_pack: $B/commit.stamp is '$stamp', HEAD is $head: rebuild (rm $B/core/provenance.o; make $B/agoq $B/agoq_test_cuda)" >&2; exit 1; }
for f in agoq agoq_test_cuda; do
  [ -x "$B/$f" ] || { echo "device_pack: $B/$f missing: make $B/agoq $B/agoq_test_cuda" >&2; exit 1; }
  strings "$B/$f" | grep -x "$head" > /dev/null || { echo "device_pack: $B/$f does not carry commit $head: relink it" >&2; exit 1; }
done
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/bd" .carry/lib
cp "$B/agoq" "$B/agoq_test_cuda" "$B/commit.stamp" "$t/bd/"
strip "$t/bd/agoq" "$t/bd/agoq_test_cuda"
parts=bd
if [ -n "${PACK_VARS:-}" ]; then cp -a "$PACK_VARS" "$t/vars"; parts="bd vars"; fi
tar -C "$t" -cf - $parts | xz -9e -T0 > .carry/bins.tar.xz.tmp && mv .carry/bins.tar.xz.tmp .carry/bins.tar.xz
lib=$(ldconfig -p | awk '/libcjson\.so\.1 /{print $NF; exit}')
[ -n "$lib" ] || { echo "device_pack: libcjson.so.1 not found (bash tools/deps.sh)" >&2; exit 1; }
cp -L "$lib" .carry/lib/libcjson.so.1
size=$(du -cb .carry/bins.tar.xz .carry/lib | tail -1 | cut -f1)
# The call's 64 MiB hold the working tree too (tracked and untracked-not-ignored files, counted as
# they lie on disk: du's blocks, not their bytes; 40 MiB at 0b30f70, most of it results/).
tree=$(( $( (git ls-files -z; git ls-files -z --others --exclude-standard) | du -c --files0-from=- 2>/dev/null | tail -1 | cut -f1) * 1024 ))
echo "device_pack: commit $head, $((size / 1048576)) MiB to carry + $((tree / 1048576)) MiB of working tree (limit 64 together): carry [\".carry/bins.tar.xz\", \".carry/lib\"]"
[ "$size" -lt $((64 * 1048576)) ] || { echo "device_pack: over the 64 MiB a call carries" >&2; exit 1; }
[ $((size + tree)) -lt $((64 * 1048576)) ] || echo "device_pack: with the working tree over the 64 MiB of a call: carry less, or move what the command does not need (results/*/logs) out of the tree for the call" >&2
