#!/usr/bin/env bash
# Session 17 run 9: is the QKV projection's long wait lag (1.7-1.9 us after the down projection,
# 1.0-1.3 elsewhere) the down projection's split-K atomics? Timelines on the defaults with down at
# split-K 4 (default) and 1.
set -uo pipefail
for cfg in "" "down=256:2:2:1"; do
  d=$OUT/tl-${cfg:+splitk1}; d=${d%-}; mkdir -p $d
  echo "=== FAST_CONFIG='$cfg'"
  OUT=$d PRESETS="qwen3-1.7b llama-3.2-1b" FAST_CONFIG="$cfg" tools/gpu_timeline.sh 2>&1 | grep -E "decode|gemv.fused|attn_decode|embed|step:" | grep -v "^ *mark"
  for m in qwen3-1.7b llama-3.2-1b; do python3 tools/timeline_summary.py $d/timeline-$m.csv --layers $m | grep "^|"; rm -f $d/timeline-$m.csv; done
done 2>&1 | tee $OUT/run9.log
