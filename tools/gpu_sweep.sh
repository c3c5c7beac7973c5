#!/usr/bin/env bash
# On the GPU machine: time every valid point of the fast path's GEMV family on the target models'
# shapes (build-device/kernel_sweep), keep every sample in $OUT/sweep.jsonl and print the best
# point per (model, region).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
build-device/kernel_sweep "$@" > "$out/sweep.jsonl" 2> "$out/sweep_summary.txt"
echo "rc=$?"; cat "$out/sweep_summary.txt"
grep -c '"status":"ok"' "$out/sweep.jsonl" | sed 's/^/measured points: /'
grep -c '"status":"wrong"' "$out/sweep.jsonl" | sed 's/^/wrong results: /'
