#!/usr/bin/env bash
# Session 32 run 7 (GPU machine, the session's last device minutes): run 5 again on a new lease
# with budget 200 s (the step tuning cut by its deadline), then the peer and `bench e2e` of the
# plan in the same run.
set -uo pipefail
[ -x build-device/agentcompile ] || tar xzf build-pack/pack.tgz
BUDGET=${BUDGET:-200} bash bench/results/2026-12-03-region-carveout/run5.sh
