#!/usr/bin/env bash
# Session 29 run 1: FastConfig attn_merge_o (attn_decode.parts writes the attention's partials,
# gemv.merged merges them while staging the output projection's x'). GPU tests of the attention,
# fast-path and fixture kernels first (attn_merge_o's op test and greedy runs among them), then W2
# on session 22's plans as overrides with each plan's carveout, off and on, interleaved rounds
# (ROUNDS, default 3); MODELS: presets.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
F='*CudaDecodeAttention*:*CudaFastPreset*:*CudaDecodeAhead*:*CudaFixture*:KernelJit.Merged*'
[ "${SKIP_TESTS:-0}" = 1 ] || { gpu_tests "$F" | tee -a $out/ab.log; cp $out/runs/tests.txt $out/tests.txt; }
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
for m in ${MODELS:-qwen3-1.7b llama-3.2-1b qwen3-4b}; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  for round in $(seq 1 ${ROUNDS:-3}); do
    w2_decode $m "base#$round" "$b" | tee -a $out/ab.log
    w2_decode $m "merge#$round" "$b,attn_merge_o=1" | tee -a $out/ab.log
    for extra in ${EXTRA_O:-}; do w2_decode $m "merge,o=$extra#$round" "$b,attn_merge_o=1,o=$extra" | tee -a $out/ab.log; done
  done
done
python3 tools/kernel_cache_regs.py attn_decode__parts gemv__merged attn_decode__cluster gemv__fused | tee $out/regs.txt
rm -rf $out/runs
