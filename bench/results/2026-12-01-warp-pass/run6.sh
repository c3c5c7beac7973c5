#!/usr/bin/env bash
# session 11 run 6: GPU tests of the final build: KernelJit alone, then every CUDA test.
set -u
O=${OUT:-/tmp/out}; R=/tmp/r6; rm -rf $R; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
build-device/agentcompile_tests --gtest_filter='*KernelJit*' > $R/kerneljit-alone.txt 2>&1; echo "KernelJit alone rc=$?"; tail -2 $R/kerneljit-alone.txt
AGENTCOMPILE_GPU_LARGE=1 timeout 400 build-device/agentcompile_tests --gtest_filter='*Cuda*:*FastConfig*:*KernelJit*' > $R/all.txt 2>&1; echo "all rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED TEST|Failure" $R/all.txt | head
tar czf $O/r6.tgz -C /tmp r6
