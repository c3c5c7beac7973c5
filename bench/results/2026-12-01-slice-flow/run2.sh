#!/usr/bin/env bash
# Session 12 run 1: the slice flow's test against the reference; W2 of the flow as it was (A) and
# with relaxed polling + backoff + one fence per producer block (B); timelines of Qwen3-1.7B.
set -uo pipefail
. tools/gpu_common.sh
{
  date -u
  gpu_tests "*Flow*:*CudaFastPreset*:*CudaDecodeAhead*"
  for preset in llama-3.2-1b qwen3-1.7b qwen3-4b; do
    for round in 1 2; do
      bin=build-device-a/agentcompile; w2_decode $preset "A#$round" ""; w2_decode $preset "A-flow#$round" "mlp_flow=1"
      bin=build-device/agentcompile; w2_decode $preset "B-flow#$round" "mlp_flow=1"
    done
  done
} 2>&1 | tee $out/r1.log
cp $out/runs/tests.txt $out/tests.txt
PRESETS=qwen3-1.7b tools/gpu_timeline.sh > /dev/null 2>&1; mv $out/timeline.log $out/tl-default.log; mv $out/timeline-qwen3-1.7b.csv $out/tl-default.csv; mv $out/timeline-qwen3-1.7b-launches.txt $out/tl-default-launches.txt
mkdir -p $out/runs
FAST_CONFIG=mlp_flow=1 PRESETS=qwen3-1.7b tools/gpu_timeline.sh > /dev/null 2>&1; mv $out/timeline.log $out/tl-flow.log; mv $out/timeline-qwen3-1.7b.csv $out/tl-flow.csv; mv $out/timeline-qwen3-1.7b-launches.txt $out/tl-flow-launches.txt
cd $out && tar czf r1.tgz *.log *.csv *.txt && ls
