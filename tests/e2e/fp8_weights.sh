#!/usr/bin/env bash
# compile --weights through the binary: a 16-bit tiny-qwen3 compiled on the CPU backend with its
# weights quantized at load to FP8 (block and channel scales). The plan records the weights, its
# report the accuracy against the 16-bit model; `generate --plan` on the 16-bit folder quantizes
# the same way and gives the tokens that the FP8 checkpoint of the same seed gives (the same
# weights, bit for bit). One-line errors: an unknown --weights, --weights on a model that is
# already FP8, and a --weights plan run on an FP8 checkpoint; the plan folder is not written then.
# bench e2e of such a plan checks its tokens against the CPU reference of the quantized weights.
set -euo pipefail
bin=${AC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "$0")/expect_error.bash"

"$bin" synth-model --preset tiny-qwen3 --out "$tmp/m" --seed 4 --quiet >/dev/null
for w in fp8-block fp8-channel; do
  "$bin" synth-model --preset tiny-qwen3 --out "$tmp/$w" --seed 4 --weights $w --quiet >/dev/null
  "$bin" compile "$tmp/m" --out "$tmp/plan-$w" --db "$tmp/t.db" --backend cpu --budget 20 --weights $w >"$tmp/compile.out" 2>&1 ||
    fail "compile --weights $w: $(tail -3 "$tmp/compile.out")"
  python3 - "$tmp/plan-$w" "$w" <<'PY'
import json, sys
d, w = sys.argv[1], sys.argv[2]
plan = json.load(open(f"{d}/plan.json")); rep = json.load(open(f"{d}/report.json"))
assert plan["weights"] == w, plan.get("weights")
a = rep["weights"]["accuracy"]
assert rep["weights"]["weights"] == w
assert a["positions"] == 64 and a["greedy_tokens"] == 32, a
assert 0 < a["mean_abs_dlogit"] <= a["max_abs_dlogit"], a
assert 0 < a["mean_kl"] < 1 and 0 <= a["top1_agreement"] <= 1 and 0 <= a["greedy_prefix"] <= 32, a
assert "## Weights" in open(f"{d}/report.md").read()
PY
  "$bin" generate "$tmp/m" --plan "$tmp/plan-$w" --prompt-tokens 3,1,4,1,5,9 --max-tokens 12 --ignore-eos --json >"$tmp/plan.json"
  "$bin" generate "$tmp/$w" --backend cpu --prompt-tokens 3,1,4,1,5,9 --max-tokens 12 --ignore-eos --json >"$tmp/ckpt.json"
  "$bin" generate "$tmp/m" --backend cpu --prompt-tokens 3,1,4,1,5,9 --max-tokens 12 --ignore-eos --json >"$tmp/bf16.json"
  python3 -c "
import json, sys
p, c = (json.load(open(f))['tokens'] for f in sys.argv[1:3])
assert p == c, (p, c)
" "$tmp/plan.json" "$tmp/ckpt.json" || fail "$w: the plan's tokens are not the FP8 checkpoint's"
  # bench e2e checks the plan against the CPU reference of the same quantized weights (auto), not
  # against a 16-bit model's; with --reference peer and no peer it has no reference.
  for ref in auto peer; do
    "$bin" bench e2e --model "$tmp/m" --plan "$tmp/plan-$w" --workloads 8/10,8/10x2 --validate-tokens 10 --repeats 1 \
      --warmup 0 --reference $ref --quiet --json-out "$tmp/bench-$ref.json" >/dev/null 2>"$tmp/bench.err" ||
      fail "bench e2e --reference $ref: $(tail -3 "$tmp/bench.err")"
    python3 - "$tmp/bench-$ref.json" "$ref" "$w" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); ref, w = sys.argv[2], sys.argv[3]
assert r["settings"]["reference"] == ref, r["settings"]
assert r["models"][0]["quantization"].startswith("fp8"), r["models"][0]
assert r["models"][0]["stored_bytes"] < r["models"][0]["bytes"], r["models"][0]
for row in r["results"]:
    v = row["validation"]
    if ref == "auto":
        assert v["status"] == "pass" and v["compared"] == 10, v
        assert row["reference"].startswith("agentcompile cpu reference, fp8"), row["reference"]
        assert row["counted"] is True
    else:
        assert v["status"] == "no reference" and row["counted"] is False, v
