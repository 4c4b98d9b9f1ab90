#!/bin/bash
# A/B of kernel patches against the working tree's kernel, in bf16 (fp16
# with DTYPE=FP16): each variant is a copy of kernels/ with its patches
# applied (in order), timed by results/ab_driver.sh beside the unpatched
# kernel ("base").
#   bash results/ab_patches.sh NAME=PATCH[+PATCH...][:DEFINES] ...
# DEFINES: extra nvcc flags, comma-separated (a probe's -DFD_...). SHAPES,
# ROUNDS and REPS pass through to ab_driver.sh. Example (kernels/NOTES.md, v46):
#   bash results/ab_patches.sh v46=results/h16_v46_y_in_first_turn.patch \
#        notoken=results/h16_probes_v43.patch:-DFD_NO_TOKEN
set -e
cd "$(dirname "$0")/.."
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
dtype=-DFUSED_DWSEP_DRIVER_${DTYPE:-BF16}
args=("base=kernels:$dtype")
for v in "$@"; do
  name=${v%%=*}; rest=${v#*=}; patches=${rest%%:*}; defs=""
  [[ $rest == *:* ]] && defs=,${rest#*:}
  mkdir "$WORK/$name"
  cp kernels/fused_dwsep.cu kernels/fused_dwsep.h "$WORK/$name/"
  IFS='+' read -ra list <<< "$patches"
  for patch in "${list[@]}"; do
    (cd "$WORK/$name" && patch -s -p2 < "$OLDPWD/$patch")
  done
  args+=("$name=$WORK/$name:$dtype$defs")
done
bash results/ab_driver.sh "${args[@]}"
