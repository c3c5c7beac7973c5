#!/usr/bin/env bash
# `agentcompile serve` on a tiny Qwen3 model (real tokenizer and chat template, random weights),
# driven by the official OpenAI client (tests/e2e/serve_client.cjs): chat and completions, whole
# and streamed, usage, stop strings, seeded sampling, concurrent requests, every error status,
# a client leaving mid-stream, /metrics, and SIGTERM draining the stream in flight before exit 0.
# Then the command's own errors: one line, exit 2.
source "$(dirname "$0")/serve_lib.bash"
synth_tiny 5
start_server "$tmp/serve.log" --backend cpu --host 127.0.0.1 --port 0 --max-batch 2 --max-queue 2 --ctx 512 \
  --api-key sekret --served-model-name tiny

NODE_PATH="$npm" node "$src/tests/e2e/serve_client.cjs" "http://127.0.0.1:$port" "$pid" "$bin" "$tmp/q" "$tmp" \
  || fail "the client checks failed; server log: $(cat "$tmp/serve.log")"
set +e
wait "$pid"
rc=$?
set -e
pid=""
[ $rc -eq 0 ] || fail "the server exited $rc after SIGTERM: $(cat "$tmp/serve.log")"
grep -q "SIGTERM: no new connections" "$tmp/serve.log" || fail "no drain line: $(cat "$tmp/serve.log")"
grep -q "serve: stopped" "$tmp/serve.log" || fail "no stop line: $(cat "$tmp/serve.log")"
# One access-log line per response; the dropped streams are marked.
grep -q "serve: POST /v1/chat/completions 200 " "$tmp/serve.log" || fail "no access log: $(cat "$tmp/serve.log")"
grep -q "serve: POST /v1/chat/completions 503 " "$tmp/serve.log" || fail "no 503 in the access log"
[ "$(grep -c "(the client left)" "$tmp/serve.log")" -ge 4 ] || fail "the dropped streams are not in the access log"

# The key from the environment (a flag's value shows in ps): refused without it, served with it.
AGENTCOMPILE_API_KEY=envkey start_server "$tmp/env.log" --backend cpu --port 0
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/models")" = 401 ] || fail "no key: not 401"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer envkey' "http://127.0.0.1:$port/v1/models")" = 200 ] ||
  fail "the environment's key: not 200"
kill -TERM "$pid"
wait "$pid" || fail "the server exited $? after SIGTERM"
pid=""

# The command's errors: one line, exit 2, nothing left listening.
expect_error() {  # expect_error NEEDLE ARGS...
  local needle=$1
  shift
  set +e
  timeout 20 "$bin" "$@" >"$tmp/o" 2>"$tmp/e"
  local rc=$?
  set -e
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -qF -- "$needle" "$tmp/e" || fail "$*: rc=$rc $(cat "$tmp/e")"
}
expect_error "--port" serve "$tmp/q" --port 70000
expect_error "--max-batch" serve "$tmp/q" --max-batch 0
expect_error "is not a model folder" serve "$tmp/none"
expect_error "--backend" serve "$tmp/q" --backend tpu
expect_error "--rebuild-kernels" serve "$tmp/q" --rebuild-kernels
# A port already taken.
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >"$tmp/port" &
holder=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
expect_error "cannot listen there" serve "$tmp/q" --port "$(cat "$tmp/port")"
kill "$holder"
mkdir "$tmp/notok"
cp "$tmp/q/config.json" "$tmp/q/model.safetensors" "$tmp/notok/"
expect_error "has no tokenizer.json" serve "$tmp/notok" --port 0 --backend cpu
# A model that fails to load once the server listens: the error is the last line, exit 2.
cp -r "$tmp/q" "$tmp/broken"
echo '{"model_type": "qwen3"' >"$tmp/broken/config.json"
set +e
timeout 20 "$bin" serve "$tmp/broken" --port 0 --backend cpu >"$tmp/o" 2>"$tmp/e"
rc=$?
set -e
[ $rc -eq 2 ] && tail -1 "$tmp/e" | grep -q "^error: .*config.json" || fail "broken model: rc=$rc $(cat "$tmp/e")"
echo "serve: ok"
