#!/usr/bin/env bash
# Session 16 run 9: W2 again for the three models with run 7's plans (kernel lists stripped), both peer records.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
for p in llama-3.2-1b qwen3-1.7b qwen3-4b; do
  m=/tmp/ac-bench/models/$p; [ -f $m/model.safetensors ] || build-device/agentcompile synth-model --preset $p --out $m --seed 11 --quiet
  mkdir -p /tmp/pl-$p && python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]; json.dump(p, open(sys.argv[2],'w'))" bench/results/2026-12-01-recompiled/plans/plan-$p/plan.json /tmp/pl-$p/plan.json
  build-device/agentcompile bench e2e --backend cuda --model $m --plan /tmp/pl-$p --workloads W2 --repeats 3 --tie-epsilon 0.1 \
    --peer bench/results/2026-11-30-bench4/peers/hf-eager.$p.peer.json --peer bench/results/2026-11-30-bench4/peers/torch-compiled.$p.peer.json \
    --json-out $OUT/e2e-$p-again.json --md-out $OUT/e2e-$p-again.md --quiet
  echo "$p rc=$?"; grep -E "\| W2 \|.*cuda plan|copy" $OUT/e2e-$p-again.md | head -3
done
