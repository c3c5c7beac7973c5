#!/usr/bin/env bash
# On the GPU machine: why the small decode regions stay under 70% of the copy bandwidth. Nsight
# Compute (hardware counters, --clock-control none) on the first decode step's kernels of
# layer 0 (QKV GEMV, attention, output GEMV, gate/up GEMV, down GEMV) for each preset: speed of
# light, memory workload, occupancy, warp states and launch statistics, one kernel at a time
# (serialised, caches flushed between kernels, so this is the kernel alone, not its overlap).
#   tools/probes/gpu_ncu_regions.sh -> $OUT/ncu_regions.log, $OUT/ncu-<preset>.txt
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
bin=build-device/agentcompile
{
  date -u; echo "engine $(cat build-device/COMMIT 2>/dev/null || echo unknown)"
  for preset in ${PRESETS:-llama-3.2-1b qwen3-1.7b}; do
    m=/tmp/ac-$preset
    [ -f $m/model.safetensors ] || $bin synth-model --preset $preset --out $m --seed 11 --quiet >/dev/null
    timeout 240 ncu --clock-control none -k regex:"gemv__fused|attn_decode__fused" --launch-count 5 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
      $bin generate $m --prompt-tokens 1,2,3,4,5,6,7,8 --max-tokens 2 --ignore-eos --backend cuda --cuda-route fast \
      > "$out/ncu-$preset.txt" 2>&1
    echo "== $preset (ncu rc=$?)"
    grep -E "^  [a-z_]+__|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Grid Size|Block Size|Waves Per SM|Stall|Warp Cycles Per Issued|Dynamic Shared" "$out/ncu-$preset.txt" | head -120
  done
  date -u
} 2>&1 | tee "$out/ncu_regions.log"
