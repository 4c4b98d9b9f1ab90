"""TF32 rounding, checked on the CPU: the ties-to-even formula on fp32 bits
(test_fused_dwsep.round_tf32 after results/tf32_rne.patch, and the kernels'
software form before Hopper) against round-to-nearest-even done with exact
rationals, over random values, exact ties and edge cases; then how far the
ties-away rounding (cvt.rna) and ties to even (cvt.rn) put the two 1x1
convolutions of bench.py's small TF32 row (4x128x256x1000, K=3) apart, on
three seeds, and at the headline's C and E, next to the distances cuDNN was
measured at from ties away (results/h200_cudnn_small_row.txt: 2.35e-4
expand, 4.2e-5 project; DESIGN.md section 3 at the headline: 2.4e-4, 4.9e-5).
    python results/tf32_rounding_check.py"""
import struct
import sys
from fractions import Fraction
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from reference_model import Model

KEEP = 10  # TF32 keeps 10 of fp32's 23 mantissa bits
SMALL = (4, 128, 256, 1000, 3)  # bench.py's small TF32 row


def rne_bits(t):  # the formula under test
    b = t.float().contiguous().view(torch.int32)
    return ((b + 0xFFF + ((b >> 13) & 1)) & ~0x1FFF).view(torch.float32)


def rna_bits(t):  # cvt.rna.tf32.f32
    b = t.float().contiguous().view(torch.int32)
    return ((b + 0x1000) & ~0x1FFF).view(torch.float32)


def rne_exact(v):
    """v (a finite float32 as a Python float) rounded to 11 significant bits, ties to even."""
    if v == 0:
        return v
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    exp = (bits >> 23) & 0xFF
    ulp = Fraction(2) ** ((exp if exp else 1) - 127 - KEEP)  # subnormals: fp32's fixed exponent
    q = Fraction(v) / ulp
    n = int(q)  # towards zero
    rem = abs(q - n)
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2):
        n += 1 if q > 0 else -1
    return float(n * ulp)


def main():
    g = torch.Generator().manual_seed(0)
    vals = torch.randn(20000, generator=g) * torch.exp2(torch.randint(-140, 120, (20000,), generator=g).float())
    bits = torch.randint(0, 2**31 - 1, (4000,), generator=g, dtype=torch.int64)
    ties = ((bits & ~0x1FFF) | 0x1000).to(torch.int32).view(torch.float32)  # low 13 bits exactly half a TF32 ulp
    edge = torch.tensor([1.0, -1.0, 1.5, 3.4028234663852886e38, -3.4028234663852886e38, 1e-45, -1e-45, 1.17549435e-38,
                         0.0, -0.0, 65504.0, 2.0**-126 * 1.5])
    allv = torch.cat([vals, ties, -ties, edge])
    allv = allv[torch.isfinite(allv)]
    got = rne_bits(allv)
    want = torch.tensor([rne_exact(v) for v in allv.tolist()], dtype=torch.float64)
    finite = torch.isfinite(want.float())  # values that round past FLT_MAX become inf in both
    bad = (got.double() != want)[finite].sum().item()
    print(f"ties to even on the bits vs exact rationals: {bad} of {int(finite.sum())} differ "
          f"({ties.numel() * 2} exact ties among them); ties away differs from it on "
          f"{(rna_bits(allv).double() != want)[finite].sum().item()}")
    assert bad == 0
    d = lambda t: t.double()  # noqa: E731
    # the small row on three seeds, then the headline's C and E (B = 8 of 32)
    for seed, (B, C, E, L, K) in [(0, SMALL), (1, SMALL), (2, SMALL), (0, (8, 256, 512, 4096, 9))]:
        torch.manual_seed(seed)
        ref = Model(C, E, K)
        x = torch.randn(B, C, L)
        with torch.no_grad():
            w1, b1, w2, b2 = ref.pointwise.weight, ref.pointwise.bias, ref.project_back.weight, ref.project_back.bias
            h1 = F.conv1d(d(rna_bits(x)), d(rna_bits(w1)), d(b1))
            e1 = (h1 - F.conv1d(d(rne_bits(x)), d(rne_bits(w1)), d(b1))).abs().max().item()
            h3 = F.gelu(ref.depthwise(h1.float()))
            e2 = (F.conv1d(d(rna_bits(h3)), d(rna_bits(w2)), d(b2))
                  - F.conv1d(d(rne_bits(h3)), d(rne_bits(w2)), d(b2))).abs().max().item()
        print(f"{B}x{C}x{E}x{L}, K={K}, seed {seed}: ties away vs ties to even, expand {e1:.2e}, project {e2:.2e}")


if __name__ == "__main__":
    main()
