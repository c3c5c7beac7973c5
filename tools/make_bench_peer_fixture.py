#!/usr/bin/env python3
"""Turns an HF reference fixture (tests/fixtures/hf/<name>: expected.json + expected.safetensors,
made by tools/make_hf_fixtures.py with HF transformers on the GPU machine) into a recorded peer
record (schema agentcompile.peer/1, docs/bench.md) holding only the reference: the prompt, HF's
greedy tokens and their top-2 margins (no runner-up ids or timings: the fixture has none).
CI checks the semantic validator against it. Standard library only:

    python3 tools/make_bench_peer_fixture.py tests/fixtures/hf/qwen3_mha_untied_5x \
        tests/fixtures/bench/qwen3_mha_untied_5x.hf-eager.peer.json
"""
import json
import os
import struct
import sys


def read_f32_tensor(path, name):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    info = json.loads(data[8:8 + n])[name]
    if info["dtype"] != "F32":
        raise SystemExit(f"error: {path}: {name} is {info['dtype']}, expected F32")
    begin, end = info["data_offsets"]
    raw = data[8 + n + begin:8 + n + end]
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: make_bench_peer_fixture.py FIXTURE_DIR OUT.json")
    folder, out = sys.argv[1], sys.argv[2]
    exp = json.load(open(os.path.join(folder, "expected.json")))
    margins = read_f32_tensor(os.path.join(folder, "expected.safetensors"), "greedy_margins")
    record = {
        "schema": "agentcompile.peer/1", "peer": "hf-eager", "model": os.path.basename(os.path.normpath(folder)),
        "environment": {"torch": exp["torch"], "transformers": exp["transformers"], "note": exp["reference"],
                        "recipe": "tools/make_bench_peer_fixture.py " + folder},
        "runs": [],
        "references": [{"source": "hf " + exp["reference"], "prompt": exp["prompt"], "tokens": exp["greedy"],
                        "margins": margins}],
    }
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
