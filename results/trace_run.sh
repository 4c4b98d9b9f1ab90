#!/bin/bash
# The clock trace of a variant of the 16-bit kernel: a copy of kernels/ with
# PATCHes applied in order (the last one a trace patch, results/h16_trace_*.patch),
# built into results/h16_trace_driver.cu and run at the headline, or at
# TRACE_SHAPE ("B L" or "B L C E", the driver's arguments); CTA 7's marks on
# stdout.
#   bash results/trace_run.sh PATCH... > trace.txt
#   TRACE_SHAPE="16 16384 384 512" bash results/trace_run.sh PATCH... > trace.txt
set -u
cd "$(dirname "$0")/.."
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp kernels/fused_dwsep.cu kernels/fused_dwsep.h "$W/"
for patch in "$@"; do
  (cd "$W" && patch -s -p2 < "$OLDPWD/$patch") || exit 1
done
nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -DFUSED_DWSEP_DRIVER_BF16 -DFD_TRACE \
     -DFD_TRACE_CTA=7 -O3 -std=c++17 -I"$W" -Iresults -o "$W/trace" results/h16_trace_driver.cu &&
  # shellcheck disable=SC2086  # TRACE_SHAPE: the driver's arguments, one word each
  timeout 60 "$W/trace" 5 ${TRACE_SHAPE:-} 2>&1
