#!/usr/bin/env bash
# The measurements the thirty-fourth and thirty-fifth sessions prepared and could not run (no
# device machine in the thirty-fifth: every call a failed start or a refusal), for one device call.
# Build here at a clean commit, with the GEMM epilogue's old C stores as a variant beside it:
#   make -j2 BUILD=build_dev CUDA_CODE=sass build_dev/agoq build_dev/agoq_test_cuda
#   VAR_BUILD=build_dev CUDA_CODE=sass VAR_BINS=1 VARIANT_HEADERS=gemm_wg_epi.cuh \
#     tools/variant_build.sh s0=-DAGOQ_WG_STC_V4=0
# (~11 min from scratch on two cores, then ~4 min for the variant), then call the device with
# carry [".carry/bins.tar.xz", ".carry/lib"] and the command
#   LIM=540 tools/device_s35.sh full      (or: LIM=120 tools/device_s35.sh short)
# full, in this order, each stage's files packed into $OUT as it ends (a call cut short still
# returns what ran):
#   ab     AGOQ_FWD_PF (tools/ab_s33.tsv) and AGOQ_FWD_L2PF (tools/ab_s35.tsv), AB_R rounds (3)
#          -> ab.tgz
#   varab  the default GEMM (AGOQ_WG_STC_V4=1: C by one 16-byte store a lane, never run on a GPU
#          before) against vars/s0 (four 4-byte stores), VR rounds (3), fused FP4 and plain
#          kernels, 16 MiB .. 1 GiB -> var.tgz
#   tests  the whole GPU suite, cut at LIM -> tests.log
#   gemm   experiments/gemm_wg.json (tools/device_gemm.sh bench), if 100 s are left -> g.tgz
#   ab2    on an H200 only, with time left: the fused forwards' launch knobs (tools/ab_s32e.tsv)
#          -> ab2.tgz
# l2pf (thirty-sixth session): the fused GPU tests, tools/ab_s36.tsv (AGOQ_FWD_L2PF auto / 0 / 1 / 2 / 3), on an
# H200 tools/ab_s32e.tsv, then the whole GPU suite cut at LIM -> c.tgz, tests.log.
# s37, s37b, s37c, rest (thirty-seventh session), s38, s38b, s38r, s38c, s38e (thirty-eighth), s39, s40, s41, s42, s43, s44: see their
# blocks below.
# short: the GEMM GPU tests and the L2PF test at the defaults, the L2PF A/B (AB_R rounds, 2),
# a two-round varab on four GEMMs -> b.tgz.
set -u -o pipefail
MODE=${1:-full}
source tools/device_env.sh > /tmp/env.txt
OUT=${OUT:?OUT}; mkdir -p "$OUT"; W=/tmp/s35; rm -rf $W; mkdir -p $W
cp /tmp/env.txt $W/gpu.txt; cp "$AGOQ_B/commit.stamp" $W/; head -1 $W/gpu.txt
SECONDS=0; LIM=${LIM:-540}
varab() { # rounds cases max-size [min-size formats]
  OUT=$W/var VAR_DIR=.carry/x/vars VAR_ROUNDS=$1 T_KERNELS=$((LIM - SECONDS - 5)) VAR_ARGS="kernels --cases $2 --formats ${5:-fp4_e2m1} -b ${4:-16M} -e $3 -f 4 -n 10 -w 3 -q" \
    tools/device_kernels.sh "$AGOQ_B" varab > $W/var_stdout.log 2>&1
  head -80 $W/var/varab_table.txt; echo "varab done at $SECONDS s"
}
ab() { # specs rounds dir
  OUT=$W/$3 AB_SPECS=$1 AB_ROUNDS=$2 T_KERNELS=$((LIM - SECONDS - 5)) tools/device_kernels.sh "$AGOQ_B" ab > $W/$3_stdout.log 2>&1
  for f in $W/$3/ab_*.tsv; do python3 tools/ab_table.py "$f" > "${f%.tsv}.txt" 2>&1; head -60 "${f%.tsv}.txt"; done
  echo "$3 done at $SECONDS s"
}
fused_tests() { # the GPU tests named "fused" -> $W/t_fused.log
  timeout 150 "$AGOQ_B/agoq_test_cuda" fused > $W/t_fused.log 2>&1; echo "fused tests rc=$? $(tail -1 $W/t_fused.log)"
}
gemm_tests() { # [s]: the GPU tests named "gemm" in at most $1 s (100) -> $W/t_gemm.log
  timeout "${1:-100}" "$AGOQ_B/agoq_test_cuda" gemm > $W/t_gemm.log 2>&1; echo "gemm tests rc=$? $(tail -1 $W/t_gemm.log)"
}
records() { # [tests] [s]: the torch.compile peer and both kernel experiments (with "tests", the whole GPU suite
  # beside the peer's compilation) in at most $2 s (default: what is left of LIM) -> $W/k, $OUT/k.tgz
  local t=; [ "${1:-}" = tests ] && t=tests
  OUT=$W/k TESTS=all T_TESTS=${T_TESTS:-300} T_KERNELS=${T_KERNELS:-150} timeout "${2:-$((LIM - SECONDS - 10))}" tools/device_kernels.sh "$AGOQ_B" $t peer kernels fused > $W/k_stdout.log 2>&1
  grep -h "passed, " $W/k/device_kernels.log | tail -1; tail -2 $W/k/device_kernels.log
  python3 tools/kernels_vs_torch.py --targets $W/k/kernels.json $W/k/kernels_fused.json > $W/k/targets.md 2>&1; head -1 $W/k/targets.md
  tar czf "$OUT/k.tgz" -C $W k k_stdout.log gpu.txt commit.stamp
}
deqab() { # rounds [ways]: the stored-A prologue (FC2 of 7B / 13B from its FP4 copy, 64 MiB .. 1 GiB, with the
  # dequantize + cuBLASLt reference), each round every way in turn (even rounds reversed); ways (default
  # "reg smem r0"): reg (AGOQ_WG_DEQ_SMEM=0: registers, FP4 by the row tables), smem (=1), smem4
  # (=4, the default since 89f2693: 4 stages, AGOQ_WG_DQS_BUFS4 tiles), r0 (vars/r0: the register path's FP4 by arithmetic), b2
  # (vars/b2 with =4: two tiles a consumer), v2 (vars/v2 with =4: 597b5b0's binary, barrier before the decode),
  # dqp (AGOQ_WG_DEQ_PRODUCER=1: the decoder warpgroup, 192-wide tiles), s5 (AGOQ_WG_DEQ_SMEM=5: 5 stages,
  # C stored by the consumers; branch s40-direct), s5n (vars/n0 with =5: -DAGOQ_WG_DIRECT_PF=0, no L2 prefetch
  # of the residual), s6 (AGOQ_WG_DEQ_SMEM=6: 5 stages of 128 x 192 tiles, C staged)
  local d=$W/deq r v c ways=${2:-reg smem r0}; mkdir -p $d
  local a="kernels -q --cases gemmwg_7b_fc2_ltd,gemmwg_7b_fc2_wgd,gemmwg_13b_fc2_ltd,gemmwg_13b_fc2_wgd --formats fp4_e2m1 -b 64M -e 1G -f 4 -n 10 -w 3"
  for r in $(seq 1 "$1"); do
    for v in $([ $((r % 2)) = 0 ] && echo $ways | tr ' ' '\n' | tac || echo $ways); do
      [ $SECONDS -lt $((LIM - 60)) ] || break 2
      case $v in reg) c="env AGOQ_WG_DEQ_SMEM=0 $AGOQ_B/agoq" ;; smem) c="env AGOQ_WG_DEQ_SMEM=1 $AGOQ_B/agoq" ;; smem4) c="env AGOQ_WG_DEQ_SMEM=4 $AGOQ_B/agoq" ;;
        r0) c=.carry/x/vars/r0/agoq ;; b2) c="env AGOQ_WG_DEQ_SMEM=4 .carry/x/vars/b2/agoq" ;;
        v2) c="env AGOQ_WG_DEQ_SMEM=4 .carry/x/vars/v2/agoq" ;; dqp) c="env AGOQ_WG_DEQ_PRODUCER=1 $AGOQ_B/agoq" ;;
        s5) c="env AGOQ_WG_DEQ_SMEM=5 $AGOQ_B/agoq" ;; s5n) c="env AGOQ_WG_DEQ_SMEM=5 .carry/x/vars/n0/agoq" ;;
        s6) c="env AGOQ_WG_DEQ_SMEM=6 $AGOQ_B/agoq" ;; esac
      timeout 120 $c $a --out $d/r${r}_var$v.json > $d/r${r}_$v.log 2>&1; echo "deqab r$r $v rc=$? at $SECONDS s"
    done
  done
  python3 tools/ab_table.py --tsv $d > $d/ab.tsv && python3 tools/ab_table.py $d/ab.tsv --base ${ways%% *} > $d/ab.txt
  python3 tools/ab_table.py --tsv $d --metric vs_cublas_quant > $d/ab_vsq.tsv && python3 tools/ab_table.py $d/ab_vsq.tsv --base ${ways%% *} > $d/ab_vsq.txt
  head -20 $d/ab_vsq.txt
}
# the thirty-eighth session's GEMM A/B cases (tokens = bytes / 16 KiB: -b 16M .. 256M is 1024 .. 16384)
GEMM_AB=gemmwg_7b_fc1_wg,gemmwg_13b_qkv_wg,gemmwg_7b_out_wg,gemmwg_7b_fc2_wg,gemmwg_7b_tp8_fc1_wg,gemmwg_13b_tp8_fc1_wg,gemmwg_7b_tp8_out_wg,gemmwg_7b_tp8_fc2_wg,gemmwg_7b_fc2_wgq,gemmwg_7b_tp8_out_wgq,gemmwg_7b_fc1_lt,gemmwg_7b_tp8_out_lt
suite() { # the whole GPU suite in what is left of LIM (at most $1 s) -> $OUT/tests.log
  local t=$((LIM - SECONDS - 20)); [ $t -gt "$1" ] && t=$1
  [ $t -gt 60 ] || return 0
  OUT=$W TESTS=all T_TESTS=$t tools/device_kernels.sh "$AGOQ_B" tests > $W/t_stdout.log 2>&1
  grep -h "passed, " $W/device_kernels.log | tail -1; grep -h "^FAIL" $W/device_kernels.log | head -5
  cp $W/device_kernels.log "$OUT/tests.log"; echo "tests done at $SECONDS s"
}
gemmb() { # experiments/gemm_wg.json (tools/device_gemm.sh bench) if 100 s are left -> g.tgz
  [ $SECONDS -lt $((LIM - 100)) ] || return 0
  OUT=$W/g timeout $((LIM - SECONDS - 30)) tools/device_gemm.sh "$AGOQ_B" bench > $W/g_stdout.log 2>&1
  python3 tools/gemm_targets.py $W/g/gemm_wg.json > $W/g/targets.md 2>&1; sed -n 3,5p $W/g/targets.md
  tar czf "$OUT/g.tgz" -C $W g g_stdout.log; echo "gemm done at $SECONDS s"
}
ab2() { # on an H200, with $1 s to spare: the fused forwards' launch knobs (tools/ab_s32e.tsv)
  grep -q H200 $W/gpu.txt && [ $SECONDS -lt $((LIM - $1)) ] && ab tools/ab_s32e.tsv 2 ab2
}
if [ "$MODE" = l2pf ]; then # the thirty-sixth session's follow-up: the fused GPU tests, tools/ab_s36.tsv, on an H200 the
  # launch knobs (tools/ab_s32e.tsv), then the whole GPU suite with what is left -> c.tgz, tests.log
  fused_tests
  tar czf "$OUT/c.tgz" -C $W .
  ab tools/ab_s36.tsv "${AB_R:-3}" ab; tar czf "$OUT/c.tgz" -C $W .
  ab2 60 && tar czf "$OUT/c.tgz" -C $W .
  suite 400
  exit 0
