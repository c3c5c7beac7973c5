#!/usr/bin/env python3
"""The include graph of src/, include/agentcompile/ and kernels/ against the layering.

    core <- model, tokenizer, jinja <- ir, chat <- plan <- tuning <- {compiler, backends/*}
         <- runtime <- bench, server <- cli

A layer includes only layers of a lower rank; layers of one rank never include each other (no
backend includes another; the compiler includes no backend); the runtime never includes the
compiler. Edges listed in known_violations.txt (one "from-file -> included-file" per line) are
tolerated while the code moves towards the layering; an entry that no longer occurs fails the
check too, so the list only shrinks.
    check_layering.py REPO_ROOT [--allow FILE]   exit 1 on a violation, printing each
"""
import os
import re
import sys

RANK = {
    "core": 0,
    "model": 1, "tokenizer": 1, "jinja": 1,
    "ir": 2, "chat": 2,
    "plan": 3,
    "tuning": 4,
    "compiler": 5, "backends/cpu": 5, "backends/cuda": 5,
    "runtime": 6,
    "bench": 7, "server": 7,
    "cli": 8,
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(rel):
    """The layer of a repository-relative path (None: outside the layered tree)."""
    parts = rel.split("/")
    if parts[0] == "kernels":
        return "backends/cuda"  # the CUDA backend's kernel templates
    if parts[0] == "src":
        parts = parts[1:]
    elif parts[:2] == ["include", "agentcompile"]:
        parts = parts[2:]
    else:
        return None
    if len(parts) < 2:
        return None
    name = parts[0] + "/" + parts[1] if parts[0] == "backends" else parts[0]
    if name not in RANK:
        raise SystemExit(f"{rel}: folder {name!r} has no place in the layering (add it to RANK)")
    return name


def resolve(root, src_rel, inc):
    """The repository-relative path an include names, or None for a third-party header."""
    here = os.path.dirname(src_rel)
    for base in (here, "include", "src"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def allowed(a, b):
    if a == b:
        return True
    if a == "runtime" and b == "compiler":
        return False
    return RANK[b] < RANK[a]


def edges(root):
    for top in ("src", "include/agentcompile", "kernels"):
        for dp, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(dp, f), root)
                a = layer_of(rel)
                if a is None:
                    continue
                with open(os.path.join(root, rel), errors="replace") as fh:
                    for line in fh:
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        tgt = resolve(root, rel, m.group(1))
                        b = layer_of(tgt) if tgt else None
                        if b is not None and not allowed(a, b):
                            yield rel, tgt, a, b


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    known = set()
    if "--allow" in sys.argv:
        with open(sys.argv[sys.argv.index("--allow") + 1]) as fh:
            known = {l.strip() for l in fh if l.strip() and not l.startswith("#")}
    bad, seen = [], set()
    for rel, tgt, a, b in edges(root):
        key = f"{rel} -> {tgt}"
        seen.add(key)
        if key not in known:
            bad.append(f"{key}  ({a} may not include {b})")
    stale = sorted(known - seen)
    for line in bad:
        print("layering violation:", line)
    for line in stale:
        print("known violation no longer occurs (remove it from the list):", line)
    print(f"{len(seen)} edges against the layering, {len(known & seen)} of them known")
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main())
