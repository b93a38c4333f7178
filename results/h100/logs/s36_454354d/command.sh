# call 1 (carry [".carry/bins.tar.xz", ".carry/lib"], binaries of 454354d):
source tools/device_env.sh > $OUT/env.txt 2>&1; (timeout 50 $AGOQ_B/agoq_test_cuda fused_fwd_l2pf; timeout 25 $AGOQ_B/agoq_test_cuda fused_gelu; timeout 20 $AGOQ_B/agoq_test_cuda fused_fast_paths) 2>&1 | tee $OUT/t.log
# call 2, same warm machine:
source tools/device_env.sh; (timeout 95 $AGOQ_B/agoq_test_cuda fused) > $OUT/t_fused.log 2>&1
OUT=/tmp/ab AB_SPECS=tools/ab_s36.tsv AB_ROUNDS=2 T_KERNELS=40 tools/device_kernels.sh $AGOQ_B ab > $OUT/ab_stdout.log 2>&1
