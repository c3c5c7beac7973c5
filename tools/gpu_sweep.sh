#!/usr/bin/env bash
# On the GPU machine: time every valid point of the fast path's GEMV family on the target models'
# shapes (build-device/kernel_sweep), keep every sample in $OUT/sweep.jsonl and print the best
# point per (model, region). kernel_sweep's environment picks the batch and family, e.g. the FP8
# GEMV's points with block scales: SWEEP_FAMILY=fp8 SWEEP_SCALE=1 tools/gpu_sweep.sh qwen3-1.7b
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out"
build-device/kernel_sweep "$@" > "$out/sweep.jsonl" 2> "$out/sweep_summary.txt"
echo "rc=$?"; cat "$out/sweep_summary.txt"
grep -c '"status":"ok"' "$out/sweep.jsonl" | sed 's/^/measured points: /'
grep -c '"status":"wrong"' "$out/sweep.jsonl" | sed 's/^/wrong results: /'
