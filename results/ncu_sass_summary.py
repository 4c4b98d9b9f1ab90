"""Summary of ncu's per-instruction warp-state samples (the source page as
CSV: ncu -i REPORT --page source --csv --print-source sass > FILE): samples
by stall reason, by opcode, the instructions with the most samples, and the
global accesses with the most excess L2 sectors.
    python3 results/ncu_sass_summary.py FILE"""
import collections
import csv
import re
import sys

from sass_issue_model import chunk_loop

rows = list(csv.reader(open(sys.argv[1])))
header, data = rows[1], rows[2:]
col = {h: i for i, h in enumerate(header)}
SAMPLES = "Warp Stall Sampling (All Samples)"


def num(row, key):
    try:
        return float(row[col[key]].replace(",", ""))
    except (KeyError, ValueError):
        return 0.0


total = sum(num(r, SAMPLES) for r in data)
stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
print(f"{len(data)} SASS instructions, {total:.0f} warp samples")
print("\nby stall reason")
for s in sorted(stalls, key=lambda s: -sum(num(r, s) for r in data))[:10]:
    print(f"  {s:24s} {sum(num(r, s) for r in data) / total:6.1%}")
print("\nby opcode (share of samples, warp instructions executed)")
by, executed = collections.Counter(), collections.Counter()
for r in data:
    m = re.match(r"(@!?U?P\w+\s+)?([A-Z0-9_]+)", r[col["Source"]].strip())
    op = m.group(2) if m else "?"
    by[op] += num(r, SAMPLES)
    executed[op] += num(r, "Instructions Executed")
for op, v in by.most_common(20):
    print(f"  {op:12s} {v / total:6.1%} {executed[op]:12.0f}")
print("\ninstructions with the most samples (share, two main stall reasons)")
for r in sorted(data, key=lambda r: -num(r, SAMPLES))[:20]:
    top = sorted(((num(r, s), s) for s in stalls), reverse=True)[:2]
    print(f"  {num(r, SAMPLES) / total:5.1%} {r[col['Source']].strip()[:58]:58s} "
          + " ".join(f"{s}:{v:.0f}" for v, s in top))
print("\nglobal accesses by excess L2 sectors (excess, sectors, warp instructions)")
for r in sorted(data, key=lambda r: -num(r, "L2 Theoretical Sectors Global Excessive"))[:12]:
    print(f"  {r[col['Source']].strip()[:58]:58s} {num(r, 'L2 Theoretical Sectors Global Excessive'):9.0f} "
          f"{num(r, 'L2 Theoretical Sectors Global'):9.0f} {num(r, 'Instructions Executed'):7.0f}")

# By region (added 2026-12-08, not yet run on a real report): the chunk loop
# as results/sass_issue_model.py's chunk_loop finds it (the innermost loop
# holding a MUFU.EX2, the GELU), split at its last wgmma wait: the release and the
# depthwise (that wait to the loop's last STSM) and the turn (the rest of
# the loop); everything outside the loop is the tile boundary and prologue.
# Samples an executed warp instruction approximate the cycles each waited.
addr_col = next((i for i, h in enumerate(header) if h.strip().lower() == "address"), None)
if addr_col is None:
    print("\nby region: no Address column in this CSV")
    sys.exit(0)
addr = [int(r[addr_col], 16) for r in data]
text = [r[col["Source"]].strip() for r in data]
found = chunk_loop(list(zip(addr, text)))
if found is None:
    print("\nby region: no loop with a MUFU.EX2 found")
    sys.exit(0)
lo, hi, depthwise = found
inside = [k for k, a in enumerate(addr) if lo <= a <= hi]
depthwise = set(depthwise)
regions = {"release + depthwise": sorted(depthwise),
           "turn (rest of the loop)": [k for k in inside if k not in depthwise],
           "outside the loop": [k for k in range(len(data)) if not lo <= addr[k] <= hi]}
print(f"\nby region (chunk loop {lo:#x}-{hi:#x}: share of samples, warp instructions executed, "
      "samples an instruction, top stall reasons)")
for name, ks in regions.items():
    s = sum(num(data[k], SAMPLES) for k in ks)
    ex = sum(num(data[k], "Instructions Executed") for k in ks)
    top = sorted(((sum(num(data[k], st) for k in ks), st) for st in stalls), reverse=True)[:5]
    print(f"  {name:26s} {s / total:6.1%} {ex:12.0f} {s / ex if ex else 0:6.3f}  "
          + " ".join(f"{st[6:]} {v / s if s else 0:.0%}" for v, st in top))
