"""Models of the 16-bit kernel's weight ring under two protocols, each over
random interleavings of the two warpgroups, 3 and 4 slots, 1-9 chunks and
1-4 tiles: that nothing deadlocks, that every read finds its own fill in
its slot (never an older or a newer one: the mbarrier parity waits need
that), that a slot is refilled only once both warpgroups released it, and
that each warpgroup reads (releases) every fill once.

v40 (results/h16_v40_wip.patch; measured slower, not landed): two warpgroups
read one stream of ring fills (fill 2n: W1 of chunk n, 2n + 1: W2),
warpgroup 1 nc // 2 chunks later in its tiles (it passes over the stream's
first nc // 2 chunks, warpgroup 0 over its last), and whichever warpgroup
releases a slot second refills it.

v41 (results/h16_v41_refill.patch; measured slower, not landed): the same
turns for both warpgroups, strictly alternating (warpgroup 0 first; a
warpgroup hands the token on once its turn is issued). A turn waits for
its fills to land, is issued, then (warpgroup 0 only) waits until both
warpgroups have released every earlier fill not yet refilled and refills
those slots, and, once its wgmmas are done, releases its own fills. With
3 slots (Tile64) the fill that refills a slot read in turn T - 1 is read
in turn T itself, so there warpgroup 1 refills as v39 did, right after its
own release (the model deadlocks otherwise: NEXT_ALWAYS = True shows it).

v44 (results/h16_v44_chunk_stream.patch; measured slower, not landed): v39's
protocol (warpgroup 1 refills a turn's slots once both warpgroups released
them) over one stream of chunks: a GEMM1-only turn, then GEMM2 of chunk
n - 1 with GEMM1 of chunk n across tile boundaries too, then a GEMM2-only
turn, 1 + nc x tiles turns in all.

v48 (main since 2026-12-07) and v52 (results/h16_v52_early_g2_release.patch;
compiled, not run): both warpgroups read every fill, turn by turn, as
turns() lists them; a turn passes its warpgroup's named barrier (the
previous turn's releases done), waits for its fills' mbarriers by parity
(fill f: parity f // slots % 2), issues, and once its wgmmas are done
releases each fill by an atomic counter a slot, the second release of a
fill refilling its slot (a bulk copy that lands later, completing the
slot's next mbarrier phase). Released by one thread in order, or split
(GEMM2's fill by warp 0, GEMM1's by warp 1, in either order). v52 waits
for GEMM1's fill only after GEMM2 is issued: the same ring events in the
same order as v48's (its releases still follow both wgmma waits), so
run_v48 covers it, 3 slots (Tile64, and Tile96 of v56) and 4. The model checks that a
parity wait can never pass on another fill's phase: when a warpgroup
waits for fill f its slot has completed f // slots or f // slots + 1
phases, never fewer or more.

    python results/h16_ring_model.py
"""
import random

NEXT_ALWAYS = False  # v41's deferred refill on 3 slots too (deadlocks: a check of the model)

def turns(nc, tiles, n=0):
    """The fills each turn of a warpgroup reads, in order, from chunk n of the stream on."""
    out = []
    for _ in range(tiles):
        out.append([2 * n])  # GEMM1 of the tile's first chunk
        n += 1
        for _ in range(1, nc):
            out.append([2 * n - 1, 2 * n])  # GEMM2 of chunk n - 1, GEMM1 of chunk n
            n += 1
        out.append([2 * n - 1])  # GEMM2 of the tile's last chunk
    return out


def stream_turns(nc, tiles):
    """v44: the same fills as turns(), a tile's last GEMM2 in one turn with the next tile's first GEMM1."""
    total = nc * tiles
    return [[0]] + [[2 * n - 1, 2 * n] for n in range(1, total)] + [[2 * total - 1]]


