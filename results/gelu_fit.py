"""Fits the polynomial of the forward kernels' GELU (kernels/fused_dwsep.cu,
gelu_from_half) and measures it against float64, next to the erff-based form.
The kernel gets w = v / 2 (the depthwise runs on halved taps and bias):

    gelu(v) = max(v, 0) - (|v|/2) erfc(u) = (w + |w|) - a erfc(u),
    a = min(|w|, 2 sqrt(2)),  u = sqrt(2) a,  erfc(u) = 2^P(a),
    P a degree-10 polynomial ~ log2(erfc(u)) on [0, 2 sqrt(2)] (u <= 4), fit
    by Lawson-weighted least squares (converges to the minimax fit) on
    Chebyshev nodes.

Needs numpy and scipy (not project dependencies): python results/gelu_fit.py
[DEGREE] (10, the fp32 kernels' GELU, by default; the 16-bit kernel's is
degree 6, for bf16 and fp16 alike: its error is far below half an ulp of
the h3 it is rounded to).
The float32 evaluation follows the kernel's (P by one Horner chain in a),
models fmaf as one rounding of the exact a*b + c, and the hardware's ex2 as
exact to 2 ulp (both signs tried).
"""
import sys

import numpy as np
from scipy.special import erf, erfcx

DEGREE, U_MAX = (int(sys.argv[1]) if len(sys.argv) > 1 else 10), 4.0
A_MAX = U_MAX / np.sqrt(2)  # the clamp on a = |w| = |v| / 2

a = (np.cos(np.pi * (np.arange(6000) + 0.5) / 6000) + 1) * A_MAX / 2  # Chebyshev nodes on [0, A_MAX]
u = np.sqrt(2) * a
f = np.log2(erfcx(u)) - u * u * np.log2(np.e)  # log2(erfc(u)) without erfc's underflow
lawson = np.ones_like(a)  # the fit's weights
for _ in range(80):
    coef = np.polyfit(a, f, DEGREE, w=np.sqrt(lawson))
    lawson *= np.abs(np.polyval(coef, a) - f) + 1e-30
    lawson /= lawson.sum()
coef = coef.astype(np.float32)
print("P (highest power first):", ", ".join(f"{c:.9e}f" for c in coef))

f32 = np.float32


def fma(a, b, c):
    return f32(np.float64(a) * np.float64(b) + np.float64(c))


def gelu_kernel(v, ex2_ulps):
    hw = f32(v) * f32(0.5)  # w: the depthwise's halved sum (exact)
    aa = np.minimum(np.abs(hw), f32(A_MAX))
    p = coef[0]  # one Horner chain, as the kernel evaluates P
    for c in coef[1:]:
        p = fma(p, aa, c)
    erfc_u = f32(np.exp2(np.float64(p)) * (1 + ex2_ulps * 2.0**-23))
    return fma(-aa, erfc_u, hw + np.abs(hw))  # (w + |w|) - a erfc(u)


def gelu_erff(v):
    v = f32(v)
    return f32(0.5) * v * (f32(1) + f32(erf(np.float64(v * f32(np.sqrt(0.5))))))


edges = [-8, -4 * np.sqrt(2), -4, -2, -1, 0, 1, 2, 4, 6, 20]
print(f"{'v range':>14} | {'this max/mean ulp':>18} | {'erff max/mean ulp':>18} | this max abs")
for lo, hi in zip(edges, edges[1:]):
    v = np.linspace(lo, hi, 200001, dtype=np.float64).astype(np.float32)
    exact = 0.5 * v.astype(np.float64) * (1 + erf(v.astype(np.float64) / np.sqrt(2)))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    ulp[ulp == 0] = np.nan
    err = np.maximum(*(np.abs(gelu_kernel(v, s) - exact) for s in (-2, 2)))
    e32 = np.abs(gelu_erff(v) - exact)
    print(f"[{lo:5.2f},{hi:5.2f}) | {np.nanmax(err / ulp):8.2f} {np.nanmean(err / ulp):8.3f} | "
          f"{np.nanmax(e32 / ulp):8.2f} {np.nanmean(e32 / ulp):8.3f} | {err.max():.2e}")

# The same errors in ulps of the 16-bit formats h3 is rounded to (their
# significands have 11 and 8 bits against float32's 24): where v < 4, i.e.
# where the polynomial, not the clamp, sets the error.
v = np.linspace(-4, 4, 400001, dtype=np.float64).astype(np.float32)
exact = 0.5 * v.astype(np.float64) * (1 + erf(v.astype(np.float64) / np.sqrt(2)))
ulp32 = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
ok = ulp32 > 0
err = np.maximum(*(np.abs(gelu_kernel(v, s) - exact) for s in (-2, 2)))
e_ulp = err[ok] / ulp32[ok]
for name, bits in (("fp16", 11), ("bf16", 8)):
    scale = 2.0 ** (24 - bits)
    print(f"in {name} ulps on [-4, 4): max {e_ulp.max() / scale:.4f}, mean {e_ulp.mean() / scale:.5f}")
