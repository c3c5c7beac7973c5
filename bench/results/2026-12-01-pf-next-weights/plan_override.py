# The compiled plan's cuda_fast as an AGENTCOMPILE_FAST_CONFIG override (batch-1 fields), so a
# run can add experimental keys on top of the plan's points.
import json, sys
c = json.load(open(sys.argv[1]))["cuda_fast"]
parts = [f"{k}={g['block']}:{g['rows']}:{g['unroll']}:{g['splitk']}" for k, g in sorted(c["gemv"].items())]
for k in ["attn_block", "attn_cluster", "attn_cluster_long", "attn_ilp", "attn_long_from", "attn_split", "attn_split_long",
          "attn_tile", "qkv_post_block"]:
    if k in c: parts.append(f"{k}={c[k]}")
for k in ["cuda_graph", "pdl"]:
    if k in c: parts.append(f"{k}={int(c[k])}")
for k in ["attn_o", "attn_o_late", "persistent"]:
    if k in c: parts.append(f"{k}={int(c[k])}")
print(",".join(parts))
