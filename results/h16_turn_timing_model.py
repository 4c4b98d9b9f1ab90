"""A timing model of the 16-bit kernel's two warpgroups on a 3-slot weight
ring (the C = 384 tile, Tile<32, 384, 3>), in steady state: a chunk's time
under v48's releases (both of a turn's slots after all its wgmmas) and under
v52's (results/h16_v52_early_g2_release.patch: GEMM2's slot released as soon
as GEMM2's wgmmas are done, GEMM1's slot waited for after GEMM2 is issued).

The durations are read off v50d's clock trace at C = 384
(results/h100_trace_c384_v50d.txt, a traced build, so proportions): the
refill lands ~950 cycles after the second release is issued, ~98 wgmmas of
both warpgroups take ~3k cycles in the shared tensor pipe, a depthwise
~0.8k, a release ~0.3k (plus ~0.4k to issue a refill), the tap record's
load ~0.9k from the end of the issue. The issue runs ahead of the pipe by
`queue` wgmmas. It is a model: it reproduces the trace's lock-step and its ~5k-cycle
chunk under v48; read its v52 figure as a prediction, not a measurement
(kernels/NOTES.md, "The C = 384 tile measured").

Also the C = 320 tiles (kernels/NOTES.md, v56): Tile64C320 (4 slots, 32
positions a warpgroup) against Tile96 (3 slots, 48), with the wgmma counts
of C = 320 and guesses for what the trace does not give (Tile96's wgmma
cycles from their shared-memory reads, 2 KB of A and 32 N bytes of B at ~128
bytes a cycle, plus C = 384's overhead, or scaled from C = 384's by N; its
depthwise 1.25-1.5 times C = 384's for 1.5 times the outputs).

    python results/h16_turn_timing_model.py
"""

PARAMS = dict(t_g1=32, t_g2=30, n_g1=25, n_g2=24, fill=950, release=300, refill=370, dw=800, barrier=150,
              taps=900, issue=8, queue=6)


def chunk_cycles(early, turns=40, slots=3, **kw):
    """Cycles a chunk in steady state on a ring of `slots` slots."""
    p = dict(PARAMS, **kw)
    landed = {f: 0.0 for f in range(slots)}  # fill -> when it landed in its slot
    landed[slots] = p["fill"]  # fill 0 (the tiles' first GEMM1) counted as read and refilled at 0
    releases = {0: 2}
    pipe_free = 0.0  # when the tensor pipe has done its queued wgmmas

    def release(f, when):
        """Cycles the releasing thread spends; the second release of a fill refills its slot."""
        releases[f] = releases.get(f, 0) + 1
        if releases[f] == 2:
            landed[f + slots] = when + p["refill"] + p["fill"]
            return p["refill"]
        return 0

    def push(count, cycles, at):
        """Issue count wgmmas from time at: (when the issue ends, when the last is done)."""
        nonlocal pipe_free
        cur = at
        for _ in range(count):
            pipe_free = max(pipe_free, cur) + cycles
            cur = max(cur + p["issue"], pipe_free - p["queue"] * cycles)
        return cur, pipe_free

    t = [0.0, 0.0]  # when each warpgroup reaches its next turn
    turn = [1, 1]  # turn n reads fills 2n - 1 (W2 of chunk n - 1) and 2n (W1 of chunk n)
    starts = []
    while min(turn) < turns:
        g = 0 if turn[0] < turns and (t[0] <= t[1] or turn[1] >= turns) else 1
        n = turn[g]
        a, b = 2 * n - 1, 2 * n
        now = t[g] + p["barrier"]
        if a not in landed or (not early and b not in landed):
            assert turn[1 - g] < turns, "deadlock"
            t[g] = max(t[g], t[1 - g] + 1)  # the other warpgroup's releases come first
            continue
        start = max(now, landed[a]) if early else max(now, landed[a], landed[b])
        cur, g2_done = push(p["n_g2"], p["t_g2"], start)
        if early:
            assert b in landed, "GEMM1's fill not yet issued"
            cur = max(cur, landed[b])
        cur, g1_done = push(p["n_g1"], p["t_g1"], cur)
        taps_ready = cur + p["taps"]
        if early:
            x = max(cur, g2_done) + p["release"]
            x += release(a, x)
            x = max(x, g1_done, taps_ready) + p["release"]
            x += release(b, x)
        else:
            x = max(cur, g1_done, taps_ready) + p["release"]
            x += release(a, x)
            x += p["release"]
            x += release(b, x)
        t[g] = x + p["dw"]
        starts.append((n, start))
        turn[g] += 1
    mid_n, mid_t = starts[len(starts) // 2]
    return (max(t) - mid_t) / (turns - mid_n)


def main():
    print("C = 384, Tile64 (3 slots):")
    for fill in (700, 950, 1500):
        for dw in (800, 1200):
            base = chunk_cycles(False, fill=fill, dw=dw)
            v52 = chunk_cycles(True, fill=fill, dw=dw)
            print(f"refill {fill:4d}, depthwise {dw:4d}: v48 {base:5.0f}, v52 {v52:5.0f} cycles a chunk "
                  f"({(v52 / base - 1) * 100:+.0f}%)")
    # C = 320: 20 k16 steps of GEMM1 + the bias step, 5 x 4 of GEMM2; a
    # chunk's weights 40 KB (refill ~800 cycles at C = 384's rate)
    c320 = dict(n_g1=21, n_g2=20, fill=800)
    t64 = chunk_cycles(False, slots=4, **c320)
    print(f"C = 320, Tile64C320 (4 slots, 64 positions a CTA): v48 {t64:5.0f} cycles a chunk")
    for t_g1, t_g2 in ((36, 34), (45, 38)):
        for dw in (1000, 1200):
            kw = dict(c320, t_g1=t_g1, t_g2=t_g2, dw=dw)
            a, b = chunk_cycles(False, **kw), chunk_cycles(True, **kw)
            print(f"Tile96 (3 slots, 96 positions), wgmma {t_g1}/{t_g2}, depthwise {dw}: v48 {a:5.0f} "
                  f"({a / 96 / (t64 / 64) - 1:+.0%} a position), v52 {b:5.0f} ({b / 96 / (t64 / 64) - 1:+.0%})")


if __name__ == "__main__":
    main()
