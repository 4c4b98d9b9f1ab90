#!/bin/bash
# One GPU run that times kernel patches against main's kernel and checks the
# fastest, outputs packed into OUTDIR/outputs.tgz (default results/out; a
# run brings back only a few files):
#  1. A/B in bf16 (results/ab_patches.sh), ROUNDS rounds (3)       -> ab.txt
#     and, where FP16_SHAPES is set, the same in fp16 over those shapes
#     (ab_fp16.txt, ab_fp16_summary.txt; only bf16's winner lands)
#  2. the winner by results/ab_winner.py (geometric mean over the shapes,
#     0.5% below base's, y bitwise equal unless the variant is named in
#     MAY_DIFFER: a change to the numerics, which the tests then check)
#                                                              -> ab_summary.txt
#  3. the winner's patches applied to kernels/ (the working tree: revert
#     with git checkout), then results/gpu_checks.sh (pytest, racecheck,
#     memcheck, the suite, ncu) on whichever kernel is in kernels/; its
#     STEPS runs only some of them, e.g. STEPS=pytest to fit the A/B and
#     the tests in one call
#   MAY_DIFFER="v50b v50ab" bash results/ab_land.sh v50a=results/h16_v50a_shuffles_first.patch \
#        v50b=results/h16_v50b_interior_first.patch v50ab=results/h16_v50a_shuffles_first.patch+results/h16_v50b_interior_first.patch
#   FP16_SHAPES="32 4096;16 16384 384 512" bash results/ab_land.sh v51=results/h16_v51_stage_in_last_dw.patch
set -u
cd "$(dirname "$0")/.."
OUT=${OUTDIR:-results/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
declare -A patches
for v in "$@"; do patches[${v%%=*}]=${v#*=}; done
variants=("$@")
# ab DTYPE SHAPES NAME: the A/B in that dtype (NAME.txt), its medians and
# winner (NAME_summary.txt)
ab() {
  DTYPE=$1 SHAPES=$2 ROUNDS=${ROUNDS:-3} REPS=${REPS:-20} \
    bash results/ab_patches.sh "${variants[@]}" > "$OUT/$3.txt" 2>&1
  # shellcheck disable=SC2086  # MAY_DIFFER: names, one word each
  python3 results/ab_winner.py "$OUT/$3.txt" ${MAY_DIFFER:-} | tee "$OUT/$3_summary.txt"
}
# seconds from the start to the end of each phase (timing.txt), for
# planning the next call's variants and steps
ab BF16 "${SHAPES:-"32 4096;28 3757;64 8192 320 512"}" ab
echo "A/B bf16 ($# variants and base) done at ${SECONDS} s" >> "$OUT/timing.txt"
if [[ -n ${FP16_SHAPES:-} ]]; then
  ab FP16 "$FP16_SHAPES" ab_fp16
  echo "A/B fp16 done at ${SECONDS} s" >> "$OUT/timing.txt"
fi
winner=$(tail -1 "$OUT/ab_summary.txt")
winner=${winner#WINNER }
if [[ $winner != base ]]; then
  IFS='+' read -ra list <<< "${patches[$winner]%%:*}"
  for patch in "${list[@]}"; do patch -s -p1 < "$patch"; done
fi
bash results/gpu_checks.sh "$OUT"
echo "checks (${STEPS:-all}) done at ${SECONDS} s" | tee -a "$OUT/timing.txt"
(cd "$OUT" && tar czf outputs.tgz --remove-files $(ls | grep -v outputs.tgz))
