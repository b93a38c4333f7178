#!/usr/bin/env bash
# Install what agoq-bench needs on a fresh Debian/Ubuntu machine, and report each feature
# found by a compile probe, one line each. Skips apt-get when everything is present.
#   tools/deps.sh [--mpi] [--cuda=/path/to/nvcc] [--fuzz]
# --fuzz: clang with libFuzzer (Debian's clang package ships it) for `make fuzz`; CI does not need it.
set -u
want_mpi=0; want_fuzz=0; nvcc=""
for a in "$@"; do
  case "$a" in
    --mpi) want_mpi=1 ;;
    --fuzz) want_fuzz=1 ;;
    --cuda=*) nvcc="${a#--cuda=}" ;;
    *) echo "deps.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

pkgs=(libcjson-dev gnuplot-nox)
[ "$want_mpi" = 1 ] && pkgs+=(libopenmpi-dev openmpi-bin)
[ "$want_fuzz" = 1 ] && pkgs+=(clang)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
    echo "deps: missing ${missing[*]}; install them as root: apt-get install ${missing[*]}" >&2; exit 1
  fi
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO=sudo
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}"; } >/tmp/agoq-deps.log 2>&1 \
    || { echo "deps: apt-get failed, see /tmp/agoq-deps.log" >&2; tail -5 /tmp/agoq-deps.log >&2; exit 1; }
fi

probe() { # name, hint, compiler, source
  local name="$1" hint="$2" cc="$3" src="$4" tmp; tmp=$(mktemp -d)
  printf '%s\n' "$src" > "$tmp/p.c"
  if $cc "$tmp/p.c" -o "$tmp/p" ${5:-} >/dev/null 2>&1; then echo "deps: $name: found"; rm -rf "$tmp"; return 0; fi
  echo "deps: $name: not found ($hint)"; rm -rf "$tmp"; return 1
}
probe cJSON "apt-get install libcjson-dev" cc '#include <cjson/cJSON.h>
int main(void){cJSON_Delete(cJSON_CreateObject());return 0;}' -lcjson || exit 1
command -v gnuplot >/dev/null && echo "deps: gnuplot: found" || { echo "deps: gnuplot: not found (apt-get install gnuplot-nox)"; exit 1; }
if [ -n "$nvcc" ]; then
  if [ -x "$nvcc" ]; then echo "deps: nvcc: found ($("$nvcc" --version | tail -1))"; else echo "deps: nvcc: not found at $nvcc (CUDA=0 builds the CPU backend only)"; fi
fi
if [ "$want_mpi" = 1 ]; then
  probe MPI "apt-get install libopenmpi-dev openmpi-bin" mpicc '#include <mpi.h>
int main(int c,char**v){MPI_Init(&c,&v);MPI_Finalize();return 0;}' || exit 1
fi
if [ "$want_fuzz" = 1 ]; then
  probe libFuzzer "apt-get install clang" "clang -fsanitize=fuzzer,address,undefined" '#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n){(void)d;(void)n;return 0;}' || exit 1
fi
exit 0
