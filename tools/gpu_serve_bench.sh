#!/usr/bin/env bash
# On the GPU machine: the serving benchmark. For each preset (synthetic weights, real shapes and
# the Qwen3 tokenizer), with its compiled plan: `bench e2e --plan` W2 and W5 (batch 8), then
# `serve --plan` under bench/serve_bench.py at 1, 8, 32 and 64 concurrent W2-like streams
# (aggregate tokens/s, TTFT and inter-token p50/p99), and a shared 1,000-token prefix's time to
# first token, first request against second. summary.md gives the ratios the serving targets name:
# tokens/s at 8 streams over W5's (decode only, and whole requests with their prefill), and tokens/s
# at 32 streams over the bandwidth bound (32 tokens per weight pass at W2's floor).
# Needs build-device/ carried, and the tokenizer: TOKENIZER=<folder with tokenizer.json and
# tokenizer_config.json> (carry .deps/gputok with tokenizer.json.gz; it is unpacked here).
# PLANS_IN: plans to serve (<folder>/plan-<m>/plan.json; their kernels are compiled at load).
#   PLANS_IN=bench/results/2026-12-03-region-carveout/plans TOKENIZER=.deps/gputok tools/gpu_serve_bench.sh
#   -> $OUT/serve-bench.tgz (per model: e2e-<m>.{json,md}, serve-<m>.{json,md}, prefix-<m>.json; summary.md, bench.log)
set -uo pipefail
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AGENTCOMPILE_KERNEL_CACHE=${AGENTCOMPILE_KERNEL_CACHE:-/tmp/ac-kernel-cache}
res=/tmp/ac-serve-bench; rm -rf "$res"; mkdir -p "$res"
dest=${OUT:-/tmp/out}
work=${AC_BENCH_WORK:-/tmp/ac-bench}; mkdir -p "$work/models"
bin=${BIN:-build-device/agentcompile}
[ -x "$bin" ] || { echo "error: $bin: not built" >&2; exit 2; }
root=${AC_BUILD_ROOT:-/tmp/lead}; [ -e "$root" ] || ln -s "$(pwd)" "$root"
export AGENTCOMPILE_COMMIT=${AGENTCOMPILE_COMMIT:-$(cat "$(dirname "$bin")"/COMMIT 2>/dev/null || echo unknown)}
tok=${TOKENIZER:?TOKENIZER: a folder with the Qwen3 tokenizer.json (or tokenizer.json.gz)}
[ -f "$tok/tokenizer.json" ] || gunzip -k "$tok/tokenizer.json.gz" || exit 2
plans=${PLANS_IN:?PLANS_IN: a folder of plan-<preset>/plan.json}
levels=${LEVELS:-1,8,32,64}
backend=${BACKEND:-cuda}  # BACKEND=cpu with CPU plans: a dry run of this script on a machine without a GPU

serve_pid=""
trap '[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null' EXIT
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU: backend $backend"
  echo "engine commit $AGENTCOMPILE_COMMIT; plans from $plans; levels $levels"
  for m in ${PRESETS:-qwen3-1.7b qwen3-4b}; do
    model=$work/models/$m-tok
    [ -f "$model/model.safetensors" ] || $bin synth-model --preset "$m" --out "$model" --seed 11 --tokenizer "$tok" --quiet || continue
    mkdir -p "$work/plan-$m"
    python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['kernels']=[]; json.dump(p, open(sys.argv[2],'w'))" \
      "$plans/plan-$m/plan.json" "$work/plan-$m/plan.json" || continue

    echo "== $m: bench e2e --plan (W2, W5)"
    e2e() {
      $bin bench e2e --backend "$backend" --model "$model" --plan "$work/plan-$m" --workloads W2,W5 --repeats 3 \
        --json-out "$res/e2e-$m.json" --md-out "$res/e2e-$m.md" --quiet > /dev/null 2> "$res/e2e-$m.err"
    }
    e2e; rc=$?
    if [ $rc -ne 0 ] && grep -qE "compiled for another (model|environment)" "$res/e2e-$m.err"; then
      # The plan was made for weights of another seed: compile this model, its choices as the seed.
      echo "$(tail -1 "$res/e2e-$m.err"): compile --budget ${BUDGET:-100} --seed-plan"
      mkdir -p "$work/seed-$m" && mv "$work/plan-$m/plan.json" "$work/seed-$m/"
      seed=(--seed-plan "$work/seed-$m"); [ "$backend" = cuda ] && [ -z "${NO_SEED:-}" ] || seed=()
      $bin compile "$model" --out "$work/plan-$m" --backend "$backend" --budget "${BUDGET:-100}" --db "$work/tune.db" "${seed[@]}" ${COMPILE_FLAGS:-} \
        > "$res/compile-$m.log" 2>&1
      echo "compile exit $?"; cp "$work/plan-$m/plan.json" "$res/plan-$m.json" 2>/dev/null
      e2e; rc=$?
    fi
    echo "bench e2e exit $rc $(tail -1 "$res/e2e-$m.err")"

    echo "== $m: serve --plan --max-batch 64"
    : >"$res/serve-$m.log"  # exists before the child opens it
    $bin serve "$model" --plan "$work/plan-$m" --backend "$backend" --port 0 --max-batch 64 --max-queue 256 --ctx 1280 \
      --served-model-name m 2> "$res/serve-$m.log" &
    serve_pid=$!
    port=""
    for _ in $(seq 900); do
      port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$res/serve-$m.log"); [ -n "$port" ] && break; sleep 0.2
    done
    for _ in $(seq 900); do
      kill -0 "$serve_pid" 2>/dev/null || break
      curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" | grep -q 200 && break; sleep 0.2
    done
    kill -0 "$serve_pid" 2>/dev/null || { echo "serve FAILED: $(tail -1 "$res/serve-$m.log")"; serve_pid=""; continue; }
    timeout 400 python3 bench/serve_bench.py --url "http://127.0.0.1:$port" --model m --concurrency "$levels" --requests 2 \
      --vocab 150000 --json-out "$res/serve-$m.json" --md-out "$res/serve-$m.md"
    echo "serve_bench exit $?"

    echo "== $m: a shared 1,000-token prefix"
    python3 - "$port" "$res/prefix-$m.json" <<'PY'
