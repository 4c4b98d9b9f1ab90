#!/bin/bash
# The measurements of v48 (kernels/NOTES.md, v47 measured: "Next"), in one
# run on a GPU, against main at v47; outputs packed into OUTDIR/outputs.tgz
# (default OUTDIR results/out):
#  1. A/B in bf16 (results/ab_patches.sh), ROUNDS rounds (3): main's kernel,
#     v48a (b1 from the depthwise), v48b (y's stores in whole sectors), v48c
#     (the taps into L1 ahead of the depthwise), v48d (the second releaser
#     refills the ring), a + c + d, and all four                    -> ab.txt
#  2. the winner by results/ab_winner.py (geometric mean over the shapes,
#     0.5% below base's, y bitwise equal)                       -> ab_summary.txt
#  3. the winner applied to kernels/ (the working tree: revert with git
#     checkout), then results/gpu_checks.sh (pytest, racecheck, memcheck,
#     the suite) and results/ncu_run.sh on whichever kernel is in kernels/
set -u
cd "$(dirname "$0")/.."
OUT=${OUTDIR:-results/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
a=results/h16_v48a_b1_from_depthwise.patch
b=results/h16_v48b_y_whole_sectors.patch
c=results/h16_v48c_taps_to_l1.patch
d=results/h16_v48d_second_releaser_refills.patch
SHAPES=${SHAPES:-"32 4096;28 3757;64 8192 320 512"} ROUNDS=${ROUNDS:-3} REPS=${REPS:-20} \
  bash results/ab_patches.sh v48a=$a v48b=$b v48c=$c v48d=$d v48acd=$a+$c+$d v48abcd=$a+$b+$c+$d \
  > "$OUT/ab.txt" 2>&1
python3 results/ab_winner.py "$OUT/ab.txt" | tee "$OUT/ab_summary.txt"
winner=$(tail -1 "$OUT/ab_summary.txt")
winner=${winner#WINNER }
[[ $winner == v48* ]] && for x in a b c d; do
  [[ ${winner#v48} == *$x* ]] && patch -s -p1 < "${!x}"
done
bash results/gpu_checks.sh "$OUT"
bash results/ncu_run.sh "$OUT"
# one archive: a run brings back only a few files
(cd "$OUT" && tar czf outputs.tgz --remove-files $(ls | grep -v outputs.tgz))