fi
if [ "$MODE" = s37 ]; then # the thirty-seventh session: the fused GPU tests; SwiGLU's unit row by
  # multiply-high (agoq_udiv, the default) against nvcc's division (vars/d0 = -DAGOQ_SWI_UDIV=0),
  # VR rounds (3), 64 MiB .. 4 GiB, FP4 and int8; tools/ab_s36.tsv, AB_R rounds (2); on an H200
  # the launch knobs (tools/ab_s32e.tsv) -> d.tgz
  fused_tests
  tar czf "$OUT/d.tgz" -C $W .
  varab "${VR:-3}" swiglu_fwd_fused,swiglu_bwd_fused,swiglu_fwd_bf16,swiglu_bwd_bf16 4G 64M fp4_e2m1,int8
  tar czf "$OUT/d.tgz" -C $W .
  ab tools/ab_s36.tsv "${AB_R:-2}" ab; tar czf "$OUT/d.tgz" -C $W .
  ab2 60 && tar czf "$OUT/d.tgz" -C $W .
  exit 0
fi
if [ "$MODE" = s37b ]; then # the block parameters' asymmetric branch at compile time (the default) against the
  # runtime kind test (vars/rt = -DAGOQ_TILE_PARAMS_RT=1), VR rounds (3): fused forwards and the tile
  # quantizers, FP4 / int8 / int4_asym, 64 MiB .. 4 GiB -> e.tgz; then the whole GPU suite -> tests.log
  varab "${VR:-3}" swiglu_fwd_fused,gelu_fwd_fused,rmsnorm_fwd_fused,quantize_bf16,quantize_f32 4G 64M fp4_e2m1,int8,int4_asym
  tar czf "$OUT/e.tgz" -C $W .
  suite 400
  exit 0
