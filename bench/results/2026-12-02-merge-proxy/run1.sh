#!/usr/bin/env bash
# Session 28, timing proxies (exp.diff): what would handing the attention's CLUSTER partials to
# the output projection (which would merge them while staging x') gain?
#   nomerge: attn_decode.cluster ends after P.V (no cluster barriers, no merge; outputs wrong)
#   x8:      the output projection reads its x' eight times from L2 (same values, 8x the bytes)
# Qwen3-1.7B W2 on session 22's plan as an override with its carveout, interleaved rounds.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
declare -A osub=([qwen3-1.7b]=block256__rows2__unroll4__splitk2__batch1__epi1 [llama-3.2-1b]=NONE [qwen3-4b]=NONE)
for m in ${MODELS:-qwen3-1.7b}; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  O=${osub[$m]}
  for round in $(seq 1 ${ROUNDS:-3}); do
    w2_decode $m "base#$round" "$b" | tee -a $out/ab.log
    AC_EXP_DEFINE="attn_decode__cluster=AC_EXP_NO_MERGE" w2_decode $m "nomerge#$round" "$b" | tee -a $out/ab.log
    AC_EXP_DEFINE="$O=AC_EXP_X8" w2_decode $m "x8#$round" "$b" | tee -a $out/ab.log
    AC_EXP_DEFINE="attn_decode__cluster=AC_EXP_NO_MERGE;$O=AC_EXP_X8" w2_decode $m "nomerge+x8#$round" "$b" | tee -a $out/ab.log
  done
done
rm -rf $out/runs
