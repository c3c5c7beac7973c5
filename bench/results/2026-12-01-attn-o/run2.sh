#!/usr/bin/env bash
# Session 16 run 2: developer timeline of a Qwen3-1.7B W2 step, separate kernels vs attn_o.cluster.
set -uo pipefail
base=$OUT
for cfg in off attn_o=1 attn_o=2; do
  v=$cfg; [ "$cfg" = off ] && v=""
  mkdir -p $base/tl-$cfg
  OUT=$base/tl-$cfg PRESETS=qwen3-1.7b FAST_CONFIG=$v tools/gpu_timeline.sh > /dev/null 2>&1
  echo "=== $cfg"; cat $base/tl-$cfg/timeline.log
  python3 tools/timeline_summary.py $base/tl-$cfg/timeline-qwen3-1.7b.csv --marks attn_o 2>&1 | head -30
done
