#!/usr/bin/env bash
# The kernel batch of issue 15 for one device call: GPU tests of the quantization, fused and
# 8-bit gradient kernels, the torch.compile peer (validation/torch_kernels.py), then both kernel
# experiments with the peer attached (each record gets torch_ms and vs_torch), and ncu on the
# weakest kernels. Build here first, at a clean commit, and pack:
#   make build/agoq build/agoq_test_cuda && tools/device_pack.sh build
# carry .carry/bins.tar.xz and .carry/lib; on the GPU machine `source tools/device_env.sh` sets
# AGOQ_B to the unpacked binaries (BUILD_DIR below), then:
#   tools/device_kernels.sh BUILD_DIR PART...   parts: all | tests peer kernels fused quick ncu
#     tests    agoq_test_cuda cuda_quant cuda_fused cuda_rowq cuda_grad adamw_q _quant_ _dequant_ (while the peer compiles, when both are asked);
#              TESTS=all: every GPU test (make test-cuda's run)
#     peer     python3 validation/torch_kernels.py -> $OUT/torch_kernels.json (64 MiB .. 4 GiB x4)
#     kernels  experiments/kernels.json, fused: experiments/kernels_fused.json (with the peer)
#     quick    experiments/kernels_quick.json (1 MiB .. 256 MiB)
#     deq_ab   issue 15's dequantizer A/B: experiments/kernels_deq_ab.json once per AGOQ_DEQ_VAR
#              setting (kernels/quant/quant.cu: 0 the tile kernel, 1 the flat kernel of
#              kernels/quant/quant_flat.cuh), DEQ_ROUNDS rounds (default 2; even
#              rounds in reverse order), DEQ_VARS_LIST the settings (default 0 1) ->
#              $OUT/deq_ab.tsv (round, var, case, format, bytes, median_ms, copy_ratio; one row per
#              record) and $OUT/deq_ab_json.tgz (every run's JSON); ~1.5 s a run (s6 call A);
#              tools/ab_table.py $OUT/deq_ab.tsv compares the flat kernel (1) with the tile kernel (0)
#     ab       the same for any knob: AB_KNOB=NAME AB_VALUES="v1 v2 .." AB_ARGS="agoq kernels
#              arguments" (AB_ROUNDS, default 2) -> $OUT/ab_NAME.tsv, $OUT/ab_NAME_json.tgz;
#              or AB_SPECS=FILE, one A/B a line: KNOB<TAB>VALUES<TAB>ARGUMENTS (# comments;
#              tools/ab_s12.tsv: the twelfth session's four A/Bs);
#              tools/ab_table.py $OUT/ab_NAME.tsv compares every value with the first
#     varab    an A/B of agoq binaries built with other compile-time flags (tools/variant_build.sh
#              packs them with the base build into .carry/var.tar.xz; carry it and .carry/lib;
#              packed with VAR_BASE=0, BUILD_DIR's agoq of the same commit is the base; VAR_DIR=DIR
#              takes the NAME/ folders from DIR instead of the archive, e.g. packed into
#              bins.tar.xz beside bd/, where one xz stream stores the near-identical binaries once):
#              VAR_ARGS="agoq arguments" (e.g. "kernels --cases ... -b 16M -e 1G -f 2 -n 10 -w 3 -q")
#              once per binary and round, VAR_ROUNDS (default 4; even rounds in reverse order)
#              -> $OUT/varab.tsv, varab_json.tgz and varab_table.txt (tools/ab_table.py against base)
#     ncu      Speed Of Light + memory + occupancy + instruction + warp-state sections at 256 MiB of
#              the dyn8 / nf4 / fp4 quantizers from bf16, the fused RMSNorm / SwiGLU / GELU
#              forwards and the int8 / fp8 reduce core -> $OUT/ncu.log
# Duration of `all`: the first run (dynamic-shape peer, 33ff12dcd1f6) took 99 s; with the
# static-shape peer expect ~4-6 min (its compilation overlaps the tests), under the 600 s of one
# device command; PEER_COMPILE_S bounds it.
# Each part is guarded by a timeout and runs even when an earlier one failed (one device call:
# the data still comes back); logs and results land in $OUT (default results/h200). The device
# tool brings back at most 8 files of a call's $OUT (the twelfth session lost kernels.json that
# way): with TGZ=FILE the script ends by packing $OUT into that one archive, e.g.
#   OUT=/tmp/r TGZ=$OUT/r.tgz tools/device_kernels.sh $AGOQ_B tests peer kernels fused
# Environment: PEER_COMPILE_S, PEER_TIME_S (defaults 300, 150) bound the peer's compilation
# (static shapes: 45 functions x 4 sizes, ~1.6 s each; 36 before the grad8 peers) and timing phases, PEER_MODES (default
# static; static,dynamic times both and the runner keeps the faster) its torch.compile modes; T_TESTS,
# T_KERNELS, T_NCU (defaults 150, 120, 60 s per ncu run) the other parts.
set -u -o pipefail
B=${1:?build dir}; shift
OUT=${OUT:-results/h200}
[ -f tools/device_env.sh ] && source tools/device_env.sh
mkdir -p "$OUT"
log="$OUT/device_kernels.log"
start=$(date +%s)
[ "$*" = all ] && set -- tests peer kernels fused ncu
echo "device_kernels: $B, parts: $*, $(date -u +%FT%TZ), commit $(cat "$B/commit.stamp" 2>/dev/null)" | tee -a "$log"
rc=0
part() { # name timeout command...
  local name=$1 t=$2; shift 2
  echo "== $name (limit ${t}s) at $(( $(date +%s) - start ))s" | tee -a "$log"
  timeout "$t" "$@" >> "$log" 2>&1 || { echo "== $name FAILED ($?)" | tee -a "$log"; rc=1; }
}
has() { local w=$1; shift; case " $* " in *" $w "*) return 0 ;; esac; return 1; }
# An A/B: `agoq CMD...` once per value of KNOB and round (even rounds in reverse order) ->
# $OUT/NAME.tsv (tools/ab_table.py --tsv) and $OUT/NAME_json.tgz (every run's JSON). With
# AB_VARDIR set, the values name binaries instead: AB_VARDIR/VALUE/agoq, KNOB unset (varab).
ab_run() { # name knob "values" rounds cmd...
  local name=$1 knob=$2 vals=$3 rounds=$4 r v order d=/tmp/agoq_$1; shift 4
  rm -rf "$d"; mkdir -p "$d"
  for r in $(seq 1 "$rounds"); do
    order=$vals; [ $((r % 2)) = 0 ] && order=$(echo $vals | tr ' ' '\n' | tac)
    for v in $order; do
      if [ -n "${AB_VARDIR:-}" ]; then
        part "$name r$r $v" "${T_KERNELS:-120}" "$AB_VARDIR/$v/agoq" "$@" --out "$d/r${r}_var$v.json"
      else
        part "$name r$r $v" "${T_KERNELS:-120}" env "$knob=$v" "$B/agoq" "$@" --out "$d/r${r}_var$v.json"
      fi
    done
  done
  python3 tools/ab_table.py --tsv "$d" > "$OUT/$name.tsv" || rc=1
  tar czf "$OUT/${name}_json.tgz" -C "$d" .
}
peer="$OUT/torch_kernels.json"
peer_pid=
if has peer "$@"; then
  done_flag="$OUT/.tests_done"; rm -f "$done_flag"
  has tests "$@" || touch "$done_flag"
  # compiles while the tests run, times after them (the GPU is then free)
  timeout $(( ${PEER_COMPILE_S:-300} + ${T_TESTS:-150} + ${PEER_TIME_S:-150} + 30 )) env \
    AGOQ_COMMIT="$(cat "$B/commit.stamp" 2>/dev/null)" python3 validation/torch_kernels.py --out "$peer" --wait-for "$done_flag" \
    --compile-budget-s "${PEER_COMPILE_S:-300}" --budget-s "${PEER_TIME_S:-150}" --modes "${PEER_MODES:-static}" > "$OUT/torch_kernels.log" 2>&1 &
  peer_pid=$!
