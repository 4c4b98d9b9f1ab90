#!/bin/bash
# One GPU run that times kernel patches against main's kernel and checks the
# fastest, outputs packed into OUTDIR/outputs.tgz (default results/out; a
# run brings back only a few files):
#  1. A/B in bf16 (results/ab_patches.sh), ROUNDS rounds (3)       -> ab.txt
#     and, where FP16_SHAPES is set, the same in fp16 over those shapes
#     (ab_fp16.txt, its medians in ab_summary.txt; the winner is bf16's)
#  2. the winner by results/ab_winner.py (geometric mean over the shapes,
#     0.5% below base's, y bitwise equal unless the variant is named in
#     MAY_DIFFER: a change to the numerics, which the tests then check)
#                                                              -> ab_summary.txt
#  3. the winner's patches applied to kernels/ (the working tree: revert
#     with git checkout), then results/gpu_checks.sh (pytest, racecheck,
#     memcheck, the suite) and results/ncu_run.sh on whichever kernel is in
#     kernels/
#   MAY_DIFFER="v50b v50ab" bash results/ab_land.sh v50a=results/h16_v50a_shuffles_first.patch \
#        v50b=results/h16_v50b_interior_first.patch v50ab=results/h16_v50a_shuffles_first.patch+results/h16_v50b_interior_first.patch
#   FP16_SHAPES="32 4096;16 16384 384 512" bash results/ab_land.sh v50d=results/h16_v50d_c384_release.patch
set -u
cd "$(dirname "$0")/.."
OUT=${OUTDIR:-results/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
rm -f "$OUT/ab_summary.txt"
declare -A patches
for v in "$@"; do patches[${v%%=*}]=${v#*=}; done
SHAPES=${SHAPES:-"32 4096;28 3757;64 8192 320 512"} ROUNDS=${ROUNDS:-3} REPS=${REPS:-20} \
  bash results/ab_patches.sh "$@" > "$OUT/ab.txt" 2>&1
if [[ -n ${FP16_SHAPES:-} ]]; then
  DTYPE=FP16 SHAPES=$FP16_SHAPES ROUNDS=${ROUNDS:-3} REPS=${REPS:-20} \
    bash results/ab_patches.sh "$@" > "$OUT/ab_fp16.txt" 2>&1
  # shellcheck disable=SC2086
  python3 results/ab_winner.py "$OUT/ab_fp16.txt" ${MAY_DIFFER:-} | sed 's/^WINNER/fp16 alone: WINNER/' \
    | tee "$OUT/ab_summary.txt"
fi
# shellcheck disable=SC2086  # MAY_DIFFER: names, one word each
python3 results/ab_winner.py "$OUT/ab.txt" ${MAY_DIFFER:-} | tee -a "$OUT/ab_summary.txt"
winner=$(tail -1 "$OUT/ab_summary.txt")
winner=${winner#WINNER }
if [[ $winner != base ]]; then
  IFS='+' read -ra list <<< "${patches[$winner]%%:*}"
  for patch in "${list[@]}"; do patch -s -p1 < "$patch"; done
fi
bash results/gpu_checks.sh "$OUT"
bash results/ncu_run.sh "$OUT"
(cd "$OUT" && tar czf outputs.tgz --remove-files $(ls | grep -v outputs.tgz))
