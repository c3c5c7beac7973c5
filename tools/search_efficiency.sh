#!/usr/bin/env bash
# Search efficiency of `compile`: per region, candidates evaluated until one within 2% of the
# best, in the advisor's order versus the expected number over random orders of the same
# candidates (report.json "efficiency"). Each model and advisor compiles from an empty tuning DB,
# so every candidate is measured. Writes <out>.json and <out>.md.
#   tools/search_efficiency.sh [BINARY] [OUT_PREFIX] [BACKEND]
# CPU: runs anywhere (the fixtures plus two synthetic tiny models); CUDA: pass cuda on the GPU
# machine.
set -euo pipefail
bin=${1:-build/agentcompile}
out=${2:-bench/results/$(date -u +%Y-%m-%d)-search-efficiency-${3:-cpu}}
backend=${3:-cpu}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" synth-model --preset tiny-qwen3 --out "$tmp/tiny-qwen3" --seed 1 >/dev/null
"$bin" synth-model --preset tiny-llama --out "$tmp/tiny-llama" --seed 2 >/dev/null
models=("$src/tests/fixtures/hf/qwen3_mha_untied_5x" "$src/tests/fixtures/hf/qwen2_gqa5_bias_f16"
        "$src/tests/fixtures/hf/llama_gqa5_f32_5x" "$tmp/tiny-qwen3" "$tmp/tiny-llama")
for m in "${models[@]}"; do
  for adv in heuristic none; do
    name=$(basename "$m")-$adv
    "$bin" compile "$m" --out "$tmp/$name" --db "$tmp/$name.db" --backend "$backend" --advisor "$adv" \
      --budget 300 >/dev/null 2>&1
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
        s = summary.setdefault(adv, {"regions": 0, "advised": 0.0, "random": 0.0, "first_try": 0})
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
    f.write(f"# Search efficiency ({backend}, {env['device']}, {env['cores']} threads)\n\n")
    f.write("Candidates evaluated until one is within 2% of the best measured one: the advisor's order "
            "versus the expected number over random orders of the same candidates (all candidates "
            "measured from an empty tuning DB). `none` = the space's own order.\n\n")
    f.write("| advisor | regions | mean advised | mean random | best found first |\n|---|---|---|---|---|\n")
    for adv, s in summary.items():
        f.write(f"| {adv} | {s['regions']} | {s['mean_advised']:.2f} | {s['mean_random']:.2f} | {s['first_try']} |\n")
    f.write("\n| model | advisor | region | phase | evaluated | advised | random |\n|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r['model']} | {r['advisor']} | {r['region']} | {r['phase']} | {r['evaluated']} | {r['advised']} | {r['random_expected']:.1f} |\n")
print(open(out + ".md").read().split("\n\n| model")[0])
PY
