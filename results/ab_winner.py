"""Medians over the rounds of an A/B (results/ab_patches.sh's output) and
its winner: the variant with the lowest geometric mean of its time over
base's across the shapes, if that is at least 0.5% below base's and its y
hash equals base's on every shape (or it is one of the NAMEs given: changes
to the numerics, which the tests check after); "WINNER base" otherwise.
    python3 results/ab_winner.py ab.txt [NAME...]"""
import collections
import math
import re
import statistics
import sys

times, hashes = collections.defaultdict(list), collections.defaultdict(set)
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+)\s+(.+?)\s{2,}median ([0-9.]+) ms .*hash (\S+)", line)
    if m:
        times[m.group(2).strip(), m.group(1)].append(float(m.group(3)))
        hashes[m.group(2).strip(), m.group(1)].add(m.group(4))
shapes = sorted({s for s, _ in times})
names = sorted({n for _, n in times})
med = {k: statistics.median(v) for k, v in times.items()}
for s in shapes:
    for n in names:
        if (s, n) in med:
            print(f"{s:18s} {n:6s} {med[s, n]:.4f} ms ({med[s, n] / med[s, 'base'] - 1:+.1%})"
                  f" y {'= base' if hashes[s, n] == hashes[s, 'base'] else 'differs'}")
may_differ = set(sys.argv[2:])
best, best_g = "base", 0.995
for n in names:
    if n == "base" or not all((s, n) in med and (n in may_differ or hashes[s, n] == hashes[s, "base"])
                              for s in shapes):
        continue
    g = math.exp(sum(math.log(med[s, n] / med[s, "base"]) for s in shapes) / len(shapes))
    print(f"{n}: geometric mean {g - 1:+.2%}")
    if g < best_g:
        best, best_g = n, g
print("WINNER", best)
