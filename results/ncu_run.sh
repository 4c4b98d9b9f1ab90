#!/bin/bash
# ncu on the 16-bit kernel in kernels/ in bf16, one launch: speed of light,
# warp states, memory and the per-instruction samples. NCU_SHAPE picks the
# driver's shape ("B L" or "B L C E"; default the headline, "32 4096").
# Outputs under OUT (the first argument): ncu_log.txt, ncu_details.txt and
# ncu_sass.csv, the source page, which results/ncu_sass_summary.py reads;
# NCU_TAG is put before each name (e.g. c384_ncu_log.txt) so that two
# shapes can run into one OUT.
#   bash results/ncu_run.sh OUT
#   NCU_SHAPE="16 16384 384 512" NCU_TAG=c384_ bash results/ncu_run.sh OUT
set -u
cd "$(dirname "$0")/.."
OUT=$1
SHAPE=${NCU_SHAPE:-32 4096}
P="$OUT/${NCU_TAG:-}"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -DFUSED_DWSEP_DRIVER_BF16 -lineinfo -O3 -std=c++17 \
     -Ikernels -o "$D/d16" results/fused_dwsep_driver.cu &&
  # shellcheck disable=SC2086  # SHAPE: the driver's arguments, one word each
  timeout 150 ncu --section SpeedOfLight --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis \
    -k regex:h16_kernel -s 1 -c 1 -o "$D/prof" "$D/d16" 2 $SHAPE > "${P}ncu_log.txt" 2>&1 &&
  ncu -i "$D/prof.ncu-rep" --page details > "${P}ncu_details.txt" 2>&1 &&
  ncu -i "$D/prof.ncu-rep" --page source --csv --print-source sass > "${P}ncu_sass.csv" 2>&1
tail -3 "${P}ncu_log.txt"
