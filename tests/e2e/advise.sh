#!/usr/bin/env bash
# inspect --regions and advise through the binary: the heuristic and none advisors, the openai
# advisor against a scripted server on 127.0.0.1 (good, hostile, garbage, failing, gone), record
# and replay, and one-line errors with exit code 2 for bad input.
set -euo pipefail
bin=${AC_BIN:?}
src=${AC_SRC:?}
fx=$src/tests/fixtures/hf/qwen3_mha_untied_5x
tmp=$(mktemp -d)
server_pid=
stop_server() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=; fi; }
trap 'stop_server; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/expect_error.bash"

# start_server MODE [--tls CERT KEY]: the scripted server in the background; sets $port.
start_server() {
  stop_server
  rm -f "$tmp/port" "$tmp/requests.jsonl"
  python3 "$src/tests/advisor/scripted_llm_server.py" --mode "$@" --port-file "$tmp/port" --log "$tmp/requests.jsonl" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  [ -s "$tmp/port" ] || fail "scripted server did not start"
  port=$(cat "$tmp/port")
}

# ---- inspect --regions: 2 layers -> embed, 5 regions per layer, head; 7 classes.
"$bin" inspect "$fx" --regions --json >"$tmp/inspect.json"
python3 - "$tmp/inspect.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["regions"]
kinds = [x["kind"] for x in r["regions"]]
assert kinds == ["embed"] + ["attn_in", "attention", "attn_out", "mlp_in", "mlp_out"] * 2 + ["head"], kinds
assert r["regions"][1]["pattern"] == "rms_norm linear linear linear rms_norm rms_norm rope rope kv_write"
assert len(r["region_classes"]) == 7
assert r["regions"][1]["class"] == r["regions"][6]["class"]
assert r["regions"][1]["signature_decode"] == r["regions"][6]["signature_decode"] != r["regions"][1]["signature_prefill"]
for c in r["region_classes"]:
    for phase in ("decode", "prefill"):
        s = c[phase]
        assert s["phase"] == phase and s["bytes"]["total"] > 0 and "interface" in s, s
PY
"$bin" inspect "$fx" --regions | grep -q "^region classes on target" || fail "inspect --regions text lacks the class table"

# ---- heuristic (default): every class in both phases, nothing rejected, only reordered.
"$bin" advise "$fx" --backend cpu --nominal --json >"$tmp/heur.json"
python3 - "$tmp/heur.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["advisor"] == "heuristic" and d["backend"] == "cpu" and d["target"]["kind"] == "cpu"
assert len(d["regions"]) == 14, len(d["regions"])
sizes = 0
for r in d["regions"]:
    a, sp = r["advice"], r["space"]
    assert sp["families"][0]["route"] == "fallback"
    assert a["parsed"] and a["rejections"] == [] and not r["fell_back"], r
    assert r["advised_size"] == sp["size"], (r["advised_size"], sp["size"])
    assert r["first_candidates"][0] == sp["families"][0]["id"]
    sizes += sp["size"]
assert d["totals"]["space_size"] == sizes
assert d["totals"]["decode_roofline_us"] > 0
kinds = {r["summary"]["region"] for r in d["regions"]}
assert kinds == {"embed", "attn_in", "attention", "attn_out", "mlp_in", "mlp_out", "head"}, kinds
PY
"$bin" advise "$fx" --backend cpu >"$tmp/heur.txt"
grep -q "^attn_in " "$tmp/heur.txt" || fail "advise text lacks the attn_in rows"
grep -q "measured" "$tmp/heur.txt" || fail "advise without --nominal does not measure the CPU"
"$bin" advise "$fx" --backend cpu --nominal --advisor none --phase decode --json >"$tmp/none.json"
python3 - "$tmp/none.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["regions"]) == 7 and all(r["summary"]["phase"] == "decode" for r in d["regions"])
assert all(r["advice"]["source"] == "none" and r["advice"]["param_hints"] == {} for r in d["regions"])
PY
"$bin" advise "$fx" --backend cpu --nominal --phase decode --print-prompt >"$tmp/prompt.txt"
grep -q -- "--- system ---" "$tmp/prompt.txt" || fail "--print-prompt shows no system message"
grep -q "reply_schema" "$tmp/prompt.txt" || fail "--print-prompt shows no reply schema"
# A CUDA plan can be advised without a GPU, for a named target.
"$bin" advise "$fx" --backend cuda --target a100 --nominal --json >"$tmp/cuda.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['target']['arch']=='sm_80' and d['regions'][0]['space']['families'][0]['id']=='cuda:fallback'" "$tmp/cuda.json"

