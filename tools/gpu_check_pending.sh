#!/usr/bin/env bash
# On the GPU machine: the first GPU run of the prompt, MoE and FP8 code written without one, in
# two calls of under ten minutes each. Needs build-device/ carried (tools/build_device.sh).
#   part 1: the GPU tests still pending (the grouped MoE prompt's 16-bit outputs, the prompt
#           projections on gemm.wgmma, the compile's region count); gemm.wgmma against cuBLAS on the
#           target models' prompt GEMMs (kernel_sweep SWEEP_FAMILY=gemm); W3 time to first token with
#           prefill_wgmma=1 and with prefill_flash_in_order=1 (the old block order), each against the
#           defaults, interleaved.
#   part 2: Qwen3-30B-A3B's first 8 layers, W2 with moe_prefill_grouped=1 against the defaults
#           (the prompt's time, profiled); gemv.mma_fp8's points at batch 8 (kernel_sweep
#           SWEEP_FAMILY=fp8_mma SWEEP_BATCH=8) on Qwen3-1.7B's shapes.
#   short: one call for a short lease: the pending GPU tests (the FP8 batch-8 plan, the grouped
#           MoE prompt, the compile's region count) and part 2's MoE A/B once.
#   tools/gpu_check_pending.sh 1|2|short -> $OUT/pending-<part>.log, $OUT/gemm_sweep.jsonl or fp8_mma_sweep.jsonl, $OUT/runs/
set -uo pipefail
part=${1:-}
case "$part" in 1|2|short) ;; *) echo "usage: tools/gpu_check_pending.sh 1|2|short" >&2; exit 2;; esac
source tools/gpu_common.sh
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  if [ "$part" = short ]; then
    TEST_TIMEOUT=200 gpu_tests 'Models/CudaFastFp8.MatchesTheQuantizedReference/1:CudaFastMoe.GroupedPromptMatchesTheGemvs:CudaCompile.*'
    echo "== Qwen3-30B-A3B, 8 layers: the grouped prompt"
    CONFIGS=';moe_prefill_grouped=1' ROUNDS=1 timeout 150 tools/gpu_moe_ab.sh | grep -E "decode .* ms/token|FAILED|moe_(gemm|gather|combine)"
  elif [ "$part" = 1 ]; then
    TEST_TIMEOUT=${TEST_TIMEOUT:-200} gpu_tests 'CudaFastMoe.*:Presets/CudaPrefillFlashPreset.*:CudaCompile.*:Models/CudaFastFp8.MatchesTheQuantizedReference/0:Models/CudaFastFp8.MatchesTheQuantizedReference/1:Models/CudaFastFp8.MatchesTheQuantizedReference/2'
    echo "== gemm.wgmma against cuBLAS, 2048-row prompt GEMMs"
    SWEEP_FAMILY=gemm timeout 150 build-device/kernel_sweep ${GEMM_MODELS:-qwen3-1.7b llama-3.2-1b} > "$out/gemm_sweep.jsonl" 2> "$out/runs/gemm_sweep.err"
    echo "kernel_sweep exit $?"; grep -A20 "prompt GEMMs at" "$out/runs/gemm_sweep.err"
    for cfg in prefill_wgmma=1 prefill_flash_in_order=1; do
      echo "== W3 TTFT: $cfg (the A/B's old side) against the defaults"
      OLD_BIN=$bin AB_CONFIG=$cfg SKIP_PEERS=1 PRESETS="${PRESETS:-llama-3.2-1b qwen3-1.7b}" timeout 200 tools/gpu_ttft_bench.sh 1 | grep "A/B"
    done
  else
    echo "== Qwen3-30B-A3B, 8 layers: the grouped prompt"
    CONFIGS=';moe_prefill_grouped=1' ROUNDS=${ROUNDS:-2} timeout 200 tools/gpu_moe_ab.sh |
      grep -E "decode .* ms/token|FAILED|moe_(router|gate_up|down|gemm|gather|combine)"
    echo "== gemv.mma_fp8 points at batch 8"
    SWEEP_FAMILY=fp8_mma SWEEP_BATCH=8 timeout 200 build-device/kernel_sweep qwen3-1.7b > "$out/fp8_mma_sweep.jsonl" 2> "$out/runs/fp8_mma_sweep.err"
    echo "kernel_sweep exit $?"; tail -6 "$out/runs/fp8_mma_sweep.err"
  fi
  date -u
} 2>&1 | tee "$out/pending-$part.log"