def program(grp, nc, tiles):
    """v40: the fills each step of warpgroup grp reads, in order: ("pass", [f]) or ("turn", [f, ...])."""
    lag = nc // 2
    steps = [("pass", [f]) for f in range(2 * lag)] if grp == 1 else []
    steps += [("turn", t) for t in turns(nc, tiles, lag if grp == 1 else 0)]
    if grp == 0:
        steps += [("pass", [f]) for f in range(2 * nc * tiles, 2 * (nc * tiles + lag))]
    return steps


def landed(held, fills, slots, g):
    """Whether every fill has landed in its slot; a slot holding a later fill is a protocol error."""
    ok = True
    for f in fills:
        h = held[f % slots]
        assert h is None or h <= f, f"warpgroup {g} waits for fill {f}, its slot already holds {h}"
        ok &= h == f
    return ok


def refill(held, f, slots, total):
    """Fill f's slot with the fill slots later in the stream (or nothing past its end)."""
    held[f % slots] = f + slots if f + slots < total else None


def run_v40(slots, nc, tiles, rng):
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
            if landed(held, programs[g][pos[g]][1], slots, g):
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
                refill(held, f, slots, total)
        pos[g] += 1
    for g in (0, 1):
        assert sorted(read[g]) == list(range(total)), f"warpgroup {g} did not release every fill once"


def run_v41(slots, nc, tiles, rng, v44=False):
    total = 2 * nc * tiles
    program = stream_turns(nc, tiles) if v44 else turns(nc, tiles)
    held = [s if s < total else None for s in range(slots)]  # the fill each slot holds (landed)
    released = [set(), set()]  # fills each warpgroup has released
    refilled = 0  # warpgroup 0's counter: fills below it refilled (or past the end)
    # v41's refill; else v39's (warpgroup 1, after its release), which v44 keeps
    deferred = not v44 and (NEXT_ALWAYS or slots >= 4)
    issued = [0, 0]  # turns issued (the token: 0 may issue turn T once 1 issued T - 1; 1 once 0 issued T)
    # each warpgroup's phase within its current turn: "wait" (token and fills), "refill" (0 only), "done"
    phase = ["wait", "wait"]
    pos = [0, 0]
    read = [[], []]
    while pos[0] < len(program) or pos[1] < len(program):
        moves = []
        for g in (0, 1):
            if pos[g] == len(program):
                continue
            T = pos[g]
            if phase[g] == "wait":
                token = issued[1] >= T if g == 0 else issued[0] >= T + 1
                if token and landed(held, program[T], slots, g):
                    moves.append((g, "issue"))
            elif phase[g] == "refill":
                f0 = program[T][0]
                if refilled < f0 and all(refilled in r for r in released):
                    moves.append((g, "refill"))
                elif refilled == f0:
                    moves.append((g, "refilled"))
            elif phase[g] == "done":
                moves.append((g, "release"))
            elif phase[g] == "v39wait":
                if all(f in released[0] for f in program[pos[g] - 1]):
                    moves.append((g, "v39refill"))
        assert moves, f"deadlock: slots={slots} nc={nc} tiles={tiles} at turns {pos}, phases {phase}"
        g, what = rng.choice(moves)
        T = pos[g]
        if what == "issue":
            read[g] += program[T]
            issued[g] += 1
            phase[g] = "refill" if g == 0 and deferred else "done"
        elif what == "refill":
            assert all(refilled in r for r in released), "refilled before both warpgroups released"
            refill(held, refilled, slots, total)
            refilled += 1
        elif what == "v39refill":
            for f in program[T - 1]:
                refill(held, f, slots, total)
            phase[g] = "wait"
        elif what == "refilled":
            phase[g] = "done"
        else:  # the turn's wgmmas are done: its fills released
            released[g].update(program[T])
            phase[g] = "wait"
            pos[g] += 1
            if not deferred and g == 1:  # v39: warpgroup 1 waits for warpgroup 0's release, then refills
                for f in program[T]:
                    if f not in released[0]:
                        phase[g] = "v39wait"
                if phase[g] == "wait":
                    for f in program[T]:
                        refill(held, f, slots, total)
    for g in (0, 1):
        assert read[g] == list(range(total)), f"warpgroup {g} did not read every fill once, in order"


