#!/usr/bin/env bash
# Session 25 run 2: Qwen3-1.7B's plan compiled afresh on the engine of 7eb486e (session 22's plans
# came from 660f06d + the carveout change, before the embedding gather and device_chain), then
# bench e2e W2 of it with the compiled-PyTorch peer measured now; then session 22's plan on the
# same lease (peer from the first part) for the comparison.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
dest=${OUT:-/tmp/out}
OUT=$dest/fresh PRESETS=qwen3-1.7b BUDGET=${BUDGET:-100} COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
mkdir -p $dest/fresh/x && tar xzf $dest/fresh/bench-plans.tgz -C $dest/fresh/x
mkdir -p /tmp/peers-now && cp $dest/fresh/x/peers/*.json /tmp/peers-now/
OUT=$dest/old PRESETS=qwen3-1.7b PLANS_IN=bench/results/2026-12-02-carveout-first/plans WORKLOADS=W2 \
  PEERS_IN=/tmp/peers-now tools/gpu_bench_plans.sh
