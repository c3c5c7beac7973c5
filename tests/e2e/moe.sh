#!/usr/bin/env bash
# Mixture-of-experts models through the binary: synth-model's tiny-qwen3-moe and tiny-mixtral (one
# sharded as the Hub stores large models), inspect's expert fields (also of the config-only
# qwen3-30b-a3b preset), greedy generate on the CPU backend, compile --backend cpu and the plan
# giving the same tokens, the CUDA backend's tokens equal to the CPU's where a GPU exists, and
# one-line errors (exit 2) for corrupted copies: an expert missing from the shards, a router of the wrong shape, more experts
# per token than experts.
set -euo pipefail
bin=${AC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/expect_error.bash"

"$bin" synth-model --preset tiny-qwen3-moe --out "$tmp/qm" --seed 1 --max-shard-size 4000000 --quiet >/dev/null
"$bin" synth-model --preset tiny-mixtral --out "$tmp/mx" --seed 2 --quiet >/dev/null
[ -f "$tmp/qm/model.safetensors.index.json" ] && [ -f "$tmp/qm/model-00001-of-00003.safetensors" ] || fail "not sharded: $(ls "$tmp/qm")"

# ---- inspect
"$bin" inspect "$tmp/qm" --json >"$tmp/qm.json"
"$bin" inspect "$tmp/mx" --json >"$tmp/mx.json"
"$bin" synth-model --preset qwen3-30b-a3b --out "$tmp/q30" --config-only >"$tmp/q30.out"
grep -q "config only" "$tmp/q30.out" || fail "synth-model --config-only: $(cat "$tmp/q30.out")"
[ ! -e "$tmp/q30/model.safetensors" ] && [ ! -e "$tmp/q30/model.safetensors.index.json" ] || fail "config-only wrote weights"
"$bin" inspect "$tmp/q30" --config-only --json >"$tmp/q30.json"
# Its 61 GB of weights are refused, before anything is written, where the disk lacks the room (a
# RAM disk smaller than that, when there is one; never tried where they would fit).
shm=/dev/shm/ac-moe-test-$$
if [ -d /dev/shm ] && [ "$(df --output=avail -B1 /dev/shm | tail -1)" -lt 61000000000 ]; then
  expect_error "--out $shm: the weights need 61.06 GB, the disk has .* GB free" \
    "$bin" synth-model --preset qwen3-30b-a3b --out "$shm" --quiet
  [ -z "$(ls -A /dev/shm | grep "ac-moe-test-$$")" ] || { rm -rf "$shm" /dev/shm/.ac-moe-test-$$*; fail "a refused synth-model left files"; }
fi
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
q, m, big = (json.load(open(f"{t}/{n}.json")) for n in ("qm", "mx", "q30"))
assert q["architecture"] == "qwen3_moe" and m["architecture"] == "mixtral", (q["architecture"], m["architecture"])
assert q["moe"] == {"experts": 8, "experts_per_token": 2, "expert_intermediate_size": 32, "renormalise_top_k": True,
                    "sparse_layers": [0, 2, 3], "dense_layers": [1]}, q["moe"]
assert len(q["files"]) == 3, q["files"]
assert m["moe"]["sparse_layers"] == [0, 1] and m["moe"]["dense_layers"] == [] and m["attention_window"] == 16, m
# Active parameters: everything but the 6 experts per sparse layer the router leaves out.
per_expert = 3 * 32 * 64
assert q["active_parameters_per_token"] == q["parameters"] - 3 * 6 * per_expert, q
assert q["decode_step_weight_bytes"] == 2 * (q["active_parameters_per_token"] - 151936 * 64 + 64), q
assert big["weights"] == "none (config only)" and big["moe"]["experts"] == 128 and len(big["moe"]["sparse_layers"]) == 48
assert big["parameters"] == 30532122624 and big["active_parameters_per_token"] == 3353032704, big
assert big["bytes"] == 2 * 30532122624
PY
# The same model with FP8 experts and projections: a decode step reads their stored fp8 bytes and
# scales (the picked 2 of 8 experts), counted here from the safetensors header.
"$bin" synth-model --preset tiny-qwen3-moe --out "$tmp/qm8" --seed 1 --weights fp8-block --quiet >/dev/null
"$bin" inspect "$tmp/qm8" --json >"$tmp/qm8.json"
python3 - "$tmp" <<'PY'
import json, struct, sys
t = sys.argv[1]
q, q8 = json.load(open(f"{t}/qm.json")), json.load(open(f"{t}/qm8.json"))
raw = open(f"{t}/qm8/model.safetensors", "rb").read()
hdr = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
nbytes = lambda e: e["data_offsets"][1] - e["data_offsets"][0]
saved = 0.0
for name, e in hdr.items():
    if name == "__metadata__" or e["dtype"] != "F8_E4M3":
        continue
    numel = e["shape"][0] * e["shape"][1]
    stored = nbytes(e) + nbytes(hdr[name[:-len("weight")] + "weight_scale_inv"])
    saved += (2 * numel - stored) * (2 / 8 if ".experts." in name else 1)
assert saved > 0
assert abs(q8["decode_step_weight_bytes"] - (q["decode_step_weight_bytes"] - saved)) <= 1, (q8["decode_step_weight_bytes"], q["decode_step_weight_bytes"], saved)
assert q8["quantization"].startswith("fp8: fp8 e4m3 weights, block 128x128"), q8["quantization"]
PY
"$bin" inspect "$tmp/qm8" >"$tmp/qm8.txt"
grep -qE "^quantization  fp8: .*; [0-9.]+ (B|KB|MB|GB) stored, [0-9.]+ (B|KB|MB|GB) loaded$" "$tmp/qm8.txt" ||
  fail "inspect's quantization line: $(grep quantization "$tmp/qm8.txt")"
"$bin" inspect "$tmp/qm" >"$tmp/qm.txt"
for line in "experts       8 per sparse layer, 2 per token" "sparse layers 0, 2-3" "dense layers  1" "active  " "decode step"; do
  grep -q "^$line" "$tmp/qm.txt" || fail "inspect text lacks '$line': $(cat "$tmp/qm.txt")"
done
"$bin" inspect "$tmp/mx" >"$tmp/mx.txt"
grep -q "each attending to the last 16" "$tmp/mx.txt" || fail "inspect text lacks the mixtral window"
"$bin" inspect "$tmp/qm" --graph >"$tmp/qm.graph"
[ "$(grep -c "moe_mlp .*experts=8 top_k=2 expert_intermediate=32 renormalised" "$tmp/qm.graph")" -eq 3 ] ||
  fail "inspect --graph lacks the moe_mlp ops"
expect_error "no model.safetensors" "$bin" inspect "$tmp/q30"
expect_error "--config-only: --graph and --regions need the weights" "$bin" inspect "$tmp/q30" --config-only --graph

# ---- generate greedy on the CPU backend; compile --backend cpu and the plan gives the same tokens
for m in qm mx; do
  # 6 + 24 positions: past tiny-mixtral's window of 16.
  "$bin" generate "$tmp/$m" --prompt-tokens 11,12,13,14,15,16 --max-tokens 24 --backend cpu --json >"$tmp/$m.ref.json"
  "$bin" compile "$tmp/$m" --out "$tmp/$m.plan" --db "$tmp/t.db" --backend cpu --budget 20 --json >"$tmp/$m.compile.json" 2>/dev/null
  "$bin" generate "$tmp/$m" --prompt-tokens 11,12,13,14,15,16 --max-tokens 24 --plan "$tmp/$m.plan" --json >"$tmp/$m.plan.json"
done
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
for m in ("qm", "mx"):
    ref, plan, comp = (json.load(open(f"{t}/{m}.{k}.json")) for k in ("ref", "plan", "compile"))
    assert len(ref["tokens"]) == 24 or ref.get("finish_reason") == "stop", ref
    assert plan["tokens"] == ref["tokens"], (m, plan["tokens"], ref["tokens"])
    assert comp["e2e"]["ok"], comp["e2e"]
    rep = json.load(open(f"{t}/{m}.plan/report.json"))
    patterns = {r["summary"]["pattern"] for r in rep["regions"]}
    assert "rms_norm moe_mlp" in patterns, patterns
PY

# ---- the CUDA backend runs MoE models on its generic routes (reference kernels, cuBLAS). Without
# a usable GPU the error is the backend's unavailability, as for a dense model; with one, the
# reference route's greedy tokens (f32 throughout, like the CPU) equal the CPU backend's.
"$bin" synth-model --preset tiny-qwen3 --out "$tmp/dense" --quiet >/dev/null
set +e; "$bin" generate "$tmp/dense" --prompt-tokens 1,2 --max-tokens 1 --backend cuda >/dev/null 2>"$tmp/dense.err"; dense_rc=$?; set -e
for m in qm mx; do
  if [ $dense_rc -eq 0 ]; then
    "$bin" generate "$tmp/$m" --prompt-tokens 3,1,4,1,5 --max-tokens 16 --ignore-eos --backend cuda --cuda-route reference \
      --json >"$tmp/$m.cuda.json"
    "$bin" generate "$tmp/$m" --prompt-tokens 3,1,4,1,5 --max-tokens 16 --ignore-eos --backend cpu --json >"$tmp/$m.cpu.json"
    python3 -c "import json,sys; a,b=(json.load(open(f))['tokens'] for f in sys.argv[1:]); assert a==b,(a,b)" \
      "$tmp/$m.cuda.json" "$tmp/$m.cpu.json" || fail "$m: cuda tokens differ from cpu"
  else
    expect_error "--backend cuda" "$bin" generate "$tmp/$m" --prompt-tokens 1,2 --backend cuda
    cmp -s "$tmp/err" "$tmp/dense.err" || fail "cuda unavailable: MoE error '$(cat "$tmp/err")' is not the dense model's '$(cat "$tmp/dense.err")'"
  fi
done

# ---- corrupted copies: one line, exit 2, naming the tensor or field
cp -r "$tmp/qm" "$tmp/missing"
python3 - "$tmp/missing" <<'PY'
import json, struct, sys
d = sys.argv[1]
name = "model.layers.2.mlp.experts.5.up_proj.weight"
idx = json.load(open(f"{d}/model.safetensors.index.json"))
shard = idx["weight_map"].pop(name)
raw = open(f"{d}/{shard}", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
out, blob = {"__metadata__": head.pop("__metadata__", {})}, b""
for k, v in sorted(head.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    if k == name: continue
    b, e = v["data_offsets"]; v["data_offsets"] = [len(blob), len(blob) + e - b]; blob += data[b:e]; out[k] = v
h = json.dumps(out).encode(); h += b" " * (-len(h) % 8)
open(f"{d}/{shard}", "wb").write(struct.pack("<Q", len(h)) + h + blob)
json.dump(idx, open(f"{d}/model.safetensors.index.json", "w"))
PY
expect_error "model.safetensors.index.json: missing tensor \"model.layers.2.mlp.experts.5.up_proj.weight\"" \
  "$bin" generate "$tmp/missing" --prompt-tokens 1,2 --backend cpu

cp -r "$tmp/mx" "$tmp/router"
python3 - "$tmp/router/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
raw = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
name = "model.layers.1.block_sparse_moe.gate.weight"
b, e = head[name]["data_offsets"]
head[name]["shape"] = [64, 4]  # transposed: the same bytes, the wrong shape
h = json.dumps(head, separators=(",", ":")).encode()
assert len(h) <= n, (len(h), n)
h += b" " * (n - len(h))
open(p, "wb").write(bytes(raw[:8]) + h + bytes(raw[8 + n:]))
PY
expect_error "tensor \"model.layers.1.block_sparse_moe.gate.weight\" has shape \[64, 4\], expected \[4, 64\]" \
  "$bin" compile "$tmp/router" --out "$tmp/rp" --db "$tmp/t.db" --backend cpu --budget 5

cp -r "$tmp/qm" "$tmp/topk"
python3 - "$tmp/topk/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["num_experts_per_tok"] = 9
json.dump(c, open(sys.argv[1], "w"))
PY
expect_error "config.json: num_experts_per_tok: 9 is more than num_experts (8)" "$bin" inspect "$tmp/topk"
expect_error "num_experts_per_tok" "$bin" generate "$tmp/topk" --prompt-tokens 1,2 --backend cpu
echo "moe: ok"