import json, random, sys, time, urllib.request
port, out = sys.argv[1], sys.argv[2]
rng = random.Random(5)
system = [rng.randrange(3, 150000) for _ in range(1000)]
def ttft(tail):
    body = json.dumps({"model": "m", "prompt": system + tail, "max_tokens": 8, "temperature": 0, "ignore_eos": True,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body, {"Content-Type": "application/json"})
    t0 = time.monotonic(); first = None; usage = None
    with urllib.request.urlopen(req) as resp:
        for line in resp:
            if not line.startswith(b"data: {"): continue
            j = json.loads(line[6:])
            if first is None and j.get("choices"): first = time.monotonic() - t0
            if j.get("usage"): usage = j["usage"]
    return first, usage
rows = []
for i in range(3):  # three pairs: a new prefix each time (the first request of a pair misses)
    system = [rng.randrange(3, 150000) for _ in range(1000)]
    a, ua = ttft([11, 12, 13])
    b, ub = ttft([21, 22, 23])
    rows.append({"first_ms": 1000 * a, "second_ms": 1000 * b, "ratio": b / a,
                 "first_cached": ua["prompt_tokens_details"]["cached_tokens"], "second_cached": ub["prompt_tokens_details"]["cached_tokens"]})
    print(f"pair {i}: first {1000*a:.1f} ms (cached {rows[-1]['first_cached']}), second {1000*b:.1f} ms "
          f"(cached {rows[-1]['second_cached']}), second/first {b/a:.3f}")
json.dump(rows, open(out, "w"), indent=1)
PY
    curl -s "http://127.0.0.1:$port/metrics" | grep -E '^agentcompile_(prefix|steps|prefill)' | head -6
    kill -TERM "$serve_pid"; wait "$serve_pid"; echo "serve exit $?"; serve_pid=""
  done

  echo "== summary"
  python3 - "$res" ${PRESETS:-qwen3-1.7b qwen3-4b} <<'PY' | tee "$res/summary.md"
import json, os, sys
res, models = sys.argv[1], sys.argv[2:]
print("| model | W5 tokens/s (decode) | W5 tokens/s (whole) | serve 8 tokens/s | ratio decode | ratio whole | "
      "serve 32 tokens/s | bound at 32 | % of bound | prefix TTFT second/first |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for m in models:
    try:
        e2e = json.load(open(f"{res}/e2e-{m}.json")); sv = json.load(open(f"{res}/serve-{m}.json"))
    except OSError as e:
        print(f"| {m} | missing: {e} |"); continue
    def find(name):
        return next((r for r in e2e.get("results", []) if r.get("workload") == name), None)
    w5, w2 = find("W5"), find("W2")
    lv = {r["concurrency"]: r for r in sv["levels"]}
    s8, s32 = lv.get(8, {}).get("tokens_per_s"), lv.get(32, {}).get("tokens_per_s")
    dec = w5["tokens_per_s"] if w5 else None
    whole = 8 * 128 / ((w5["prefill_ms"] + 128 * w5["decode_ms_per_token"]) / 1000) if w5 else None
    bound = 32 * 1000 / w2["floor_ms"] if w2 and w2.get("floor_ms") else None
    prefix = json.load(open(f"{res}/prefix-{m}.json")) if os.path.exists(f"{res}/prefix-{m}.json") else []
    f = lambda v, d=0: "-" if v is None else f"{v:.{d}f}"
    print(f"| {m} | {f(dec)} | {f(whole)} | {f(s8)} | {f(s8 / dec if s8 and dec else None, 3)} | "
          f"{f(s8 / whole if s8 and whole else None, 3)} | {f(s32)} | {f(bound)} | {f(100 * s32 / bound if s32 and bound else None, 1)} | "
          f"{', '.join('%.3f' % r['ratio'] for r in prefix) or '-'} |")
PY
  date -u
} 2>&1 | tee "$res/bench.log"
mkdir -p "$dest"
tar czf "$dest/serve-bench.tgz" -C "$res" .
cp "$res"/bench.log "$res"/summary.md "$dest/" 2>/dev/null
