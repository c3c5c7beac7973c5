#!/usr/bin/env bash
# On the GPU machine: the prompt attention's new points against the default, in one device call:
# two query tiles per block (prefill_flash_pair=1: attn_prefill PAIR 1, a costly causal tile and a
# cheap one in turn) and FlashAttention-2's 32 rows per warp (prefill_flash_qs=2 at BK 32:
# attn_prefill.qs MT 2, each K and V fragment into two MMAs, half the shared-memory reads per FLOP).
#   1. the GPU tests (unless SKIP_TESTS=1): CudaPrefillFlash (every point against double
#      precision, PAIR 1 the same bits as PAIR 0 in either block order) and the fast path's
#      prefill with each against the CPU reference;
#   2. the 2048-token prompt step profiled (2048/8) with each: the attention's time and TFLOP/s;
#   3. W3 time to first token, each against the defaults, interleaved (tools/gpu_ttft_bench.sh 1);
#   4. Nsight Compute on one layer's prompt attention with each (Qwen3-1.7B): SM and issue
#      activity, occupancy, the warps' stall reasons -> $OUT/ncu-<n>.txt.
# Needs build-device/ carried; about 7 minutes for one preset.
#   [SKIP_TESTS=1] [PRESETS="qwen3-1.7b llama-3.2-1b"] [CONFIGS="..."] tools/gpu_prefill_pair.sh -> $OUT/prefill_pair.log
set -uo pipefail
source tools/gpu_common.sh
presets=${PRESETS:-qwen3-1.7b llama-3.2-1b}
configs=${CONFIGS:-prefill_flash_pair=1 prefill_flash_qs=2,prefill_flash_bk=32}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "build-device: $(cat build-device/COMMIT)"
  if [ -z "${SKIP_TESTS:-}" ]; then
    TEST_TIMEOUT=240 gpu_tests 'Steps/CudaPrefillFlash.*:Presets/CudaPrefillFlashPreset.LogitsMatchTheCpuReference/*'
    cp "$out/runs/tests.txt" "$out/gpu_tests.txt"
  fi
  i=0
  for cfg in "" $configs; do
    echo "== the prompt step profiled: ${cfg:-the defaults}"
    AGENTCOMPILE_FAST_CONFIG=$cfg MODELS="$presets" timeout 150 tools/gpu_prefill_profile.sh > /dev/null 2>&1
    grep -E "^== |attention|TTFT|^\| " "$out/prefill_profile.log" | head -24
    mv "$out/prefill_profile.log" "$out/prefill_profile-$i.log"
    i=$((i + 1))
  done
  for cfg in $configs; do
    echo "== W3 TTFT: $cfg (the A/B's old side) against the defaults"
    OLD_BIN=$bin AB_CONFIG=$cfg SKIP_PEERS=1 PRESETS="$presets" timeout 200 tools/gpu_ttft_bench.sh 1 | grep "A/B"
  done
  if command -v ncu > /dev/null; then
    m=/tmp/ac-qwen3-1.7b
    [ -f $m/model.safetensors ] || $bin synth-model --preset qwen3-1.7b --out $m --seed 11 --quiet > /dev/null
    i=0
    for cfg in "" $configs; do
      echo "== ncu: the prompt attention of layer 2, Qwen3-1.7B, 2048 tokens: ${cfg:-the defaults}"
      # The first prompt step is the executor's warm-up (28 launches); skip it and one layer.
      AGENTCOMPILE_FAST_CONFIG=$cfg timeout 150 ncu --clock-control none -k regex:attn_prefill \
        --launch-skip 29 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis \
        $bin bench e2e --model $m --backend cuda --workloads 2048/1 --repeats 1 --validate-tokens 1 --reference peer --quiet \
        > "$out/ncu-$i.txt" 2>&1
      echo "ncu exit $?"
      grep -E "attn_prefill__|Duration|SM Busy|Issue Slots Busy|Issued Ipc Active|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|No Eligible|Compute \(SM\) Throughput|Waves Per SM|Shared" "$out/ncu-$i.txt" | head -34
      i=$((i + 1))
    done
  else
    echo "no ncu on this machine"
  fi
  date -u
} 2>&1 | tee "$out/prefill_pair.log"
