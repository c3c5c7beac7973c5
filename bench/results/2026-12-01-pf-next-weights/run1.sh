#!/usr/bin/env bash
# O's blocks ask L2 for the start of gate/up (pf_gu_kb), down's for the next QKV (pf_qkv_kb), on the
# plans' own points (as overrides), interleaved rounds (the plans themselves are not run: their points are the base).
set -uo pipefail
. tools/gpu_common.sh
P=bench/results/2026-12-01-w2-measured-ceilings/plans
{
  date -u; echo "engine $(cat build-device/COMMIT)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
  [ "${SKIP_TESTS:-0}" = 1 ] || gpu_tests "${GTEST_FILTER:-*CudaFastPreset*:*CudaGemv*:FastConfig*}"
  for preset in ${PRESETS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
    base=$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $P/plan-$preset/plan.json)
    echo "$preset base: $base"
    for round in $(seq 1 ${ROUNDS:-2}); do
      for v in ${VARIANTS:-pf_gu_kb=0 pf_gu_kb=4096 pf_gu_kb=8192 pf_gu_kb=12288 pf_gu_kb=16384 pf_qkv_kb=2048 pf_qkv_kb=4096}; do
        w2_decode $preset "$v#$round" "$base,$v"
      done
    done
  done
  date -u
} 2>&1 | tee -a "$out/pf.log"
