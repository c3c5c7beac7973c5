#!/usr/bin/env bash
# On the GPU machine: FP8 projections on the fast path (--cuda-route fast). The GPU tests
# (CudaFastFp8: tiny presets with channel scales against the CPU reference, Qwen3-1.7B with
# 128x128 blocks against the library route; CudaGenericRoute: the auto route keeps FP8 on the
# library route), then Qwen3-1.7B fp8-block at W2 through bench e2e (the floor counts the weights
# as stored; the semantic check against the CPU reference on the same quantized weights, over
# VALIDATE tokens). Needs build-device/ carried.
#   [VALIDATE=8] tools/gpu_fp8_check.sh -> $OUT/fp8_check.log, $OUT/fp8-w2.{json,md}
set -uo pipefail
source tools/gpu_common.sh
log=$out/fp8_check.log
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  gpu_tests 'Models/CudaFastFp8*:Models/CudaGenericRoute*'
  grep -E "^\[ (fp8|generic) \]" "$out/runs/tests.txt"
  m=/tmp/ac-qwen3-1.7b-fp8-block
  [ -f "$m/config.json" ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --weights fp8-block --quiet
  echo "== W2, fp8-block, fast route"
  timeout 240 $bin bench e2e --model $m --backend cuda --cuda-route fast --workloads W2 --repeats 3 \
    --validate-tokens ${VALIDATE:-8} --json-out "$out/fp8-w2.json" --md-out "$out/fp8-w2.md" --quiet 2>&1 | grep -E "^\||floor|error" | head -12
  date -u
} 2>&1 | tee "$log"
