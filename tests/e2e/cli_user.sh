#!/usr/bin/env bash
# The CLI as a new user meets it: the command list, "did you mean", --version; logits as a table
# and as JSON (valid even with NaN logits, memory bounded on long inputs); every numeric flag
# range-checked; bench report on a mistyped field; install-deps picking its packages.
set -euo pipefail
bin=${AC_BIN:?}
src=${AC_SRC:?}
fx=$src/tests/fixtures/hf/qwen3_mha_untied_5x
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_rc RC -- command...: runs it with stdout/stderr in $tmp/out, $tmp/err; checks the exit code.
expect_rc() {
  local want=$1; shift; shift
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq "$want" ] || fail "$* exited $rc, expected $want ($(head -3 "$tmp/err"))"
}
# expect_error EXPECTED_SUBSTRING -- command...: exit 2, exactly one stderr line "error: ...", no stdout.
expect_error() {
  local want=$1; shift
  expect_rc 2 "$@"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: stderr is not one line: $(cat "$tmp/err")"
  grep -q -- "^error: .*$want" "$tmp/err" || fail "$*: stderr lacks '$want': $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$*: wrote to stdout on error"
}

# ---- the command list, help and typos
commands="inspect synth-model logits generate chat kernels tokenize detokenize chat-template advise compile bench"
expect_rc 2 -- "$bin"
for c in $commands; do grep -q "^  $c " "$tmp/err" || fail "no-argument run does not list $c: $(cat "$tmp/err")"; done
expect_rc 0 -- "$bin" help
for c in $commands; do grep -q "^  $c " "$tmp/out" || fail "help does not list $c"; done
expect_rc 0 -- "$bin" help generate
grep -q -- "--max-tokens" "$tmp/out" || fail "help generate does not show generate's options"
expect_rc 0 -- "$bin" help bench e2e
grep -q -- "--workloads" "$tmp/out" || fail "help bench e2e does not show its options"
expect_rc 2 -- "$bin" genrate "$fx"
head -1 "$tmp/err" | grep -q '^error: .*unknown command "genrate"; did you mean "generate"?' || fail "typo: $(head -1 "$tmp/err")"
grep -q "^  compile " "$tmp/err" || fail "typo: no command list"
expect_rc 2 -- "$bin" comiple
head -1 "$tmp/err" | grep -q 'did you mean "compile"' || fail "transposition: $(head -1 "$tmp/err")"
expect_rc 2 -- "$bin" frobnicate
head -1 "$tmp/err" | grep -q 'unknown command "frobnicate"$' || fail "far word got a suggestion: $(head -1 "$tmp/err")"
expect_rc 2 -- "$bin" bench e2ee --model x
head -1 "$tmp/err" | grep -q 'agentcompile bench: unknown command "e2ee"; did you mean "e2e"?' || fail "bench typo: $(head -1 "$tmp/err")"
expect_rc 2 -- "$bin" bench
grep -qx 'error: agentcompile bench: needs a command: e2e, module, kernels or report (see `agentcompile help bench`)' "$tmp/err" \
  || fail "bench alone: $(cat "$tmp/err")"
expect_rc 2 -- "$bin" help genrate
head -1 "$tmp/err" | grep -q 'did you mean "generate"' || fail "help typo: $(head -1 "$tmp/err")"
expect_rc 0 -- "$bin" --version
grep -Eq '^agentcompile [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}, (CUDA backend built in|CPU only \(no CUDA backend in this build\))\)$' "$tmp/out" \
  || fail "--version: $(cat "$tmp/out")"
if [ -d "$src/.git" ] || [ -f "$src/.git" ]; then
  head=$(git -C "$src" rev-parse --short=12 HEAD)
  grep -q "commit $head" "$tmp/out" || fail "--version names another commit than HEAD $head: $(cat "$tmp/out")"
fi

