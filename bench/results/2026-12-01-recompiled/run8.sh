#!/usr/bin/env bash
# Session 16 run 8: Qwen3-4B W2 again with run 7's plan (kernel list stripped: compiled at load).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
m=/tmp/ac-bench/models/qwen3-4b; [ -f $m/model.safetensors ] || build-device/agentcompile synth-model --preset qwen3-4b --out $m --seed 11 --quiet
mkdir -p /tmp/p4 && python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]; json.dump(p, open(sys.argv[2],'w'))" bench/results/2026-12-01-recompiled/plans/plan-qwen3-4b/plan.json /tmp/p4/plan.json
build-device/agentcompile bench e2e --backend cuda --model $m --plan /tmp/p4 --workloads W2 --repeats 3 --tie-epsilon 0.1 \
  --peer bench/results/2026-11-30-bench4/peers/torch-compiled.qwen3-4b.peer.json --json-out $OUT/e2e-qwen3-4b-again.json --md-out $OUT/e2e-qwen3-4b-again.md --quiet
echo "rc=$?"; grep -E "W2|copy" $OUT/e2e-qwen3-4b-again.md | head -4