fi
if [ "$MODE" = s37c ]; then # the GELU forward's copy by the q7 tile: the fused GPU tests, tools/ab_s37b.tsv
  # (AGOQ_GELU_FWD_Q7 2 / 0 / 1), AB_R rounds (3) -> f.tgz; then the whole GPU suite -> tests.log
  fused_tests
  ab tools/ab_s37b.tsv "${AB_R:-3}" ab; tar czf "$OUT/f.tgz" -C $W .
  suite 400
  exit 0
fi
ncu_src() { # kernel-regex case [size] [name]: ncu --set full of one launch of the case (format NCU_FMT, default
  # fp4_e2m1; binary NCU_BIN, default the build's agoq; the regex against NCU_NAME_BASE, default ncu's function
  # name), its details and per-SASS-line source page (tools/ncu_pc.py) -> $W/ncu/NAME_* (NAME: the case's)
  command -v ncu > /dev/null || return 0; mkdir -p $W/ncu; local n=${4:-$2}
  timeout 150 ncu --set full --import-source no --clock-control none --kernel-name-base "${NCU_NAME_BASE:-function}" \
    -k regex:"$1" -c 1 -f -o /tmp/$n "${NCU_BIN:-$AGOQ_B/agoq}" kernels --cases "$2" --formats "${NCU_FMT:-fp4_e2m1}" \
    -b "${3:-256M}" -e "${3:-256M}" -n 1 -w 0 --no-check -q \
    -o /tmp/ncu_k.json > $W/ncu/${n}_ncu.log 2>&1
  ncu -i /tmp/$n.ncu-rep --page details > $W/ncu/${n}_details.txt 2>&1
  ncu -i /tmp/$n.ncu-rep --page source --csv --print-source sass 2>/dev/null | xz > $W/ncu/${n}_src.csv.xz
  echo "ncu $n done at $SECONDS s"
}
if [ "$MODE" = s38 ]; then # the thirty-eighth session: on an H200 the GPU suite, the torch.compile peer and
  # both kernel experiments (tools/device_kernels.sh tests peer kernels fused) -> k.tgz; on another
  # GPU the whole suite, then ncu per SASS line of the FP4 RMSNorm backward and SwiGLU forward -> n.tgz
  # (ONLY_H200=1: on another GPU nothing: a probe for an H200)
  if ! grep -q H200 $W/gpu.txt && [ -n "${ONLY_H200:-}" ]; then echo "not an H200: nothing run"; exit 0; fi
  if grep -q H200 $W/gpu.txt; then
    T_TESTS=400 records tests
  else
    suite 300; tar czf "$OUT/n.tgz" -C $W .
    ncu_src rms_bwd_staged rmsnorm_bwd_fused; tar czf "$OUT/n.tgz" -C $W .
    ncu_src swiglu_fwd swiglu_fwd_fused; tar czf "$OUT/n.tgz" -C $W .
  fi
  exit 0
