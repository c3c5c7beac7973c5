# Sourced by the GPU scripts (tools/gpu_verify.sh, gpu_mlp_check.sh) that decode W2 under fast-path
# overrides and run GPU tests: sets the environment, $out (with runs/) and $bin.
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=/tmp/ac-kernel-cache
out=${OUT:-/tmp/out}; mkdir -p "$out/runs"
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
bin=build-device/agentcompile
# The commit the binaries were built from (reports' "engine"): the checkout here may be another.
export AGENTCOMPILE_COMMIT=${AGENTCOMPILE_COMMIT:-$(cat build-device/COMMIT 2>/dev/null)}
# The W2 prompt: 128 fixed pseudo-random token ids ($PROMPT_LEN of them if set: 2048 for W3's context).
w2_prompt=$(python3 -c "import random; random.seed(1); print(','.join(str(random.randrange(3, 120000)) for _ in range(${PROMPT_LEN:-128})))")

# w2_decode PRESET LABEL OVERRIDE: 128 greedy tokens after the W2 prompt on the fast path with
# AGENTCOMPILE_FAST_CONFIG=OVERRIDE; one line with ms/token, the prompt's ms (a first request's:
# it includes loading cuBLAS's kernels), a checksum of the tokens and the first
# few (runs compare token for token through the checksum). $W2_EXTRA: more generate flags (e.g.
# sampling: --temperature 0.6 --top-k 20 --seed 5). $PLANS_IN: a folder of compiled plans
# (plan-PRESET/plan.json, e.g. bench/results/2026-12-01-recompiled/plans): the preset runs its plan
# (kernel binaries dropped: compiled at load) instead of the fast route's defaults; the override
# does not apply to a plan. $W2_WEIGHTS: the preset synthesised with --weights W2_WEIGHTS
# (fp8-block, fp8-channel) in its own folder.
w2_decode() {
  local m=/tmp/ac-$1${W2_WEIGHTS:+-$W2_WEIGHTS} route=(--cuda-route fast)
  [ -f $m/model.safetensors ] || $bin synth-model --preset $1 --out $m --seed 11 ${W2_WEIGHTS:+--weights $W2_WEIGHTS} --quiet >/dev/null
  if [ -n "${PLANS_IN:-}" ]; then
    [ -f "$PLANS_IN/plan-$1/plan.json" ] || { echo "$1 $2 FAILED: no $PLANS_IN/plan-$1/plan.json"; return; }
    mkdir -p /tmp/ac-plan-$1
    python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]; json.dump(p, open(sys.argv[2],'w'))" \
      "$PLANS_IN/plan-$1/plan.json" /tmp/ac-plan-$1/plan.json
    route=(--plan /tmp/ac-plan-$1)
  fi
  AGENTCOMPILE_FAST_CONFIG=$3 $bin generate $m --prompt-tokens $w2_prompt --max-tokens 128 --ignore-eos --backend cuda \
    "${route[@]}" ${W2_EXTRA:-} --json > "$out/runs/$1-$2.json" 2> "$out/runs/$1-$2.err" || { echo "$1 $2 FAILED: $(tail -1 "$out/runs/$1-$2.err")"; return; }
  python3 - "$out/runs/$1-$2.json" "$1" "$2" <<'PY'
import json, sys, zlib
g = json.load(open(sys.argv[1])); t = g["timings"]
print(f"{sys.argv[2]:14s} {sys.argv[3]:26s} decode {t['decode_ms_per_token']:.4f} ms/token  prompt {t['prefill_ms']:.2f} ms  tokens crc {zlib.crc32(str(g['tokens']).encode()):08x} {g['tokens'][:6]}")
PY
}

# gpu_tests FILTER: the GPU tests matching FILTER (large models included), failures summarised.
gpu_tests() {
  echo "== GPU tests ($1)"
  AGENTCOMPILE_GPU_LARGE=1 timeout ${TEST_TIMEOUT:-360} build-device/agentcompile_tests --gtest_filter="$1" > "$out/runs/tests.txt" 2>&1
  echo "tests rc=$?"
  grep -E "FAILED|Failure|Expected|Which|actual|exception|rep |^\[ (attn|compile) \]|^\[  PASSED|tests ran" "$out/runs/tests.txt" | head -60
}

# e2e_rows FILE: one line per row of a bench e2e JSON (decode ms, TTFT, % of floor, the semantic
# check), or why there is none.
e2e_rows() {
  python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no result:", e); sys.exit(0)
for row in r["results"]:
    print(f"  {row['workload']}: decode {row.get('decode_ms_per_token')} ms/step, TTFT {row.get('prefill_ms')} ms, "
          f"{row.get('pct_of_floor')}% of floor, check {row['validation']['status']}")
PY
}
