#!/usr/bin/env bash
# Session 32 run 6 (GPU machine): issue 9's W2 figures on this engine — for each preset its
# compiled-PyTorch peer measured now, then `bench e2e --plan` (copy bandwidth measured in the same
# run, semantic check) on plans/: run 2's Qwen3-1.7B plan (route carveouts), session 22's plans of
# Llama-3.2-1B and Qwen3-4B (kernel binaries dropped: compiled at load).
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
PRESETS="qwen3-1.7b llama-3.2-1b qwen3-4b" PLANS_IN=bench/results/2026-12-03-region-carveout/plans COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