fi
if [ "$MODE" = s38b ]; then # the RMSNorm backward's keep kernels with 4 stages (vars/st4 =
  # -DAGOQ_RMS_KEEP_STAGES=4) against 3: st4's fused GPU tests, then VR rounds (3) of the fused FP4 and
  # bf16 backwards, 64 MiB .. 4 GiB -> g.tgz; on an H200, then s38's records with the time left -> k.tgz
  timeout 150 .carry/x/vars/st4/agoq_test_cuda fused > $W/t_fused_st4.log 2>&1; echo "st4 fused tests rc=$? $(tail -1 $W/t_fused_st4.log)"
  varab "${VR:-3}" rmsnorm_bwd_fused,rmsnorm_bwd_bf16 4G 64M fp4_e2m1
  tar czf "$OUT/g.tgz" -C $W .
  grep -q H200 $W/gpu.txt && [ $SECONDS -lt $((LIM - 300)) ] && T_KERNELS=120 records tests
  exit 0
fi
if [ "$MODE" = s38r ]; then # the records: the torch.compile peer and both kernel experiments (on an H200
  # the whole GPU suite beside the peer's compilation too) -> k.tgz
  if grep -q H200 $W/gpu.txt; then records tests; else records; fi
  exit 0
fi
if [ "$MODE" = s38c ]; then # the GEMM consumers' descriptors before the wait (AGOQ_WG_DESC_EARLY=1, the
  # default) against after it (vars/d0): the GEMM GPU tests, VR rounds (3) of ten GEMMs at 1024 /
  # 4096 / 16384 tokens -> c.tgz; then experiments/gemm_wg.json with what is left -> g.tgz
  gemm_tests
  varab "${VR:-3}" gemmwg_7b_fc1_wg,gemmwg_13b_qkv_wg,gemmwg_7b_fc2_wg,gemmwg_7b_tp8_fc1_wg,gemmwg_13b_tp8_fc1_wg,gemmwg_7b_tp8_out_wg,gemmwg_7b_fc2_wgq,gemmwg_7b_tp8_out_wgq,gemmwg_7b_fc1_lt,gemmwg_7b_tp8_fc1_lt 256M 16M
  tar czf "$OUT/c.tgz" -C $W .
  gemmb
  exit 0
