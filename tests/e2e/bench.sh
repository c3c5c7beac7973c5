#!/usr/bin/env bash
# agentcompile bench on the CPU backend, as CI can run it: e2e against a recorded HF reference
# (tests/fixtures/bench, from tools/make_bench_peer_fixture.py), peer speedups, a failing semantic
# check, presets synthesised into a cache, module tier, report/compare, and one-line errors with
# exit 2 for bad input (no output files left behind). Seconds.
set -euo pipefail
bin=${AC_BIN:?}
src=${AC_SRC:?}
fx=$src/tests/fixtures/hf/qwen3_mha_untied_5x
peer=$src/tests/fixtures/bench/qwen3_mha_untied_5x.hf-eager.peer.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/expect_error.bash"

# 1. e2e against the recorded HF reference: the check passes and the row counts.
"$bin" bench e2e --backend cpu --model "$fx" --peer "$peer" --workloads 48/40 --repeats 2 --warmup 0 \
  --json-out "$tmp/r.json" --md-out "$tmp/r.md" >"$tmp/stdout" 2>"$tmp/progress"
grep -q "bench e2e: qwen3_mha_untied_5x 48/40: prefill" "$tmp/progress" || fail "no progress line: $(cat "$tmp/progress")"
cmp -s "$tmp/stdout" "$tmp/r.md" || fail "printed markdown differs from --md-out"
grep -q "| qwen3_mha_untied_5x | .* | cpu | 48/40 | " "$tmp/r.md" || fail "no table row: $(cat "$tmp/r.md")"
python3 - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "agentcompile.bench/1" and r["tier"] == "e2e", r.keys()
assert "GPU" in r["ceilings"]["note"] and r["environment"]["engine_commit"], r["environment"]
assert "bench e2e" in r["command"] and "--peer" in r["command"], r["command"]
[row] = r["results"]
v = row["validation"]
assert v["status"] == "pass" and v["compared"] == 32 and v["equal"] + v["ties"] == 32, v
assert row["counted"] is True and row["reference"].startswith("hf"), row["reference"]
assert len(row["prefill_samples_ms"]) == 2 and len(row["decode_samples_ms"]) == 2 * 39, row
assert row["decode_ms_per_token"] > 0 and row["floor_ms"] is None and row["pct_of_floor"] is None
assert row["floor_kv_bytes"] is None
assert abs(row["tokens_per_s"] - 1000 / row["decode_ms_per_token"]) < 1e-6 * row["tokens_per_s"]
assert r["models"][0]["name"] == "qwen3_mha_untied_5x" and r["models"][0]["parameters"] > 0
PY

# 2. Peer timings: speedup = peer ms / our ms; a second peer with other prompts is refused.
python3 - "$peer" "$tmp" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))["references"][0]
run = {"workload": "48/40", "prompt": 48, "gen": 40, "batch": 1, "prompts": [ref["prompt"]], "tokens": [ref["tokens"]],
       "prefill_ms": [500.0], "decode_ms": [1000.0, 1000.0, 3000.0]}
json.dump({"peer": "slow-peer", "model": "qwen3_mha_untied_5x", "runs": [run]}, open(sys.argv[2] + "/slow.json", "w"))
run2 = dict(run, prompts=[[1] * 48])
json.dump({"peer": "other", "model": "qwen3_mha_untied_5x", "runs": [run2]}, open(sys.argv[2] + "/other.json", "w"))
PY
"$bin" bench e2e --backend cpu --model "$fx" --peer "$peer" --peer "$tmp/slow.json" --workloads 48/40 --repeats 1 \
  --warmup 0 --json-out "$tmp/s.json" --quiet >"$tmp/s.md"
python3 - "$tmp/s.json" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))["results"][0]
p = row["peers"]["slow-peer"]
assert p["decode_ms_per_token"] == 1000.0 and p["prefill_ms"] == 500.0, p
assert abs(p["speedup"] - 1000.0 / row["decode_ms_per_token"]) < 1e-9 * p["speedup"], p
assert p["free_running_prefix"] >= 1, p
PY
grep -q "vs slow-peer" "$tmp/s.md" || fail "no peer column"
expect_error "prompts differ" -- "$bin" bench e2e --backend cpu --model "$fx" --peer "$tmp/slow.json" --peer "$tmp/other.json" --workloads 48/40 --quiet