# ---- openai against the scripted server: the advice is the server's, recorded, replayable.
start_server good
AGENTCOMPILE_LLM_API_KEY=k3y "$bin" advise "$fx" --backend cpu --nominal --advisor openai \
  --llm-url "http://127.0.0.1:$port/v1" --llm-model scripted --record "$tmp/rec.json" --json >"$tmp/llm.json"
python3 - "$tmp/llm.json" "$tmp/rec.json" "$tmp/requests.jsonl" <<'PY'
import json, sys
d, rec = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
reqs = [json.loads(l) for l in open(sys.argv[3])]
assert len(reqs) == 14 and all(r["path"] == "/v1/chat/completions" for r in reqs)
assert all(r["authorization"] == "Bearer k3y" for r in reqs)
body = json.loads(reqs[0]["body"])
assert body["model"] == "scripted" and [m["role"] for m in body["messages"]] == ["system", "user"]
json.loads(body["messages"][1]["content"])  # the prompt is JSON
assert rec["format"] == "agentcompile-advice-record" and len(rec["exchanges"]) == 14
assert all(e["status"] == "ok" and e["advisor"] == "openai" for e in rec["exchanges"])
for r in d["regions"]:
    a = r["advice"]
    fams = [f for f in r["space"]["families"] if f["route"] != "fallback"]
    assert a["source"] == "openai" and not r["fell_back"], r
    assert a["label"] == "scripted %s %s" % (r["summary"]["region"], r["summary"]["phase"]), a["label"]
    assert a["family_order"] == [f["id"] for f in reversed(fams)]
    if fams and fams[0]["params"]:
        p = fams[0]["params"][0]
        assert a["param_hints"][fams[0]["id"]][p["name"]] == [p["values"][-1], p["values"][0]], a
PY
stop_server
"$bin" advise "$fx" --backend cpu --nominal --advisor "replay:$tmp/rec.json" --json >"$tmp/replay.json"
python3 - "$tmp/llm.json" "$tmp/replay.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["advisor"] == "replay"
for x, y in zip(a["regions"], b["regions"], strict=True):
    ax, ay = dict(x["advice"]), dict(y["advice"])
    assert ay.pop("source") == "replay:openai"
    ax.pop("source")
    assert ax == ay, (ax, ay)
    assert x["first_candidates"] == y["first_candidates"]
assert b["notes"] == [], b["notes"]
PY

# ---- HTTPS: a certificate from the trust store (SSL_CERT_FILE) is accepted, an unknown one refused.
if command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
    -subj "/CN=agentcompile test" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
  start_server good --tls "$tmp/cert.pem" "$tmp/key.pem"
  SSL_CERT_FILE="$tmp/cert.pem" "$bin" advise "$fx" --backend cpu --nominal --phase decode --advisor openai \
    --llm-url "https://127.0.0.1:$port" --llm-model m --json >"$tmp/tls.json"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['notes']==[] and all(r['exchange']['status']=='ok' for r in d['regions']), d['notes']" "$tmp/tls.json"
  "$bin" advise "$fx" --backend cpu --nominal --phase decode --advisor openai \
    --llm-url "https://127.0.0.1:$port" --llm-model m >"$tmp/untrusted.txt"
  grep -q "certificate not trusted" "$tmp/untrusted.txt" || fail "an untrusted certificate was accepted"
else
  echo "advise: no openssl command, HTTPS part skipped"
fi

# ---- hostile, garbage, failing and absent servers never fail advise.
start_server hostile
"$bin" advise "$fx" --backend cpu --nominal --phase decode --advisor openai --llm-url "http://127.0.0.1:$port" \
  --llm-model m --json >"$tmp/hostile.json"
