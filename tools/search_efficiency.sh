#!/usr/bin/env bash
# Search efficiency of `compile`: per region, candidates evaluated until one within 2% of the
# best, in the advisor's order versus the expected number over random orders of the same
# candidates (report.json "efficiency"). Each model and advisor compiles from an empty tuning DB,
# so every candidate is measured (when the budget allows: BUDGET must cover the whole space).
# Writes <out>.json and <out>.md.
#   [MODELS="dir1 dir2"] [BUDGET=seconds] tools/search_efficiency.sh [BINARY] [OUT_PREFIX] [BACKEND]
# CPU (default): the fixtures plus two synthetic tiny models, budget 300 s; runs anywhere.
# CUDA: pass cuda on the GPU machine; default models are the synthetic presets
# tools/gpu_compile_check.sh makes (/tmp/ac-<preset>, made here the same way when missing),
# budget 150 s each.
set -euo pipefail
bin=${1:-build/agentcompile}
out=${2:-bench/results/$(date -u +%Y-%m-%d)-search-efficiency-${3:-cpu}}
backend=${3:-cpu}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs a command with its stderr kept; on failure says which command failed and shows the end of
# its stderr (under set -e a bare `cmd >/dev/null 2>&1` used to end the script without a word).
run() {
  local err="$tmp/stderr.$$" rc=0
  "$@" >/dev/null 2>"$err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "error: search_efficiency.sh: command failed (exit $rc): $*" >&2
    echo "--- last lines of its stderr:" >&2
    tail -20 "$err" >&2
    exit 1
  fi
}

if [ -n "${MODELS:-}" ]; then
  read -r -a models <<< "$MODELS"
elif [ "$backend" = cuda ]; then
  models=()
  for preset in llama-3.2-1b qwen3-1.7b qwen3-4b; do
    m=/tmp/ac-$preset
    [ -f "$m/model.safetensors" ] || run "$bin" synth-model --preset "$preset" --out "$m" --seed 11 --quiet
    models+=("$m")
  done
else
  run "$bin" synth-model --preset tiny-qwen3 --out "$tmp/tiny-qwen3" --seed 1
  run "$bin" synth-model --preset tiny-llama --out "$tmp/tiny-llama" --seed 2
  models=("$src/tests/fixtures/hf/qwen3_mha_untied_5x" "$src/tests/fixtures/hf/qwen2_gqa5_bias_f16"
          "$src/tests/fixtures/hf/llama_gqa5_f32_5x" "$tmp/tiny-qwen3" "$tmp/tiny-llama")
fi
budget=${BUDGET:-$([ "$backend" = cuda ] && echo 150 || echo 300)}
for m in "${models[@]}"; do
  [ -d "$m" ] || { echo "error: search_efficiency.sh: model folder $m does not exist" >&2; exit 1; }
  for adv in heuristic none; do
    name=$(basename "$m")-$adv
    start=$(date +%s)
    run "$bin" compile "$m" --out "$tmp/$name" --db "$tmp/$name.db" --backend "$backend" --advisor "$adv" \
      --budget "$budget"
    echo "$name: compiled in $(( $(date +%s) - start )) s (budget $budget s)" >&2
    cp "$tmp/$name/report.json" "$tmp/$name.report.json"
  done
done
python3 - "$tmp" "$out" "$backend" "${models[@]}" <<'PY'
import json, os, sys, platform
tmp, out, backend, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
rows, summary = [], {}
for m in models:
    for adv in ("heuristic", "none"):
        rep = json.load(open(f"{tmp}/{os.path.basename(m)}-{adv}.report.json"))
        e = rep["efficiency"]
        for r in e["regions"]:
            rows.append({"model": os.path.basename(m), "advisor": adv, **r})
        s = summary.setdefault(adv, {"regions": 0, "advised": 0.0, "random": 0.0, "first_try": 0, "not_explored": 0})
        s["not_explored"] += rep["budget"]["not_explored"]  # > 0: the budget did not cover the space
        s["regions"] += len(e["regions"])
        s["advised"] += sum(r["advised"] for r in e["regions"])
        s["random"] += sum(r["random_expected"] for r in e["regions"])
        s["first_try"] += sum(1 for r in e["regions"] if r["advised"] == 1)
        env = rep["environment"]
for s in summary.values():
    s["mean_advised"] = s["advised"] / max(1, s["regions"])
    s["mean_random"] = s["random"] / max(1, s["regions"])
doc = {"backend": backend, "device": env["device"], "cores": env["cores"], "engine": env["engine_version"],
       "metric": "candidates evaluated (in order) until one within 2% of the best measured; random = expected over 500 random orders",
       "summary": summary, "regions": rows}
json.dump(doc, open(out + ".json", "w"), indent=1)
with open(out + ".md", "w") as f:
    threads = f", {env['cores']} threads" if env.get("cores") else ""  # the CUDA environment has no core count
    f.write(f"# Search efficiency ({backend}, {env['device']}{threads})\n\n")
    f.write("Candidates evaluated until one is within 2% of the best measured one: the advisor's order "
            "versus the expected number over random orders of the same candidates (all candidates "
            "measured from an empty tuning DB). `none` = the space's own order.\n\n")
    f.write("| advisor | regions | mean advised | mean random | best found first | candidates not explored |\n|---|---|---|---|---|---|\n")
    for adv, s in summary.items():
        f.write(f"| {adv} | {s['regions']} | {s['mean_advised']:.2f} | {s['mean_random']:.2f} | {s['first_try']} | {s['not_explored']} |\n")
    f.write("\n| model | advisor | region | phase | evaluated | advised | random |\n|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r['model']} | {r['advisor']} | {r['region']} | {r['phase']} | {r['evaluated']} | {r['advised']} | {r['random_expected']:.1f} |\n")
print(open(out + ".md").read().split("\n\n| model")[0])
PY
