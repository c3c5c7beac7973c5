#!/usr/bin/env bash
# On the GPU machine: the prompt attention with two query tiles per block (prefill_flash_pair=1:
# attn_prefill PAIR 1, a costly causal tile and a cheap one in turn) against one tile per block
# (the default), in one device call:
#   1. the GPU tests: CudaPrefillFlash (every point against double precision, PAIR 1 the same bits
#      as PAIR 0 in either block order) and the fast path's prefill with it against the CPU
#      reference;
#   2. the 2048-token prompt step profiled (2048/8) with each: the attention's time and TFLOP/s;
#   3. W3 time to first token, PAIR 1 against the defaults, interleaved (tools/gpu_ttft_bench.sh 1);
#   4. Nsight Compute on one layer's prompt attention with each (Qwen3-1.7B): SM and issue
#      activity, occupancy, the warps' stall reasons -> $OUT/ncu-pair<P>.txt.
# Needs build-device/ carried; about 6 minutes.
#   [SKIP_TESTS=1] [PRESETS="llama-3.2-1b qwen3-1.7b"] tools/gpu_prefill_pair.sh -> $OUT/prefill_pair.log
set -uo pipefail
source tools/gpu_common.sh
presets=${PRESETS:-llama-3.2-1b qwen3-1.7b}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  if [ -z "${SKIP_TESTS:-}" ]; then
    TEST_TIMEOUT=240 gpu_tests 'Steps/CudaPrefillFlash.*:Presets/CudaPrefillFlashPreset.LogitsMatchTheCpuReference/*'
    cp "$out/runs/tests.txt" "$out/gpu_tests.txt"
  fi
  for pair in 0 1; do
    echo "== the prompt step profiled, prefill_flash_pair=$pair"
    AGENTCOMPILE_FAST_CONFIG=prefill_flash_pair=$pair MODELS="$presets" timeout 150 tools/gpu_prefill_profile.sh > /dev/null 2>&1
    grep -E "^== |attention|ms/token|TTFT|^\| " "$out/prefill_profile.log" | head -24
    mv "$out/prefill_profile.log" "$out/prefill_profile-pair$pair.log"
  done
  echo "== W3 TTFT: prefill_flash_pair=1 (the A/B's old side) against the defaults"
  OLD_BIN=$bin AB_CONFIG=prefill_flash_pair=1 SKIP_PEERS=1 PRESETS="$presets" timeout 200 tools/gpu_ttft_bench.sh 1 | grep "A/B"
  if command -v ncu > /dev/null; then
    m=/tmp/ac-qwen3-1.7b
    [ -f $m/model.safetensors ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --quiet > /dev/null
    for pair in 0 1; do
      echo "== ncu: the prompt attention of layer 2, Qwen3-1.7B, 2048 tokens, prefill_flash_pair=$pair"
      # The first prompt step is the executor's warm-up (28 launches); skip it and one layer.
      AGENTCOMPILE_FAST_CONFIG=prefill_flash_pair=$pair timeout 150 ncu --clock-control none -k regex:attn_prefill \
        --launch-skip 29 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section SchedulerStats --section WarpStateStats \
        $bin bench e2e --model $m --backend cuda --workloads 2048/1 --repeats 1 --validate-tokens 1 --reference peer --quiet \
        > "$out/ncu-pair$pair.txt" 2>&1
      echo "ncu exit $?"
      grep -E "Duration|SM Busy|Issue Slots Busy|Issued Ipc Active|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|No Eligible|Compute \(SM\) Throughput|Waves Per SM" "$out/ncu-pair$pair.txt" | head -30
    done
  else
    echo "no ncu on this machine"
  fi
  date -u
} 2>&1 | tee "$out/prefill_pair.log"