PY
  done
  # A --weights plan on a model already FP8: refused, not quantized twice.
  expect_error "already quantized" "$bin" generate "$tmp/$w" --plan "$tmp/plan-$w" --prompt-tokens 1,2 --max-tokens 2
done
# --lm-head fp8: the head quantized too (tiny-qwen3 ties it: a copy, the embedding stays 16-bit).
# The plan says so, the report's accuracy is further from the 16-bit model than without it, and
# bench e2e checks the plan's tokens against the CPU reference of those weights.
"$bin" compile "$tmp/m" --out "$tmp/plan-head" --db "$tmp/t.db" --backend cpu --budget 20 --weights fp8-channel --lm-head fp8 \
  >"$tmp/compile.out" 2>&1 || fail "compile --lm-head fp8: $(tail -3 "$tmp/compile.out")"
python3 - "$tmp/plan-head" "$tmp/plan-fp8-channel" <<'PY'
import json, sys
head, body = sys.argv[1], sys.argv[2]
plan = json.load(open(f"{head}/plan.json")); rep = json.load(open(f"{head}/report.json"))
assert plan["weights"] == "fp8-channel" and plan["lm_head"] == "fp8", plan
assert "lm_head" not in json.load(open(f"{body}/plan.json"))
w = rep["weights"]
assert w["lm_head"] == "fp8" and "lm_head" in w["quantization"], w
assert json.load(open(f"{body}/report.json"))["weights"]["lm_head"] == "16-bit"
a, b = w["accuracy"], json.load(open(f"{body}/report.json"))["weights"]["accuracy"]
assert a["mean_abs_dlogit"] != b["mean_abs_dlogit"], (a, b)
assert "the lm_head too" in open(f"{head}/report.md").read()
PY
"$bin" bench e2e --model "$tmp/m" --plan "$tmp/plan-head" --workloads 8/10 --validate-tokens 10 --repeats 1 --warmup 0 \
  --quiet --json-out "$tmp/bench-head.json" >/dev/null 2>"$tmp/bench.err" || fail "bench e2e --lm-head plan: $(tail -3 "$tmp/bench.err")"
python3 - "$tmp/bench-head.json" "$tmp/m" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["models"][0]
assert "lm_head" in m["quantization"], m
for row in r["results"]:
    assert row["validation"]["status"] == "pass" and row["validation"]["compared"] == 10, row["validation"]
PY
"$bin" generate "$tmp/m" --plan "$tmp/plan-head" --prompt-tokens 3,1,4,1,5,9 --max-tokens 12 --ignore-eos --json >/dev/null \
  || fail "generate --plan with an FP8 lm_head"
expect_error "--lm-head" "$bin" compile "$tmp/m" --out "$tmp/bad" --db "$tmp/t.db" --backend cpu --lm-head fp8
expect_error "--lm-head" "$bin" compile "$tmp/m" --out "$tmp/bad" --db "$tmp/t.db" --backend cpu --weights fp8-block --lm-head int4
python3 - "$tmp/plan-head/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); del p["weights"]
json.dump(p, open(sys.argv[1], "w"))
PY
expect_error "lm_head" "$bin" generate "$tmp/m" --plan "$tmp/plan-head" --prompt-tokens 1,2 --max-tokens 2
expect_error "--weights" "$bin" compile "$tmp/m" --out "$tmp/bad" --db "$tmp/t.db" --backend cpu --weights int4
expect_error "--reference" "$bin" bench e2e --model "$tmp/m" --workloads 8/4 --reference hf
expect_error "already quantized" "$bin" compile "$tmp/fp8-block" --out "$tmp/bad" --db "$tmp/t.db" --backend cpu --weights fp8-block
[ ! -e "$tmp/bad" ] || fail "a refused compile wrote its plan folder"
# The 16-bit plan of the same model does not carry weights.
"$bin" compile "$tmp/m" --out "$tmp/plan16" --db "$tmp/t.db" --backend cpu --budget 10 >/dev/null 2>&1
python3 -c "import json,sys; assert 'weights' not in json.load(open(sys.argv[1]))" "$tmp/plan16/plan.json" || fail "a 16-bit plan names weights"
echo "e2e.fp8_weights: ok"
