"""Medians over the rounds of an A/B (results/ab_patches.sh's output) and
its winner: the variant with the lowest geometric mean of its time over
base's across the shapes, if that is at least 0.5% below base's and its y
hash equals base's on every shape (or it is one of the NAMEs given: changes
to the numerics, which the tests check after); "WINNER base" otherwise.
Where a y differs, its sum and sum of magnitudes against base's (the
driver's, as fractions of base's sum of magnitudes) are shown, and a NAME
whose differ by more than MAX_DRIFT (or are NaN: an output never written)
cannot win: a coarse screen for a wrong kernel, not a test.
    python3 results/ab_winner.py ab.txt [NAME...]"""
import collections
import math
import re
import statistics
import sys

MAX_DRIFT = 1e-3  # last-bit changes in random directions move |y|'s sum by far less

times, hashes = collections.defaultdict(list), collections.defaultdict(set)
sums = {}  # (shape, name) -> (sum, sum of magnitudes) of y
may_differ = set(sys.argv[2:])
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+)\s+(.+?)\s{2,}median ([0-9.]+) ms .*hash (\S+)(?: sum (\S+) abs (\S+))?", line)
    if m:
        key = m.group(2).strip(), m.group(1)
        times[key].append(float(m.group(3)))
        hashes[key].add(m.group(4))
        if m.group(5):
            sums[key] = float(m.group(5)), float(m.group(6))
shapes = sorted({s for s, _ in times})
names = sorted({n for _, n in times})
med = {k: statistics.median(v) for k, v in times.items()}


def drift(s, n):
    """y's sum and sum of magnitudes against base's, as fractions of base's sum of magnitudes."""
    if (s, n) not in sums or (s, "base") not in sums:
        return None
    (a, b), (a0, b0) = sums[s, n], sums[s, "base"]
    return (a - a0) / b0, (b - b0) / b0


def plausible(s, n):
    """y bitwise base's, or (for a NAME) within MAX_DRIFT of it where the driver gave sums."""
    if hashes[s, n] == hashes[s, "base"]:
        return True
    d = drift(s, n)
    return n in may_differ and (d is None or all(abs(x) <= MAX_DRIFT for x in d))  # NaN: False


for s in shapes:
    for n in names:
        if (s, n) in med:
            same = hashes[s, n] == hashes[s, "base"]
            d = drift(s, n)
            note = "= base" if same else "differs" + (f" (sum {d[0]:+.1e}, |y| {d[1]:+.1e})" if d else "")
            if not same and d and not plausible(s, n) and n in may_differ:
                note += f" BEYOND {MAX_DRIFT:.0e}"
            print(f"{s:18s} {n:6s} {med[s, n]:.4f} ms ({med[s, n] / med[s, 'base'] - 1:+.1%}) y {note}")
best, best_g = "base", 0.995
for n in names:
    if n == "base" or not all((s, n) in med and plausible(s, n) for s in shapes):
        continue
    g = math.exp(sum(math.log(med[s, n] / med[s, "base"]) for s in shapes) / len(shapes))
    print(f"{n}: geometric mean {g - 1:+.2%}")
    if g < best_g:
        best, best_g = n, g
print("WINNER", best)
