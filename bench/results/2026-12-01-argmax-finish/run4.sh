#!/usr/bin/env bash
# Session 18 run 4: this session's plans (2026-12-01-argmax-finish, compiled on f1a64ca) over
# W1-W5, against bench4's peer records (not re-measured here).
set -uo pipefail
PLANS_IN=bench/results/2026-12-01-argmax-finish/plans WORKLOADS=W1,W2,W3,W4,W5 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
