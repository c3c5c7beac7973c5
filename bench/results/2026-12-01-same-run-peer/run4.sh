#!/usr/bin/env bash
# Session 17 run 4: Llama-3.2-1B compiled again on bad78d9 with twice the default budget (200 s),
# then W2 against the compiled-PyTorch peer measured in the same run.
set -uo pipefail
PRESETS=llama-3.2-1b BUDGET=200 COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
