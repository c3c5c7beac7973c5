#!/usr/bin/env python3
"""check_layering.py on small trees: it must refuse an upward include, a backend including
another, the runtime including the compiler, and a stale known-violation entry."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layering.py")


def run(files, allow=None):
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as fh:
                fh.write(text)
        args = [sys.executable, CHECK, root]
        if allow is not None:
            with open(os.path.join(root, "allow.txt"), "w") as fh:
                fh.write(allow)
            args += ["--allow", os.path.join(root, "allow.txt")]
        return subprocess.run(args, capture_output=True, text=True).returncode


base = {
    "include/agentcompile/core/a.h": "#pragma once\n",
    "include/agentcompile/compiler/c.h": '#include "agentcompile/core/a.h"\n',
    "include/agentcompile/backends/cpu/k.h": '#include "agentcompile/core/a.h"\n',
    "src/runtime/r.cpp": '#include "agentcompile/backends/cpu/k.h"\n#include <vector>\n',
}
cases = [
    ("clean", {}, None, 0),
    ("plan includes the compiler", {"src/plan/p.cpp": '#include "agentcompile/compiler/c.h"\n'}, None, 1),
    ("cuda includes cpu", {"src/backends/cuda/x.cpp": '#include "agentcompile/backends/cpu/k.h"\n'}, None, 1),
    ("compiler includes a backend", {"src/compiler/s.cpp": '#include "backends/cpu/../../../include/agentcompile/backends/cpu/k.h"\n'}, None, 1),
    ("runtime includes the compiler", {"src/runtime/e.cpp": '#include "agentcompile/compiler/c.h"\n'}, None, 1),
    ("known violation", {"src/plan/p.cpp": '#include "agentcompile/compiler/c.h"\n'},
     "src/plan/p.cpp -> include/agentcompile/compiler/c.h\n", 0),
    ("stale known violation", {}, "src/plan/p.cpp -> include/agentcompile/compiler/c.h\n", 1),
]
failed = 0
for name, extra, allow, want in cases:
    got = run({**base, **extra}, allow)
    ok = got == want
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {got}, expected {want}")
sys.exit(1 if failed else 0)
