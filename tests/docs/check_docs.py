#!/usr/bin/env python3
"""Checks README.md and docs/*.md for what user documentation must not hold.

Fails (exit 1, one line per finding) on:
  - a URL other than a local example (http://127.0.0.1..., http://localhost...);
  - a path outside the repository (../shared, /work/);
  - lab-diary words: session, lease, helper, "issue N", "#N", "run N" (the docs describe the tool
    as it is, not the history of its development);
  - a relative link ([text](path) or ![alt](path)) to a file or folder that does not exist.

Usage: check_docs.py REPO_ROOT      check the repository's README.md and docs/*.md
       check_docs.py --self-test    check that each rule catches a planted example
"""
import os
import re
import sys
import tempfile

LOCAL_URL = re.compile(r"https?://(127\.0\.0\.1|localhost)([:/]|$)")
URL = re.compile(r"https?://\S+")
OUTSIDE = re.compile(r"\.\./shared|/work/")
DIARY = re.compile(
    r"\b(sessions?|leases?|helpers?)\b|\bissues? #?\d+|(?<![\w&])#\d+\b|\bruns? \d+\b(?![.,]\d|%)",
    re.IGNORECASE)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def documents(root):
    paths = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        paths += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    return [p for p in paths if os.path.isfile(p)]


def check_file(path, root):
    findings = []
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        where = f"{rel}:{number}"
        for m in URL.finditer(line):
            if not LOCAL_URL.match(m.group(0)):
                findings.append(f"{where}: URL {m.group(0)}")
        for m in OUTSIDE.finditer(line):
            findings.append(f"{where}: path outside the repository ({m.group(0)})")
        for m in DIARY.finditer(line):
            findings.append(f"{where}: diary word '{m.group(0)}'")
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # URLs are checked above; in-page anchors are not files
            file_part = target.split("#", 1)[0]
            if os.path.isabs(file_part):
                findings.append(f"{where}: absolute link {target}")
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not resolved.startswith(os.path.abspath(root) + os.sep):
                findings.append(f"{where}: link leaves the repository: {target}")
            elif not os.path.exists(resolved):
                findings.append(f"{where}: broken link {target}")
    return findings


def check(root):
    root = os.path.abspath(root)
    findings = []
    for path in documents(root):
        findings += check_file(path, root)
    return findings


def self_test():
    planted = {
        "README.md": "See [design](docs/design.md) and [gone](docs/missing.md).\n"
                     "Serve at http://127.0.0.1:8000/v1; fetch https://example.com/x.\n",
        "docs/design.md": "In session 12 we tried it on a lease (issue 9, #9, run 2).\n"
                          "Design at ../shared/DESIGN.md or /work/main.\n"
                          "![chart](../bench/results/none.svg) [ok](../README.md#top)\n",
    }
    wanted = ["docs/missing.md", "https://example.com/x", "'session'", "'lease'",
              "'issue 9'", "'#9'", "'run 2'", "(../shared)", "(/work/)", "none.svg"]
    with tempfile.TemporaryDirectory() as root:
        for name, text in planted.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        findings = "\n".join(check(root))
    missed = [w for w in wanted if w not in findings]
    spurious = [f for f in findings.split("\n") if "127.0.0.1" in f or "README.md#top" in f]
    if missed or spurious:
        print("self-test failed; missed:", missed, "spurious:", spurious, "\n" + findings)
        return 1
    print(f"self-test: {len(wanted)} planted problems found, local URL and anchor link accepted")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    findings = check(argv[1])
    for finding in findings:
        print(finding)
    if findings:
        print(f"{len(findings)} problem(s) in README.md and docs/*.md", file=sys.stderr)
        return 1
    print(f"README.md and docs/*.md: {len(documents(argv[1]))} files clean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
