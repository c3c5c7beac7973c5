#!/usr/bin/env python3
# Lists the kernels in the agentcompile kernel cache ($AGENTCOMPILE_KERNEL_CACHE): each entry's
# kernel name (from its cubin's symbol strings) with the registers, spill and shared bytes ptxas
# reported when it was compiled. Entries of the same name with other counts are other sources of
# that variant (e.g. experiment builds): each is listed. Usage: kernel_cache_regs.py [SUBSTR...]
import json, os, re, sys

d = os.environ.get("AGENTCOMPILE_KERNEL_CACHE") or os.path.expanduser("~/.cache/agentcompile/kernels")
want = sys.argv[1:]
rows = set()
for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
    if not f.endswith(".ackc"):
        continue
    data = open(os.path.join(d, f), "rb").read()
    body = data[6 + 65:]
    n = int.from_bytes(body[:8], "little")
    meta = json.loads(body[8:8 + n])
    cubin = body[8 + n:]
    names = sorted({m.decode() for m in re.findall(rb"[a-z_0-9]+__sm\d+", cubin)}, key=len)
    name = names[-1] if names else "?"
    if want and not any(w in name for w in want):
        continue
    rows.add((name, meta.get("registers"), meta.get("spill_bytes"), meta.get("shared_bytes")))
for r in sorted(rows):
    print(f"{r[0]}  registers {r[1]}  spill {r[2]}  shared {r[3]}")
