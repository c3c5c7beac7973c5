#!/usr/bin/env bash
# Runs the chat-template conformance test (tests/jinja/test_conformance.cpp, in jinja_tests) and
# writes its outcome as the "Conformance" section of docs/chat-templates.md: per-template counts,
# every pair that does not conform, and the pairs where both engines fail (with the reference's
# reason). The section is only ever written from a real run; the rest of the file is left as it is.
#
#   tools/chat_template_conformance.sh [BUILD_DIR]     (default: build, configured with cmake)
#   AC_JINJA_TESTS=PATH tools/chat_template_conformance.sh   (a jinja_tests already built)
#
# Exits 0 once the section is written, whatever the test found (it prints the counts); 1 when the
# test could not run or wrote no results.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
doc=$here/docs/chat-templates.md

if [ -n "${AC_JINJA_TESTS:-}" ]; then
  binary=$AC_JINJA_TESTS  # a jinja_tests built elsewhere
else
  [ -f "$build/CMakeCache.txt" ] || { echo "chat_template_conformance: $build is not a configured build folder (cmake -S . -B build)" >&2; exit 1; }
  cmake --build "$build" --target jinja_tests -j 2 >/dev/null || { echo "chat_template_conformance: building jinja_tests failed" >&2; exit 1; }
  binary=$(find "$build" -name jinja_tests -type f -perm -u+x | head -1)
fi
[ -n "$binary" ] && [ -x "$binary" ] || { echo "chat_template_conformance: no jinja_tests binary (${binary:-none under $build})" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
AC_CONFORMANCE_OUT=$tmp/results.json "$binary" --gtest_filter='ChatTemplateConformance.EveryCaseMatchesTheReference' \
  >"$tmp/test.log" 2>&1 || true
grep -h '^chat-template conformance:' "$tmp/test.log" || true
[ -s "$tmp/results.json" ] || { echo "chat_template_conformance: the test wrote no results:" >&2; tail -20 "$tmp/test.log" >&2; exit 1; }

python3 - "$tmp/results.json" "$doc" <<'EOF'
import json, os, sys
from collections import OrderedDict

results_path, doc_path = sys.argv[1], sys.argv[2]
r = json.load(open(results_path, encoding="utf-8"))
begin, end = "<!-- conformance: begin (tools/chat_template_conformance.sh writes this section) -->", "<!-- conformance: end -->"
statuses = ["identical", "both-fail", "different", "ours-fail", "reference-fail"]

def cell(text, limit=240):
    text = " ".join(str(text).split())
    text = text if len(text) <= limit else text[:limit] + "..."
    return text.replace("|", "\\|")

counts = OrderedDict((t["name"], OrderedDict((s, 0) for s in statuses)) for t in r["templates"])
for x in r["results"]:
    counts[x["template"]][x["status"]] += 1
bad = [x for x in r["results"] if x["status"] != "identical" and (x["status"] != "both-fail" or "problem" in x)]
total = len(r["results"])
same = sum(c["identical"] for c in counts.values())
both = sum(c["both-fail"] for c in counts.values())

out = [begin, "## Conformance", ""]
out.append(f"Every template below rendered every conversation of `tests/jinja/conversations.json`, with "
           f"`add_generation_prompt` true and false, by our engine and by the reference, {r['reference']} "
           f"(the engine of transformers.js), with the context transformers.js builds and the clock fixed at "
           f"{r['now']}. A pair conforms when both give the same bytes, or both fail and ours says why in one "
           f"line. This section is written by `tools/chat_template_conformance.sh` from a run of "
           f"`jinja_tests`; do not edit it by hand.")
out.append("")
out.append(f"**{same + both - sum(1 for x in bad if x['status'] == 'both-fail')} of {total} renders conform** "
           f"({same} identical, {both} failing on both sides); {len(bad)} do not.")
out.append("")
out.append("| template | from | identical | both fail | different | ours fails | reference fails |")
out.append("|---|---|---:|---:|---:|---:|---:|")
origins = {t["name"]: t["origin"] for t in r["templates"]}
for name, c in counts.items():
    out.append(f"| `{name}` | {cell(origins[name], 120)} | " + " | ".join(str(c[s]) for s in statuses) + " |")
out.append("")
out.append("### Pairs that do not conform")
out.append("")
if not bad:
    out.append("None.")
else:
    out.append("| template | conversation | variant | status | what differs |")
    out.append("|---|---|---|---|---|")
    for x in bad:
        out.append(f"| `{x['template']}` | `{x['case']}` | {x['variant']} | {x['status']} | {cell(x.get('problem', ''))} |")
out.append("")
out.append("### Where both fail")
out.append("")
out.append("The reference refuses these conversations (the template raises, or the conversation has a shape the "
           "template cannot take, such as `null` content); ours must refuse them too.")
out.append("")
groups = OrderedDict()
for x in r["results"]:
    if x["status"] == "both-fail":
        groups.setdefault((x["template"], x.get("reference_error", "")), OrderedDict()).setdefault(x["case"], []).append(x["variant"])
if not groups:
    out.append("None.")
else:
    out.append("| template | the reference's error | conversations |")
    out.append("|---|---|---|")
    for (template, error), cases in groups.items():
        names = ", ".join(f"`{c}`" + ("" if len(v) == 2 else f" ({v[0]})") for c, v in cases.items())
        out.append(f"| `{template}` | {cell(error, 120)} | {names} |")
out.append(end)
section = "\n".join(out) + "\n"

text = open(doc_path, encoding="utf-8").read() if os.path.exists(doc_path) else "# Chat templates\n"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    text = head + section.rstrip("\n") + rest.split(end, 1)[1]
else:
    text = text.rstrip("\n") + "\n\n" + section
tmp = doc_path + ".tmp"
with open(tmp, "w", encoding="utf-8") as f:
    f.write(text)
os.replace(tmp, doc_path)
print(f"chat_template_conformance: wrote the Conformance section of {doc_path}: {len(bad)} of {total} renders do not conform")
EOF
