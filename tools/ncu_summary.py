#!/usr/bin/env python3
"""One line per kernel of Nsight Compute's text reports (tools/gpu_fp8_ncu.sh, gpu_gemm_ncu.sh):
its name, duration, DRAM / L2 / SM throughput, registers, achieved occupancy, issue slots busy and
the three largest stall reasons (warps per issued instruction, from the scripts' stall metrics).
    tools/ncu_summary.py DIR PREFIX CASE...   reads DIR/PREFIX-CASE.txt for each CASE"""
import re
import sys

# A kernel's section starts with its name (demangled, may hold spaces), grid x block, context.
HEAD = r"\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context"


def main(folder, prefix, cases):
    for case in cases:
        try:
            text = open(f"{folder}/{prefix}-{case}.txt").read()
        except OSError:
            continue
        for block in re.split(r"\n  (?=[^\n]*" + HEAD + ")", text)[1:]:
            name = re.split(r" " + HEAD, block)[0].strip()

            def num(label):
                m = re.search(re.escape(label) + r"\s+(\S+)\s+([\d.,]+)", block)
                return (m.group(2) + " " + m.group(1)) if m else "?"

            stalls = sorted(((float(v.replace(",", "")), k) for k, v in re.findall(
                r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio\s+\S*\s+([\d.,]+)", block)), reverse=True)
            print(f"{case:15s} {name[:58]:58s} {num('Duration'):>12s}  DRAM {num('DRAM Throughput'):>8s}  "
                  f"L2 {num('L2 Cache Throughput'):>8s}  SM {num('Compute (SM) Throughput'):>8s}  "
                  f"regs {num('Registers Per Thread'):>6s}  occ {num('Achieved Occupancy'):>8s}  "
                  f"issue {num('Issue Slots Busy'):>8s}  stalls " + ", ".join(f"{k} {v:.2f}" for v, k in stalls[:3]))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: tools/ncu_summary.py DIR PREFIX CASE...")
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
