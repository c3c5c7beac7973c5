#!/usr/bin/env bash
# W2 on the compiled plans with every kernel's preferred shared-memory carveout set (AGENTCOMPILE_SMEM_CARVEOUT, percent) or not.
# Needs a build-device/ of 9bdec29 with env-carveout.diff applied (the variable is read there only).
set -uo pipefail
. tools/gpu_common.sh
export PLANS_IN=bench/results/2026-12-01-w2-measured-ceilings/plans
{
  date -u; echo "engine $(cat build-device/COMMIT)"
  for preset in ${PRESETS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
    for round in 1 2; do
      for c in ${CARVEOUTS:-none 100 50}; do
        if [ $c = none ]; then (unset AGENTCOMPILE_SMEM_CARVEOUT; w2_decode $preset "carveout-$c#$round" "")
        else (export AGENTCOMPILE_SMEM_CARVEOUT=$c; w2_decode $preset "carveout-$c#$round" ""); fi
      done
    done
  done
  date -u
} 2>&1 | tee -a "$out/carveout.log"
rm -rf "$out/runs"