# 3. A reference with a confident token changed: exit 1, the report is still written, the row does not count.
python3 - "$peer" "$tmp/tampered.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
r = p["references"][0]
i = next(i for i in range(5, 32) if r["margins"][i] > 0.5)
r["tokens"][i] = (r["tokens"][i] + 1) % 320
json.dump(p, open(sys.argv[2], "w"))
PY
set +e; "$bin" bench e2e --backend cpu --model "$fx" --peer "$tmp/tampered.json" --workloads 48/40 --repeats 1 --quiet \
  --json-out "$tmp/t.json" >"$tmp/t.md" 2>"$tmp/t.err"; rc=$?; set -e
[ $rc -eq 1 ] || fail "tampered reference: exit $rc, expected 1"
grep -q "^error: semantic check: 1 of 1 runs differ" "$tmp/t.err" || fail "tampered: $(cat "$tmp/t.err")"
grep -q "FAIL at" "$tmp/t.md" || fail "tampered: no FAIL in the table"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; assert r['counted'] is False and r['validation']['status']=='fail', r['validation']" "$tmp/t.json"

# 4. Presets are synthesised once into the cache; batched workloads; no reference -> not counted.
"$bin" bench e2e --backend cpu --model tiny-llama --cache-dir "$tmp/cache" --workloads 8/4,8/4x2 --repeats 1 \
  --json-out "$tmp/p.json" >/dev/null 2>"$tmp/p.err"
grep -q "synthesising preset tiny-llama" "$tmp/p.err" || fail "no synthesis line"
[ -f "$tmp/cache/tiny-llama-seed11/model.safetensors" ] || fail "preset not cached"
python3 - "$tmp/p.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
assert [(r["workload"], r["batch"]) for r in rows] == [("8/4", 1), ("8/4x2", 2)], rows
for r in rows:
    assert r["validation"]["status"] == "no reference" and r["counted"] is False
    assert len(r["tokens"]) == 4 and len(r["decode_samples_ms"]) == 3
b = rows[1]
assert abs(b["tokens_per_s"] - 2000 / b["decode_ms_per_token"]) < 1e-6 * b["tokens_per_s"]
PY
"$bin" bench e2e --backend cpu --model tiny-llama --cache-dir "$tmp/cache" --workloads 8/2 --repeats 1 >/dev/null 2>"$tmp/p2.err"
! grep -q "synthesising" "$tmp/p2.err" || fail "preset synthesised twice"

# 4b. --in-memory: the preset made in memory (nothing written to the cache) runs the same model.
"$bin" bench e2e --backend cpu --model tiny-llama --in-memory --cache-dir "$tmp/mem-cache" --workloads 8/4,8/4x2 \
  --repeats 1 --json-out "$tmp/m.json" >/dev/null 2>"$tmp/m.err" || fail "bench --in-memory: $(tail -3 "$tmp/m.err")"
grep -q "making preset tiny-llama in memory" "$tmp/m.err" || fail "no in-memory line: $(cat "$tmp/m.err")"
[ ! -e "$tmp/mem-cache" ] || fail "--in-memory wrote to the cache folder"
python3 - "$tmp/p.json" "$tmp/m.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert b["settings"]["in_memory"] is True and b["models"][0]["in_memory"] is True and b["models"][0]["dir"] is None
assert [r["tokens"] for r in a["results"]] == [r["tokens"] for r in b["results"]], "in-memory tokens differ from the folder's"
assert a["models"][0]["parameters"] == b["models"][0]["parameters"]
PY
# 4c. A mixture of experts: a batch-1 row's floor counts the top-k experts per sparse layer; a
# batch's row the experts its decode steps read (counted after the timed runs): between the top-k
# and the union of every row's.
"$bin" bench e2e --backend cpu --model tiny-qwen3-moe --in-memory --workloads 8/4,8/4x3 --repeats 1 --warmup 0 \
  --json-out "$tmp/moe.json" >/dev/null 2>"$tmp/moe.err" || fail "bench moe: $(tail -3 "$tmp/moe.err")"