python3 - "$tmp/hostile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["regions"]:
    a = r["advice"]
    reasons = {j["path"]: j["reason"] for j in a["rejections"]}
    assert "cannot add code" in reasons["code"] and "cannot skip" in reasons["skip_validation"], reasons
    assert "unknown family" in reasons["family_priorities[0]"]
    assert a["label"] == "" and a["param_hints"] == {} and r["advised_size"] == r["space"]["size"]
PY
for mode in garbage error; do
  start_server $mode
  "$bin" advise "$fx" --backend cpu --nominal --phase decode --advisor openai --llm-url "http://127.0.0.1:$port" \
    --llm-model m --json >"$tmp/$mode.json"
  python3 - "$tmp/$mode.json" "$tmp/heur.json" <<'PY'
import json, sys
d, h = (json.load(open(p)) for p in sys.argv[1:3])
heur = {(r["summary"]["signature"]): r["advice"] for r in h["regions"]}
assert any("heuristic order used" in n for n in d["notes"]), d["notes"]
for r in d["regions"]:
    assert r["fell_back"], r
    assert r["advice"]["family_order"] == heur[r["summary"]["signature"]]["family_order"]
    assert r["advice"]["param_hints"] == heur[r["summary"]["signature"]]["param_hints"]
PY
done
stop_server
"$bin" advise "$fx" --backend cpu --nominal --phase decode --advisor openai --llm-url "http://127.0.0.1:$port" \
  --llm-model m >"$tmp/gone.txt"
grep -q "skipped after 2 consecutive failures" "$tmp/gone.txt" || fail "an unreachable endpoint is not skipped after two failures"

# ---- the API key: the project's variable first, then OPENAI_API_KEY; --help names both.
for cmd in advise compile; do
  "$bin" $cmd --help >"$tmp/help.txt"
  grep -q "AGENTCOMPILE_LLM_API_KEY, else \$OPENAI_API_KEY" "$tmp/help.txt" || fail "$cmd --help does not name both key variables"
done
start_server good
env -u AGENTCOMPILE_LLM_API_KEY OPENAI_API_KEY=from-openai "$bin" advise "$fx" --backend cpu --nominal --phase decode \
  --advisor openai --llm-url "http://127.0.0.1:$port" --llm-model m --record "$tmp/keyrec.json" >/dev/null
AGENTCOMPILE_LLM_API_KEY=from-project OPENAI_API_KEY=from-openai "$bin" advise "$fx" --backend cpu --nominal --phase decode \
  --advisor openai --llm-url "http://127.0.0.1:$port" --llm-model m >/dev/null
python3 - "$tmp/requests.jsonl" <<'PY'
import json, sys
auth = [json.loads(l)["authorization"] for l in open(sys.argv[1])]
assert auth == ["Bearer from-openai"] * 7 + ["Bearer from-project"] * 7, (len(auth), auth)
PY
! grep -q "from-openai" "$tmp/keyrec.json" || fail "the API key was written into the record"
expect_error "OPENAI_API_KEY" -- env -u AGENTCOMPILE_LLM_API_KEY OPENAI_API_KEY="$(printf 'a\nb')" "$bin" advise "$fx" \
  --advisor openai --llm-url "http://127.0.0.1:$port" --llm-model m

# ---- a reply that is not UTF-8: --json and --record still write valid JSON (U+FFFD in its place),
# and stderr says in one line that the heuristic advice was used.
start_server badutf8
"$bin" advise "$fx" --backend cpu --nominal --phase decode --advisor openai --llm-url "http://127.0.0.1:$port" \
  --llm-model m --json --record "$tmp/bad-rec.json" >"$tmp/bad.json" 2>"$tmp/bad.err"
[ "$(wc -l <"$tmp/bad.err")" -eq 1 ] || fail "advise with a non-UTF-8 reply: stderr is not one line: $(cat "$tmp/bad.err")"
grep -q "^warning: advisor openai: 7 of 7 requests fell back to the heuristic advice (first: .*not a chat completion" "$tmp/bad.err" ||
  fail "advise with a non-UTF-8 reply: no fallback warning: $(cat "$tmp/bad.err")"
