#!/usr/bin/env bash
# Collectives benchmark on the GPU machine (helper coll). Builds nothing: the binaries come from
# a carried build dir (make CUDA=1 BUILD=build; for the mpirun run also make MPI=1 CUDA=1
# BUILD=build-mpi). Works unchanged on 1, 2, 4 or 8 GPUs:
#   every GPU count: agoq collectives --backend cuda -g 1 (the ranks=1 path end to end: each
#                    local phase timed against the device copy bandwidth) -> collectives_1gpu.json
#   N > 1 GPUs:      ncclCommInitAll over all N GPUs           -> collectives_<N>gpu.json
#                    mpirun -np N, one GPU per process (if BUILD_MPI/agoq exists and mpirun is
#                    found)                                    -> collectives_<N>gpu_mpi.json
# First, if $B/agoq_test_cuda exists: the nccl backend against the cpu backend, bit for bit.
# Sizes: 1 KiB .. 1 GiB per rank, x32 (1K, 32K, 1M, 32M, 1G: the paper's Table 4 sizes), both
# all-reduce and reduce-scatter, every algorithm. Errors are checked up to 256 MiB per rank.
#   usage: bash tools/device_collectives.sh [BUILD_DIR [BUILD_MPI_DIR]]
# Output in $OUT: the JSON (+ TSV) files above and collectives_device.log.
set -euo pipefail
B=${1:-build}
BM=${2:-build-mpi}
OUT=${OUT:-/tmp/agoq_out}
mkdir -p "$OUT"
LOG="$OUT/collectives_device.log"
: >"$LOG"
[ -f tools/device_env.sh ] && source tools/device_env.sh >>"$LOG" 2>&1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off on shared hosts

if [ ! -x "$B/agoq" ]; then
    echo "device_collectives: $B/agoq not found (carry a CUDA=1 build dir)" | tee -a "$LOG" >&2
    exit 1
fi
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "device_collectives: $NGPU GPU(s), binary $B/agoq, $(date -u +%FT%TZ)" | tee -a "$LOG"
[ "$NGPU" -ge 1 ] || { echo "device_collectives: no GPU visible" | tee -a "$LOG" >&2; exit 1; }

# The mpirun run keeps flags: only `agoq collectives` writes from rank 0 alone (agoq run has no
# rank logic); its sweep is experiments/collectives.json's config.
SWEEP=(-b 1K -e 1G -f 32 -n 20 -w 5 --op allreduce,reduce_scatter --keep-going)
rc=0
run() { # name, command...: log everything, keep going so one failure does not lose the rest
    local name=$1
    shift
    echo "== $name: $*" | tee -a "$LOG"
    local st=0
    "$@" >>"$LOG" 2>&1 || st=$?
    if [ "$st" -ne 0 ]; then
        echo "== $name FAILED (exit $st)" | tee -a "$LOG" >&2
        rc=1
    fi
}

# correctness first: the nccl backend must give the cpu backend's bits (tests/cuda/test_coll_nccl.c)
if [ -x "$B/agoq_test_cuda" ]; then
    run test_cuda_coll "$B/agoq_test_cuda" cuda_coll
else
    echo "== test_cuda_coll skipped: no $B/agoq_test_cuda (make test-cuda BUILD=$B builds it)" | tee -a "$LOG"
fi
run 1gpu "$B/agoq" run experiments/collectives_1gpu.json -o "$OUT/collectives_1gpu.json"
if [ "$NGPU" -gt 1 ]; then
    run "${NGPU}gpu" "$B/agoq" run experiments/collectives.json -o "$OUT/collectives_${NGPU}gpu.json" # every visible GPU
    if [ -x "$BM/agoq" ] && command -v mpirun >/dev/null 2>&1; then
        run "${NGPU}gpu_mpi" mpirun --allow-run-as-root --oversubscribe -np "$NGPU" -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
            "$BM/agoq" collectives --backend cuda "${SWEEP[@]}" -o "$OUT/collectives_${NGPU}gpu_mpi.json"
    else
        echo "== ${NGPU}gpu_mpi skipped: no $BM/agoq or no mpirun" | tee -a "$LOG"
    fi
fi
# a failed correctness check is printed as "check failed"; surface it in the exit status
if grep -q "check failed" "$LOG"; then
    echo "device_collectives: correctness check failures (see $LOG)" >&2
    rc=1
fi
ls -l "$OUT" | tee -a "$LOG"
exit $rc