python3 - "$tmp/moe.json" <<'PY'
import json, sys
one, three = json.load(open(sys.argv[1]))["results"]
assert one["batch"] == 1 and one["experts_per_sparse_layer"] == 2, one
assert three["batch"] == 3 and 2 < three["experts_per_sparse_layer"] <= 6, three
assert "floor_note" not in three, three
assert "kernels" not in one, one  # no --profile
PY
# 4d. --profile: the CPU backend cannot profile its kernels; the row and the markdown say so (the
# CUDA fast path's profile is checked on the GPU: CudaFastProfile).
"$bin" bench e2e --backend cpu --model tiny-qwen3 --in-memory --workloads 8/4 --repeats 1 --warmup 0 --profile \
  --json-out "$tmp/prof.json" --md-out "$tmp/prof.md" >/dev/null 2>"$tmp/prof.err" || fail "bench --profile: $(tail -3 "$tmp/prof.err")"
python3 - "$tmp/prof.json" "$tmp/prof.md" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))["results"][0]
assert row["kernels"] == {"status": "not available on the cpu backend"}, row.get("kernels")
assert row["decode_ms_per_token"] > 0, row
assert "Kernels of tiny-qwen3 8/4 (one more run, profiled launch by launch): not available on the cpu backend." in open(sys.argv[2]).read()
PY
expect_error "--in-memory" -- "$bin" bench e2e --backend cpu --model "$fx" --in-memory --workloads 8/2
expect_error "--in-memory" -- "$bin" bench e2e --backend cpu --model tiny-llama --in-memory --plan "$tmp" --workloads 8/2

# 5. module tier on the CPU: one layer, prefill and decode.
"$bin" bench module --backend cpu --model tiny-llama --cache-dir "$tmp/cache" --prompt 8 --steps 4 --repeats 1 --quiet \
  --json-out "$tmp/m.json" >"$tmp/m.md"
python3 - "$tmp/m.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["tier"] == "module" and [x["phase"] for x in r["results"]] == ["prefill", "decode"], r["results"]
for x in r["results"]:
    assert x["one_layer_ms"] > 0 and x["two_layer_ms"] > 0 and x["layer_bytes"] > 0
    assert abs(x["layer_difference_ms"] - (x["two_layer_ms"] - x["one_layer_ms"])) < 1e-9
# One sample per layer count cannot tell a layer from the noise: no time, and the reason.
prefill = r["results"][0]
assert prefill["layer_ms"] is None and prefill["GBps"] is None, prefill
assert "--repeats 3" in prefill["note"], prefill["note"]
for x in r["results"]:  # a time that is shown is the positive difference
    assert x["layer_ms"] is None or (x["layer_ms"] > 0 and x["layer_ms"] == x["layer_difference_ms"]), x
PY
grep -q "| tiny-llama | prefill | cpu cpu | 8 | 8 | — |" "$tmp/m.md" || fail "module table: $(cat "$tmp/m.md")"
grep -q "^- tiny-llama prefill: — because too few samples" "$tmp/m.md" || fail "module table gives no reason: $(cat "$tmp/m.md")"
grep -q "| tiny-llama | decode | cpu cpu | 1 | 8 |" "$tmp/m.md" || fail "module table: $(cat "$tmp/m.md")"

# 6. report and compare.
"$bin" bench report "$tmp/r.json" --compare "$tmp/r.json" >"$tmp/c.md"
grep -q "change against" "$tmp/c.md" && grep -q "+0.0%" "$tmp/c.md" || fail "compare: $(cat "$tmp/c.md")"
"$bin" bench e2e --backend cpu --model "$fx" --workloads 48/40 --repeats 1 --quiet --compare "$tmp/r.json" >"$tmp/c2.md"
grep -q "| qwen3_mha_untied_5x 48/40 cpu cpu | decode ms/token |" "$tmp/c2.md" || fail "compare row: $(cat "$tmp/c2.md")"

# 7. The peers' prompt generator gives the engine's ids.
[ "$(python3 "$src/bench/peers/common.py" prompt 5 0 1000)" = "734,539,67,426,585" ] || fail "common.py prompt ids differ"

