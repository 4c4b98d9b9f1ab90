"""The 16-bit kernel's path for aligned rows, emulated on the CPU (numpy) for
each tile, Tile96 (48 positions a warpgroup, 256 < C <= 320, v56) first:
kernels/fused_dwsep.cu, namespace wg::h16, re-written here index for index:
stage_x_by_channel (its Tile96 copies: three a warp over four channels) and
the bias-step flags, GEMM1 from x by channel (N-major), the depthwise in
GEMM1's fragments with its quad shuffles, stmatrix .trans of h3 (x4s, and
Tile96's x2 for its last two n8 tiles), GEMM2, init_acc's ldmatrix of b2 + x
and store_y_aligned (Tile96: a 16-byte and an 8-byte store a lane and row),
run on ragged shapes (C short of the tile's, a partial chunk of E, K < 9, a
row's last tile partly or wholly past L), then compared with the block in
float64. Also checked: every byte of x's buffer below C written once by the
staging, every output position written once, each y store aligned to its
width and wholly inside or outside [0, L), and every warp instruction of the
staging's copies hitting 32 distinct banks. It checks the index arithmetic,
given the hardware's documented layouts (wgmma D fragments: row 16 warp +
lane / 4 (+ 8), column 8 j + 2 (lane % 4) (+ 1); stmatrix .trans: memory row
i of a matrix, at the address lane 8 m + i gives, holds its column i;
ldmatrix: thread lane gets row lane / 4, elements 2 (lane % 4), + 1 of each
matrix), not the hardware: only a GPU run tests those.

    python results/h16_tile96_check.py   # the largest difference per case (~1e-14: float64 throughout)
"""
import numpy as np

from h16_layout_emulation import (CHUNK, ECHUNK, GROUP_WARPS, HALO, MMA_N, TILES, WARP, block, desc_read,
                                  gemm1_fragments, lane_depthwise, position_of, tap_records, xs_offset)


def acc_rows(kblocks):
    """The accumulators' rows a thread holds: (warp, lane, q, mb, h, channel 64 mb + 16 warp + 8 h + g)."""
    for w in range(4):
        for lane in range(WARP):
            g, q = lane // 4, lane % 4
            for mb in range(kblocks):
                for h in range(2):
                    yield w, lane, q, mb, h, mb * 64 + 16 * w + 8 * h + g


