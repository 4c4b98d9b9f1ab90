#!/bin/bash
# The checks a kernel passes before it lands, on whichever kernel is in
# kernels/, outputs under OUT (the first argument): pytest (pytest.txt),
# compute-sanitizer racecheck and memcheck of the 16-bit workload
# (racecheck.txt, memcheck.txt), the suite (suite.json; its table on
# stdout), then ncu at the bf16 headline (results/ncu_run.sh). Each summary
# line is printed too. STEPS picks some of them (default all: "pytest
# racecheck memcheck suite ncu"), so that a short device call can run the
# tests alone and a later one the rest; STEPS=none runs none of them (an
# A/B by results/ab_land.sh alone).
#   bash results/gpu_checks.sh OUT
#   STEPS="racecheck memcheck suite ncu" bash results/gpu_checks.sh OUT
set -u
cd "$(dirname "$0")/.."
OUT=$1
mkdir -p "$OUT"
STEPS=${STEPS:-pytest racecheck memcheck suite ncu}
for s in $STEPS; do
  case $s in pytest | racecheck | memcheck | suite | ncu | none) ;; *) echo "gpu_checks.sh: unknown step '$s'" >&2; exit 1 ;; esac
done
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
if step ncu; then bash results/ncu_run.sh "$OUT"; fi
