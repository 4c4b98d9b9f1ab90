#!/bin/bash
# ncu on the 16-bit kernel in kernels/ at the bf16 headline, one launch:
# speed of light, warp states, memory and the per-instruction samples.
# Outputs under OUT (the first argument): ncu_log.txt, ncu_details.txt and
# ncu_sass.csv, the source page, which results/ncu_sass_summary.py reads.
#   bash results/ncu_run.sh OUT
set -u
cd "$(dirname "$0")/.."
OUT=$1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -DFUSED_DWSEP_DRIVER_BF16 -lineinfo -O3 -std=c++17 \
     -Ikernels -o "$D/d16" results/fused_dwsep_driver.cu &&
  timeout 150 ncu --section SpeedOfLight --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis \
    -k regex:h16_kernel -s 1 -c 1 -o "$D/prof" "$D/d16" 2 32 4096 > "$OUT/ncu_log.txt" 2>&1 &&
  ncu -i "$D/prof.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1 &&
  ncu -i "$D/prof.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_sass.csv" 2>&1
tail -3 "$OUT/ncu_log.txt"
