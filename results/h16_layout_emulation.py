"""The 16-bit wgmma kernel's data layouts, emulated on the CPU (numpy).

kernels/fused_dwsep.cu, namespace wg::h16: the weight slot images (pack_kernel),
x^T in GEMM1's permuted column order and its bias-step flags (stage_x), the
128-byte-swizzled K-major operands as wgmma descriptors read them, GEMM1's
accumulator fragments, the quad shuffles of the depthwise, stmatrix .trans into
h3^T, GEMM2 and the epilogue, re-written here index for index and run on a
ragged shape (C < 256, a partial chunk of E, K = 7, a partial last tile), then
compared with the block in float64. It checks the index arithmetic, given the
hardware's documented layouts (swizzle: address bits 4-6 ^= bits 7-9; wgmma D
fragments: row 16 warp + lane / 4 (+ 8), column 8 j + 2 (lane % 4) (+ 1);
stmatrix .trans: memory row i of a matrix holds its column i), not the
hardware: only a GPU run tests those.

    python results/h16_layout_emulation.py   # prints the largest difference (~1e-6: fp32 operands)
"""
from math import erf

import numpy as np

rng = np.random.default_rng(0)
C, E, K, L = 200, 100, 7, 150
B = 1
kCols, kHalo, kLaneCols, kEChunk, kKBlock = 72, 4, 18, 64, 64
x = rng.standard_normal((C, L)).astype(np.float32)
w1 = rng.standard_normal((E, C)).astype(np.float32) / 10
b1 = rng.standard_normal(E).astype(np.float32)
wd = rng.standard_normal((E, K)).astype(np.float32)
bd = rng.standard_normal(E).astype(np.float32)
w2 = rng.standard_normal((C, E)).astype(np.float32) / 10
b2 = rng.standard_normal(C).astype(np.float32)
def ref():
    h1 = w1 @ x + b1[:, None]
    hp = np.pad(h1, ((0, 0), (K // 2, K // 2)))
    h2 = np.stack([sum(wd[e, k] * hp[e, k:k + L] for k in range(K)) for e in range(E)]) + bd[:, None]
    h3 = 0.5 * h2 * (1 + np.vectorize(erf)(h2 / np.sqrt(2)))
    return w2 @ h3 + b2[:, None] + x
Y = ref()
nc = -(-E // 64)
def swz(row, k):  # byte offset in a swizzled block of 128-byte rows
    return row * 128 + (((k // 8) ^ (row % 8)) * 16) + (k % 8) * 2
def column_of(p):
    r, q = (p + 4) % 18, (p + 4) // 18
    return (r // 2) * 8 + 2 * q + r % 2
def position_of(n):
    j, q, b = n // 8, n % 8 // 2, n % 2
    return q * 18 - 4 + 2 * j + b
# pack (as pack_kernel): element index i -> value
slot_elems = 32768 // 2
ws = np.zeros(nc * 2 * slot_elems, np.float32)
for i in range(nc * 2 * slot_elems):
    chunk, is_w2, o = i // (2 * slot_elems), (i // slot_elems) % 2, i % slot_elems
    block = o // (slot_elems // 4)
    r = o // 64 if is_w2 else o % (slot_elems // 4) // 64
    k = ((o % 64 // 8) ^ (r % 8)) * 8 + o % 8
    if not is_w2:
        e, c = chunk * 64 + r, block * 64 + k
        ws[i] = w1[e, c] if e < E and c < C else 0
    else:
        c, e = r, chunk * 64 + k
        ws[i] = w2[c, e] if e < E and c < C else 0
# descriptor read: K-major SW128, rows (M or N) x 16 k from start byte addr (within an image of 16-bit values)
def desc_read(img, start, rows, kk=16):
    out = np.zeros((rows, kk), np.float32)
    for m in range(rows):
        for k in range(kk):
            addr = start + (m // 8) * 1024 + (m % 8) * 128 + k * 2
            addr = addr ^ (((addr >> 7) & 7) << 4)  # 128B swizzle on absolute (1024-aligned base) address
            out[m, k] = img[addr // 2]
    return out
def interleave_read(img, start, rows, lbo, sbo, kk=16):
    out = np.zeros((rows, kk), np.float32)
    for m in range(rows):
        for k in range(kk):
            addr = start + (m // 8) * sbo + (k // 8) * lbo + (m % 8) * 16 + (k % 8) * 2
            out[m, k] = img[addr // 2]
    return out
taps = np.zeros((nc * 64, 12), np.float32)
first_tap = 4 - K // 2
for e in range(nc * 64):
    for s in range(12):
        k = s - first_tap
        v = 0
        if e < E and s < 9 and 0 <= k < K: v = wd[e, k]
        if e < E and s == 9: v = bd[e]
        taps[e, s] = 0.5 * v
y = np.full((C, L), np.nan)  # every position is written, or the NaN shows
for tile in range(-(-L // 128)):
    for grp in range(2):
        pw0 = tile * 128 + grp * 64
        # stage x^T image (4 blocks of 72 rows x 128 B) and valid
        xt = np.zeros(4 * 9216 // 2, np.float32)
        valid = np.zeros(2304 // 2, np.float32)
        for t in range(72):
            pos = pw0 + position_of(t)
            valid[(t // 8 * 256 + t % 8 * 16) // 2] = 1.0 if 0 <= pos < L else 0.0
        for item in range(10 * 32):
            oct, cg = item % 10, item // 10
            p0 = pw0 - 8 + 8 * oct
            v = np.zeros((8, 8), np.float32)  # channel i, position j
            for i in range(8):
                c = cg * 8 + i
                for j in range(8):
                    pos = p0 + j
                    if c < C and 0 <= pos < L: v[i, j] = x[c, pos]
            for j in range(8):
                p = 8 * oct - 8 + j
                if p < -4 or p >= 68: continue
                n = column_of(p)
                base = (cg // 8) * 9216 + swz(n, (cg % 8) * 8)
                for i in range(8): xt[base // 2 + i] = v[i, j]
        acc = np.zeros((256, 64))
        for c in range(nc):
            # GEMM1: A = W1 slot, B = x^T: acc1[64 e][72 n]
            slot1 = ws[c * 2 * slot_elems: c * 2 * slot_elems + slot_elems]
            acc1 = np.zeros((64, 72))
            for ks in range(16):
                off = (ks // 4) * 8192 + (ks % 4) * 32
                xoff = (ks // 4) * 9216 + (ks % 4) * 32
                A = desc_read(slot1, off, 64)
                Bm = desc_read(xt, xoff, 72)
                acc1 += A.astype(np.float64) @ Bm.T.astype(np.float64)
            # bias step: A = b1 in k=0, B = valid
            Ab = np.zeros((64, 16))
            for r in range(64):
                e = c * 64 + r
                Ab[r, 0] = b1[e] if e < E else 0
            Bv = interleave_read(valid, 0, 72, 128, 256)
            acc1 += Ab @ Bv.T
            # depthwise per thread (warp w, lane = 4g+q): rows 16w+g (+8), positions 18q-4+i
            h3img = np.zeros(9216 // 2, np.float32)
            regs = {}  # (w, lane, h) -> v[18]
            for w in range(4):
                for lane in range(32):
                    g, q = lane // 4, lane % 4
                    for h in range(2):
                        row = 16 * w + g + 8 * h
                        regs[(w, lane, h)] = [acc1[row, 8 * (i // 2) + 2 * q + i % 2] for i in range(18)]
            for w in range(4):
                for lane in range(32):
                    g, q = lane // 4, lane % 4
                    for h in range(2):
                        row = 16 * w + g + 8 * h
                        v = regs[(w, lane, h)]
                        up = regs[(w, (lane - 1) % 32, h)] if lane > 0 else v  # shfl_up: lane 0 keeps own
                        dn = regs[(w, lane + 1, h)] if lane < 31 else v
                        lo = [up[14 + k] for k in range(4)]
                        hi = [dn[k] for k in range(4)]
                        tp = taps[c * 64 + row]
                        outs = []
                        for i in range(18):
                            s = tp[9]
                            for k in range(9):
                                idx = i + k - 4
                                inn = lo[idx + 4] if idx < 0 else hi[idx - 18] if idx >= 18 else v[idx]
                                s += tp[k] * inn
                            vv = 2 * s  # the taps and bias are halved
                            outs.append(0.5 * vv * (1 + erf(vv / np.sqrt(2))))
                        # stmatrix trans: fragment (tile j): thread holds (row g, cols 2q, 2q+1) of matrix (j, h)
                        for j in range(9):
                            for b in range(2):
                                col = 2 * q + b   # matrix column i
                                i = col
                                # memory row i of matrix gets column i; its address from lane providing row i
                                prow = (i // 2) * 18 - 4 + 2 * j + i % 2
                                hrow = prow + 72 if prow < 0 else prow
                                addr = hrow * 128 + (((2 * w + h) ^ (hrow % 8)) * 16) + g * 2
                                h3img[addr // 2] = outs[2 * j + b]
            # GEMM2: A = W2 slot, B = h3^T rows 0..63
            slot2 = ws[c * 2 * slot_elems + slot_elems: (c + 1) * 2 * slot_elems]
            for ks in range(4):
                Bm = desc_read(h3img, ks * 32, 64)
                for mb in range(4):
                    A = desc_read(slot2, mb * 8192 + ks * 32, 64)
                    acc[mb * 64:(mb + 1) * 64] += A.astype(np.float64) @ Bm.T.astype(np.float64)
        for cc in range(C):
            for p in range(64):
                pos = pw0 + p
                if pos < L: y[cc, pos] = acc[cc, p] + b2[cc] + x[cc, pos]
err = np.nanmax(np.abs(y - Y))
print(f"largest difference {err:.2e} (max |y| {np.abs(Y).max():.1f}), unwritten outputs {np.isnan(y).sum()}")
assert err < 1e-4 and not np.isnan(y).any(), "the emulated layouts do not compute the block"
