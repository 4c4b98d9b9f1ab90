#!/bin/bash
# (Ran on 2026-12-07 against main at v43; main's kernel is v47 since, which
# these patches were, so they no longer apply to it: the record of how
# results/h100_ab_v47.txt and its companions were made.)
# The measurements of v47 (kernels/NOTES.md, v47), in one run on a GPU;
# outputs under OUTDIR (default results/out):
#  1. A/B in bf16 (results/ab_patches.sh), 5 rounds: main's kernel (v43),
#     v47 (no turn token), v47b (v47 + init_acc under the first GEMM1) -> ab.txt
#  2. which wins: the lower geometric mean over the shapes, 0.5% below
#     base's, with y's hash equal to base's on every shape      -> ab_summary.txt
#  3. the clock trace of v47 (results/h16_trace_v47.patch), CTA 7 -> trace.txt
#  4. the winner applied to kernels/ (the working tree: revert with git
#     checkout), then pytest, compute-sanitizer racecheck and memcheck of
#     the 16-bit workload, the suite, and ncu's warp-state samples by SASS
#     instruction at the headline, on whichever kernel is in kernels/
#        -> pytest.txt, racecheck.txt, memcheck.txt, suite.json, ncu_*.txt, ncu_sass.csv
# all packed into OUTDIR/outputs.tgz at the end
set -u
cd "$(dirname "$0")/.."
OUT=${OUTDIR:-results/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
SHAPES=${SHAPES:-"32 4096;28 3757;64 8192 320 512"} ROUNDS=${ROUNDS:-5} REPS=${REPS:-20} \
  bash results/ab_patches.sh v47=results/h16_v47_no_token.patch \
  v47b=results/h16_v47_no_token.patch+results/h16_v47b_init_in_tail.patch > "$OUT/ab.txt" 2>&1
python3 - "$OUT/ab.txt" <<'PY' | tee "$OUT/ab_summary.txt"
import collections, math, re, statistics, sys
t, h = collections.defaultdict(list), collections.defaultdict(set)
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+)\s+(.+?)\s{2,}median ([0-9.]+) ms .*hash (\S+)", line)
    if m:
        t[m.group(2).strip(), m.group(1)].append(float(m.group(3)))
        h[m.group(2).strip(), m.group(1)].add(m.group(4))
shapes = sorted({s for s, _ in t})
names = sorted({n for _, n in t})
med = {k: statistics.median(v) for k, v in t.items()}
for s in shapes:
    for n in names:
        if (s, n) in med:
            print(f"{s:18s} {n:6s} {med[s, n]:.4f} ms ({med[s, n] / med[s, 'base'] - 1:+.1%})"
                  f" y {'= base' if h[s, n] == h[s, 'base'] else 'differs'}")
best, best_g = "base", 0.995
for n in names:
    if n == "base" or not all((s, n) in med and h[s, n] == h[s, "base"] for s in shapes):
        continue
    g = math.exp(sum(math.log(med[s, n] / med[s, "base"]) for s in shapes) / len(shapes))
    print(f"{n}: geometric mean {g - 1:+.2%}")
    if g < best_g:
        best, best_g = n, g
print("WINNER", best)
PY
bash results/trace_run.sh results/h16_v47_no_token.patch results/h16_trace_v47.patch > "$OUT/trace.txt"
if grep -q "WINNER v47" "$OUT/ab_summary.txt"; then
  patch -s -p1 < results/h16_v47_no_token.patch
  grep -q "WINNER v47b" "$OUT/ab_summary.txt" && patch -s -p1 < results/h16_v47b_init_in_tail.patch
fi
bash results/gpu_checks.sh "$OUT"
# where the warps of the kernel in kernels/ stall, by instruction (ncu's
# warp-state samples), at the headline
D=$(mktemp -d)
nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -DFUSED_DWSEP_DRIVER_BF16 -lineinfo -O3 -std=c++17 \
     -Ikernels -o "$D/d16" results/fused_dwsep_driver.cu &&
  timeout 150 ncu --section SpeedOfLight --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis \
    -k regex:h16_kernel -s 1 -c 1 -o "$OUT/prof" "$D/d16" 2 32 4096 > "$OUT/ncu_log.txt" 2>&1 &&
  ncu -i "$OUT/prof.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1 &&
  ncu -i "$OUT/prof.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_sass.csv" 2>&1
rm -rf "$D"
tail -3 "$OUT/ncu_log.txt"
# one archive: a run brings back only a few files
rm -f "$OUT/prof.ncu-rep"
(cd "$OUT" && tar czf outputs.tgz --remove-files $(ls | grep -v outputs.tgz))
