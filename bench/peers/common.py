#!/usr/bin/env python3
"""Shared by the peers (hf_eager.py, torch_compiled.py): the workloads, the synthetic prompts
(the same ids as src/bench/workloads.cpp, so `agentcompile bench e2e` and the peers see the same
tokens; the bench refuses a peer record whose prompts differ), the environment and the output
record (schema "agentcompile.peer/1", docs/bench.md). No torch import here: the tests run it.

    python3 bench/peers/common.py prompt N ROW VOCAB   # prints the ids, comma-separated
"""
import json
import os
import re
import sys
import tempfile

MASK = (1 << 64) - 1
WORKLOADS = {"W1": (32, 256, 1), "W2": (128, 128, 1), "W3": (2048, 128, 1), "W4": (128, 1024, 1), "W5": (128, 128, 8)}


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def synthetic_prompt(n, row, vocab):
    """n ids in [3, vocab) for batch row `row`."""
    state, ids = 0x5EED0000 + row, []
    for _ in range(n):
        state, z = splitmix64(state)
        ids.append(3 + z % (vocab - 3))
    return ids


def parse_workloads(spec):
    """"W1,W2" and "P/G" or "P/GxB" items -> [(name, prompt, gen, batch)]."""
    out = []
    for item in spec.split(","):
        if item in WORKLOADS:
            out.append((item,) + WORKLOADS[item])
            continue
        m = re.fullmatch(r"(\d+)/(\d+)(?:x(\d+))?", item)
        if not m:
            raise SystemExit(f"error: --workloads: {item!r} is not a workload (W1..W5, P/G or P/GxB)")
        out.append((item, int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)))
    return out


def median(xs):
    s = sorted(xs)
    n = len(s)
    return 0.0 if n == 0 else (s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2]))


def kernel_driver_version():
    try:
        line = open("/proc/driver/nvidia/version").readline()
        m = re.search(r"Kernel Module\s+(\S+)", line)
        return m.group(1) if m else ""
    except OSError:
        return ""


def environment(torch, transformers, extra=None):
    env = {"python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
           "cuda": torch.version.cuda, "driver": kernel_driver_version()}
    env.update(extra or {})
    return env


def write_record(path, record):
    """Writes the record whole or not at all (temporary file in the same folder, then rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".peer-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def model_name(folder):
    return os.path.basename(os.path.normpath(os.path.abspath(folder)))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "prompt":
        print(",".join(map(str, synthetic_prompt(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))))
    else:
        raise SystemExit("usage: common.py prompt N ROW VOCAB")
