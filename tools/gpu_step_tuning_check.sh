#!/usr/bin/env bash
# On the GPU machine: what session 33 changed and could not run there (no GPU was lent). First
# the GPU tests of the code it touched (the decode-step timings sharing one weight upload,
# ExecutorShare; the tiered step tuning in a whole CUDA compile, cold and warm), then Qwen3-1.7B
# compiled at the default budget (120 s, seeded with session 32's best plan) and benchmarked at W2
# with its compiled-PyTorch peer in the same run (tools/gpu_bench_plans.sh); last, the step
# tuning's trials and seconds against session 32's 248 trials in 149 s (~0.6 s a trial) at budget
# 400. Needs build-device/ (tools/build_device.sh, carried).
#   tools/gpu_step_tuning_check.sh -> $OUT/tests.log, $OUT/bench.log, $OUT/bench-plans.tgz
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
dest=${OUT:-/tmp/out}
mkdir -p "$dest"
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
[ -x build-device/agentcompile_tests ] || { echo "error: build-device/agentcompile_tests: not built" >&2; exit 2; }
echo "== GPU tests ($(cat build-device/COMMIT 2>/dev/null))"
build-device/agentcompile_tests --gtest_filter='CudaWeightShare*:CudaCompile*:CudaDecodeAhead*:CudaFastPreset*:StepTuning*' \
  > "$dest/tests.log" 2>&1
echo "tests exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$dest/tests.log"
seed=${SEED_PLAN:-bench/results/2026-12-03-region-carveout/run2/plan-qwen3-1.7b}
PRESETS=${PRESETS:-qwen3-1.7b} BUDGET=${BUDGET:-120} COMPILED_PEER=1 WORKLOADS=W2 \
  PEERS_IN=bench/results/2026-11-30-bench4/peers COMPILE_EXTRA="--seed-plan $seed" tools/gpu_bench_plans.sh
# The step tuning's share of the compile: its progress lines (budget left when it began and when
# the next stage did) and its trials.
for log in /tmp/ac-bench-plans/compile-*.log; do
  [ -f "$log" ] || continue
  m=$(basename "$log" .log); m=${m#compile-}
  echo "== $m: decode-step tuning"
  tr '\r' '\n' < "$log" | grep -E "decode-step tuning|attention and output projection" | sed 's/^ *//' | uniq | head -4
  python3 - "/tmp/ac-bench/plan-$m/report.json" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))["step_tuning"]
trials = st.get("trials", [])
print(f"{len(trials)} trials, cut {st.get('cut')}, status {st.get('status')}; note: {st.get('note')}")
for c in st.get("changes", []):
    print("  kept", c)
EOF
done
