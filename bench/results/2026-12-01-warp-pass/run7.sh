#!/usr/bin/env bash
# session 11 run 7: every CUDA GPU test of the committed build (51b525d); W2 with 16-block clusters.
set -u
O=${OUT:-/tmp/out}; R=/tmp/r7; rm -rf $R; mkdir -p $R
. tools/gpu_common.sh
AGENTCOMPILE_GPU_LARGE=1 timeout 300 build-device/agentcompile_tests --gtest_filter='*Cuda*:*FastConfig*:*KernelJit*' > $R/all.txt 2>&1; echo "all rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED TEST|Failure" $R/all.txt | head
for p in qwen3-1.7b; do w2_decode $p default ""; w2_decode $p cluster16 attn_cluster=16; done | tee $R/w2.txt
tar czf $O/r7.tgz -C /tmp r7