python3 - "$tmp/bad.json" "$tmp/bad-rec.json" <<'PY'
import json, sys
d, rec = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert all(r["fell_back"] for r in d["regions"])
assert d["advisor_summary"]["fell_back"] == 7 and d["advisor_summary"]["source"] == "heuristic (fallback)", d["advisor_summary"]
ex = rec["exchanges"]  # two failures, then the rest are skipped
assert all("\ufffd" in e["raw_reply"] and e["status"].startswith("error: not a chat completion") for e in ex[:2]), ex[:2]
assert len(ex) == 7 and all(e["status"].startswith("error: skipped") for e in ex[2:]), ex[2:]
PY
"$bin" advise "$fx" --backend cpu --nominal --phase decode --advisor "replay:$tmp/bad-rec.json" --json >/dev/null

# ---- compile with an endpoint that never answers, or is gone: the advisor's waits count against
# --budget (a quarter of it at most), the heuristic advice is used, stderr and the report say so,
# and the search still measures candidates. Fresh DBs, so nothing comes from an earlier compile.
"$bin" synth-model --preset tiny-qwen3 --out "$tmp/tiny" --seed 1 >/dev/null
budget=15
start_server silent
for case in silent gone; do
  [ $case = gone ] && stop_server  # nothing listens on $port now
  t0=$(date +%s.%N)
  "$bin" compile "$tmp/tiny" --out "$tmp/plan-$case" --db "$tmp/$case.db" --backend cpu --budget $budget --advisor openai \
    --llm-url "http://127.0.0.1:$port" --llm-model m --json >"$tmp/compile-$case.json" 2>"$tmp/compile-$case.err"
  t1=$(date +%s.%N)
  [ "$(grep -c '^warning: advisor openai: ' "$tmp/compile-$case.err")" -eq 1 ] ||
    fail "compile ($case endpoint): no one-line fallback warning: $(cat "$tmp/compile-$case.err")"
  python3 - "$tmp/plan-$case" "$case" "$t0" "$t1" "$budget" <<'PY'
import json, sys
plan, case, t0, t1, budget = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
r = json.load(open(plan + "/report.json"))
wall = t1 - t0
# Before the advisor's waits were bounded, a silent endpoint made a 5 s compile take 185 s.
assert wall < budget + 30, (case, wall)
a = r["advisor_summary"]
assert a["advisor"] == "openai" and a["requests"] > 0 and a["fell_back"] == a["requests"], a
assert a["source"] == "heuristic (fallback)" and a["share_s"] == budget / 4, a
assert a["wait_s"] <= a["share_s"] + 1, a
want = "deadline passed" if case == "silent" else "Connection refused"
assert want in a["reason"], (case, a["reason"])
assert r["budget"]["not_explored"] < sum(x["space_size"] for x in r["regions"]), r["budget"]
assert r["totals"]["measured"] > r["totals"]["regions"] + r["totals"]["spans"], r["totals"]  # more than the fallbacks
md = open(plan + "/report.md").read()
assert "advice source: heuristic (fallback) (" in md, md[:600]
PY
done

# ---- bad input: one line, exit 2.
expect_error "--advisor" -- "$bin" advise "$fx" --advisor magic
expect_error "needs --llm-url" -- env -u AGENTCOMPILE_LLM_URL "$bin" advise "$fx" --advisor openai --llm-model m
expect_error "--llm-url" -- "$bin" advise "$fx" --advisor openai --llm-url ftp://x --llm-model m
expect_error "--llm-model" -- "$bin" advise "$fx" --advisor openai --llm-url http://127.0.0.1:9 --llm-model "$(printf 'm\377')"
expect_error "--target" -- "$bin" advise "$fx" --target v100
expect_error "--target" -- "$bin" advise "$fx" --backend cpu --target h200
expect_error "--backend" -- "$bin" advise "$fx" --backend tpu
expect_error "--phase" -- "$bin" advise "$fx" --phase sideways
expect_error "--batch" -- "$bin" advise "$fx" --batch 0
expect_error "nope.json" -- "$bin" advise "$fx" --advisor "replay:$tmp/nope.json"
expect_error "not a model folder" -- "$bin" advise "$tmp/none"
echo "advise: ok"
