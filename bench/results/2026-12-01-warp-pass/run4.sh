#!/usr/bin/env bash
# session 11 run 4: W5 + W2 of v1 (warp pass, no min_blocks), v3 (+ norm weights loaded with the head),
# v4 (v3 + L2 prefetch of the norm weights); timelines of v3 (default and GEMV grid variants).
set -u
O=${OUT:-/tmp/out}; R=/tmp/r4; rm -rf $R; mkdir -p $R
tar xJf scratch/bins4.tar.xz
. tools/gpu_common.sh
for r in 1 2; do for b in v1 v3 v4; do
  OUT=$R/w5-$b-$r BIN=build-device-$b/agentcompile WORKLOADS=W5 PLANS_IN=bench/results/2026-11-30-bench5 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh > $R/w5-$b-$r.log 2>&1
  mkdir -p /tmp/x && tar xzf $R/w5-$b-$r/bench-plans.tgz -C /tmp/x && grep -h "cuda plan | W5" /tmp/x/e2e-*.md | sed "s/^/$b#$r /" | cut -d'|' -f1,2,8,9 | tee -a $R/w5-summary.txt
  rm -rf /tmp/x $R/w5-$b-$r
done; done
OUT=$R/ab SKIP_TESTS=1 BUILDS="build-device-v1 build-device-v3 build-device-v4" ROUNDS=2 tools/gpu_ab.sh > /dev/null 2>&1
grep -E "decode|FAILED" $R/ab/ab.log; rm -f $R/ab/*.tgz
i=0
for v in "" qkv=256:2:4:1 o=128:4:1:4 gate_up=256:2:2:1; do
  i=$((i+1)); echo "tl$i: ${v:-default}" >> $R/tl-index.txt
  OUT=$R/tl$i BIN=build-device-v3/agentcompile FAST_CONFIG=$v PRESETS=qwen3-1.7b tools/gpu_timeline.sh > /dev/null 2>&1
  rm -f $R/tl$i/*.csv
done
grep -E "FAILED|plain" $R/tl*/timeline.log
tar czf $O/r4.tgz -C /tmp r4
