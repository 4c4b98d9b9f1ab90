#!/bin/bash
# One GPU call for v57 (results/tf32_v57_ties_to_even.patch): first the
# hypothesis on main's kernel (cuDNN rounds TF32 ties to even), then the
# patch applied to the working tree (revert with git checkout), the same
# script and bench.py's small TF32 row before and after, and pytest on the
# patched kernels (~8 minutes with two cold builds of the extension; the
# TF32 headline's time is for the suite, later). Prints a short table.
#   OUT=$OUT bash results/tf32_v57_run.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-results/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
small=(--B 4 --C 128 --E 256 --L 1000 --K 3)
run() {  # TAG: the hypothesis script and the small bench row on the kernels in kernels/
  timeout 200 python3 results/cudnn_small_row.py > "$OUT/cudnn_small_row_$1.txt" 2>&1
  timeout 100 python3 bench.py "${small[@]}" > "$OUT/bench_small_$1.txt" 2>&1
  echo "bench small exit $?" >> "$OUT/bench_small_$1.txt"
  echo "$1 done at ${SECONDS} s" >> "$OUT/timing.txt"
}
run main
patch -s -p1 < results/tf32_v57_ties_to_even.patch
run v57
STEPS=pytest bash results/gpu_checks.sh "$OUT"  # pytest.txt
echo "pytest done at ${SECONDS} s" >> "$OUT/timing.txt"
for tag in main v57; do
  echo "== $tag"
  grep -E "rn / rn|rne / rne|block: max|block emulated rn|share of outputs" "$OUT/cudnn_small_row_$tag.txt"
  grep -E "4x128x256x1000|WRONG|exit" "$OUT/bench_small_$tag.txt"
done
tail -1 "$OUT/pytest.txt"
cat "$OUT/timing.txt"