def emulate(group_t, c_max, x, w1, b1, wd, bd, w2, b2):
    C, L = x.shape
    E = wd.shape[0]
    assert L % 8 == 0, "the path for aligned rows"
    cols, lane_pos, pos_tiles, kblocks = group_t + 2 * HALO, group_t // 4, group_t // MMA_N, c_max // 64
    tile_bytes = c_max * CHUNK + CHUNK  # kXsTileBytes
    row_pairs = group_t // 2

    nc = -(-E // ECHUNK)
    taps = tap_records(wd, bd, b1, nc)
    w1p = np.zeros((nc * 64, c_max))
    w1p[:E, :C] = w1
    w2p = np.zeros((c_max, nc * 64))
    w2p[:C, :E] = w2
    b1_next = [taps[(nc - 1) * 64 + r, 10] for r in range(64)]
    y = np.full((C, L), np.nan)
    writes = np.zeros((C, L), dtype=int)
    xs_bytes = (pos_tiles + 1) * tile_bytes  # the n8 column tiles, the halo's included
    for tile in range(-(-L // (2 * group_t))):
        for grp in range(2):
            pw0 = tile * 2 * group_t + grp * group_t
            # stage_x_by_channel: x's values by 2-byte element, and how often each was written
            xs = np.zeros(xs_bytes // 2)  # zero since the kernel's start (channels C .. kCMax)
            written = np.zeros(xs_bytes // 2, dtype=int)

            def put(warp, lane, c, j, q):  # one 4-byte cp.async (zfill outside [0, L))
                pos = pw0 + lane_pos * q + 2 * j
                off = xs_offset(c, MMA_N * j + 2 * q, c_max)
                assert off % 4 == 0
                for b in range(2):
                    xs[off // 2 + b] = x[c, pos + b] if pos < L else 0.0
                    written[off // 2 + b] += 1
                return off // 4 % 32  # its bank

            if WARP % row_pairs == 0:
                rows_a_copy = WARP // row_pairs
                stride = GROUP_WARPS * rows_a_copy
                for warp in range(GROUP_WARPS):
                    banks = {}
                    for lane in range(WARP):
                        c0, j, q = warp + GROUP_WARPS * (lane // row_pairs), lane % row_pairs // 4, lane % 4
                        for k, c in enumerate(range(c0, C, stride)):
                            banks.setdefault(k, []).append(put(warp, lane, c, j, q))
                    for k, b in banks.items():
                        assert len(b) == len(set(b)), f"bank conflict in copy {k}: {sorted(b)}"
            else:
                assert row_pairs == 24 and tile_bytes // 4 % 32 == 4
                for warp in range(GROUP_WARPS):
                    c = warp // 2 * 8 + warp % 2
                    banks = {}
                    for lane in range(WARP):
                        q = lane % 4
                        for s in range(3):
                            c0 = c + (2 * s if lane < 24 else 6)
                            j = lane // 4 if lane < 24 else 2 * s + (lane - 24) // 4
                            for k, cc in enumerate(range(c0, C, 4 * GROUP_WARPS)):
                                banks.setdefault((s, k), []).append(put(warp, lane, cc, j, q))
                    for key, b in banks.items():  # the lanes that take part in that instruction
                        assert len(b) == len(set(b)), f"bank conflict in copy {key}: {sorted(b)}"
            for i in range(C * HALO):  # the halo pairs
                c, n = i // HALO, pos_tiles * MMA_N + 2 * (i % HALO)
                p = pw0 + position_of(n, group_t)
                for b in range(2):
                    xs[xs_offset(c, n, c_max) // 2 + b] = x[c, p + b] if 0 <= p < L else 0.0
                    written[xs_offset(c, n, c_max) // 2 + b] += 1
            for c in range(c_max):
                for n in range(cols):
                    times = written[xs_offset(c, n, c_max) // 2]
                    assert times == (1 if c < C else 0), f"x ({c}, {n}) written {times}x"
            valid = np.array([1.0 if 0 <= pw0 + position_of(n, group_t) < L else 0.0 for n in range(cols)])
            # GEMM1's B (N-major)
            B1 = np.array([[xs[xs_offset(k, n, c_max) // 2] for k in range(c_max)] for n in range(cols)])

            # init_acc: ldmatrix of xs_block_addr (lane 8m + i: channel 64 mb + 16 w + 8 (m % 2) + i, n8 tile j + m / 2)
            acc = {}
            for w in range(4):
                for lane in range(WARP):
                    g, q = lane // 4, lane % 4
                    a = np.zeros((kblocks, group_t // 2))
                    for mb in range(kblocks):
                        for h in range(2):
                            c = mb * 64 + w * 16 + 8 * h + g
                            bias = b2[c] if c < C else 0.0
                            for jj in range(pos_tiles):
                                m = 2 * (jj % 2) + h  # matrix m of the x4 at j = jj - jj % 2
                                row_addr = xs_offset(64 * mb + 16 * w + 8 * (m % 2) + g,
                                                     MMA_N * (jj - jj % 2 + m // 2), c_max)
                                for b in range(2):
                                    a[mb, 4 * jj + 2 * h + b] = bias + xs[row_addr // 2 + 2 * q + b]
                    acc[w, lane] = a
            for ch in range(nc):
                acc1 = w1p[ch * 64:(ch + 1) * 64] @ B1.T + np.outer(b1_next, valid)
                regs, halo = gemm1_fragments(acc1, group_t)
                h3img = np.zeros(group_t * 128 // 2)
                h3written = np.zeros(group_t * 128 // 2, dtype=int)
                for w in range(4):
                    outs = {}  # (lane, h) -> the lane's tile(j) pairs
                    for lane in range(WARP):
                        g, q = lane // 4, lane % 4
                        for h in range(2):
                            row = 16 * w + g + 8 * h
                            tp = taps[ch * 64 + row]
                            b1_next[row] = tp[10]
                            outs[lane, h] = lane_depthwise(regs, halo, w, lane, h, tp)
                    # stmatrix .trans: x4 at j = 0, 4, ... (x2 where two tiles are left); lane 8 m + i gives
                    # the address of matrix m's column i: h3^T row 8 (j + m) + i, chunk (2 w + h) ^ i
                    for h in range(2):
                        for j in range(0, pos_tiles, 4):
                            mats = 4 if j + 4 <= pos_tiles else 2
                            for m in range(mats):
                                for i in range(8):
                                    lane_a = 8 * m + i
                                    mm = lane_a // 8 if mats == 4 else lane_a // 8 % 2
                                    row = MMA_N * (j + mm) + lane_a % 8
                                    addr = row * 128 + (((2 * w + h) ^ (lane_a % 8)) * 16)
                                    for g in range(8):  # element (g, column i) from lane 4 g + i // 2, tile j + m
                                        val = outs[4 * g + i // 2, h][2 * (j + m) + i % 2]
                                        h3img[addr // 2 + g] = val
                                        h3written[addr // 2 + g] += 1
                assert (h3written == 1).all(), "h3: an element written twice or not at all"
                Bm = np.vstack([desc_read(h3img, ks * 32, group_t).T for ks in range(4)])  # [64 e, group_t]
                for w, lane, q, mb, h, c in acc_rows(kblocks):
                    for jj in range(pos_tiles):
                        for b in range(2):
                            acc[w, lane][mb, 4 * jj + 2 * h + b] += (w2p[c, ch * 64:(ch + 1) * 64]
                                                                     @ Bm[:, 8 * jj + 2 * q + b])
            # store_y_aligned
            for w, lane, q, mb, h, c in acc_rows(kblocks):
                vals = [acc[w, lane][mb, 4 * (k // 2) + 2 * h + k % 2] for k in range(lane_pos)]
                # the lane's stores of the row: (first position from pw0, count, values)
                if lane_pos == 12:
                    p0, odd = lane_pos * q, q % 2
                    wide, narrow = p0 + 4 * odd, p0 + 8 * (1 - odd)
                    stores = [(wide, 8, vals[wide - p0:wide - p0 + 8]), (narrow, 4, vals[narrow - p0:narrow - p0 + 4])]
                else:
                    stores = [(lane_pos * q + 8 * s, 8, vals[8 * s:8 * s + 8]) for s in range(lane_pos // 8)]
                for start, count, vv in stores:
                    assert (pw0 + start) * 2 % (2 * count) == 0, f"a {2 * count}-byte store at {pw0 + start}"
                    if c < C and start < L - pw0:
                        assert pw0 + start + count <= L, "a store across L"
                        y[c, pw0 + start:pw0 + start + count] = vv
                        writes[c, pw0 + start:pw0 + start + count] += 1
    assert (writes == 1).all(), "y: a position written twice or not at all"
    return y


def main():
    rng = np.random.default_rng(1)
    for name, (C, E, K, L) in (("Tile96", (320, 70, 9, 248)),   # a partial last tile: warpgroup 1 at 8 of 48
                               ("Tile96", (264, 64, 5, 56)),    # one tile, warpgroup 1 at 8 positions
                               ("Tile96", (300, 130, 3, 40)),   # warpgroup 1 wholly past L; 3 chunks
                               ("Tile96", (257, 64, 1, 96)),
                               ("Tile96", (320, 64, 7, 8)),
                               ("Tile128", (200, 70, 9, 136)),
                               ("Tile64C320", (300, 70, 9, 80)),
                               ("Tile64", (352, 64, 5, 72))):
        group_t, c_max = TILES[name]
        x = rng.standard_normal((C, L))
        w1, b1 = rng.standard_normal((E, C)) / 10, rng.standard_normal(E)
        wd, bd = rng.standard_normal((E, K)), rng.standard_normal(E)
        w2, b2 = rng.standard_normal((C, E)) / 10, rng.standard_normal(C)
        y = emulate(group_t, c_max, x, w1, b1, wd, bd, w2, b2)
        ref = block(x, w1, b1, wd, bd, w2, b2)
        err = np.nanmax(np.abs(y - ref))
        print(f"{name} C={C} E={E} K={K} L={L}: largest difference {err:.2e} (max |y| {np.abs(ref).max():.1f})")
        assert err < 1e-6 and not np.isnan(y).any(), f"{name}: the emulated layouts do not compute the block"


if __name__ == "__main__":
    main()
