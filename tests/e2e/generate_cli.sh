#!/usr/bin/env bash
# generate and logits through the binary, as a user runs them: output formats, determinism, and
# one-line errors with exit code 2 for bad input.
set -euo pipefail
bin=${AC_BIN:?}
fx=${AC_SRC:?}/tests/fixtures/hf/qwen3_mha_untied_5x
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/expect_error.bash"

# logits: one row per position, vocab columns, finite numbers.
"$bin" logits "$fx" --tokens 5,17,99 --json >"$tmp/logits.json"
python3 - "$tmp/logits.json" <<'PY'
import json, math, sys
rows = json.load(open(sys.argv[1]))["logits"]
assert len(rows) == 3, len(rows)
assert all(len(r) == 320 for r in rows)
assert all(math.isfinite(x) for r in rows for x in r)
assert rows[0] != rows[1]
PY

# generate --json: greedy is deterministic and reports real timings.
"$bin" generate "$fx" --prompt-tokens 3,1,4,1,5 --max-tokens 12 --ignore-eos --backend cpu --json >"$tmp/g1.json"
"$bin" generate "$fx" --prompt-tokens 3,1,4,1,5 --max-tokens 12 --ignore-eos --backend cpu --json >"$tmp/g2.json"
python3 - "$tmp/g1.json" "$tmp/g2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["prompt_tokens"] == [3, 1, 4, 1, 5]
assert len(a["tokens"]) == 12 and a["finish_reason"] == "length", a
assert a["tokens"] == b["tokens"]
t = a["timings"]
assert t["prefill_ms"] > 0 and t["decode_ms_per_token"] > 0 and t["decode_steps"] == 11, t
PY
# Seeded sampling reproduces; another seed (almost surely) differs.
s1=$("$bin" generate "$fx" --prompt-tokens 3,1,4 --max-tokens 20 --ignore-eos --temperature 1.5 --seed 5 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['tokens'])")
s2=$("$bin" generate "$fx" --prompt-tokens 3,1,4 --max-tokens 20 --ignore-eos --temperature 1.5 --seed 5 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['tokens'])")
s3=$("$bin" generate "$fx" --prompt-tokens 3,1,4 --max-tokens 20 --ignore-eos --temperature 1.5 --seed 6 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['tokens'])")
[ "$s1" = "$s2" ] || fail "same seed, different tokens"
[ "$s1" != "$s3" ] || fail "different seeds, same 20 sampled tokens"

# Bad input: one line, exit 2.
expect_error "exceed the model's context of 512" -- "$bin" generate "$fx" --prompt-tokens 1,2,3 --max-tokens 510 --backend cpu
expect_error "outside the vocabulary" -- "$bin" generate "$fx" --prompt-tokens 1,320 --backend cpu
expect_error "not a token id" -- "$bin" logits "$fx" --tokens 1,x,3 --json
expect_error "not a model folder" -- "$bin" generate "$tmp/nope" --prompt-tokens 1
expect_error "--top-p" -- "$bin" generate "$fx" --prompt-tokens 1 --top-p 0
expect_error "--backend" -- "$bin" generate "$fx" --prompt-tokens 1 --backend tpu
expect_error "exactly one of --prompt" -- "$bin" generate "$fx"
expect_error "" -- "$bin" generate "$fx" --prompt-tokens 1 --no-such-flag
# --prompt-file: one source only; bounded by the context (this model: 512 positions, 1 KiB each)
# before anything is read; unreadable paths name themselves.
printf 'hi' >"$tmp/p.txt"
expect_error "exactly one of --prompt, --prompt-file, --prompt-tokens and --messages" -- "$bin" generate "$fx" --prompt x --prompt-file "$tmp/p.txt"
expect_error "exactly one of" -- "$bin" generate "$fx" --prompt-tokens 1 --prompt-file "$tmp/p.txt"
head -c 524289 /dev/zero | tr '\0' 'a' >"$tmp/big.txt"
expect_error "big.txt: more than 524288 bytes (1024 bytes for each of the model's 512 positions)" -- \
  "$bin" generate "$fx" --prompt-file "$tmp/big.txt"
set +e; "$bin" generate "$fx" --prompt-file - <"$tmp/big.txt" >"$tmp/out" 2>"$tmp/err"; rc=$?; set -e
[ $rc -eq 2 ] && grep -q "^error: stdin: more than 524288 bytes" "$tmp/err" || fail "big stdin: rc=$rc $(cat "$tmp/err")"
expect_error "nope.txt: cannot open" -- "$bin" generate "$fx" --prompt-file "$tmp/nope.txt"
expect_error "is a folder" -- "$bin" generate "$fx" --prompt-file "$tmp"
expect_error "has no tokenizer.json" -- "$bin" generate "$fx" --prompt-file "$tmp/p.txt"
echo "generate_cli: ok"
