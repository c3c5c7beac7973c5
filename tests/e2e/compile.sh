#!/usr/bin/env bash
# compile through the binary on the CPU backend: the plan folder and its report, a warm second
# compile from the tuning DB, generate/logits --plan equal to the reference backend, and
# one-line refusals (exit 2, no output) of plans for another model or machine, corrupt plans,
# kernel files outside the plan folder and bad flags; --rebuild-kernels; a failed compile leaves no
# plan folder behind.
set -euo pipefail
bin=${AC_BIN:?}
src=${AC_SRC:?}
fx=$src/tests/fixtures/hf/qwen3_mha_untied_5x
other=$src/tests/fixtures/hf/llama_gqa2_tied_llama3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# A command whose stderr is not wanted unless it fails (then its last lines say why).
quiet() { "$@" 2>"$tmp/quiet.err" || fail "$* exited $?: $(tail -3 "$tmp/quiet.err")"; }

source "$(dirname "$0")/expect_error.bash"

# ---- cold compile, then warm from the DB
"$bin" compile "$fx" --out "$tmp/plan" --db "$tmp/t.db" --backend cpu --budget 60 --json >"$tmp/cold.json" 2>"$tmp/cold.err" \
  || fail "the cold compile exited $?: $(tail -3 "$tmp/cold.err")"
