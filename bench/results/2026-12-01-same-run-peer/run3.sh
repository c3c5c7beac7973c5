#!/usr/bin/env bash
# Session 17 run 3: the standing plans (bench/results/2026-12-01-recompiled/plans, compiled on
# afe3146; the kernel text is unchanged at bad78d9) at W2 against the compiled-PyTorch peer
# measured in the same run.
set -uo pipefail
PLANS_IN=bench/results/2026-12-01-recompiled/plans COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
