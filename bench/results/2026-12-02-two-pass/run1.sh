#!/usr/bin/env bash
# Session 26 run 1 (engine c9618d9: the decode-step tuning's second pass): Qwen3-1.7B compiled
# afresh with BUDGET (default 300) s and benched (W2, the compiled-PyTorch peer measured now);
# then session 22's plan on the same lease against that peer (PLAN22=1, default).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
dest=${OUT:-/tmp/out}
OUT=$dest/fresh PRESETS=qwen3-1.7b BUDGET=${BUDGET:-300} COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
if [ "${PLAN22:-1}" = 1 ]; then
  mkdir -p /tmp/peers-now && tar xzf $dest/fresh/bench-plans.tgz -C /tmp/peers-now ./peers
  cp bench/results/2026-11-30-bench4/peers/hf-eager.qwen3-1.7b.peer.json /tmp/peers-now/peers/
  OUT=$dest/plan22 PRESETS=qwen3-1.7b PLANS_IN=bench/results/2026-12-02-carveout-first/plans WORKLOADS=W2 \
    PEERS_IN=/tmp/peers-now/peers tools/gpu_bench_plans.sh
fi
