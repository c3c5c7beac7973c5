#!/usr/bin/env bash
# Session 22 run 2 (one command): the developer timeline of one W2 decode step of Qwen3-1.7B with
# this session's plan (a/plan-qwen3-1.7b) and with session 20's (no carveout, O at 512 blocks),
# then Qwen3-4B compiled again with a budget of 220 s (150 s ran out before the step tuning ended)
# and benched against a same-run peer.
set -uo pipefail
d=bench/results/2026-12-02-carveout-first
top=${OUT:-/tmp/out}
for v in new old; do
  plans=$d/plans; [ $v = old ] && plans=bench/results/2026-12-01-w2-measured-ceilings/plans
  mkdir -p $top/tl-$v
  OUT=$top/tl-$v PLANS_IN=$plans PRESETS=qwen3-1.7b tools/gpu_timeline.sh > $top/tl-$v/summary.log 2>&1
  gzip -f $top/tl-$v/timeline-qwen3-1.7b.csv
  head -3 $top/tl-$v/timeline.log; grep -E "qwen3-1.7b +(plain|timeline)" $top/tl-$v/timeline.log
done
OUT=$top PRESETS=qwen3-4b BUDGET_4B=220 $d/run.sh