def run_v44(slots, nc, tiles, rng):
    run_v41(slots, nc, tiles, rng, v44=True)


def run_v48(slots, nc, tiles, rng, split=False):
    total = 2 * nc * tiles
    program = turns(nc, tiles)
    completed = [0] * slots  # mbarrier phases completed a slot (fills landed there)
    in_flight = list(range(min(slots, total)))  # fills issued (bulk copies), not yet landed: the first ones
    counter = [0] * slots  # release counters
    # a warpgroup's steps in turn T: "begin" (its named barrier), "wait" for each
    # fill in order (GEMM2's, then GEMM1's), then "release" of each fill (in order
    # by one thread, in either order when split)
    pos = [0, 0]
    phase = ["start", "start"]
    held = [[], []]  # fills of the current turn not yet released
    waited = [[], []]  # fills of the current turn whose wait passed
    read = [[], []]

    def passes(f):
        s, k = f % slots, f // slots
        assert completed[s] in (k, k + 1), (
            f"parity wait for fill {f} on slot {s} with {completed[s]} phases completed: "
            f"slots={slots} nc={nc} tiles={tiles}")
        return completed[s] % 2 == (k + 1) % 2

    def release(f):
        s = f % slots
        old = counter[s]
        counter[s] += 1
        if old % 2 == 1 and f + slots < total:
            in_flight.append(f + slots)

    while pos[0] < len(program) or pos[1] < len(program):
        moves = [("land", f) for f in in_flight]
        for g in (0, 1):
            if pos[g] == len(program):
                continue
            fills = program[pos[g]]
            if phase[g] == "start":
                moves.append((g, "begin"))
            elif phase[g] == "wait":
                f = next(f for f in fills if f not in waited[g])
                if passes(f):
                    moves.append((g, "waited", f))
            elif phase[g] == "release":
                choices = held[g] if split else held[g][:1]
                for f in choices:
                    moves.append((g, "release", f))
        assert moves, f"deadlock: slots={slots} nc={nc} tiles={tiles} at turns {pos}, phases {phase}"
        m = rng.choice(moves)
        if m[0] == "land":
            f = m[1]
            in_flight.remove(f)
            assert completed[f % slots] == f // slots, "a fill landed out of its slot's order"
            completed[f % slots] += 1
            continue
        g, what = m[0], m[1]
        fills = program[pos[g]]
        if what == "begin":
            phase[g] = "wait"
        elif what == "waited":
            waited[g].append(m[2])
            read[g].append(m[2])
            if len(waited[g]) == len(fills):
                held[g] = list(fills)
                phase[g] = "release"  # issued, and the wgmmas done
        else:
            f = m[2]
            held[g].remove(f)
            release(f)
            if not held[g]:
                waited[g] = []
                phase[g] = "start"  # the next turn's named barrier: every warp's releases done
                pos[g] += 1
    assert not in_flight, "a fill issued and never landed"
    for g in (0, 1):
        assert read[g] == list(range(total)), f"warpgroup {g} did not read every fill once, in order"
    assert all(c % 2 == 0 for c in counter), "a fill released other than twice"


def run_v48_split(slots, nc, tiles, rng):
    run_v48(slots, nc, tiles, rng, split=True)


def main():
    rng = random.Random(1)
    assert sum(stream_turns(3, 2), []) == sum(turns(3, 2), []), "v44 reads the same fills in the same order"
    for run in (run_v40, run_v41, run_v44, run_v48, run_v48_split):
        for slots in (3, 4):  # Tile64; Tile128 and Tile64C320
            for nc in range(1, 10):
                for tiles in range(1, 5):
                    for _ in range(200):
                        run(slots, nc, tiles, rng)
        print(f"{run.__name__}: ok (no deadlock, every fill read in its own phase, refilled after both releases)")


if __name__ == "__main__":
    main()
