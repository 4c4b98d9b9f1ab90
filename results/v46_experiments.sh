#!/bin/bash
# (Ran on 2026-12-07 against main at v43: results/h100_ab_v46.txt. Main's
# kernel is v47 since; the patches below apply to v43 only.)
# The measurements planned after v45 (kernels/NOTES.md, v46), in one run on
# a GPU; outputs under OUTDIR (default results/out):
#  1. A/B in bf16 (results/ab_patches.sh): main's kernel, v46, v46b, and
#     v43's probes FD_NO_TOKEN, FD_Y_SAME, FD_Y_HALF, FD_Y_WB      -> ab.txt
#  2. the clock trace of v43 (results/h16_trace_v43.patch), CTA 7  -> trace.txt
#  3. if v46 or v46b is faster at the headline with a bitwise-equal y, the
#     faster applied
#     to kernels/ (the working tree: revert with git checkout), then pytest,
#     compute-sanitizer racecheck and memcheck of the 16-bit workload, and
#     the suite, on whichever kernel is in kernels/    -> pytest.txt, racecheck.txt,
#                                                         memcheck.txt, suite.json
set -u
cd "$(dirname "$0")/.."
OUT=${OUTDIR:-results/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
SHAPES=${SHAPES:-"32 4096;28 3757;64 8192 320 512"} ROUNDS=${ROUNDS:-3} REPS=${REPS:-20} \
  bash results/ab_patches.sh v46=results/h16_v46_y_in_first_turn.patch \
  v46b=results/h16_v46_y_in_first_turn.patch+results/h16_v46b_y_split.patch \
  notoken=results/h16_probes_v43.patch:-DFD_NO_TOKEN same=results/h16_probes_y_v43.patch:-DFD_Y_SAME \
  half=results/h16_probes_y_v43.patch:-DFD_Y_HALF wb=results/h16_probes_y_v43.patch:-DFD_Y_WB > "$OUT/ab.txt" 2>&1
# medians over the rounds, and which of v46 and v46b wins (faster by 0.5%
# at the headline, y hashes equal to base's on every shape), if either
python3 - "$OUT/ab.txt" <<'PY' | tee "$OUT/ab_summary.txt"
import collections, re, statistics, sys
t, h = collections.defaultdict(list), collections.defaultdict(set)
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+)\s+(.+?)\s{2,}median ([0-9.]+) ms .*hash (\S+)", line)
    if m:
        name, shape = m.group(1), m.group(2).strip()
        t[shape, name].append(float(m.group(3)))
        h[shape, name].add(m.group(4))
shapes = sorted({s for s, _ in t})
for (shape, name), v in sorted(t.items()):
    base = statistics.median(t.get((shape, "base"), v))
    print(f"{shape:18s} {name:8s} {statistics.median(v):.4f} ms ({statistics.median(v) / base - 1:+.1%})"
          f" y {'= base' if h[shape, name] == h[shape, 'base'] else 'differs'}")
best, best_t = "base", 0.995 * statistics.median(t["32 4096", "base"])
for v in ("v46", "v46b"):
    if all(t[s, v] and h[s, v] == h[s, "base"] for s in shapes) and statistics.median(t["32 4096", v]) < best_t:
        best, best_t = v, statistics.median(t["32 4096", v])
print("WINNER", best)
PY
bash results/trace_run.sh results/h16_trace_v43.patch > "$OUT/trace.txt"
if grep -q "WINNER v46" "$OUT/ab_summary.txt"; then
  patch -s -p1 < results/h16_v46_y_in_first_turn.patch
  grep -q "WINNER v46b" "$OUT/ab_summary.txt" && patch -s -p1 < results/h16_v46b_y_split.patch
fi
bash results/gpu_checks.sh "$OUT"
