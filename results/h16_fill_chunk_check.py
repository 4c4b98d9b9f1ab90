"""CPU check of v54's refill bookkeeping in the 16-bit kernel: a fill's chunk
without a division. Fill f of a CTA's ring sequence is W1 (f even) or W2 (f
odd) of chunk f // 2 % nc; the kernel works it out as n_chunk + (f // 2 - n),
wrapped by at most two subtractions of nc, where n counts the chunks whose
GEMM1 has been issued and n_chunk = n % nc is kept beside it by the
depthwise (n_chunk = c + 1 < nc ? c + 1 : 0 after chunk c). This walks the
kernel's turns (the first turn GEMM1 only, the middle turns both, the last
GEMM2 only) and its releases (2n - 1 by GEMM2's slot, 2n by GEMM1's; the
refill is fill f + kSlots where it exists) for every nc, ring size and CTA
tile count in range, and checks each refill's chunk, the wrap's bound and
n_chunk itself.

    python results/h16_fill_chunk_check.py
"""


def kernel_chunk(f, n, n_chunk, nc):
    chunk = n_chunk + (f // 2 - n)
    assert 0 <= f // 2 - n <= 2, (f, n)  # the two subtractions suffice
    if chunk >= nc:
        chunk -= nc
    if chunk >= nc:
        chunk -= nc
    return chunk


def walk(nc, slots, tiles):
    fills = 2 * nc * tiles
    checked = 0

    def fill(f, n, n_chunk):
        nonlocal checked
        assert kernel_chunk(f, n, n_chunk, nc) == f // 2 % nc, (nc, slots, tiles, f, n)
        checked += 1

    n = n_chunk = 0
    for f in range(min(slots, fills)):  # the kernel's first fills, before any turn
        fill(f, n, n_chunk)

    def turn(g2, g1):
        assert n_chunk == n % nc
        for f in ([2 * n - 1] if g2 else []) + ([2 * n] if g1 else []):
            if f + slots < fills:
                fill(f + slots, n, n_chunk)

    for _ in range(tiles):
        for c in range(nc):
            turn(c > 0, True)
            n += 1  # the depthwise of chunk c
            n_chunk = c + 1 if c + 1 < nc else 0
        turn(True, False)
    assert n == nc * tiles
    return checked


def main():
    total = 0
    for nc in range(1, 13):
        for slots in (3, 4):
            for tiles in range(1, 6):
                total += walk(nc, slots, tiles)
    print(f"fill chunks: {total} fills checked, all equal to f // 2 % nc")


if __name__ == "__main__":
    main()
