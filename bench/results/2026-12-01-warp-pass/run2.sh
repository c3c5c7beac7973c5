#!/usr/bin/env bash
# session 11 run 2: GPU tests of the warp pass; W5 bisect (5ea5fc8, 7f5f4e7, dc695a2, new); W2 A/B; timeline.
set -u
O=${OUT:-/tmp/out}
tar xJf scratch/oldbins.tar.xz
. tools/gpu_common.sh
gpu_tests "*CudaDecodeAttention*:*CudaFastPreset*:*FastConfig*:*KernelJit*" 2>&1 | tee $O/tests.log
for r in 1 2; do for b in 5ea 7f5 dc6 new; do
  d=build-device-$b; [ $b = new ] && d=build-device
  OUT=$O/w5-$b-$r BIN=$d/agentcompile WORKLOADS=W5 PLANS_IN=bench/results/2026-11-30-bench5 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh > $O/w5-$b-$r.log 2>&1
  mkdir -p /tmp/x && tar xzf $O/w5-$b-$r/bench-plans.tgz -C /tmp/x && grep -h "cuda plan | W5" /tmp/x/e2e-*.md | sed "s/^/$b#$r /" | cut -d'|' -f1,2,8,9 | tee -a $O/w5-summary.txt
  rm -rf /tmp/x $O/w5-$b-$r
done; done
OUT=$O/ab SKIP_TESTS=1 BUILDS="build-device-dc6 build-device" ROUNDS=2 tools/gpu_ab.sh > /dev/null 2>&1
grep -E "decode|FAILED" $O/ab/ab.log
OUT=$O/tl PRESETS="qwen3-1.7b" tools/gpu_timeline.sh > /dev/null 2>&1; rm -f $O/tl/*.csv
grep -A9 "attn_decode.cluster.*first wait" $O/tl/timeline.log