# ---- logits: a readable table by default, every logit with --json
"$bin" logits "$fx" --tokens 5,17,99 --top 3 >"$tmp/table.txt"
[ "$(grep -c '^position ' "$tmp/table.txt")" -eq 3 ] || fail "table: not one block per position: $(cat "$tmp/table.txt")"
[ "$(grep -Ec '^ +[0-9]+ +[0-9]+ +logit ' "$tmp/table.txt")" -eq 9 ] || fail "table: not 3 rows per position"
"$bin" logits "$fx" --tokens 5,17,99 --json >"$tmp/all.json"
python3 - "$tmp/table.txt" "$tmp/all.json" <<'PY'
import json, math, re, sys
table = open(sys.argv[1]).read().split("position ")[1:]
rows = json.load(open(sys.argv[2]))["logits"]
for block, row in zip(table, rows):
    shown = [int(m.group(1)) for m in re.finditer(r"^ +\d+ +(\d+) +logit", block, re.M)]
    best = sorted(range(len(row)), key=lambda j: (-row[j], j))[:3]
    assert shown == best, (shown, best)
    z = sum(math.exp(x - max(row)) for x in row)
    p = [float(m.group(1)) for m in re.finditer(r" p ([0-9.]+)", block)]
    assert abs(p[0] - 1 / z) < 1e-3, (p[0], 1 / z)
PY
expect_error "--top" -- "$bin" logits "$fx" --tokens 5 --json --top 3
expect_error "--top" -- "$bin" logits "$fx" --tokens 5 --top 0

# NaN logits: still valid JSON (null), and a warning.
cp -r "$fx" "$tmp/nan"
python3 - "$tmp/nan/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
t = h["lm_head.weight"]
nan = {"F32": struct.pack("<f", float("nan")), "BF16": b"\xc0\x7f", "F16": b"\x00\x7e"}[t["dtype"]]
start = 8 + n + t["data_offsets"][0]
cols = t["shape"][1]
row = 7
b[start + len(nan) * cols * row:start + len(nan) * cols * (row + 1)] = nan * cols
open(p, "wb").write(b)
PY
"$bin" logits "$tmp/nan" --tokens 5,17 --json >"$tmp/nan.json" 2>"$tmp/nan.err"
grep -q "NaN or infinite" "$tmp/nan.err" || fail "no warning for NaN logits"
python3 - "$tmp/nan.json" <<'PY'
import json, sys
def bad(c): raise SystemExit("invalid JSON constant " + c)
rows = json.load(open(sys.argv[1]), parse_constant=bad)["logits"]
assert all(r[7] is None for r in rows), [r[7] for r in rows]
assert all(isinstance(x, float) for r in rows for j, x in enumerate(r) if j != 7)
PY
"$bin" logits "$tmp/nan" --tokens 5 >"$tmp/nan.txt"
grep -q "NaN or infinite" "$tmp/nan.txt" || fail "table does not say some logits are NaN"

# Memory stays at a chunk of rows however many positions (here 300 x a 151,936-token vocabulary:
# about 180 MB of floats and 550 MB of text if held whole).
"$bin" synth-model --preset tiny-qwen3 --out "$tmp/tq" --quiet >/dev/null
python3 - "$bin" "$tmp/tq" <<'PY'
import resource, subprocess, sys
ids = ",".join(str(100 + i) for i in range(300))
p = subprocess.run([sys.argv[1], "logits", sys.argv[2], "--tokens", ids, "--json"], stdout=subprocess.PIPE)
assert p.returncode == 0, p.returncode
assert p.stdout.count(b"\n[") == 300
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
assert rss_mb < 250, f"logits on 300 positions peaked at {rss_mb:.0f} MB"
print(f"cli_user: logits on 300 positions: peak {rss_mb:.0f} MB")
PY

# ---- numeric flags: every one found in --help refuses -1, a huge value and NaN with one line
n=0
for cmd in "inspect" "synth-model" "logits" "generate" "chat" "kernels" "tokenize" "detokenize" "advise" "compile" \
           "bench e2e" "bench module" "bench kernels" "bench report"; do
  # shellcheck disable=SC2086
  "$bin" $cmd --help >"$tmp/help.txt"
  flags=$(grep -Eo -- '--[a-z-]+ (INT|UINT|FLOAT)[^ ]*' "$tmp/help.txt" | awk '{print $1}' | sort -u || true)
  for f in $flags; do
    for v in -1 1e300 nan 99999999999999999999999; do
      # shellcheck disable=SC2086
      expect_error "$f" -- "$bin" $cmd $f=$v
    done
    n=$((n + 1))
  done
