#!/usr/bin/env bash
# Session 28: the attention's warp pass with two warps per query head (attn_warp_pair_pass behind
# AC_ATTN_PAIR, defined in the attention variants through AC_EXP_DEFINE: exp.diff). GPU tests of
# the attention kernels with it, then W2 on session 22's plans as overrides with each plan's
# carveout, interleaved rounds (ROUNDS, default 3).
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
F='*CudaDecodeAttention*:*CudaFixture*:*CudaFastPreset*:*CudaDecodeAhead*'
[ "${SKIP_TESTS:-0}" = 1 ] || { AC_EXP_DEFINE="attn_decode=AC_ATTN_PAIR" gpu_tests "$F" | tee -a $out/ab.log; cp $out/runs/tests.txt $out/tests-pair.txt; }
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
for m in ${MODELS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  for round in $(seq 1 ${ROUNDS:-3}); do
    w2_decode $m "base#$round" "$b" | tee -a $out/ab.log
    AC_EXP_DEFINE="attn_decode=AC_ATTN_PAIR" w2_decode $m "pair#$round" "$b" | tee -a $out/ab.log
  done
done
python3 tools/kernel_cache_regs.py attn_decode__cluster | tee $out/regs.txt
rm -rf $out/runs
