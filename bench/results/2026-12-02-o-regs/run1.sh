#!/usr/bin/env bash
# Session 28: do the output projection's blocks all start beside the attention when the registers
# leave room (AC_EXP_MAXNREG caps a variant's registers: exp.diff), and is the step faster?
# Qwen3-1.7B W2 on session 22's plan as an override with its carveout, interleaved rounds.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
plans=bench/results/2026-12-02-carveout-first/plans
m=${MODEL:-qwen3-1.7b}; c=${CARVE:-40}
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=$c"
O=${O_SUB:-unroll4__splitk2__batch1__epi1}
run() { AC_EXP_MAXNREG="$2" w2_decode $m "$1" "$b$3" | tee -a $out/ab.log; }
for round in $(seq 1 ${ROUNDS:-3}); do
  run "base#$round" "" ""
  run "o112#$round" "$O=112" ""
  run "o104#$round" "$O=104" ""
  run "attn64#$round" "" ",attn_block=64"
  run "o112+attn64#$round" "$O=112" ",attn_block=64"
  run "o112+attn32r#$round" "$O=112;attn_decode__cluster=32" ""
done
python3 tools/kernel_cache_regs.py gemv__fused attn_decode | tee $out/regs.txt
rm -rf $out/runs
