#!/usr/bin/env bash
# session 11 run 3: W5 of v1 (no min_blocks) / v2 (old query path + warp pass) / new; timeline of new; GEMV staging vs grid size.
set -u
O=${OUT:-/tmp/out}; R=/tmp/r3; rm -rf $R; mkdir -p $R
tar xJf scratch/bins3.tar.xz
. tools/gpu_common.sh
for r in 1 2; do for b in v1 v2 new; do
  d=build-device-$b; [ $b = new ] && d=build-device
  OUT=$R/w5-$b-$r BIN=$d/agentcompile WORKLOADS=W5 PLANS_IN=bench/results/2026-11-30-bench5 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh > $R/w5-$b-$r.log 2>&1
  mkdir -p /tmp/x && tar xzf $R/w5-$b-$r/bench-plans.tgz -C /tmp/x && grep -h "cuda plan | W5" /tmp/x/e2e-*.md | sed "s/^/$b#$r /" | cut -d'|' -f1,2,8,9 | tee -a $R/w5-summary.txt
  rm -rf /tmp/x $R/w5-$b-$r
done; done
i=0
for v in "" qkv=256:2:4:1 qkv=256:4:2:1 o=128:4:1:4 gate_up=256:2:2:1; do
  i=$((i+1)); echo "tl$i: ${v:-default}" >> $R/tl-index.txt
  OUT=$R/tl$i FAST_CONFIG=$v PRESETS=qwen3-1.7b tools/gpu_timeline.sh > /dev/null 2>&1
  rm -f $R/tl$i/*.csv
done
grep -A12 "attn_decode.cluster.*first wait" $R/tl1/timeline.log
tar czf $O/r3.tgz -C /tmp r3
