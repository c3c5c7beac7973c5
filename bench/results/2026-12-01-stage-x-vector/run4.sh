#!/usr/bin/env bash
# Session 15, run 4: plans compiled now (BUDGET 100, 150 for Qwen3-4B, fresh tuning DB each) on the
# vector-staging engine (5494642), then on cee6a5e; W2 of each, no peer measured.
set -uo pipefail
Q=bench/results/2026-11-30-bench4/peers
rm -f /tmp/ac-tune.db; OUT=$OUT/new PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh > /dev/null 2>&1
for m in llama-3.2-1b qwen3-1.7b qwen3-4b; do echo "plan new $(grep '| cuda plan' /tmp/ac-bench-plans/e2e-$m.md)"; done | tee $OUT/plans-new.txt
grep "compile exit" $OUT/new/bench.log
rm -f /tmp/ac-tune.db; OUT=$OUT/head BIN=build-device-head/agentcompile PEERS_IN=$Q WORKLOADS=W2 tools/gpu_bench_plans.sh > /dev/null 2>&1
for m in llama-3.2-1b qwen3-1.7b qwen3-4b; do echo "plan head $(grep '| cuda plan' /tmp/ac-bench-plans/e2e-$m.md)"; done | tee $OUT/plans-head.txt
grep "compile exit" $OUT/head/bench.log
