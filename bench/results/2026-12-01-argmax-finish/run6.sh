#!/usr/bin/env bash
# Session 18 run 6: the GPU tests on HEAD's exact binary (kernels as f1a64ca).
set -uo pipefail
. tools/gpu_common.sh
{ echo "build-device: $(cat build-device/COMMIT)"
  gpu_tests '*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*'
  grep -c "^\[       OK \]" $out/runs/tests.txt; } 2>&1 | tee $out/tests.log | grep -v "^\[ compile \]"
