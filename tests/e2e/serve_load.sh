#!/usr/bin/env bash
# A bounded load run of `agentcompile serve` on a tiny Qwen3 model (tests/e2e/serve_load.cjs):
# 32 concurrent streams, then 64 clients with 3 requests each against an 8-slot, 24-deep queue;
# every request completes or is refused cleanly and resident memory returns to its idle baseline.
source "$(dirname "$0")/serve_lib.bash"
synth_tiny 7
start_server "$tmp/serve.log" --backend cpu --port 0 --max-batch 8 --max-queue 24 --ctx 256 --served-model-name tiny

NODE_PATH="$npm" node "$src/tests/e2e/serve_load.cjs" "http://127.0.0.1:$port" "$pid" \
  || fail "the load checks failed; the server log's end: $(tail -20 "$tmp/serve.log")"
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
pid=""
[ $rc -eq 0 ] || fail "the server exited $rc after SIGTERM: $(tail -5 "$tmp/serve.log")"
echo "serve_load: ok"
