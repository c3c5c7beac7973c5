#!/usr/bin/env bash
# Session 25 run 1: FastConfig chain_embed (the lm_head's argmax_finish gathers the next chained
# step's embedding rows; that step's graph has no embedding kernel) on and off, one engine
# (build-device/), W2 on session 22's plans as overrides (plan_override.py + each plan's carveout),
# three interleaved rounds; GPU tests first; then a two-step Qwen3-1.7B timeline with it on.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
. tools/gpu_common.sh
gpu_tests '*CudaGemv*:*CudaOps.Embed*:*CudaFastPreset*:*CudaFixture*:*CudaFastOps*:*CudaDecodeAhead*' | tee -a $out/ab.log
plans=bench/results/2026-12-02-carveout-first/plans
declare -A carve=([qwen3-1.7b]=40 [qwen3-4b]=25 [llama-3.2-1b]=25)
for m in qwen3-1.7b qwen3-4b llama-3.2-1b; do
  b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=${carve[$m]}"
  for round in 1 2 3; do
    for ce in 1 0; do w2_decode $m "chain_embed=$ce#$round" "$b,chain_embed=$ce" | tee -a $out/ab.log; done
  done
done
m=qwen3-1.7b
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-$m/plan.json),smem_carveout=40"
AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl-ce1.csv AGENTCOMPILE_TIMELINE_STEPS=2 \
  w2_decode $m "timeline-chain_embed=1" "$b,chain_embed=1" | tee -a $out/ab.log
python3 - $out/tl-ce1.csv <<'PY' | tee -a $out/ab.log
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
f = lambda r, k: float(r[k]) / 1e3
fin = sorted([r for r in rows if r['kernel'].startswith('argmax_finish')], key=lambda r: f(r, 'start_ns'))
kinds = {}
for r in rows: kinds.setdefault(r['kernel'], []).append(r)
print(f"{len(fin)} argmax_finish, {sum(1 for r in rows if r['kernel'].startswith('embed'))} embedding blocks")
for i, a in enumerate(fin):
    print(f"  step {i}: argmax_finish {f(a, 'start_ns'):.2f}-{f(a, 'end_ns'):.2f} us (wait {f(a, 'wait_ns'):.2f})")
if len(fin) == 2:
    after = sorted([r for r in rows if f(r, 'start_ns') > f(fin[0], 'end_ns')], key=lambda r: f(r, 'start_ns'))
    first = after[0]
    same = [r for r in after if r['kernel'] == first['kernel']][:4096]
    print(f"  step 1's first kernel {first['kernel']}: first block start {f(first, 'start_ns'):.2f} "
          f"({f(first, 'start_ns') - f(fin[0], 'end_ns'):.2f} us after step 0's argmax_finish end), "
          f"its blocks' last end {max(f(r, 'end_ns') for r in same):.2f}")
    t0 = f(fin[0], 'end_ns')
    print(f"  step period (argmax_finish end to end): {f(fin[1], 'end_ns') - t0:.1f} us")
PY
gzip -f $out/tl-ce1.csv
rm -rf $out/runs