done
[ "$n" -ge 20 ] || fail "found only $n numeric flags in the --help texts"
echo "cli_user: $n numeric flags range-checked"
expect_error "--seed" -- "$bin" generate "$fx" --prompt-tokens 1 --seed -1
expect_error "--max-per-family" -- "$bin" kernels --compile-all --max-per-family=-1

# ---- bench report: a mistyped field is a one-line error naming it
python3 - "$tmp" <<'PY'
import json, sys
base = {"schema": "agentcompile.bench/1", "tier": "e2e", "created": "x", "environment": {"host": "h"},
        "models": [{"name": "m", "bytes": 10, "parameters": 5}],
        "results": [{"model": "m", "workload": "W2", "backend": "cpu", "counted": True, "decode_ms_per_token": 1.0,
                     "validation": {"status": "pass", "equal": 3, "compared": 3},
                     "peers": {"hf-eager": {"speedup": 2.0}}}]}
json.dump(base, open(sys.argv[1] + "/ok.json", "w"))
def bad(name, f):
    r = json.loads(json.dumps(base)); f(r); json.dump(r, open(sys.argv[1] + "/" + name, "w"))
bad("b1.json", lambda r: r["results"][0].__setitem__("counted", "yes"))
bad("b2.json", lambda r: r["results"][0]["peers"]["hf-eager"].__setitem__("speedup", "2x"))
bad("b3.json", lambda r: r.__setitem__("environment", "linux"))
bad("b4.json", lambda r: r["results"].__setitem__(0, 7))
bad("b5.json", lambda r: r["results"][0].__setitem__("peers", {"hf-eager": 3}))
bad("b6.json", lambda r: r["results"][0].__setitem__("decode_ms_per_token", "fast"))
PY
"$bin" bench report "$tmp/ok.json" >/dev/null
expect_error "results\[0\].counted: expected true or false" -- "$bin" bench report "$tmp/b1.json"
expect_error "results\[0\].peers.hf-eager.speedup: expected a number" -- "$bin" bench report "$tmp/b2.json"
expect_error "environment: expected an object" -- "$bin" bench report "$tmp/b3.json"
expect_error "results\[0\]: expected an object" -- "$bin" bench report "$tmp/b4.json"
expect_error "peers.hf-eager: expected an object" -- "$bin" bench report "$tmp/b5.json"
expect_error "decode_ms_per_token: expected a number" -- "$bin" bench report "$tmp/b6.json"
expect_error "counted: expected" -- "$bin" bench report "$tmp/ok.json" --compare "$tmp/b1.json"

# ---- install-deps: make, and the clang runtime package of the installed clang's version
mkdir -p "$tmp/fakebin"
printf '#!/bin/sh\nexit 1\n' >"$tmp/fakebin/dpkg-query"  # nothing is installed
for v in "Ubuntu clang version 18.1.3 (1ubuntu1):18" "Debian clang version 14.0.6:14"; do
  printf '#!/bin/sh\necho "%s"\necho "Target: x86_64-pc-linux-gnu"\n' "${v%:*}" >"$tmp/fakebin/clang"
  chmod +x "$tmp/fakebin/clang" "$tmp/fakebin/dpkg-query"
  PATH="$tmp/fakebin:$PATH" AC_DEPS_DRY_RUN=1 "$src/scripts/install-deps.sh" >"$tmp/deps.txt"
  grep -q "would install make " "$tmp/deps.txt" || fail "install-deps does not install make: $(cat "$tmp/deps.txt")"
  grep -qx "install-deps: would install libclang-rt-${v##*:}-dev" "$tmp/deps.txt" \
    || fail "install-deps with ${v%:*}: $(cat "$tmp/deps.txt")"
done
printf '#!/bin/sh\necho "no version here"\n' >"$tmp/fakebin/clang"
set +e; PATH="$tmp/fakebin:$PATH" AC_DEPS_DRY_RUN=1 "$src/scripts/install-deps.sh" >/dev/null 2>"$tmp/deps.err"; rc=$?; set -e
[ $rc -ne 0 ] && grep -q "cannot read clang's version" "$tmp/deps.err" || fail "unreadable clang version: rc $rc"

echo "cli_user: ok"
