#!/usr/bin/env bash
# tools/timeline_summary.py on a hand-made decode-step timeline (the CSV that
# AGENTCOMPILE_TIMELINE writes): launches grouped in start order, the per-kind summary, and the
# stage marks per kernel from the launch's first wait return and from each block's own, the
# waves of a kernel's blocks and where they started against the kernel before. No GPU.
set -euo pipefail
src=${AC_SRC:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/t.csv" <<'CSV'
kernel,block,sm,start_ns,wait_ns,end_ns,mark0_ns,mark1_ns,mark2_ns,mark3_ns,mark4_ns,mark5_ns
gemv__fused__w_bf16__block256__sm90,0,0,0,1000,5000,2000,4000,-1,-1,-1,-1
gemv__fused__w_bf16__block256__sm90,1,1,100,1500,6000,2500,4500,-1,-1,-1,-1
attn_decode__cluster__w_bf16__block256__sm90,0,2,5500,6500,9000,7000,-1,-1,-1,-1,-1
attn_decode__cluster__w_bf16__block256__sm90,1,3,5600,6500,9500,7200,-1,-1,-1,-1,-1
CSV
python3 "$src/tools/timeline_summary.py" "$tmp/t.csv" > "$tmp/sum.txt"
grep -q "^step: 2 launches, 4 blocks, 9.5 us" "$tmp/sum.txt" || fail "summary: $(cat "$tmp/sum.txt")"

python3 "$src/tools/timeline_summary.py" "$tmp/t.csv" --marks attn_decode > "$tmp/attn.txt"
python3 - "$tmp/attn.txt" <<'PY'
import sys
rows = {l.split()[0]: [float(x) for x in l.split()[1:]] for l in open(sys.argv[1]) if l.split() and l.split()[0] in ("mark0", "end")}
assert rows["mark0"] == [0.6, 0.7, 0.6], rows  # (0.5 + 0.7) / 2, the last, from each block's own wait (the same)
assert rows["end"] == [2.75, 3.0, 2.75], rows
PY
python3 "$src/tools/timeline_summary.py" "$tmp/t.csv" --marks gemv > "$tmp/gemv.txt"
python3 - "$tmp/gemv.txt" <<'PY'
import sys
rows = {l.split()[0]: [float(x) for x in l.split()[1:]] for l in open(sys.argv[1]) if l.split() and (l.split()[0] == "end" or l.split()[0][4:].isdigit())}
assert sorted(rows) == ["end", "mark0", "mark1"], rows  # marks never reached are not listed
assert rows["mark0"] == [1.25, 1.5, 1.0], rows  # block 1 waited 0.5 us longer: its own 1.0
assert rows["mark1"] == [3.25, 3.5, 3.0], rows
PY
# --waves: the GEMV's two blocks (one per SM) both started before the first wait return (1.0 us)
# and end 4.0 and 5.0 us after it.
python3 "$src/tools/timeline_summary.py" "$tmp/t.csv" --waves gemv > "$tmp/waves.txt"
python3 - "$tmp/waves.txt" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
assert lines[0].startswith("1 launches of gemv.fused") and "2 blocks, 2 started by the first wait return, 1-1 per SM" in lines[0], lines
hist = {l.split()[0]: float(l.split()[1]) for l in lines[1:]}
assert hist == {"4-5": 1.0, "5-6": 1.0}, hist
PY
# --residency: B's first block starts at 5.5 us, when A still runs on SM 1 only (SM 0 ended at
# 5.0); B's blocks 0-2 start before A's last end (6.0): two on the three other SMs, one on SM 1;
# block 3 after it, on SM 1.
cat > "$tmp/r.csv" <<'CSV'
kernel,block,sm,start_ns,wait_ns,end_ns,mark0_ns,mark1_ns,mark2_ns,mark3_ns,mark4_ns,mark5_ns
gemv__fused__w_bf16__block256__sm90,0,0,0,1000,5000,-1,-1,-1,-1,-1,-1
gemv__fused__w_bf16__block256__sm90,1,1,100,1500,6000,-1,-1,-1,-1,-1,-1
attn_decode__cluster__w_bf16__block256__sm90,0,2,5500,6500,9000,-1,-1,-1,-1,-1,-1
attn_decode__cluster__w_bf16__block256__sm90,1,3,5600,6500,9500,-1,-1,-1,-1,-1,-1
attn_decode__cluster__w_bf16__block256__sm90,2,1,5800,6500,9500,-1,-1,-1,-1,-1,-1
attn_decode__cluster__w_bf16__block256__sm90,3,1,6200,6500,9500,-1,-1,-1,-1,-1,-1
CSV
python3 "$src/tools/timeline_summary.py" "$tmp/r.csv" --residency attn_decode > "$tmp/res.txt"
grep -q "^1 launches of attn_decode.cluster{w_bf16,block256}: 4 blocks; beside the kernel before 3.0: 1.0 on the 1.0 SMs still running it (1.00 per SM), 2.0 on the other 3.0 (0.67 per SM); after it 1.0: 1.0 on those SMs, 0.0 on the others$" "$tmp/res.txt" ||
  fail "--residency: $(cat "$tmp/res.txt")"
if python3 "$src/tools/timeline_summary.py" "$tmp/r.csv" --residency gemv > /dev/null 2>&1; then
  fail "--residency of the first launch only exited 0"
fi
if python3 "$src/tools/timeline_summary.py" "$tmp/t.csv" --waves nosuchkernel > /dev/null 2>&1; then
  fail "--waves of no launch exited 0"
fi
if python3 "$src/tools/timeline_summary.py" "$tmp/t.csv" --marks nosuchkernel > "$tmp/none.txt" 2>&1; then
  fail "--marks of no launch exited 0"
fi
grep -q "no launch of a kernel holding 'nosuchkernel'" "$tmp/none.txt" || fail "no-launch message: $(cat "$tmp/none.txt")"
echo "timeline_summary: ok"
