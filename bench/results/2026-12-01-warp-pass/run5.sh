#!/usr/bin/env bash
# session 11 run 5: every CUDA GPU test of the committed build; the compiled plans' suite (W1-W5,
# bench4's peers) and W2 with the compiled peer measured in the same run; a timeline of Qwen3-1.7B.
set -u
O=${OUT:-/tmp/out}; R=/tmp/r5; rm -rf $R; mkdir -p $R
. tools/gpu_common.sh
gpu_tests "*Cuda*:*FastConfig*:*KernelJit*" > $R/tests.log 2>&1; cp $out/runs/tests.txt $R/tests-full.txt; tail -3 $R/tests.log
OUT=$R/suite PLANS_IN=bench/results/2026-11-30-bench5 PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh > /dev/null 2>&1
OUT=$R/peer PLANS_IN=bench/results/2026-11-30-bench5 COMPILED_PEER=1 PEERS_IN=bench/results/2026-11-30-bench4/peers WORKLOADS=W2 tools/gpu_bench_plans.sh > /dev/null 2>&1
for d in suite peer; do mkdir -p /tmp/x$d && tar xzf $R/$d/bench-plans.tgz -C /tmp/x$d && grep -h "cuda plan |" /tmp/x$d/e2e-*.md | cut -d'|' -f2,6,8,9,11,12 | sed "s/^/$d /"; grep -h "torch-compiled" /tmp/x$d/e2e-*.md | head -3; done
OUT=$R/tl PRESETS=qwen3-1.7b tools/gpu_timeline.sh > /dev/null 2>&1; rm -f $R/tl/*.csv; grep -E "FAILED|plain" $R/tl/timeline.log
tar czf $O/r5.tgz -C /tmp r5
