#!/bin/bash
# A/B timing of kernel variants with the standalone driver (kernels/NOTES.md):
# builds results/fused_dwsep_driver.cu once a variant, in parallel, then runs
# ROUNDS interleaved rounds over SHAPES and prints each run's median time and
# y hash (equal hashes: bitwise-equal outputs).
#   bash results/ab_driver.sh NAME=DIR[:DEFINES] ...
# DIR holds the variant's fused_dwsep.cu and fused_dwsep.h (kernels for the
# working tree); DEFINES are extra nvcc flags, comma-separated. Environment:
# SHAPES (driver arguments "B L [C E]", ';'-separated; default the headline,
# 28x3757, 36x3600 and 64x320x512x8192), ROUNDS (3), REPS (30). A run
# over 30 s (a hung variant) is killed and prints nothing.
# Example, a branch's kernel against the working tree's:
#   mkdir -p ab/q && git show BRANCH:kernels/fused_dwsep.cu > ab/q/fused_dwsep.cu &&
#   cp kernels/fused_dwsep.h ab/q/ && bash results/ab_driver.sh base=kernels q=ab/q
set -e
cd "$(dirname "$0")/.."
SHAPES=${SHAPES:-"32 4096;28 3757;36 3600;64 8192 320 512"}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-30}
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
names=()
pids=()
for v in "$@"; do
  name=${v%%=*}; rest=${v#*=}; dir=${rest%%:*}; defs=""
  [[ $rest == *:* ]] && defs=${rest#*:}
  names+=("$name")
  nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A ${defs//,/ } -O3 -std=c++17 -I"$dir" \
       -o "$BIN/$name" results/fused_dwsep_driver.cu > "$BIN/$name.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do  # a failed build stops the script with the compiler's message
  wait "${pids[$i]}" || { cat "$BIN/${names[$i]}.log"; exit 1; }
done
IFS=';' read -ra shapes <<< "$SHAPES"
for r in $(seq "$ROUNDS"); do
  for shape in "${shapes[@]}"; do
    for name in "${names[@]}"; do
      printf "round %s %-12s %-18s %s\n" "$r" "$name" "$shape" "$(timeout 30 "$BIN/$name" "$REPS" $shape | tail -1)"
    done
  done
done
