#!/usr/bin/env bash
# Session 18 run 3: the three presets compiled afresh on f1a64ca (argmax without fence/counter),
# then W2 against the compiled-PyTorch peer measured in the same run.
set -uo pipefail
COMPILED_PEER=1 WORKLOADS=W2 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
