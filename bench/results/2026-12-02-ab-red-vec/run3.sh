#!/usr/bin/env bash
# Session 24 run 3: issue 9's W2 figures with the build of run 2's fastest engine (build-device/,
# unpacked from build-pack/pack.tgz if needed): for each preset, the compiled-PyTorch peer measured
# now, then `bench e2e --plan` on session 22's plans (kernel binaries dropped: compiled at load)
# with the copy bandwidth measured in the same run and the semantic check.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
PLANS_IN=bench/results/2026-12-02-carveout-first/plans COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers tools/gpu_bench_plans.sh
