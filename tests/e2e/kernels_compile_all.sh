#!/usr/bin/env bash
# Every kernel family compiles with NVRTC for sm_80, sm_90 and sm_100 (no GPU needed), with a cold
# cache so the compile really happens; any failure fails the test.
set -euo pipefail
bin=${AC_BIN:?}
if ! "$bin" kernels --list >/dev/null 2>&1; then echo "kernels_compile_all: no CUDA backend in this build: skipped"; exit 0; fi
export AGENTCOMPILE_KERNEL_CACHE=$(mktemp -d); trap 'rm -rf "$AGENTCOMPILE_KERNEL_CACHE"' EXIT
# The listing: each family's space is its parameters' values times its types' domain (listed as
# the family allows it: two-type families such as gemm.wgmma say so), in text and JSON alike.
"$bin" kernels --list --json | python3 -c "
import json, math, sys
fams = json.load(sys.stdin)
for f in fams:
    want = math.prod(len(v) for v in f['params'].values()) * len(f['type_domain']) ** len(f['type_params'])
    assert f['space_size'] == want, (f['op'], f['family'], f['space_size'], want)
wg = [f for f in fams if (f['op'], f['family']) == ('gemm', 'wgmma')]
assert wg and wg[0]['type_domain'] == ['bf16', 'f16'], wg
"
"$bin" kernels --list | grep -E "^gemm +wgmma .* W=\{bf16,f16\}$" >/dev/null || { echo "kernels --list: gemm.wgmma's type domain"; exit 1; }
for arch in sm_80 sm_90 sm_100; do
  "$bin" kernels --compile-all --arch $arch --json > "$AGENTCOMPILE_KERNEL_CACHE/$arch.json"
  python3 - "$AGENTCOMPILE_KERNEL_CACHE/$arch.json" $arch <<'PY'
import json, sys
variants = json.load(open(sys.argv[1]))
assert len(variants) >= 20, len(variants)
bad = [v for v in variants if v["status"] != "ok"]
assert not bad, bad[:3]
assert all(v["registers"] > 0 and v["spills"] >= 0 and v["shared_bytes"] >= 0 for v in variants)
assert all(v["name"].endswith(sys.argv[2].replace("_", "")) for v in variants)
print(sys.argv[2], len(variants), "variants ok")
PY
done
# A second run is served from the cache.
"$bin" kernels --compile-all --arch sm_90 --json | python3 -c "import json,sys; v=json.load(sys.stdin); assert all(x['cached'] for x in v), 'not cached'"
# The developer timeline (AGENTCOMPILE_TIMELINE) compiles every variant with its instrumentation:
# all compile, none is the cached plain binary (the sources differ).
AGENTCOMPILE_TIMELINE=$AGENTCOMPILE_KERNEL_CACHE/timeline.csv "$bin" kernels --compile-all --arch sm_90 --json |
  python3 -c "import json,sys; v=json.load(sys.stdin); assert len(v) >= 20 and all(x['status'] == 'ok' and not x['cached'] for x in v), [x for x in v if x['status'] != 'ok' or x['cached']][:3]"
"$bin" kernels --compile-all --arch sm_12 >/dev/null 2>&1 && { echo "bad arch accepted"; exit 1; }
echo "kernels_compile_all: ok"
