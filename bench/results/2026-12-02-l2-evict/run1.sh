#!/usr/bin/env bash
# Session 27 run 1: L2 eviction priorities (kernels/cuda/common/cache_hint.cuh, experiment bits
# AC_EXP_L2: 1 = the KV cache's rows kept as L2::evict_last, 2 = weights streamed as
# L2::evict_first) at W2 on session 22's compiled plans, interleaved rounds (ROUNDS, default 3);
# then W3's 2048-token context on Qwen3-1.7B (KV cache larger than L2) for 0 and 3.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
export PLANS_IN=bench/results/2026-12-02-carveout-first/plans
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a $out/ab.log
for m in ${MODELS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
  for round in $(seq 1 ${ROUNDS:-3}); do
    for l2 in ${L2S:-0 1 2 3}; do AC_EXP_L2=$l2 w2_decode $m "l2=$l2#$round" "" | tee -a $out/ab.log; done
  done
done
if [ "${W3:-1}" = 1 ]; then
  PROMPT_LEN=2048; w2_prompt=$(python3 -c "import random; random.seed(1); print(','.join(str(random.randrange(3, 120000)) for _ in range(2048)))")
  for round in 1 2; do for l2 in 0 3; do AC_EXP_L2=$l2 w2_decode qwen3-1.7b "w3-l2=$l2#$round" "" | tee -a $out/ab.log; done; done
fi
rm -rf $out/runs
