#!/usr/bin/env bash
# Session 24 run 2: four engines in one run — base (b240b03, scalar split-K adds), fix (86e7df0:
# the vector epilogue testing alignment by element index, 48 registers at 128:2:1:8 again), embed
# (fix + the embedding gather by 16-byte chunks, letting the first projection launch at once) and
# chain (embed + device_chain: a chained step's positions advanced and its tokens written to host
# memory by the step before, no copies between two steps' graphs) — W2 on session 22's plans, two
# interleaved rounds; GPU tests of the chain build first; then two-step Qwen3-1.7B timelines of it
# (device_chain on and off). Binaries arrive packed (build-pack/pack.tgz; the carry limit).
set -uo pipefail
tar xzf build-pack/pack.tgz
export GTEST_FILTER='*CudaGemv*:*CudaOps.Embed*:*CudaFastPreset*:*CudaFixture*:*CudaFastOps*:*CudaDecodeAhead*'
BUILDS="build-device build-device-embed build-device-fix build-device-base" PLANS_IN=bench/results/2026-12-02-carveout-first/plans \
  ROUNDS=2 PRESETS="qwen3-1.7b qwen3-4b llama-3.2-1b" tools/gpu_ab.sh
. tools/gpu_common.sh
# Two consecutive steps (64, 65) of Qwen3-1.7B's plan as an override, device_chain on and off:
# the step's head (embedding, layer 0's QKV) and the gap between the two steps' graphs.
plans=bench/results/2026-12-02-carveout-first/plans
b="$(python3 bench/results/2026-12-01-pf-next-weights/plan_override.py $plans/plan-qwen3-1.7b/plan.json),smem_carveout=40"
for dc in 1 0; do
  AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache-tl AGENTCOMPILE_TIMELINE=$out/tl-dc$dc.csv AGENTCOMPILE_TIMELINE_STEPS=2 \
    w2_decode qwen3-1.7b "timeline-device_chain=$dc" "$b,device_chain=$dc" | tee -a $out/ab.log
  python3 - $out/tl-dc$dc.csv $dc <<'PY' | tee -a $out/ab.log
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
f = lambda r, k: float(r[k]) / 1e3
emb = [r for r in rows if r['kernel'].startswith('embed')]
fin = [r for r in rows if r['kernel'].startswith('argmax_finish')]
print(f"device_chain={sys.argv[2]}: {len(emb)} embeddings, {len(fin)} argmax_finish")
for i, e in enumerate(emb):
    after = [r for r in rows if f(r, 'start_ns') > f(e, 'start_ns') and not r['kernel'].startswith('embed')][:512]
    waits = [f(r, 'wait_ns') for r in after if float(r['wait_ns']) >= 0]
    print(f"  step {i}: embed {f(e, 'start_ns'):.2f}-{f(e, 'end_ns'):.2f} us, next kernel's first start "
          f"{min(f(r, 'start_ns') for r in after):.2f}, first wait return {min(waits):.2f}")
if len(fin) >= 1 and len(emb) >= 2:
    print(f"  gap: step 0's argmax_finish end {f(fin[0], 'end_ns'):.2f} -> step 1's embed start {f(emb[1], 'start_ns'):.2f} us: "
          f"{f(emb[1], 'start_ns') - f(fin[0], 'end_ns'):.2f} us; step period {f(emb[1], 'start_ns') - f(emb[0], 'start_ns'):.1f} us")
PY
  gzip -f $out/tl-dc$dc.csv
done
rm -rf $out/runs
