#!/usr/bin/env bash
# Session 18 run 1: read ceiling vs copy; plan timeline with bounded instrumentation; GPU tests.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $out/smi.txt 2>&1
{ build-sync/read_ceiling 1024; build-sync/read_ceiling 256; } 2>&1 | tee $out/read_ceiling.log
PLANS_IN=bench/results/2026-12-01-recompiled/plans tools/gpu_timeline.sh > /dev/null 2>&1
tail -120 $out/timeline.log
. tools/gpu_common.sh
gpu_tests '*Cuda*:*FastConfig*:*KernelJit*:*FastDecodeGemv*:*BenchRunner*:*FastPersistent*' | tee $out/tests.log