fi
if [ "$MODE" = s38e ]; then # one call for an H200 (or any GPU): the GEMM GPU tests and the staging by
  # cvt.rn.bf16x2 (AGOQ_WG_CVT) / early-descriptor A/B against vars/c0 (CVT=0) and vars/d0 (both 0), VR
  # rounds (3) of $GEMM_AB -> c.tgz; the RMSNorm backward's 4 stages (vars/st4) -> c.tgz; the GEMM bench;
  # then the records (peer, kernels, fused) with the time left -> k.tgz
  gemm_tests
  mkdir -p $W/vg && mv .carry/x/vars/st4 $W/vg/ 2>/dev/null
  varab "${VR:-3}" $GEMM_AB 256M 16M
  mv $W/var $W/var_gemm; tar czf "$OUT/c.tgz" -C $W .
  rm -rf .carry/x/vars/c0 .carry/x/vars/d0; mv $W/vg/st4 .carry/x/vars/
  [ $SECONDS -lt $((LIM - 120)) ] && varab "${VR:-3}" rmsnorm_bwd_fused,rmsnorm_bwd_bf16 4G 64M fp4_e2m1
  tar czf "$OUT/c.tgz" -C $W .
  gemmb
  [ $SECONDS -lt $((LIM - 200)) ] && PEER_COMPILE_S=200 PEER_TIME_S=100 T_KERNELS=60 records
  exit 0
fi
if [ "$MODE" = s39 ]; then # the thirty-ninth session: the GEMM GPU tests (the prologue's bit-exact test runs the
  # register and shared-memory paths), the prologue three ways (deqab: vars/r0 = AGOQ_WG_DQR_FP4_TAB=0),
  # then the GEMM bench -> c.tgz, g.tgz
  gemm_tests 150
  deqab "${VR:-3}"; tar czf "$OUT/c.tgz" -C $W .
  gemmb
  exit 0
fi
if [ "$MODE" = s39d ]; then # one call for the rest: the GEMM GPU tests, the prologue four ways (VR rounds, 2),
  # the GEMM bench, then the whole GPU suite with what is left -> c.tgz, g.tgz, tests.log
  gemm_tests 150
  deqab "${VR:-2}" "smem4 v2 smem reg"; tar czf "$OUT/c.tgz" -C $W .
  gemmb
  suite 400
  exit 0
fi
if [ "$MODE" = s39c ]; then # the GEMM GPU tests, the prologue four ways (deqab smem4 v2 smem reg), ncu per SASS
  # line of the 4-stage prologue at 7B FC2 / 4096 tokens -> c.tgz. Made for 28e90ba's smem mainloop (no
  # barrier before the decode, the scale after the fence), which never ran and was reverted: re-apply it
  # (git show 28e90ba -- kernels/gemm/gemm_wg_deq.cuh | git apply), build, and pack 597b5b0's agoq as vars/v2
  gemm_tests 150
  deqab "${VR:-3}" "smem4 v2 smem reg"; tar czf "$OUT/c.tgz" -C $W .
  [ $SECONDS -lt $((LIM - 120)) ] && AGOQ_WG_DEQ_SMEM=4 ncu_src wg_kernel gemmwg_7b_fc2_wgd 64M
  tar czf "$OUT/c.tgz" -C $W .
  exit 0
