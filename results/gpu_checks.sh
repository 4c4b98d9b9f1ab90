#!/bin/bash
# The checks a kernel passes before it lands, on whichever kernel is in
# kernels/, outputs under OUT (the first argument): pytest (pytest.txt),
# compute-sanitizer racecheck and memcheck of the 16-bit workload
# (racecheck.txt, memcheck.txt), and the suite (suite.json; its table on
# stdout). Each summary line is printed too. STEPS picks some of them
# (default "pytest racecheck memcheck suite"), so that a short device call
# can run the tests alone and a later one the rest.
#   bash results/gpu_checks.sh OUT
#   STEPS="racecheck memcheck suite" bash results/gpu_checks.sh OUT
set -u
cd "$(dirname "$0")/.."
OUT=$1
mkdir -p "$OUT"
STEPS=${STEPS:-pytest racecheck memcheck suite}
step() { [[ " $STEPS " == *" $1 "* ]]; }
if step pytest; then
  timeout 240 python3 -m pytest -s -q test_fused_dwsep.py > "$OUT/pytest.txt" 2>&1; tail -1 "$OUT/pytest.txt"
fi
for tool in racecheck memcheck; do
  step $tool || continue
  FUSED_DWSEP_SANITIZE=half timeout 90 compute-sanitizer --tool $tool python3 results/sanitizer_workload.py \
    > "$OUT/$tool.txt" 2>&1; tail -1 "$OUT/$tool.txt"
done
if step suite; then
  timeout 150 python3 bench.py --suite --json "$OUT/suite.json" 2>&1 | tail -22
fi
