#!/usr/bin/env bash
# Session 30 run 1: FastConfig shared_residual (the output and down projections as one kernel,
# gemv.shared, each launch with its own K split). GPU tests of the GEMV families, the fast presets
# and the kernel JIT first, then W2 on session 22's plans as overrides with each plan's carveout,
# interleaved rounds (ROUNDS, default 3): the plan, the plan with the candidate points unshared
# (controls) and shared.
set -uo pipefail
tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
F='*CudaGemv*:*CudaFastPreset*:*CudaFixture*:*CudaDecodeAhead*:KernelJit.*:FastConfigOverride.Residual*'
[ "${SKIP_TESTS:-0}" = 1 ] || { gpu_tests "$F" | tee -a $out/ab.log; cp $out/runs/tests.txt $out/tests.txt; }
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
declare -A cands=(
  [qwen3-1.7b]="o=256:2:2:2 o=256:2:2:2,shared_residual=1 down=256:2:4:4 down=256:2:4:4,shared_residual=1"
  [qwen3-4b]="shared_residual=1"
  [llama-3.2-1b]="o=256:2:4:2")
for m in ${MODELS:-qwen3-1.7b qwen3-4b llama-3.2-1b}; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  for round in $(seq 1 ${ROUNDS:-3}); do
    w2_decode $m "base#$round" "$b" | tee -a $out/ab.log
    for c in ${cands[$m]}; do w2_decode $m "$c#$round" "$b,$c" | tee -a $out/ab.log; done
  done
done
python3 tools/kernel_cache_regs.py gemv__shared gemv__fused | tee $out/regs.txt
rm -rf $out/runs