fi
if [ "$MODE" = s40 ] || [ "$MODE" = s40b ]; then # the fortieth session: the GEMM GPU tests, the prologue three
  # (s40: "smem4 dqp v2") or four (s40b, after the raw scale loads: "smem4 b2 v2 dqp") ways: dqp the decoder
  # warpgroup, vars/b2 = -DAGOQ_WG_DQS_BUFS4=2, vars/v2 = 597b5b0 (the barrier before the decode, the
  # scale a k-tile ahead); ncu per SASS line of the default and the decoder warpgroup at 7B FC2 / 4096
  # tokens -> c.tgz
  w="smem4 dqp v2"; [ "$MODE" = s40b ] && w="smem4 b2 v2 dqp"
  gemm_tests 150
  deqab "${VR:-3}" "${WAYS:-$w}"; tar czf "$OUT/c.tgz" -C $W .
  [ $SECONDS -lt $((LIM - 150)) ] && ncu_src wg_kernel gemmwg_7b_fc2_wgd 64M smem4
  tar czf "$OUT/c.tgz" -C $W .
  [ $SECONDS -lt $((LIM - 90)) ] && AGOQ_WG_DEQ_PRODUCER=1 ncu_src wg_kernel gemmwg_7b_fc2_wgd 64M dqp
  tar czf "$OUT/c.tgz" -C $W .
  exit 0
fi
if [ "$MODE" = s41 ]; then # the forty-first session's five-stage prologues: the GEMM GPU tests (the bit-exact
  # prologue test runs s5 and s6), deqab "smem4 s5 s5n s6 b2" (vars/n0 = -DAGOQ_WG_DIRECT_PF=0, vars/b2 =
  # -DAGOQ_WG_DQS_BUFS4=2), ncu per SASS line of s5 and s6 at 7B FC2 / 4096 tokens -> c.tgz
  gemm_tests 150
  deqab "${VR:-3}" "${WAYS:-smem4 s5 s5n s6 b2}"; tar czf "$OUT/c.tgz" -C $W .
  [ $SECONDS -lt $((LIM - 150)) ] && (export AGOQ_WG_DEQ_SMEM=5; ncu_src wg_kernel gemmwg_7b_fc2_wgd 64M s5)
  tar czf "$OUT/c.tgz" -C $W .
  [ $SECONDS -lt $((LIM - 90)) ] && (export AGOQ_WG_DEQ_SMEM=6; ncu_src wg_kernel gemmwg_7b_fc2_wgd 64M s6)
  tar czf "$OUT/c.tgz" -C $W .
  exit 0
