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
python3 results/ab_winner.py "$OUT/ab.txt" | tee "$OUT/ab_summary.txt"
bash results/trace_run.sh results/h16_v47_no_token.patch results/h16_trace_v47.patch > "$OUT/trace.txt"
if grep -q "WINNER v47" "$OUT/ab_summary.txt"; then
  patch -s -p1 < results/h16_v47_no_token.patch
  grep -q "WINNER v47b" "$OUT/ab_summary.txt" && patch -s -p1 < results/h16_v47b_init_in_tail.patch
fi
bash results/gpu_checks.sh "$OUT"
bash results/ncu_run.sh "$OUT"
# one archive: a run brings back only a few files
(cd "$OUT" && tar czf outputs.tgz --remove-files $(ls | grep -v outputs.tgz))
