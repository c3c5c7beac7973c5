#!/usr/bin/env bash
# Session 17 run 6: the standing plans (2026-12-01-recompiled) over W1-W5 on bad78d9, against
# bench4's peer records (not re-measured here).
set -uo pipefail
PLANS_IN=bench/results/2026-12-01-recompiled/plans WORKLOADS=W1,W2,W3,W4,W5 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