fi
if [ "$MODE" = s42 ]; then # the forty-second session's H200 follow-ups, variants packed beside the build in
  # .carry/bins.tar.xz (PACK_VARS): the build's fused GPU tests (and a variant's where it has its
  # agoq_test_cuda); vars/st4 (-DAGOQ_RMS_KEEP_STAGES=4) against the default on the RMSNorm backward and vars/sb0
  # (-DAGOQ_SWI_FWD_BASE=0) on the SwiGLU forwards, FP4 and int8, VR rounds (3); tools/ab_s42.tsv (the SwiGLU
  # forward's L2PF / PF, the GEMM's GROUP_M / STREAMK), AB_R rounds (2); the GEMM clock probe
  # (tools/device_gemm_clocks.sh, N = 50); ncu of the fused kernels that miss issue 15's targets on the H200
  # (SwiGLU and RMSNorm forward at 64 MiB, RMSNorm backward at 256 MiB), of the default GEMM prologue at 7B FC2 /
  # 4096 tokens and of the fused epilogue at 7B TP=8 out-projection / 16384 -> s.tgz
  # (ONLY_H200=1: on another GPU nothing)
  if ! grep -q H200 $W/gpu.txt && [ -n "${ONLY_H200:-}" ]; then echo "not an H200: nothing run"; exit 0; fi
  mkdir -p /tmp/vs; mv .carry/x/vars/* /tmp/vs/ 2>/dev/null
  timeout 150 "$AGOQ_B/agoq_test_cuda" fused > $W/t_fused.log 2>&1; echo "fused tests rc=$? $(tail -1 $W/t_fused.log)"
  for v in sb0 st4; do [ -x /tmp/vs/$v/agoq_test_cuda ] || continue
    timeout 150 /tmp/vs/$v/agoq_test_cuda fused > $W/t_fused_$v.log 2>&1; echo "$v fused tests rc=$? $(tail -1 $W/t_fused_$v.log)"; done
  mv /tmp/vs/st4 .carry/x/vars/
  varab "${VR:-3}" rmsnorm_bwd_fused,rmsnorm_bwd_bf16 4G 64M fp4_e2m1; mv $W/var $W/var_rms; tar czf "$OUT/s.tgz" -C $W .
  rm -rf .carry/x/vars/*; mv /tmp/vs/sb0 .carry/x/vars/
  varab "${VR:-3}" swiglu_fwd_fused,swiglu_fwd_bf16 4G 64M fp4_e2m1,int8; mv $W/var $W/var_swi; tar czf "$OUT/s.tgz" -C $W .
  ab tools/ab_s42.tsv "${AB_R:-2}" ab; tar czf "$OUT/s.tgz" -C $W .
  # the plain GEMM's clock and power beside cuBLASLt's (7B FC1 at 16384 tokens: 0.83 of cuBLASLt on the H200)
  [ $SECONDS -lt $((LIM - 150)) ] && N=50 OUT=$W/clocks tools/device_gemm_clocks.sh "$AGOQ_B" > $W/clocks_stdout.log 2>&1
  tar czf "$OUT/s.tgz" -C $W .
  for k in swiglu_fwd_kernel:swiglu_fwd_fused:64M rms_fwd_pair:rmsnorm_fwd_fused:64M rms_bwd_staged:rmsnorm_bwd_fused:256M; do
    IFS=: read -r kr c sz <<< "$k"; [ $SECONDS -lt $((LIM - 40)) ] && ncu_src "$kr" "$c" "$sz" "${c}_$sz"
    tar czf "$OUT/s.tgz" -C $W .
  done
  [ $SECONDS -lt $((LIM - 40)) ] && ncu_src wg_kernel gemmwg_7b_fc2_wgd 64M smem4 # the default prologue
  # the fused epilogue's worst shape: 7B TP=8 out-projection (K = 512) with its residual and FP4 copy, 16384 tokens
  [ $SECONDS -lt $((LIM - 40)) ] && ncu_src wg_kernel gemmwg_7b_tp8_out_wgq 256M tp8out
  tar czf "$OUT/s.tgz" -C $W .
  exit 0
fi
if [ "$MODE" = s43 ] || [ "$MODE" = s44 ]; then # the forty-third session: vars/vr32 (-DAGOQ_VREP=32: dyn8's value
  # table in 32 replicas, one bank a lane whatever the codes) against the default 16: its grad8 GPU tests if packed, VR
  # rounds (3) of the dyn8 reduce core and bf16 accumulation, 64 MiB .. 4 GiB -> v.tgz; s44 (forty-fourth) then
  # vars/rs5 (-DAGOQ_RED_SMEM=5: int8_asym's reduce core staged through shared memory) against the default on that
  # core, VR rounds -> v.tgz; then ncu (--set full) of the dyn8 reduce core at 1 GiB both ways -> v.tgz; then on an
  # H200 the records at this commit (records tests: the whole GPU suite, the torch.compile peer, both kernel
  # experiments) -> k.tgz, and with 100 s left vars/st4 (if packed) against the default on the fused RMSNorm
  # backward, two rounds -> v.tgz
  mkdir -p /tmp/vs; mv .carry/x/vars/* /tmp/vs/ 2>/dev/null
  if [ -x /tmp/vs/vr32/agoq_test_cuda ]; then # not packed in the forty-third session (64 MiB): the bench's checks instead
    timeout 120 /tmp/vs/vr32/agoq_test_cuda grad8 > $W/t_grad8_vr32.log 2>&1; echo "vr32 grad8 tests rc=$? $(tail -1 $W/t_grad8_vr32.log)"; fi
  vonly() { rm -rf .carry/x/vars/*; mv /tmp/vs/$1 .carry/x/vars/; } # vars/$1 alone for the next varab
  vback() { mv .carry/x/vars/* /tmp/vs/ 2>/dev/null; }
  vonly vr32; varab "${VR:-3}" grad_reduce,grad_accumulate_bf16 4G 64M dyn8; mv $W/var $W/var_vr; vback
  tar czf "$OUT/v.tgz" -C $W .
  if [ "$MODE" = s44 ] && [ -d /tmp/vs/rs5 ]; then
    vonly rs5; varab "${VR:-3}" grad_reduce 4G 64M int8_asym; mv $W/var $W/var_rs5; vback
    tar czf "$OUT/v.tgz" -C $W .
  fi
  for v in base vr32; do b=$AGOQ_B/agoq; [ $v = vr32 ] && b=/tmp/vs/vr32/agoq
    NCU_BIN=$b NCU_FMT=dyn8 NCU_NAME_BASE=demangled ncu_src tile_reduce grad_reduce 1G red_$v
  done
  tar czf "$OUT/v.tgz" -C $W .
  grep -q H200 $W/gpu.txt || exit 0
  records tests
  [ -d /tmp/vs/st4 ] || exit 0 # not packed in the forty-fourth session (the 64 MiB of a call)
  vonly st4
  [ $SECONDS -lt $((LIM - 100)) ] && varab 2 rmsnorm_bwd_fused 4G 64M fp4_e2m1 && mv $W/var $W/var_st4 && tar czf "$OUT/v.tgz" -C $W --exclude k .
  exit 0
fi
if [ "$MODE" = s39b ]; then # the GEMM GPU tests, the prologue four ways (deqab reg smem smem4 b2), ncu of the
  # 4-stage prologue and the register one at 7B FC2 / 4096 tokens -> c.tgz
  gemm_tests 150
  deqab "${VR:-3}" "smem4 smem b2 reg"; tar czf "$OUT/c.tgz" -C $W .
  if [ $SECONDS -lt $((LIM - 150)) ] && command -v ncu > /dev/null; then
    mkdir -p $W/ncu
    for v in smem4 reg; do
      env AGOQ_WG_DEQ_SMEM=$([ $v = smem4 ] && echo 4 || echo 0) timeout 60 ncu --clock-control none -k regex:wg_kernel -c 1 \
        --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats \
        "$AGOQ_B/agoq" kernels --cases gemmwg_7b_fc2_wgd --formats fp4_e2m1 -b 64M -e 64M -n 1 -w 0 --no-check -q \
        -o /tmp/ncu_k.json > $W/ncu/$v.txt 2>&1; echo "ncu $v rc=$? at $SECONDS s"
    done
    tar czf "$OUT/c.tgz" -C $W .
  fi
  exit 0
fi
if [ "$MODE" = rest ]; then suite 400; gemmb; exit 0; fi # the whole GPU suite, then the GEMM bench
if [ "$MODE" = short ]; then
  gemm_tests 80
  timeout 40 "$AGOQ_B/agoq_test_cuda" l2pf > $W/t_l2pf.log 2>&1; echo "l2pf test rc=$? $(tail -1 $W/t_l2pf.log)"
  tar czf "$OUT/b.tgz" -C $W .
  ab tools/ab_s35.tsv "${AB_R:-2}" ab; tar czf "$OUT/b.tgz" -C $W .
  [ $SECONDS -lt $((LIM - 25)) ] && varab 2 gemmwg_7b_tp8_out_wgq,gemmwg_7b_fc2_wgq,gemmwg_7b_tp8_out_wg,gemmwg_7b_fc1_wg 256M
  tar czf "$OUT/b.tgz" -C $W .
  exit 0
fi
cat tools/ab_s33.tsv tools/ab_s35.tsv > $W/ab35.tsv
ab $W/ab35.tsv "${AB_R:-3}" ab; tar czf "$OUT/ab.tgz" -C $W ab ab_stdout.log gpu.txt commit.stamp
varab "${VR:-3}" gemmwg_7b_tp8_out_wgq,gemmwg_13b_tp8_out_wgq,gemmwg_7b_tp8_fc2_wgq,gemmwg_7b_fc2_wgq,gemmwg_7b_fc1_wgq,gemmwg_7b_tp8_out_wg,gemmwg_7b_fc1_wg,gemmwg_7b_tp8_fc1_wg,gemmwg_7b_tp8_out_ltq 1G
tar czf "$OUT/var.tgz" -C $W var var_stdout.log
suite 400
gemmb
ab2 40 && tar czf "$OUT/ab2.tgz" -C $W ab2 ab2_stdout.log
exit 0