fi
for p in "$@"; do
  case "$p" in
    tests) if [ "${TESTS:-}" = all ]; then part tests "${T_TESTS:-420}" env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda"
           else part tests "${T_TESTS:-150}" "$B/agoq_test_cuda" cuda_quant cuda_fused cuda_rowq cuda_grad adamw_q _quant_ _dequant_; fi
           tail -n 1 "$log"
           [ -n "$peer_pid" ] && touch "$done_flag" ;;
    peer) if [ -n "$peer_pid" ]; then
            echo "== peer (waiting) at $(( $(date +%s) - start ))s" | tee -a "$log"
            wait "$peer_pid" || { echo "== peer FAILED" | tee -a "$log"; rc=1; }
            tail -n 3 "$OUT/torch_kernels.log" | tee -a "$log"
            rm -f "$done_flag"
          fi ;;
    kernels|fused|quick)
      exp=kernels; [ "$p" = fused ] && exp=kernels_fused; [ "$p" = quick ] && exp=kernels_quick
      file="experiments/$exp.json"
      if [ -f "$peer" ]; then # the experiment as committed plus config.peer (agoq run takes no kind flags)
        file="/tmp/agoq_${exp}_peer.json"
        python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); e["config"]["peer"]=sys.argv[2]; json.dump(e,open(sys.argv[3],"w"),indent=1)' \
          "experiments/$exp.json" "$peer" "$file"
      fi
      part "$exp" "${T_KERNELS:-120}" "$B/agoq" run "$file" -q --out "$OUT/$exp.json" ;;
    deq_ab) ab_run deq_ab AGOQ_DEQ_VAR "${DEQ_VARS_LIST:-0 1}" "${DEQ_ROUNDS:-2}" run experiments/kernels_deq_ab.json -q ;;
    ab) # one knob (AB_KNOB, AB_VALUES, AB_ARGS), or each line of the file AB_SPECS: KNOB<TAB>VALUES<TAB>ARGS
      if [ -n "${AB_SPECS:-}" ]; then
        while IFS=$'\t' read -r -u 3 knob vals args; do
          case "$knob" in ''|'#'*) continue ;; esac
          read -r -a a <<< "$args"; ab_run "ab_$knob" "$knob" "$vals" "${AB_ROUNDS:-2}" kernels -q "${a[@]}"
        done 3< "$AB_SPECS"
      else
        read -r -a a <<< "${AB_ARGS:?AB_ARGS}"
        ab_run "ab_${AB_KNOB:?AB_KNOB}" "$AB_KNOB" "${AB_VALUES:?AB_VALUES}" "${AB_ROUNDS:-2}" kernels -q "${a[@]}"
      fi ;;
    varab) # the binaries of .carry/var.tar.xz (base/agoq and NAME/agoq), each round in turn
      vd=/tmp/agoq_v; rm -rf "$vd"; mkdir -p "$vd"
      if [ -n "${VAR_DIR:-}" ]; then cp -a "$VAR_DIR"/. "$vd"/ # variants unpacked already (e.g. with the bins)
      else tar -C "$vd" -xJf .carry/var.tar.xz || { echo "== varab: .carry/var.tar.xz missing" | tee -a "$log"; rc=1; continue; }
      fi
      if [ ! -x "$vd/base/agoq" ]; then # packed with VAR_BASE=0: the base is this build's agoq
        vs=$(cat "$vd"/*/commit.stamp 2>/dev/null | sort -u)
        [ "$vs" = "$(cat "$B/commit.stamp" 2>/dev/null)" ] || { echo "== varab: variants of '$vs', $B of '$(cat "$B/commit.stamp" 2>/dev/null)'" | tee -a "$log"; rc=1; continue; }
        mkdir -p "$vd/base" && cp "$B/agoq" "$B/commit.stamp" "$vd/base/"
      fi
      read -r -a a <<< "${VAR_ARGS:?VAR_ARGS}"
      AB_VARDIR=$vd ab_run varab - "base $(ls "$vd" | grep -vx base | tr '\n' ' ')" "${VAR_ROUNDS:-4}" "${a[@]}"
      python3 tools/ab_table.py "$OUT/varab.tsv" --base base > "$OUT/varab_table.txt" || rc=1 ;;
    ncu) if command -v ncu > /dev/null; then
           sec="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy"
           sec="$sec --section InstructionStats --section WarpStateStats"
           run="-b 256M -e 256M -n 1 -w 0 --no-check -q -o /tmp/ncu_kernels.json"
           # the table-format and fp4 quantizers from bf16, the fused forwards, the reduce core
           part ncu_quant "${T_NCU:-60}" ncu $sec --kernel-name-base demangled -k regex:tile_src_bf16 -c 3 --log-file /tmp/ncu_1.log \
             "$B/agoq" kernels --cases quantize_bf16 --formats dyn8,nf4,fp4_e2m1 $run
           part ncu_fused "${T_NCU:-60}" ncu $sec -k regex:'rms_fwd|swiglu_fwd|gelu_fwd' -c 3 --log-file /tmp/ncu_2.log \
             "$B/agoq" kernels --cases rmsnorm_fwd_fused,swiglu_fwd_fused,gelu_fwd_fused --formats fp4_e2m1 $run
           part ncu_reduce "${T_NCU:-60}" ncu $sec --kernel-name-base demangled -k regex:tile_reduce -c 2 --log-file /tmp/ncu_3.log \
             "$B/agoq" kernels --cases grad_reduce --formats int8,fp8_e4m3 $run
           cat /tmp/ncu_[123].log > "$OUT/ncu.log" 2>/dev/null
         else echo "== ncu: not installed" | tee -a "$log"; fi ;;
    *) echo "device_kernels: unknown part $p" | tee -a "$log"; rc=1 ;;
  esac
done
echo "device_kernels: done at $(( $(date +%s) - start ))s, status $rc" | tee -a "$log"
if [ -n "${TGZ:-}" ]; then tar czf "$TGZ" -C "$OUT" . || rc=1; fi
exit $rc
