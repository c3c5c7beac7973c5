#!/usr/bin/env bash
# Session 16 run 7: plans compiled on this engine (attn_o stage, gemv_each_x4) and W2 with them.
set -uo pipefail
rm -f /tmp/ac-tune.db
PRESETS="qwen3-1.7b llama-3.2-1b qwen3-4b" WORKLOADS=W2 PEERS_IN=bench/results/2026-11-30-bench4/peers \
  timeout ${LIMIT:-440} tools/gpu_bench_plans.sh > /dev/null 2>&1
echo "rc=$?"
mkdir -p $OUT/plans && cp -r /tmp/ac-bench-plans/. $OUT/plans/ 2>/dev/null
cat $OUT/plans/bench.log 2>/dev/null
for f in $OUT/plans/e2e-*.md; do echo "== $f"; grep -E "W2|floor|copy" $f | head -6; done
grep -h -E "attention and output projection|persistent kernel" $OUT/plans/plan-*/report.md 2>/dev/null
