#!/usr/bin/env bash
# SASS of one CUDA source on a machine without cuobjdump / nvdisasm (this project's build and CI
# machines have only nvcc and ptxas):
#   tools/sass.sh FILE.cu [KERNEL_REGEX]      SASS of the kernels whose mangled name matches
#   tools/sass.sh -c FILE.cu [KERNEL_REGEX]   per kernel, the count of every fence, barrier,
#                                             wgmma and TMA instruction
# FILE.cu is compiled with the Makefile's device flags for sm_90a and $SASS_FLAGS (extra nvcc
# flags, e.g. -DAGOQ_RMS_FWD_FMA=0; kernels/gemm/gemm_wg.cu: ~2 min) into a cubin. The
# disassembler is Debian's nvdisasm of CUDA 11.8 (package nvidia-cuda-toolkit, component
# non-free), fetched once with apt-get download into $AGOQ_SASS_CACHE (default ~/.cache/agoq-sass)
# from the suite the system's Debian sources name, through a private apt list (the system's apt
# configuration is not changed). nvdisasm 11.8 does not read the ELF header of CUDA 12+ cubins (ABI
# version 8, new e_flags), so the copy it reads has the old header for sm_90 (ABI 7, e_flags
# 0x5a055a); the SASS encoding is the same and 11.8 decodes HGMMA, UTMALDG and SYNCS, but prints
# nothing for some instructions CUDA 12 emits (a gap in the addresses; e.g. the unsigned minima of
# the q7 FP4 encoder: 8 unprinted slots for its 16 two-input mins, so ptxas makes 3-input ones),
# so count instructions by address slots (16 bytes each), not by printed lines. A developer tool
# for host-side evidence (ptxas counts, fences, instruction mixes), not part of the build or the
# tests.
set -eu
COUNT=0
if [ "${1:-}" = -c ]; then COUNT=1; shift; fi
SRC=${1:?usage: tools/sass.sh [-c] FILE.cu [KERNEL_REGEX]}
RE=${2:-.}
C=${AGOQ_SASS_CACHE:-$HOME/.cache/agoq-sass}
D=$C/nvdisasm
if [ ! -x "$D" ]; then
  mkdir -p "$C/lists/partial" "$C/archives/partial" "$C/x"
  src=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
  uri=$(awk '/^URIs:/ {print $2; exit}' "$src")
  suite=$(awk '/^Suites:/ {print $2; exit}' "$src")
  [ -n "$uri" ] && [ -n "$suite" ] || { echo "sass.sh: no Debian URIs/Suites in /etc/apt/sources.list.d" >&2; exit 1; }
  echo "deb $uri $suite non-free" > "$C/sources.list"
  O="-o Dir::Etc::SourceList=$C/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$C/lists -o Dir::Cache::Archives=$C/archives"
  apt-get $O update > "$C/apt.log" 2>&1 || { echo "sass.sh: apt-get update failed ($C/apt.log)" >&2; exit 1; }
  (cd "$C" && apt-get $O download nvidia-cuda-toolkit >> "$C/apt.log" 2>&1) || { echo "sass.sh: apt-get download failed ($C/apt.log)" >&2; exit 1; }
  dpkg-deb --fsys-tarfile "$C"/nvidia-cuda-toolkit_*.deb | tar -x -C "$C/x" ./usr/bin/nvdisasm
  mv "$C/x/usr/bin/nvdisasm" "$D" && rm -rf "$C/x" "$C"/nvidia-cuda-toolkit_*.deb
fi
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$NVCC" -O3 -std=c++17 -I. -I/usr/local/cuda/include --fmad=false --prec-div=true --prec-sqrt=true --ftz=false \
  -DAGOQ_HAVE_CUDA=1 -DAGOQ_HAVE_MPI=0 -DAGOQ_HAVE_CUDNN=1 -gencode=arch=compute_90a,code=sm_90a -cubin \
  ${SASS_FLAGS:-} -o "$T/k.cubin" "$SRC"
python3 - "$T/k.cubin" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[7], b[8] = 0x33, 7                       # OS/ABI and ABI version of a CUDA 11 cubin
struct.pack_into('<I', b, 0x30, 0x005a055a)  # e_flags: sm_90, virtual sm_90, 64-bit, unified textures
open(sys.argv[1], 'wb').write(b)
EOF
"$D" "$T/k.cubin" 2>/dev/null > "$T/k.sass"
python3 - "$T/k.sass" "$RE" "$COUNT" <<'EOF'
import re, sys
from collections import Counter
text, pat, count = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3] == '1'
ops = r'(MEMBAR[.A-Z]*|CCTL[.A-Z]*|ERRBAR|CGAERRBAR|FENCE[.A-Z]*|SYNCS\.[.A-Z0-9]*|UCGABAR_[A-Z]*|BAR\.[A-Z]*|HGMMA|WARPGROUP\.[A-Z]*|UTMA[A-Z]*[.A-Z0-9]*)'
for sec in re.split(r'\n(?=\s*\.section\s+\.text\.)', text):
    head = sec.strip().split('\n')[0]
    if '.text.' not in head or not re.search(pat, head):
        continue
    name = head.split('.text.')[1].split(',')[0]
    if count:
        print(name, dict(sorted(Counter(re.findall(ops, sec)).items())))
    else:
        print(sec)
EOF
