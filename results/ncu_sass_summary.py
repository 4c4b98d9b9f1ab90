"""Summary of ncu's per-instruction warp-state samples (the source page as
CSV: ncu -i REPORT --page source --csv --print-source sass > FILE): samples
by stall reason, by opcode, the instructions with the most samples, and the
global accesses with the most excess L2 sectors.
    python3 results/ncu_sass_summary.py FILE"""
import collections
import csv
import re
import sys

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
