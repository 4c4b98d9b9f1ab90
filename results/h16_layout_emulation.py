"""The 16-bit wgmma kernel's data layouts, emulated on the CPU (numpy).

kernels/fused_dwsep.cu, namespace wg::h16: the weight slot images (pack_kernel),
x^T in GEMM1's permuted column order and its bias-step flags (stage_x, from x
at any element offset and any L by aligned 16-byte blocks of channel_of's
alignment classes), the 128-byte-swizzled K-major operands as wgmma
descriptors read them, GEMM1's accumulator fragments, the quad shuffles of the
depthwise, stmatrix .trans into h3^T, GEMM2 and the epilogue, re-written here
index for index for each tile (Tile128: 64 positions a warpgroup, C <= 256;
Tile64C320 and Tile64: 32, C <= 320 and 384) and run on ragged shapes (C short
of the tile's, a partial chunk of E, K < 9, a partial last tile, x at element
offsets 0 to 7 and L of several residues mod 8), then compared with the block
in float64; every 16-byte block the staging loads must hold one of x's
elements (so that it stays inside x's allocation). It checks the index
arithmetic, given the hardware's documented layouts (swizzle: address bits 4-6
^= bits 7-9; wgmma D fragments: row 16 warp + lane / 4 (+ 8), column 8 j +
2 (lane % 4) (+ 1); stmatrix .trans: memory row i of a matrix holds its column
i), not the hardware: only a GPU run tests those.

    python results/h16_layout_emulation.py   # the largest difference per tile (~1e-14: float64 throughout)
"""
from math import erf

import numpy as np

HALO, ECHUNK, KBLOCK = 4, 64, 64
W1_BLOCK = ECHUNK * 128  # bytes: 64 rows of 128
MMA_N, CHUNK, WARP, GROUP_WARPS = 8, 16, 32, 4  # an n8 tile's columns, a swizzled chunk's bytes
# the 16-bit tiles: (positions a warpgroup, kCMax); Tile96 is v56's
# (results/h16_v56_tile96.patch), not main's
TILES = {"Tile128": (64, 256), "Tile64C320": (32, 320), "Tile64": (32, 384), "Tile96": (48, 320)}


