"""v53's staging of x by channel (kernels/fused_dwsep.cu, stage_x_by_channel,
aligned rows), emulated index for index on the CPU for each 16-bit tile: every
(channel, GEMM1 column) of the warpgroup's buffer must hold x at the column's
position (column_of), 0 outside [0, L) and for channels C .. kCMax, each byte
written once, no load outside its channel's row (the warpgroups of a row's
last tile included, whose positions may all lie past L); and each warp
instruction's 4-byte stores must hit distinct banks (32 of them, 24 at Tile96,
whose 4 channels a warp leave 8 lanes idle: results/h16_v56_tile96_core.patch).
It checks the index arithmetic, not the hardware.

    python results/h16_xs_staging_check.py
"""
import numpy as np

from h16_layout_emulation import CHUNK, GROUP_WARPS, HALO, MMA_N, TILES, WARP, column_of, xs_offset

GROUP_THREADS = GROUP_WARPS * WARP


def check(group_t, c_max, C, L, pw0):
    lane_pos, pos_tiles = group_t // 4, group_t // MMA_N
    tile_bytes = c_max * CHUNK + CHUNK  # kXsTileBytes

    x = np.arange(1, C * L + 1, dtype=np.int64).reshape(C, L)  # distinct, nonzero

    def load(c, p, n):  # a load of n elements: inside channel c's row of x
        assert 0 <= c < C and 0 <= p and p + n <= L, ("load outside x's row", c, p, n)
        return x[c, p:p + n]

    buf = np.full((pos_tiles + 1) * tile_bytes // 2, -1, dtype=np.int64)  # 2-byte elements
    one_lane = lane_pos % 8 == 0  # a load's 4 pairs belong to one lane q (not at Tile96)
    row_loads = group_t // 8
    warp_rows = WARP // row_loads if one_lane else 4
    pass_rows = GROUP_WARPS * warp_rows
    passes = c_max // pass_rows
    assert (row_loads * warp_rows == WARP or not one_lane) and passes * pass_rows == c_max

    def put(off, vals):
        assert off % 2 == 0
        e = off // 2
        assert (buf[e:e + len(vals)] == -1).all(), "written twice"
        buf[e:e + len(vals)] = vals

    banks = {}
    for t in range(GROUP_THREADS):
        warp, lane = divmod(t, WARP)
        m = lane % row_loads
        c0 = warp * warp_rows + lane // row_loads
        if lane >= warp_rows * row_loads:
            continue  # idle (Tile96)
        pos = pw0 + 8 * m
        q, j0 = 8 * m // lane_pos, 8 * m % lane_pos // 2
        for k in range(passes):
            c = c0 + k * pass_rows
            ok = pos < L and c < C
            v = load(c, pos, 8) if ok else np.zeros(8, dtype=np.int64)
            for i in range(4):
                if one_lane:
                    d = xs_offset(c0, MMA_N * j0 + 2 * q, c_max) + k * pass_rows * CHUNK + i * tile_bytes
                else:
                    pp = 8 * m + 2 * i
                    n = MMA_N * (pp % lane_pos // 2) + 2 * (pp // lane_pos)
                    d = xs_offset(c0, n, c_max) + k * pass_rows * CHUNK
                put(d, v[2 * i:2 * i + 2])
                banks.setdefault((warp, k, i), []).append(d // 4 % 32)
    left, right = 0 < pw0 <= L, pw0 + group_t < L
    for k in range((c_max + GROUP_THREADS - 1) // GROUP_THREADS):
        for t in range(GROUP_THREADS):
            c = t + k * GROUP_THREADS
            if c >= c_max:
                continue
            h0 = load(c, pw0 - HALO, 4) if c < C and left else np.zeros(4, dtype=np.int64)
            h1 = load(c, pw0 + group_t, 4) if c < C and right else np.zeros(4, dtype=np.int64)
            put(xs_offset(c, pos_tiles * MMA_N, c_max), np.concatenate([h0, h1]))
    for key, b in banks.items():
        assert len(set(b)) == len(b) == warp_rows * row_loads, f"bank conflict {key}"
    for c in range(c_max):
        for p in range(-HALO, group_t + HALO):
            want = x[c, pw0 + p] if c < C and 0 <= pw0 + p < L else 0
            got = buf[xs_offset(c, column_of(p, group_t), c_max) // 2]
            assert got == want, (c, p, got, want)


def main():
    for name, (group_t, c_max) in TILES.items():
        n = 0
        for C in (c_max, c_max - 8, c_max - 72, 8):
            for L in (8 * group_t, 8 * group_t + 8, group_t + 24):
                tiles = -(-L // (2 * group_t))  # the CTA tiles of a row: two warpgroups each
                for pw0 in range(0, tiles * 2 * group_t, group_t):
                    check(group_t, c_max, C, L, pw0)
                    n += 1
        print(f"{name}: {n} warpgroup tiles staged as column_of places them, bank-conflict-free")


if __name__ == "__main__":
    main()
