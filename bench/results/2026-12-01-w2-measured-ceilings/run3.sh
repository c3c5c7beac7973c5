#!/usr/bin/env bash
# Session 20 run 3: the presets in $PRESETS compiled afresh on aeb5680 (the compile report's
# percentages against the copy and reads measured now), then W2 against the compiled-PyTorch peer
# measured in the same run.
set -uo pipefail
COMPILED_PEER=1 WORKLOADS=W2 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