def swz(row, k):
    """Byte offset of (row, channel k) in a swizzled block of 128-byte rows."""
    return row * 128 + (((k // 8) ^ (row % 8)) * 16) + (k % 8) * 2


def desc_read(img, start, rows, kk=16):
    """A K-major, 128-byte-swizzled operand (rows x 16 k) from byte `start`."""
    out = np.zeros((rows, kk))
    for m in range(rows):
        for k in range(kk):
            addr = start + (m // 8) * 1024 + (m % 8) * 128 + k * 2
            addr ^= ((addr >> 7) & 7) << 4
            out[m, k] = img[addr // 2]
    return out


def interleave_read(img, start, rows, lbo, sbo, kk=16):
    """A K-major operand without swizzle: cores of 8 rows x 16 bytes."""
    out = np.zeros((rows, kk))
    for m in range(rows):
        for k in range(kk):
            out[m, k] = img[(start + (m // 8) * sbo + (k // 8) * lbo + (m % 8) * 16 + (k % 8) * 2) // 2]
    return out


def channel_of(k):
    """The channel at K index k of x^T in the kernel for unaligned rows: chunk r of a
    64-channel block holds channels 8 i + r (the kernel for aligned rows: k)."""
    return k // KBLOCK * KBLOCK + k % 8 * 8 + k % KBLOCK // 8


def column_of(p, group_t):
    """GEMM1's column of warpgroup position p: lane q holds positions lane_pos q .. + lane_pos - 1,
    column 8 j + 2 q + b for its position 2 j + b; the halo in the last n8 tile."""
    lane_pos, pos_tiles = group_t // 4, group_t // 8
    if p < 0:
        return 8 * pos_tiles + p + HALO
    if p >= group_t:
        return 8 * pos_tiles + p - group_t + HALO
    r, q = p % lane_pos, p // lane_pos
    return (r // 2) * 8 + 2 * q + r % 2


def position_of(n, group_t):
    """The warpgroup position of GEMM1 column n (column_of's inverse)."""
    lane_pos, pos_tiles = group_t // 4, group_t // 8
    j, q, b, hh = n // 8, n % 8 // 2, n % 2, n % 8
    if j == pos_tiles:
        return hh - HALO if hh < HALO else group_t + hh - HALO
    return q * lane_pos + 2 * j + b


def xs_offset(c, n, c_max):
    """Byte offset of channel c, GEMM1 column n in x by channel (aligned rows: n8 column tiles of
    kXsTileBytes = c_max * 16 + 16 bytes, 16 bytes a channel)."""
    return n // MMA_N * (c_max * CHUNK + CHUNK) + c * CHUNK + n % MMA_N * 2


def gemm1_fragments(acc1, group_t):
    """GEMM1's accumulators as the lanes hold them: regs[w, lane, h] lane 4 g + q of warp w's
    positions lane_pos q + i of row 16 w + g + 8 h (column 8 (i / 2) + 2 q + i % 2), halo[w, lane,
    h] its pair of the last n8 tile."""
    lane_pos, pos_tiles = group_t // 4, group_t // 8
    regs, halo = {}, {}
    for w in range(4):
        for lane in range(32):
            g, q = lane // 4, lane % 4
            for h in range(2):
                row = 16 * w + g + 8 * h
                regs[w, lane, h] = [acc1[row, 8 * (i // 2) + 2 * q + i % 2] for i in range(lane_pos)]
                halo[w, lane, h] = [acc1[row, 8 * pos_tiles + 2 * q + b] for b in range(2)]
    return regs, halo


def lane_depthwise(regs, halo, w, lane, h, tp):
    """The depthwise and GELU of lane `lane` of warp w, row half h, from GEMM1's fragments: regs[w,
    lane, h] its positions of the row, halo[w, lane, h] its halo pair; the positions before and after
    from lanes - 1 and + 1 (shfl_up / shfl_down; lanes 0 and 31 keep their own), lane 0's before and
    lane 3's after from the halo pairs of the lane and lane ^ 1 (shfl_xor 1). tp: the row's tap
    record (taps and bias halved). Returns the lane's GELU outputs."""
    v, u, q = regs[w, lane, h], halo[w, lane, h], lane % 4
    up = regs[w, lane - 1, h] if lane > 0 else v
    dn = regs[w, lane + 1, h] if lane < 31 else v
    partner = halo[w, lane ^ 1, h]
    lane_pos = len(v)
    lo, hi = up[lane_pos - HALO:], dn[:HALO]
    if q == 0:
        lo = [u[0], u[1], partner[0], partner[1]]
    if q == 3:
        hi = [partner[0], partner[1], u[0], u[1]]
    out = []
    for i in range(lane_pos):
        s = tp[9]
        for k in range(9):
            idx = i + k - HALO
            s += tp[k] * (lo[idx + HALO] if idx < 0 else hi[idx - lane_pos] if idx >= lane_pos else v[idx])
        out.append(0.5 * (2 * s) * (1 + erf(2 * s / np.sqrt(2))))  # taps and bias halved
    return out


def tap_records(wd, bd, b1, nc):
    """pack_taps: a record of 12 floats a row of nc chunks: the taps halved and centred in slots
    0-8, the bias halved in 9, the next chunk's b1 (cyclically, not halved) in 10."""
    E, K = wd.shape
    taps = np.zeros((nc * 64, 12))
    first_tap = HALO - K // 2
    for e in range(min(E, nc * 64)):
        for s in range(9):
            if 0 <= s - first_tap < K:
                taps[e, s] = 0.5 * wd[e, s - first_tap]
        taps[e, 9] = 0.5 * bd[e]
    for e in range(nc * 64):
        taps[e, 10] = b1[(e + 64) % (nc * 64)] if (e + 64) % (nc * 64) < E else 0
    return taps


def block(x, w1, b1, wd, bd, w2, b2):
    C, L = x.shape
    E, K = wd.shape
    h1 = w1.astype(np.float64) @ x + b1[:, None]
    hp = np.pad(h1, ((0, 0), (K // 2, K // 2)))
    h2 = np.stack([sum(wd[e, k] * hp[e, k:k + L] for k in range(K)) for e in range(E)]) + bd[:, None]
    h3 = 0.5 * h2 * (1 + np.vectorize(erf)(h2 / np.sqrt(2)))
    return w2 @ h3 + b2[:, None] + x


def emulate(group_t, c_max, x, w1, b1, wd, bd, w2, b2, x_off=0):
    C, L = x.shape
    # x in memory: x_off elements (2 bytes each) past a 16-byte boundary; what
    # lies around it in its allocation is garbage the staging must not use
    mem = np.full(x_off + C * L + 8, 1e30)
    mem[x_off:x_off + C * L] = x.ravel()
    # h16_aligned_rows: the kernel for aligned rows keeps the channels in order
    by_class = not (L % 8 == 0 and x_off % 8 == 0)
    chan = channel_of if by_class else (lambda k: k)
    E = wd.shape[0]
    cols = group_t + 2 * HALO
    lane_pos, pos_tiles, kblocks = group_t // 4, group_t // 8, c_max // KBLOCK
    octets = (cols + 2 * HALO) // 8
    xt_block, slot_bytes = cols * 128, kblocks * W1_BLOCK

    assert sorted(column_of(p, group_t) for p in range(-HALO, group_t + HALO)) == list(range(cols))
    assert all(column_of(position_of(n, group_t), group_t) == n for n in range(cols))
    groups, octets_per_lane = c_max // 8, lane_pos // 8

    def item_octet(item):  # x^T's copies: 4 octets of distinct lanes x 2 groups a quarter warp
        return octets_per_lane * (item % 8 % 4) + item // 8 % octets_per_lane

    def item_group(item):
        return 2 * (item // 8 // octets_per_lane) + item % 8 // 4

    def stage_item(item):  # stage_x: the positions' octets, then the halo octets
        halo = item - pos_tiles * groups
        if halo < 0:
            return 1 + item_octet(item), item_group(item)
        return (0 if halo < groups else octets - 1), halo % groups

    assert sorted(stage_item(i) for i in range(octets * groups)) == [(o, g) for o in range(octets) for g in range(groups)]

    nc = -(-E // ECHUNK)
    # pack_kernel: the slot images, element by element
    slot_elems = slot_bytes // 2
    ws = np.zeros(nc * 2 * slot_elems)
    for i in range(nc * 2 * slot_elems):
        chunk, is_w2, o = i // (2 * slot_elems), (i // slot_elems) % 2, i % slot_elems
        blk = o // (slot_elems // kblocks)
        r = o // 64 if is_w2 else o % (slot_elems // kblocks) // 64
        k = ((o % 64 // 8) ^ (r % 8)) * 8 + o % 8
        if not is_w2:
            e, c = chunk * 64 + r, chan(blk * 64 + k)
            ws[i] = w1[e, c] if e < E and c < C else 0
        else:
            c, e = chan(r), chunk * 64 + k
            ws[i] = w2[c, e] if e < E and c < C else 0
    taps = tap_records(wd, bd, b1, nc)
    b1_next = [taps[(nc - 1) * 64 + r, 10] for r in range(64)]  # the turn reads chunk n - 1's, cyclically
    y = np.full((C, L), np.nan)  # every position is written, or the NaN shows
    for tile in range(-(-L // (2 * group_t))):
        for grp in range(2):
            pw0 = tile * 2 * group_t + grp * group_t
            # stage_x: x^T and the bias-step flags
            xt = np.zeros(kblocks * xt_block // 2)
            valid = np.zeros(cols // 8 * 256 // 2)
            for t in range(cols):
                pos = pw0 + position_of(t, group_t)
                valid[(t // 8 * 256 + t % 8 * 16) // 2] = 1.0 if 0 <= pos < L else 0.0
            written = np.zeros(kblocks * xt_block // 2, dtype=int)
            for item in range(octets * c_max // 8):
                oct, cg = stage_item(item)
                lead = (x_off + chan(8 * cg) * L + pw0 - HALO) % 8
                a = pw0 - HALO - lead + 8 * oct  # the block's first position
                blocks = np.zeros((8, 8))  # [row i, element j]
                for i in range(8):
                    c = chan(8 * cg + i)
                    if c < C and a + 8 > 0 and a < L:
                        start = x_off + c * L + a
                        assert start % 8 == 0, "an unaligned block"
                        assert any(0 <= start + j - x_off - c * L < L for j in range(8)), "a block with none of the row"
                        blocks[i] = mem[start:start + 8]
                for j in range(8):
                    p = a + j - pw0
                    if p < -HALO or p >= group_t + HALO:
                        continue
                    base = (cg // 8) * xt_block + swz(column_of(p, group_t), (cg % 8) * 8)
                    for i in range(8):
                        xt[base // 2 + i] = blocks[i, j] if 0 <= a + j < L else 0
                        written[base // 2 + i] += 1
            assert (written.reshape(kblocks, cols, 64) == 1).all(), "x^T: an element written twice or not at all"
            acc = np.zeros((c_max, group_t))
            for ch in range(nc):
                # GEMM1 (A = W1 slot, B = x^T) and the bias step
                slot1 = ws[ch * 2 * slot_elems:(ch * 2 + 1) * slot_elems]
                acc1 = np.zeros((64, cols))
                for ks in range(kblocks * 4):
                    A = desc_read(slot1, (ks // 4) * W1_BLOCK + (ks % 4) * 32, 64)
                    Bm = desc_read(xt, (ks // 4) * xt_block + (ks % 4) * 32, cols)
                    acc1 += A @ Bm.T
                Ab = np.zeros((64, 16))
                for r in range(64):  # from the records of the chunk before
                    Ab[r, 0] = b1_next[r]
                acc1 += Ab @ interleave_read(valid, 0, cols, 128, 256).T
                # the depthwise in the fragments: lane 4g + q of warp w holds
                # rows 16w + g (+ 8), positions lane_pos q + i (j < pos_tiles)
                # and a halo pair (j = pos_tiles)
                regs, halo = gemm1_fragments(acc1, group_t)
                h3img = np.zeros(group_t * 128 // 2)
                for w in range(4):
                    for lane in range(32):
                        g, q = lane // 4, lane % 4
                        for h in range(2):
                            row = 16 * w + g + 8 * h
                            tp = taps[ch * 64 + row]
                            b1_next[row] = tp[10]
                            outs = lane_depthwise(regs, halo, w, lane, h, tp)
                            for i in range(lane_pos):
                                out = outs[i]
                                # stmatrix .trans: column i of tile j's matrix (row half h)
                                # goes to the address lane 8m + i gives: h3^T row 8 j + i
                                j, col = i // 2, 2 * q + i % 2
                                hrow = 8 * j + col
                                addr = hrow * 128 + (((2 * w + h) ^ (hrow % 8)) * 16) + g * 2
                                h3img[addr // 2] = out
                # GEMM2: A = W2 slot, B = h3^T rows 0 .. group_t - 1
                slot2 = ws[(ch * 2 + 1) * slot_elems:(ch * 2 + 2) * slot_elems]
                for ks in range(4):
                    Bm = desc_read(h3img, ks * 32, group_t)
                    for mb in range(kblocks):
                        acc[mb * 64:(mb + 1) * 64] += desc_read(slot2, mb * W1_BLOCK + ks * 32, 64) @ Bm.T
            # store_y: acc's column n is x^T's row n (the residual), position
            # position_of(n); y^T written over x^T, then copied out by items
            # (acc's row k, x^T's K index k: chan(k))
            for k in range(kblocks * 64):
                if chan(k) < C:
                    for n in range(group_t):
                        xt[((k // 64) * xt_block + swz(n, k % 64)) // 2] += acc[k, n] + b2[chan(k)]
            chunks_used = C // 64 * 8 + min(C % 64, 8) if by_class else -(-C // 8)
            for item in range(pos_tiles * -(-chunks_used // 2) * 2):
                oct, cg = item_octet(item), item_group(item)
                if chan(8 * cg) >= C:
                    continue
                for kk in range(8):
                    p = pw0 + 8 * oct + kk
                    for k in range(cg * 8, cg * 8 + 8):
                        if p < L and chan(k) < C:
                            xt_row = column_of(8 * oct + kk, group_t)
                            y[chan(k), p] = xt[((k // 64) * xt_block + swz(xt_row, k % 64)) // 2]
    return y


def main():
    rng = np.random.default_rng(0)
    for name, group_t, c_max, (C, E, K, L), x_off in (("Tile128", 64, 256, (200, 100, 7, 150), 0),
                                                      ("Tile128", 64, 256, (100, 70, 9, 157), 3),
                                                      ("Tile128", 64, 256, (67, 64, 3, 131), 6),
                                                      ("Tile128", 64, 256, (256, 64, 9, 136), 0),
                                                      ("Tile128", 64, 256, (256, 64, 9, 136), 4),
                                                      ("Tile128", 64, 256, (5, 64, 9, 61), 1),
                                                      ("Tile64C320", 32, 320, (300, 70, 9, 77), 2),
                                                      ("Tile64C320", 32, 320, (320, 64, 9, 96), 0),
                                                      ("Tile64", 32, 384, (352, 70, 5, 90), 0),
                                                      ("Tile64", 32, 384, (384, 64, 9, 67), 5)):
        x = rng.standard_normal((C, L))
        w1, b1 = rng.standard_normal((E, C)) / 10, rng.standard_normal(E)
        wd, bd = rng.standard_normal((E, K)), rng.standard_normal(E)
        w2, b2 = rng.standard_normal((C, E)) / 10, rng.standard_normal(C)
        y = emulate(group_t, c_max, x, w1, b1, wd, bd, w2, b2, x_off)
        ref = block(x, w1, b1, wd, bd, w2, b2)
        err = np.nanmax(np.abs(y - ref))
        print(f"{name} C={C} E={E} K={K} L={L}, x {x_off} elements on: largest difference {err:.2e} (max |y| {np.abs(ref).max():.1f}), "
              f"unwritten outputs {np.isnan(y).sum()}")
        assert err < 1e-6 and not np.isnan(y).any(), f"{name}: the emulated layouts do not compute the block"


if __name__ == "__main__":
    main()