# 8. A compiled plan (agentcompile compile, CPU backend) runs through bench e2e --plan and passes the check.
"$bin" compile "$fx" --out "$tmp/plan" --backend cpu --db "$tmp/tune.db" --budget 3 >/dev/null 2>&1
"$bin" bench e2e --model "$fx" --plan "$tmp/plan" --peer "$peer" --workloads 48/40 --repeats 1 --quiet --json-out "$tmp/plan.json" >/dev/null
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); row=r['results'][0]; assert row['route']=='plan' and row['backend']=='cpu' and row['counted'], row['validation']; assert r['settings']['plan'].endswith('plan')" "$tmp/plan.json"
expect_error "plan" -- "$bin" bench e2e --model tiny-llama --cache-dir "$tmp/cache" --plan "$tmp/plan" --workloads 8/2
expect_error "exactly one --model" -- "$bin" bench e2e --model "$fx,$fx" --plan "$tmp/plan"
expect_error "use bench e2e --plan" -- "$bin" bench module --backend cpu --model "$fx" --plan "$tmp/plan"
# --rebuild-kernels: the plan's binaries unread (a CPU plan has none), recorded in the settings.
"$bin" bench e2e --model "$fx" --plan "$tmp/plan" --rebuild-kernels --peer "$peer" --workloads 48/40 --repeats 1 --quiet --json-out "$tmp/rb.json" >/dev/null
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['settings']['rebuild_kernels'] is True and r['results'][0]['counted']" "$tmp/rb.json"
expect_error "needs --plan" -- "$bin" bench e2e --backend cpu --model "$fx" --rebuild-kernels

# 9. The chart: a PNG where matplotlib is installed, else a clear one-line refusal.
set +e; python3 "$src/bench/peers/plot.py" "$tmp/r.json" --workload 48/40 --out "$tmp/chart.png" 2>"$tmp/plot.err"; rc=$?; set -e
if [ $rc -eq 0 ]; then [ -s "$tmp/chart.png" ] || fail "plot.py wrote no PNG"
else grep -q "matplotlib is not installed" "$tmp/plot.err" || fail "plot.py: $(cat "$tmp/plot.err")"; fi
set +e; python3 "$src/bench/peers/plot.py" "$tmp/m.json" --out "$tmp/x.png" 2>"$tmp/plot2.err"; rc=$?; set -e
[ $rc -ne 0 ] && [ ! -e "$tmp/x.png" ] || fail "plot.py accepted a module report"

# 10. Bad input: one line, exit 2, nothing written.
expect_error "needs a GPU" -- "$bin" bench kernels --backend cpu --model tiny-llama
expect_error "--workloads" -- "$bin" bench e2e --backend cpu --model "$fx" --workloads W9
expect_error "--repeats" -- "$bin" bench e2e --backend cpu --model "$fx" --repeats 0
expect_error "--backend" -- "$bin" bench e2e --backend tpu --model "$fx"
expect_error "--cuda-route" -- "$bin" bench module --model "$fx" --cuda-route turbo
expect_error "--tie-epsilon" -- "$bin" bench e2e --backend cpu --model "$fx" --tie-epsilon -1
expect_error "does not exist" -- "$bin" bench e2e --backend cpu --model "$fx" --json-out "$tmp/nodir/x.json"
expect_error "/nonexistent" -- "$bin" bench e2e --backend cpu --model "$fx" --peer /nonexistent/peer.json
expect_error "not a bench report" -- "$bin" bench e2e --backend cpu --model "$fx" --compare "$peer"
expect_error "neither a model folder nor a preset" -- "$bin" bench e2e --backend cpu --model nope-model
expect_error "plan" -- "$bin" bench e2e --backend cpu --model "$fx" --plan "$tmp/cache"
expect_error "exceed the model's context" -- "$bin" bench e2e --backend cpu --model "$fx" --workloads 500/100 --json-out "$tmp/ctx.json"
expect_error "batches are 1 to 8" -- "$bin" bench kernels --model tiny-llama --batch 9
expect_error "model" -- "$bin" bench e2e --backend cpu
expect_error "needs a command: e2e, module, kernels or report" -- "$bin" bench
expect_error "" -- "$bin" bench report "$tmp/missing.json"
[ ! -e "$tmp/nodir" ] && [ ! -e "$tmp/ctx.json" ] || fail "an output file was left behind"
echo "bench: ok"
