"""A model of the 16-bit kernel's weight ring as v40 (results/h16_v40_wip.patch)
runs it: two warpgroups read one stream of ring fills (fill 2n: W1 of chunk n,
2n + 1: W2), warpgroup 1 nc // 2 chunks later in its tiles (it passes over the
stream's first nc // 2 chunks, warpgroup 0 over its last), and whichever
warpgroup releases a slot second refills it. Over random interleavings of the
two warpgroups it checks that nothing deadlocks, that every read finds its own
fill in the slot (never an older or a newer one: the mbarrier parity waits
need that), and that each warpgroup releases every fill once.

    python results/h16_ring_model.py
"""
import random


def program(grp, nc, tiles):
    """The fills each step of warpgroup grp reads, in order: ("pass", [f]) or ("turn", [f, ...])."""
    lag = nc // 2
    steps = []
    n = lag if grp == 1 else 0
    if grp == 1:
        steps += [("pass", [f]) for f in range(2 * lag)]
    for _ in range(tiles):
        steps.append(("turn", [2 * n]))  # GEMM1 of the tile's first chunk
        n += 1
        for _ in range(1, nc):
            steps.append(("turn", [2 * n - 1, 2 * n]))  # GEMM2 of chunk n - 1, GEMM1 of chunk n
            n += 1
        steps.append(("turn", [2 * n - 1]))  # GEMM2 of the tile's last chunk
    if grp == 0:
        steps += [("pass", [f]) for f in range(2 * nc * tiles, 2 * (nc * tiles + lag))]
    return steps


def run(slots, nc, tiles, rng):
    total = 2 * (nc * tiles + nc // 2)
    held = [s if s < total else None for s in range(slots)]  # the fill each slot holds (landed)
    arrivals = [0] * slots
    releases = [0] * slots
    programs = [program(0, nc, tiles), program(1, nc, tiles)]
    pos = [0, 0]
    read = [[], []]
    while pos[0] < len(programs[0]) or pos[1] < len(programs[1]):
        ready = []
        for g in (0, 1):
            if pos[g] == len(programs[g]):
                continue
            waits = False
            for f in programs[g][pos[g]][1]:
                h = held[f % slots]
                assert h is None or h <= f, f"warpgroup {g} waits for fill {f}, its slot already holds {h}"
                waits |= h is None or h < f
            if not waits:
                ready.append(g)
        assert ready, f"deadlock: slots={slots} nc={nc} tiles={tiles} at steps {pos}"
        g = rng.choice(ready)
        for f in programs[g][pos[g]][1]:
            read[g].append(f)
            s = f % slots
            arrivals[s] += 1
            releases[s] += 1
            if releases[s] % 2 == 0:  # the second release of this fill: refill
                assert arrivals[s] == 2, "refilled before both warpgroups arrived"
                arrivals[s] = 0
                held[s] = f + slots if f + slots < total else None
        pos[g] += 1
    for g in (0, 1):
        assert sorted(read[g]) == list(range(total)), f"warpgroup {g} did not release every fill once"


def main():
    rng = random.Random(1)
    for slots in (3, 4):  # Tile64; Tile128 and Tile64C320
        for nc in range(1, 10):
            for tiles in range(1, 5):
                for _ in range(200):
                    run(slots, nc, tiles, rng)
    print("ok: no deadlock, every fill read in its own phase, each warpgroup releases every fill once")


if __name__ == "__main__":
    main()
