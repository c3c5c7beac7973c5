#!/usr/bin/env bash
# On the GPU machine: where a 2048-token prompt's non-GEMM kernels lose. Nsight Compute (hardware
# counters, --clock-control none) on layer 0's prompt kernels of each preset with the default
# FastConfig: the prefill attention (attn_prefill.pipe), and the passes around the GEMMs (the
# RMSNorm into 16 bits, qkv_post.rows, SwiGLU): speed of light, compute and memory workload,
# occupancy, warp states (stall reasons) and instruction statistics, one kernel at a time.
#   [PRESETS="qwen3-1.7b llama-3.2-1b"] tools/probes/gpu_ncu_prefill.sh -> $OUT/ncu_prefill.log, $OUT/ncu-prefill-<preset>.txt
set -uo pipefail
source tools/gpu_common.sh  # $out, $bin, the environment
prompt=$(PROMPT_LEN=2048 bash -c 'source tools/gpu_common.sh; echo $w2_prompt')
{
  date -u; echo "engine $(cat build-device/COMMIT 2>/dev/null || echo unknown)"
  for preset in ${PRESETS:-qwen3-1.7b llama-3.2-1b}; do
    m=/tmp/ac-$preset
    [ -f $m/model.safetensors ] || $bin synth-model --preset $preset --out $m --seed 11 --quiet >/dev/null
    # The first of each kind: layer 0 of the prompt step (the kernels are named family__variant).
    timeout 200 ncu --clock-control none -k regex:"attn_prefill__|rms_norm__cast|qkv_post__rows|swiglu__w16" --launch-count 5 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
      --section WarpStateStats --section InstructionStats --section LaunchStats \
      $bin generate $m --prompt-tokens "$prompt" --max-tokens 1 --ignore-eos --backend cuda --cuda-route fast \
      > "$out/ncu-prefill-$preset.txt" 2>&1
    echo "== $preset (ncu rc=$?)"
    grep -E "^  [a-z_0-9]+__|Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\) Throughput|Executed Ipc|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Grid Size|Block Size|Waves Per SM|Stall|Warp Cycles Per Issued|Dynamic Shared|Shared Memory|Pipe" "$out/ncu-prefill-$preset.txt" | head -150
  done
  date -u
} 2>&1 | tee "$out/ncu_prefill.log"
