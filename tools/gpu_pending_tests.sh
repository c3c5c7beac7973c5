#!/usr/bin/env bash
# On the GPU machine: every GPU test of code that has not run on a GPU yet, in one go, so the
# measurement scripts after it can skip their own (SKIP_TESTS=1): the FP8 GEMVs' bit-move
# widening (CudaGemvFp8, CudaGemvFp8Codes), the FP8 batches' own tensor-core points and the FP8
# fast path (CudaFastFp8), gemm.wgmma at both PIPEs (CudaGemmWgmma), the prompt attention's paired
# tiles and attn_prefill.qs at MT 2, BK 32 (CudaPrefillFlash, CudaPrefillFlashPreset).
# Needs build-device/ carried; about 4 minutes.
#   tools/gpu_pending_tests.sh -> $OUT/pending_tests.log, $OUT/gpu_tests.txt
set -uo pipefail
source tools/gpu_common.sh
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  # gemm.wgmma last and on its own: its PIPE 1 hung on its first run (a producer/consumer cycle,
  # fixed since), and a hang must not cost the other tests their run.
  TEST_TIMEOUT=${TEST_TIMEOUT:-240} gpu_tests '*CudaGemvFp8*:Models/CudaFastFp8.*:Steps/CudaPrefillFlash.*:Presets/CudaPrefillFlashPreset.*'
  cp "$out/runs/tests.txt" "$out/gpu_tests.txt"
  grep -cE "^\[       OK \]" "$out/gpu_tests.txt" | sed 's/^/passed: /'
  TEST_TIMEOUT=60 gpu_tests 'CudaGemmWgmma.*'
  cp "$out/runs/tests.txt" "$out/gpu_tests_wgmma.txt"
  date -u
} 2>&1 | tee "$out/pending_tests.log"
