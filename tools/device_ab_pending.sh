#!/usr/bin/env bash
# The A/Bs prepared in the thirteenth to seventeenth sessions. Run on an H100 in the sixteenth
# (results/h100/logs/s16_ab_1a5ea74/) and seventeenth sessions (results/h100/logs/s17_ab_26027579/:
# every part), and sk, reduce, deq on an H200 in the seventeenth (results/h200/logs/s17_e664521/).
# On the GPU machine, from the repository root, with the binaries of tools/device_pack.sh
# carried, in two device calls of under 10 minutes each:
#   source tools/device_env.sh && OUT=$OUT tools/device_ab_pending.sh $AGOQ_B tests deq reduce ncu15
#   source tools/device_env.sh && OUT=$OUT tools/device_ab_pending.sh $AGOQ_B cluster clepi ncu17
# Parts:
#   tests   every GPU test (make test-cuda's run; it checks the new variants bit-exact)      ~2 min
#   deq     issue 17, the register prologue on experiments/gemm_wg_deq.json (FC2 reading its stored
#           FP4 input vs dequantize + cuBLASLt): the default (FP4 by arithmetic since the sixteenth
#           session, `def`) against the pairs table (AGOQ_WG_DEQ_FP4=table, `table`), the table
#           and the table with AGOQ_WG_DEQ_AHEAD=1 (`ah`), two rounds, the second in reverse
#           order                                                                           ~1 min
#   reduce  issue 15, the reduce core AGOQ_RED_LD=0|1|2 (1 the default since the seventeenth
#           session; int8_asym, int8; 64 MiB .. 4 GiB), two
#           rounds                                                                          ~2 min
#   ncu15   ncu of the prologue alone (default, table, AHEAD; experiments/gemm_wg_deq_ncu.json) and of the
#           fp8 / int8 reduce cores at 1 GiB (behind torch.compile there, no ncu yet)        ~2 min
#   cluster issue 17, AGOQ_WG_CLUSTER=2 with CTA-scope barrier semantics (fourteenth session; the
#           cluster-scope forms compiled to two GPU-scope MEMBARs per consumer warp and k-tile):
#           the GEMM GPU tests under =2 and =2all, experiments/gemm_wg_cluster.json with
#           =1, =2, =2, =1                                                                   ~4 min
#   clepi   AGOQ_WG_CLUSTER=2all (the 3-stage forward kernels in clusters too: residual, fused
#           copy) on experiments/gemm_wg_cluster_epi.json, =1, =2all, =2all, =1             ~3 min
#   sk      issue 17, AGOQ_WG_STREAMK (seventeenth session: the tiles of a partial last wave
#           split into chunks of k over the CTAs, gemm_wg_sk.h): its GPU test, the GEMM GPU
#           tests with =all set, experiments/gemm_wg_sk.json with =0, =all, =1, =1, =all, =0
#           (until the eighteenth session 0, 1, 1, 0; on the H200 at e664521 =1 was every split,
#           what =all is now)                                                                ~3 min
#   skws    issue 17, the split wave's one workspace per device handed between streams by events
#           (77b4d7e, not yet run on a GPU): its GPU tests (one launches on four streams at
#           once), then experiments/step_llama2_7b.json with AGOQ_WG_STREAMK=1 and =0 (a new
#           stream each point: cuda_used_bytes must not grow with =1 as it did at 30f06dd)     ~1 min
#   half    issue 17, the fast FP4 copy on N % 256 == 128 (nineteenth session; 13B TP=8 FC1, N =
#           3456; its GPU test is in `tests`): experiments/gemm_wg_half.json with
#           AGOQ_WG_FAST_EPI=0 (the per-block epilogue quantizer, what such an N took
#           before), 1, 1, 0                                                                 ~1 min
#   rkeep   issue 15, AGOQ_RMS_KEEP (the staged RMSNorm backward decoding its input once a row;
#           nineteenth session =1 against =0, at 44fd46e on the H200: results/h200/logs/
#           s20_44fd46e/): the fused GPU tests (they run it against the reference), the fused
#           (FP4, int8) and bf16 RMSNorm backward at 64 MiB .. 4 GiB, 4096 and 8192 columns, with
#           =0, the default (2: keep with a stored copy only), 2, 0                         ~2 min
#   rpg     the RMSNorm backward's row groups (twentieth session: SMs x resident CTAs, one wave,
#           agoq_rmsnorm_bwd_rows_per_group; the step engine took 64 rows a group, 64 CTAs at
#           4096 tokens): experiments/step_llama2_7b.json with AGOQ_RMS_RPG=64, unset, unset, 64 ~2 min
#   stage   the table staging of every CTA's prologue in batches of loads (twenty-first session:
#           agoq_dev_stage_words; the LUT, the replicated value table, the table) against the
#           binaries before it, carried as .carry/old.tar.xz (tools/device_pack.sh's archive of
#           the previous commit): the quantizers, the 8-bit gradient kernels (accumulate, reduce)
#           for dyn8, nf4 and int8 (no table: the control) at 16 MiB .. 1 GiB by factors of 4,
#           new, old, old, new (with .carry/mid.tar.xz, a third build between them: new, mid,
#           old, old, mid, new); then experiments/step_llama2_7b.json new, old (grad_store)  ~3 min
#   lut32   the 32-bit LUT's carry form (twenty-second session: agoq_tab_lut32_sum, the code the
#           top byte of entry + key): the GPU tests of quant and grad8 (bit-exact, both
#           AGOQ_G8_LUT32 values), the quantizers (bf16, fp32; dyn8, nf4, int8 the controls) at
#           64 MiB .. 4 GiB against the previous binaries (.carry/old.tar.xz), new / old / old /
#           new, then the dyn8 gradient kernels with AGOQ_G8_LUT32=0 / 1 / 1 / 0             ~4 min
#   vstage  the replicated dyn8 value table staged from one load a code (agoq_tile_stage_vrep) against
#           the previous binaries (.carry/old.tar.xz): its GPU tests, then the dyn8 and int8 (the
#           control) gradient kernels at 16 MiB .. 4 GiB, new / old / old / new                 ~2 min
#   vdec    the replicated dyn8 value table decoded by a 32-bit shared byte address (twenty-third
#           session, agoq_tile_decode_vrep8) and, for the reduce core, through the rows of a
#           dynamic shared region (AGOQ_TILE_OPT_ROWS): the GPU tests of grad8 (every
#           AGOQ_G8_VDEC value against the reference), the dyn8 gradient kernels at 64 MiB ..
#           4 GiB with AGOQ_G8_VDEC=1 / 0 / 2 / 2 / 0 / 1 (int8, unaffected, the control), then
#           ncu of the dyn8 reduce core at 256 MiB with each value                          ~3 min
#           (ran at 8b14893 on an H100, results/h100/logs/s23_8b14893/; the knob is gone since,
#           1 kept: the part needs that build)
#   lutstep experiments/step_llama2_7b.json with AGOQ_G8_LUT32=0 and 1 (ran at ab051fe as part of the
#           part vrep, whose AGOQ_G8_VREP A/B was removed with the knob: results/h100/logs/
#           s22_ab051fe/)                                                                    ~1 min
#   ncu17   ncu of one 7B FC1 launch (4096 tokens) with AGOQ_WG_CLUSTER=1 and =2, and every
#           MEMBAR / CCTL in the binary's SASS                                               ~1 min
# Everything into one archive, $OUT/r.tgz (the device tool returns at most 8 files a call).
# Tables: python3 tools/ab_pending_table.py DIR (DIR: the unpacked archive).
set -u
B=${1:?usage: device_ab_pending.sh BINDIR PART...}
shift
[ $# -gt 0 ] || { echo "device_ab_pending.sh: name the parts (see the top of this file)" >&2; exit 2; }
O=${OUT:?set OUT}; R=$(mktemp -d)
start=$(date +%s)
t() { echo "== $1 at $(( $(date +%s) - start ))s" | tee -a "$R/call.log"; }
rc_of() { echo "$1 rc=$2" | tee -a "$R/call.log"; }
cat "$B/commit.stamp" | tee -a "$R/call.log"
ncu_sec="--clock-control none --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis
  --section MemoryWorkloadAnalysis --section SchedulerStats"
gemm_run() { # experiment, output name, env...
  local e=$1 n=$2; shift 2
  timeout 90 env "$@" "$B/agoq" run "experiments/$e.json" --backend cuda --out "$R/$n.json" >> "$R/$e.log" 2>&1
  rc_of "$n" $?
}
old_bins() { # unpacks .carry/old.tar.xz once; prints its binaries' directory
  [ -x "$PWD/.carry/xo/bd/agoq" ] || { rm -rf .carry/xo && mkdir -p .carry/xo && tar -C .carry/xo -xJf .carry/old.tar.xz; }
  echo "$PWD/.carry/xo/bd"
}
bins_ab() { # prefix, formats, first size, cases: agoq kernels with the new and the old binaries, new / old / old / new
  local pre=$1 fm=$2 b0=$3 cs=$4 v b o
  o=$(old_bins)
  echo "$pre: new $(cat "$B/commit.stamp"), old $(cat "$o/commit.stamp")" | tee -a "$R/call.log"
  for v in new old oldb newb; do
    b=$B; [ "${v%b}" = old ] && b=$o
    timeout 150 "$b/agoq" kernels -n 20 -w 3 -q --formats "$fm" -b "$b0" -e 4G -f 4 --no-check \
      --cases "$cs" -o "$R/$pre$v.json" > "$R/$pre$v.log" 2>&1
    rc_of "$pre$v" $?
  done
}
for part in "$@"; do
  t "$part"
  case $part in
    tests)
      timeout 300 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" > "$R/test_cuda.log" 2>&1; rc_of tests $?
      tail -1 "$R/test_cuda.log" | tee -a "$R/call.log" ;;
    deq)
      V="def ah table"
      for r in 1 2; do
        for v in $V; do
          case $v in
            def) gemm_run gemm_wg_deq "deq_def_r$r" X=1 ;;
            ah) gemm_run gemm_wg_deq "deq_ah_r$r" AGOQ_WG_DEQ_AHEAD=1 AGOQ_WG_DEQ_FP4=table ;;
            table) gemm_run gemm_wg_deq "deq_table_r$r" AGOQ_WG_DEQ_FP4=table ;;
          esac
        done
        V=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
      done ;;
    reduce)
      for r in 1 2; do
        order="0 1 2"; [ $r = 2 ] && order="2 1 0"
        for v in $order; do
          AGOQ_RED_LD=$v timeout 120 "$B/agoq" kernels -n 15 -w 3 -q --cases grad_reduce --formats int8_asym,int8 \
            -b 64M -e 4G -f 4 --no-check -o "$R/ld${v}_r$r.json" > "$R/ld${v}_r$r.log" 2>&1
          rc_of "ld$v r$r" $?
        done
      done ;;
    ncu15)
      for v in def table ah; do
        e=X=1; [ $v = ah ] && e=AGOQ_WG_DEQ_AHEAD=1
        [ $v = def ] || e="$e AGOQ_WG_DEQ_FP4=table"
        timeout 90 env $e ncu $ncu_sec -k regex:"wg_kernel" -c 1 "$B/agoq" run experiments/gemm_wg_deq_ncu.json \
          --backend cuda --out "$R/ncu_$v.json" > "$R/ncu_$v.log" 2>&1
        rc_of "ncu $v" $?
      done
      timeout 90 ncu --clock-control none --kernel-name-base demangled -k regex:tile_reduce -c 2 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section Occupancy --section InstructionStats --section WarpStateStats \
        "$B/agoq" kernels --cases grad_reduce --formats fp8_e4m3,int8 -b 1G -e 1G -n 1 -w 0 --no-check -q \
        -o "$R/ncu_reduce.json" > "$R/ncu_reduce_fp8_int8.log" 2>&1
      rc_of "ncu reduce" $? ;;
    cluster)
      for cl in 2 2all; do
        timeout 120 env AGOQ_WG_CLUSTER=$cl AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" wg_gemm > "$R/test_cl$cl.log" 2>&1
        rc_of "tests cl$cl" $?; tail -1 "$R/test_cl$cl.log" | tee -a "$R/call.log"
      done
      for v in 1 2 2b 1b; do gemm_run gemm_wg_cluster "cl$v" AGOQ_WG_CLUSTER=${v:0:1}; done ;;
    clepi)
      for v in 1 2all 2allb 1b; do
        cl=${v%b}
        gemm_run gemm_wg_cluster_epi "clepi$v" AGOQ_WG_CLUSTER=$cl
      done ;;
    sk)
      timeout 150 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" wg_gemm_streamk > "$R/test_sk.log" 2>&1
      rc_of "tests sk" $?; tail -1 "$R/test_sk.log" | tee -a "$R/call.log"
      timeout 200 env AGOQ_WG_STREAMK=all AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" wg_gemm > "$R/test_sk_all.log" 2>&1
      rc_of "tests wg_gemm with AGOQ_WG_STREAMK=all" $?; tail -1 "$R/test_sk_all.log" | tee -a "$R/call.log"
      for v in 0 all 1 1b allb 0b; do gemm_run gemm_wg_sk "sk$v" AGOQ_WG_STREAMK=${v%b}; done ;;
    skws)
      timeout 120 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" wg_gemm_streamk > "$R/test_skws.log" 2>&1
      rc_of "tests wg_gemm_streamk" $?; tail -1 "$R/test_skws.log" | tee -a "$R/call.log"
      for v in 1 0; do
        AGOQ_WG_STREAMK=$v timeout 120 "$B/agoq" run experiments/step_llama2_7b.json --backend cuda \
          --out "$R/step7b_sk$v.json" > "$R/step7b_sk$v.log" 2>&1
        rc_of "step7b sk$v" $?
      done ;;
    half)
      for v in 0 1 1b 0b; do gemm_run gemm_wg_half "half$v" AGOQ_WG_FAST_EPI=${v%b}; done ;;
    rkeep)
      timeout 200 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" cuda_fused > "$R/test_fused.log" 2>&1
      rc_of "tests cuda_fused" $?; tail -1 "$R/test_fused.log" | tee -a "$R/call.log"
      for v in 0 2 2b 0b; do # 2 the default since the twentieth session; 8192 columns: NG = 4
        for c in 4096 8192; do
          AGOQ_RMS_KEEP=${v%b} timeout 120 "$B/agoq" kernels -n 20 -w 3 -q --cases rmsnorm_bwd_fused,rmsnorm_bwd_bf16 \
            --formats fp4_e2m1,int8 --cols $c -b 64M -e 4G -f 4 --no-check -o "$R/keep${v}_c$c.json" > "$R/keep${v}_c$c.log" 2>&1
          rc_of "keep${v}_c$c" $?
        done
      done ;;
    rpg)
      for v in 64 0 0b 64b; do # AGOQ_RMS_RPG: 64 the step engine's rows per group before the twentieth session
        AGOQ_RMS_RPG=${v%b} timeout 120 "$B/agoq" run experiments/step_llama2_7b.json --backend cuda \
          --out "$R/step7b_rpg$v.json" > "$R/step7b_rpg$v.log" 2>&1
        rc_of "step7b rpg$v" $?
      done ;;
    stage)
      O_B=$PWD/.carry/xo/bd; M_B=$PWD/.carry/xm/bd; vs="new old oldb newb"
      [ -x "$O_B/agoq" ] || { rm -rf .carry/xo && mkdir -p .carry/xo && tar -C .carry/xo -xJf .carry/old.tar.xz; }
      if [ -f .carry/mid.tar.xz ]; then
        [ -x "$M_B/agoq" ] || { rm -rf .carry/xm && mkdir -p .carry/xm && tar -C .carry/xm -xJf .carry/mid.tar.xz; }
        vs="new mid old oldb midb newb"
      fi
      echo "stage: new $(cat "$B/commit.stamp"), old $(cat "$O_B/commit.stamp"), mid $(cat "$M_B/commit.stamp" 2>/dev/null)" | tee -a "$R/call.log"
      for v in $vs; do
        b=$B; [ "${v%b}" = old ] && b=$O_B; [ "${v%b}" = mid ] && b=$M_B
        timeout 150 "$b/agoq" kernels -n 20 -w 3 -q --formats dyn8,nf4,int8 -b 16M -e 1G -f 4 \
          --cases quantize_f32,quantize_bf16,grad_accumulate_f32,grad_accumulate_bf16,grad_reduce \
          -o "$R/stage$v.json" > "$R/stage$v.log" 2>&1
        rc_of "stage$v" $?
      done
      for v in new old; do
        b=$B; [ "$v" = old ] && b=$O_B
        timeout 120 "$b/agoq" run experiments/step_llama2_7b.json --backend cuda --out "$R/stagestep_$v.json" \
          > "$R/stagestep_$v.log" 2>&1
        rc_of "stagestep $v" $?
      done ;;
    lut32)
      timeout 240 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" cuda_quant cuda_grad > "$R/test_lut32.log" 2>&1
      rc_of "tests cuda_quant cuda_grad" $?; tail -1 "$R/test_lut32.log" | tee -a "$R/call.log"
      bins_ab lq dyn8,nf4,int8 64M quantize_bf16,quantize_f32
      for v in 0 1 1b 0b; do
        AGOQ_G8_LUT32=${v%b} timeout 150 "$B/agoq" kernels -n 20 -w 3 -q --formats dyn8 -b 64M -e 4G -f 4 --no-check \
          --cases grad_accumulate_f32,grad_accumulate_bf16,grad_reduce -o "$R/lg$v.json" > "$R/lg$v.log" 2>&1
        rc_of "lg$v" $?
      done ;;
    vstage)
      timeout 240 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" cuda_grad > "$R/test_vstage.log" 2>&1
      rc_of "tests cuda_grad" $?; tail -1 "$R/test_vstage.log" | tee -a "$R/call.log"
      bins_ab vs dyn8,int8 16M grad_accumulate_bf16,grad_accumulate_f32,grad_reduce ;;
    vdec)
      timeout 240 env AGOQ_BIN="$B/agoq" "$B/agoq_test_cuda" cuda_grad > "$R/test_vdec.log" 2>&1
      rc_of "tests cuda_grad" $?; tail -1 "$R/test_vdec.log" | tee -a "$R/call.log"
      for v in 1 0 2 2b 0b 1b; do
        AGOQ_G8_VDEC=${v%b} timeout 150 "$B/agoq" kernels -n 20 -w 3 -q --formats dyn8,int8 -b 64M -e 4G -f 4 --no-check \
          --cases grad_accumulate_bf16,grad_accumulate_f32,grad_reduce -o "$R/vd$v.json" > "$R/vd$v.log" 2>&1
        rc_of "vd$v" $?
      done
      if command -v ncu > /dev/null; then
        for v in 1 0 2; do
          AGOQ_G8_VDEC=$v timeout 90 ncu $ncu_sec --section Occupancy --section InstructionStats --kernel-name-base demangled -k regex:tile_reduce -c 1 \
            "$B/agoq" kernels -n 1 -w 0 -q --formats dyn8 -b 256M -e 256M --no-check --cases grad_reduce \
            -o "$R/ncu_vd$v.json" > "$R/ncu_vd$v.log" 2>&1
          rc_of "ncu vd$v" $?
        done
      fi ;;
    lutstep)
      for v in 0 1; do # the step's grad_store (dyn8 accumulation of every gradient) without / with the 32-bit LUT
        AGOQ_G8_LUT32=$v timeout 120 "$B/agoq" run experiments/step_llama2_7b.json --backend cuda \
          --out "$R/lutstep_$v.json" > "$R/lutstep_$v.log" 2>&1
        rc_of "lutstep $v" $?
      done ;;
    ncu17)
      for v in 1 2; do # the first wg_kernel launch of gemm_wg_ncu.json: 7B FC1, 4096 tokens
        timeout 90 env AGOQ_WG_CLUSTER=$v ncu $ncu_sec -k regex:"wg_kernel" -c 1 "$B/agoq" run experiments/gemm_wg_ncu.json \
          --backend cuda --out "$R/ncu_cl$v.json" > "$R/ncu_cl$v.log" 2>&1
        rc_of "ncu cl$v" $?
      done
      timeout 120 bash -c "cuobjdump -sass '$B/agoq' | grep -oE 'MEMBAR[.A-Za-z0-9]*|CCTL[.A-Za-z0-9]*|UCGABAR[._A-Za-z0-9]*' | sort | uniq -c" \
        > "$R/sass_fences.txt" 2>&1 ;;
    *) echo "device_ab_pending.sh: unknown part $part" | tee -a "$R/call.log" ;;
  esac
done
t done
tar -C "$R" -czf "$O/r.tgz" . && ls -la "$O"
