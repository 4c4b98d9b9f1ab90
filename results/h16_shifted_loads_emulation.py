"""CPU emulation of load_octets_shifted (kernels/fused_dwsep.cu, v34): the staging of x^T's inner octets on Tile128 where rows of x are not
16-byte aligned. For one warp of inner items it follows the kernel index for
index: each lane loads the aligned 16-byte block that holds its octet's first
position in each of its 8 rows, plus the block after the last octet for row
`octet` of its group; the next block comes from the next octet's lane (or,
for the last octet, from the lane that loaded the extra) by a shuffle; then
the shift by 2 words, 1 word, half a word and the mask from L on. It checks
every value against x read directly (zero outside [0, L) and beyond C), and
that every block the kernel loads holds one of x's elements (see the
kernel's comment on why that keeps the loads inside x's allocation).

    python results/h16_shifted_loads_emulation.py
"""
import random

K_OCTETS_PER_LANE, K_POS_TILES = 2, 8  # Tile128
K_LAST = K_POS_TILES - 1
K_EXTRA = 8 // K_POS_TILES
BLOCK = 8  # elements of 2 bytes in an aligned 16-byte block


def item_octet(item):
    return K_OCTETS_PER_LANE * (item % 8 % 4) + item // 8 % K_OCTETS_PER_LANE


def item_group(item):
    return 2 * (item // 8 // K_OCTETS_PER_LANE) + item % 8 // 4


def lane_of(lane, r):
    """The lane of octet r in `lane`'s group (the inverse of item_octet, item_group)."""
    kop = K_OCTETS_PER_LANE
    return r // kop + 4 * (lane % 8 // 4) + 8 * (r % kop) + 8 * kop * (lane // (8 * kop))


def check(B, C, L, off, b, pw0, warp_items):
    n = B * C * L
    mem = [random.randrange(1, 65535) for _ in range(off + n + 2 * BLOCK)]  # x starts `off` elements in
    xb = off + b * C * L

    def block(c, at):
        row = xb + c * L
        start = at - (row + at) % BLOCK
        if not (c < C and start < L):
            return [0, 0, 0, 0]
        a = row + start
        assert a % BLOCK == 0 and a + BLOCK > off and a < off + n, "a block that holds none of x's elements"
        return [mem[a + 2 * k] | mem[a + 2 * k + 1] << 16 for k in range(4)]

    lanes = [(item_octet(32 * warp_items + lane), item_group(32 * warp_items + lane)) for lane in range(32)]
    own, extra = {}, {}
    for lane, (octet, cg) in enumerate(lanes):
        p0 = pw0 + 8 * octet
        own[lane] = [block(cg * 8 + i, p0) for i in range(8)]
        extra[lane] = [block(cg * 8 + octet + e * K_POS_TILES, p0 + 8 * (K_LAST - octet + 1)) for e in range(K_EXTRA)]
    wrong = 0
    for lane, (octet, cg) in enumerate(lanes):
        p0 = pw0 + 8 * octet
        nxt = lane_of(lane, octet + 1) if octet < K_LAST else lane
        valid = min(max(L - p0, 0), 8)
        for i in range(8):
            c = cg * 8 + i
            s = (xb + c * L + p0) % BLOCK
            src = lane_of(lane, i % K_POS_TILES)
            assert lanes[src] == (i % K_POS_TILES, cg)
            assert octet == K_LAST or lanes[nxt] == (octet + 1, cg)
            nb = own[nxt][i] if octet < K_LAST else extra[src][i // K_POS_TILES]
            w = own[lane][i] + nb
            a = [w[k + 2] if s & 4 else w[k] for k in range(6)]
            d = [a[k + 1] if s & 2 else a[k] for k in range(5)]
            for j in range(4):
                word = ((d[j] | d[j + 1] << 32) >> (16 * (s & 1))) & 0xFFFFFFFF
                got = word if 2 * j + 1 < valid else word & 0xFFFF if 2 * j < valid else 0

                def x(pos):
                    return mem[xb + c * L + pos] if c < C and 0 <= pos < L else 0

                wrong += got != (x(p0 + 2 * j) | x(p0 + 2 * j + 1) << 16)
    return wrong


def main():
    random.seed(2026)
    wrong = 0
    for _ in range(400):
        C = random.choice([3, 8, 16, 40, 64, 100, 256])
        L = random.randrange(1, 400)
        B = random.randrange(1, 3)
        pw0 = 64 * random.randrange(0, (L + 63) // 64 + 1)
        warp_items = random.randrange(0, max(1, (C + 7) // 8 * 8 // 32))
        wrong += check(B, C, L, random.randrange(0, BLOCK), random.randrange(B), pw0, warp_items)
    print(f"load_octets_shifted: {wrong} wrong values in 400 random warps")
    raise SystemExit(1 if wrong else 0)


if __name__ == "__main__":
    main()