[ -f "$tmp/plan/plan.json" ] && [ -f "$tmp/plan/report.json" ] && [ -f "$tmp/plan/report.md" ] || fail "plan folder incomplete"
grep -q "regions\]" "$tmp/cold.err" || fail "no progress lines"
cp "$tmp/plan/report.json" "$tmp/cold-report.json"
quiet "$bin" compile "$fx" --out "$tmp/plan" --db "$tmp/t.db" --backend cpu --budget 60 --json >"$tmp/warm.json"
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
cold, warm = json.load(open(t + "/cold.json")), json.load(open(t + "/warm.json"))
rep = json.load(open(t + "/plan/report.json"))
plan = json.load(open(t + "/plan/plan.json"))
assert cold["e2e"]["ok"] and warm["e2e"]["ok"]
assert cold["totals"]["measured"] > 20, cold["totals"]
# Everything the cold compile measured comes from the DB. The warm one may measure a handful of
# candidates the cold one did not have (seen under load on CI: 2 of about 680; the sets can differ
# by a few between compiles, cause not yet pinned down), never a meaningful share.
unexplored = json.load(open(t + "/cold-report.json"))["budget"]["not_explored"]
assert warm["totals"]["reused"] == cold["totals"]["measured"], (cold["totals"], warm["totals"])
assert warm["totals"]["measured"] <= max(unexplored, cold["totals"]["measured"] // 100), (warm["totals"], unexplored)
assert warm["elapsed_s"] < cold["elapsed_s"] / 2, (cold["elapsed_s"], warm["elapsed_s"])
assert plan["format"] == "agentcompile-plan" and len(plan["model_hash"]) == 64
# The decode-step tuning is CUDA's: off here, never cut, its status the report's.
assert cold["step_tuning"]["status"] == rep["step_tuning"]["status"] and cold["step_tuning"]["status"].startswith("off"), cold["step_tuning"]
assert cold["step_tuning"]["cut"] is False, cold["step_tuning"]
assert {r["phase"] for r in plan["routes"]} == {"decode", "prefill"}
for r in rep["regions"]:
    s = r["search"]
    assert s["candidates"][0]["family"] == "cpu:fallback" and s["candidates"][0]["status"] == "ok"
    for c in s["candidates"]:
        assert c["stage"] in ("constraints", "compile", "correctness", "timing"), c
        assert c["status"] in ("ok", "failed"), c
        if c["status"] == "ok": assert c["median_us"] > 0 and len(c["samples_us"]) > 0
    assert "label" in r["advice"] and isinstance(r["rejected_hints"], list)
    a = r["achieved"]  # bytes the region moves over the chosen route's time, against the target's bandwidth
    assert a["bytes"] > 0 and a["GBps"] > 0 and a["bandwidth_GBps"] > 0, a
    assert abs(a["GBps"] - a["bytes"] / (r["chosen_us"] * 1e3)) < 1e-6 * a["GBps"], a
    assert abs(a["pct_of_bandwidth"] - 100 * a["GBps"] / a["bandwidth_GBps"]) < 1e-6 * a["pct_of_bandwidth"] + 1e-9, a
assert rep["regression"]["status"].startswith("same routes") or rep["regression"]["status"].startswith("ok"), rep["regression"]
PY

# ---- the plan runs: same greedy tokens and logits as the reference backend
"$bin" generate "$fx" --prompt-tokens 1,2,3,4 --max-tokens 12 --plan "$tmp/plan" --json >"$tmp/g_plan.json"
"$bin" generate "$fx" --prompt-tokens 1,2,3,4 --max-tokens 12 --backend cpu --json >"$tmp/g_ref.json"
"$bin" logits "$fx" --tokens 5,6,7 --plan "$tmp/plan" --json >"$tmp/l_plan.json"
"$bin" logits "$fx" --tokens 5,6,7 --backend cpu --json >"$tmp/l_ref.json"
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
a, b = json.load(open(t + "/g_plan.json")), json.load(open(t + "/g_ref.json"))
assert a["tokens"] == b["tokens"], (a["tokens"], b["tokens"])
la, lb = json.load(open(t + "/l_plan.json"))["logits"], json.load(open(t + "/l_ref.json"))["logits"]
for x, y in zip(la, lb):
    for u, v in zip(x, y): assert abs(u - v) <= 1e-3 + 1e-4 * abs(v), (u, v)
PY

# ---- refusals
expect_error "another model" "$bin" generate "$other" --prompt-tokens 1,2 --plan "$tmp/plan"
expect_error "cpu plan" "$bin" generate "$fx" --prompt-tokens 1,2 --plan "$tmp/plan" --backend cuda
cp -r "$tmp/plan" "$tmp/elsewhere"
python3 - "$tmp/elsewhere/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["environment"]["device"] = "Imaginary CPU 9000"
json.dump(p, open(sys.argv[1], "w"))
PY
expect_error "another environment: host CPU" "$bin" logits "$fx" --tokens 1,2 --plan "$tmp/elsewhere" --json
python3 - "$tmp/elsewhere/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["environment"]["device"] = "x"; p["environment"]["engine_version"] = "0.0.0"
json.dump(p, open(sys.argv[1], "w"))
PY
expect_error "engine version" "$bin" generate "$fx" --prompt-tokens 1,2 --plan "$tmp/elsewhere"
printf '{"format": "agentcompile-plan", "version": 1' >"$tmp/elsewhere/plan.json"
expect_error "plan.json" "$bin" generate "$fx" --prompt-tokens 1,2 --plan "$tmp/elsewhere"
expect_error "no such directory" "$bin" generate "$fx" --prompt-tokens 1,2 --plan "$tmp/none"

# ---- plans are code: kernel files must be regular files inside the plan folder; with
# --rebuild-kernels they are not read at all (a CPU plan has none of its own; these are added)
cp -r "$tmp/plan" "$tmp/withbin"
echo -n "secret" >"$tmp/secret"
ln -s "$tmp/secret" "$tmp/withbin/outside.cubin"
python3 - "$tmp/withbin/plan.json" <<'PY'
import hashlib, json, sys
p = json.load(open(sys.argv[1]))
sha = hashlib.sha256(b"secret").hexdigest()
p["kernels"] = [{"name": "k0", "file": "outside.cubin", "sha256": sha, "source_key": "k"}]
json.dump(p, open(sys.argv[1], "w"))
PY
expect_error "kernel binary outside.cubin: resolves to .*, outside" "$bin" generate "$fx" --prompt-tokens 1,2 --plan "$tmp/withbin"
rm "$tmp/withbin/outside.cubin"
expect_error "kernel binary outside.cubin: is missing" "$bin" logits "$fx" --tokens 1,2 --plan "$tmp/withbin" --json
"$bin" generate "$fx" --prompt-tokens 1,2,3,4 --max-tokens 12 --plan "$tmp/withbin" --rebuild-kernels --json >"$tmp/g_rb.json"
"$bin" logits "$fx" --tokens 5,6,7 --plan "$tmp/withbin" --rebuild-kernels --json >"$tmp/l_rb.json"
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
assert json.load(open(t + "/g_rb.json"))["tokens"] == json.load(open(t + "/g_ref.json"))["tokens"]
assert json.load(open(t + "/l_rb.json"))["logits"] == json.load(open(t + "/l_plan.json"))["logits"]
PY
expect_error "--rebuild-kernels: needs --plan" "$bin" generate "$fx" --prompt-tokens 1,2 --rebuild-kernels
expect_error "--rebuild-kernels: needs --plan" "$bin" logits "$fx" --tokens 1,2 --rebuild-kernels --json

# ---- bad compile flags: nothing written
mkdir "$tmp/notaplan" && echo keep >"$tmp/notaplan/file"
expect_error "not a plan folder" "$bin" compile "$fx" --out "$tmp/notaplan" --db "$tmp/t.db"
[ "$(cat "$tmp/notaplan/file")" = keep ] || fail "the non-plan folder was touched"
expect_error "objective" "$bin" compile "$fx" --out "$tmp/p2" --db "$tmp/t.db" --objective fastest --backend cpu
expect_error "budget" "$bin" compile "$fx" --out "$tmp/p2" --db "$tmp/t.db" --budget 0 --backend cpu
expect_error "directory" "$bin" compile "$fx" --out "$tmp/p2" --db "$tmp" --backend cpu
[ ! -e "$tmp/p2" ] || fail "a failed compile left a plan folder"
ls -a "$tmp" | grep -q "^\.p2" && fail "a failed compile left a temporary folder"

# ---- identical regions across models are measured once: two tiny models with the same shapes
"$bin" synth-model --preset tiny-qwen3 --out "$tmp/m1" --seed 1 >/dev/null
"$bin" synth-model --preset tiny-qwen3 --out "$tmp/m2" --seed 2 >/dev/null
quiet "$bin" compile "$tmp/m1" --out "$tmp/pm1" --db "$tmp/x.db" --backend cpu --budget 60 --json >"$tmp/m1.json"
quiet "$bin" compile "$tmp/m2" --out "$tmp/pm2" --db "$tmp/x.db" --backend cpu --budget 60 --json >"$tmp/m2.json"
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
a, b = json.load(open(t + "/m1.json")), json.load(open(t + "/m2.json"))
# Every candidate the first model measured is reused by the second (the same shapes); like the
# warm compile above, the second may measure what the first left unexplored (its budget share ran
# out on a loaded machine: CI under load saw 14 of 688) or a handful it did not have.
unexplored = json.load(open(t + "/pm1/report.json"))["budget"]["not_explored"]
assert a["totals"]["measured"] > 0, a["totals"]
assert b["totals"]["measured"] <= max(unexplored, a["totals"]["measured"] // 100), (a["totals"], b["totals"], unexplored)
assert b["totals"]["reused_from_other_models"] == a["totals"]["measured"], b["totals"]
PY
expect_error "another model" "$bin" generate "$tmp/m2" --prompt-tokens 1,2 --plan "$tmp/pm1"

# ---- --seed-plan: a plan of another model or no plan folder is refused before anything is
# written; on the CPU backend (no decode-step stages) the seed is reported as not applied
expect_error "made for another model" "$bin" compile "$tmp/m2" --out "$tmp/p4" --db "$tmp/x.db" --backend cpu --seed-plan "$tmp/pm1"
expect_error "no such directory" "$bin" compile "$tmp/m2" --out "$tmp/p4" --db "$tmp/x.db" --backend cpu --seed-plan "$tmp/none"
[ ! -e "$tmp/p4" ] || fail "a refused seed left a plan folder"
quiet "$bin" compile "$tmp/m1" --out "$tmp/pm1b" --db "$tmp/x.db" --backend cpu --budget 60 --seed-plan "$tmp/pm1" >/dev/null
python3 -c "import json; s=json.load(open('$tmp/pm1b/report.json'))['seed_plan']; assert s['status'].startswith('not applied'), s"

# ---- throughput objective at batch 2 with the none advisor
quiet "$bin" compile "$fx" --out "$tmp/p3" --db "$tmp/t.db" --backend cpu --objective throughput --max-batch 2 --advisor none --budget 30 --json >"$tmp/thr.json"
python3 -c "import json,sys; j=json.load(open('$tmp/thr.json')); assert j['e2e']['ok'] and j['e2e']['profile']['batched_us_per_token'] > 0, j['e2e']"
echo "compile e2e: ok"
