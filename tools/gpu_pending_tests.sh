#!/usr/bin/env bash
# On the GPU machine: every GPU test of code that has not run on a GPU yet, in one go, so the
# measurement scripts after it can skip their own (SKIP_TESTS=1): the FP8 GEMVs' bit-move
# widening (CudaGemvFp8, CudaGemvFp8Codes), the FP8 batches' own tensor-core points and the FP8
# fast path (CudaFastFp8), gemm.wgmma at both PIPEs (CudaGemmWgmma), the prompt attention's paired
# tiles and attn_prefill.qs at MT 2, BK 32 (CudaPrefillFlash, CudaPrefillFlashPreset).
# Needs build-device/ carried; about 3 minutes.
#   tools/gpu_pending_tests.sh -> $OUT/pending_tests.log, $OUT/gpu_tests.txt
set -uo pipefail
source tools/gpu_common.sh
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  TEST_TIMEOUT=${TEST_TIMEOUT:-300} gpu_tests '*CudaGemvFp8*:Models/CudaFastFp8.*:CudaGemmWgmma.*:Steps/CudaPrefillFlash.*:Presets/CudaPrefillFlashPreset.*'
  cp "$out/runs/tests.txt" "$out/gpu_tests.txt"
  grep -cE "^\[       OK \]" "$out/gpu_tests.txt" | sed 's/^/passed: /'
  date -u
} 2>&1 | tee "$out/pending_tests.log"
