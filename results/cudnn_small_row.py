"""The suite's small row 4x128x256x1000 K=3 under allow_tf32: which rounding of
its operands cuDNN's two 1x1 convolutions match, each measured alone against
float64 emulations (activation / weight rounded to TF32 to nearest with ties
away "rn", ties to even "rne", by truncation "rz", or not at all), then the
block under each emulation against cuDNN's output and the fused one. Same
model and input as bench.py's row. Wrote h200_cudnn_small_row.txt (up to
"block emulated", before the rne rows):  python results/cudnn_small_row.py
The "rne" rows and the last part (2026-12-08, not yet run on a GPU): rne / rne
is the hypothesis that cuDNN rounds ties to even (rn and rne differ only at
ties, and on the CPU they differ by 0.9-2.4e-4 in h1 and 3-6e-5 in the
projection at this shape, the distances cuDNN was measured at from rn / rn);
the last part fits cuDNN's departure from rn / rn to the two roundings' own
effects and localises it."""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fused_dwsep import ModelNew
from reference_model import Model
from tf32_rounding_check import rna_bits as rn  # to nearest, ties away (cvt.rna.tf32.f32, as main's kernels round)
from tf32_rounding_check import rne_bits as rne  # to nearest, ties to even (cvt.rn.tf32.f32)

torch.backends.cudnn.allow_tf32 = True
B, C, E, L, K = 4, 128, 256, 1000, 3
torch.manual_seed(0)
ref = Model(C, E, K).cuda()
torch.manual_seed(0)
new = ModelNew(C, E, K).cuda()
x = torch.randn(B, C, L, device="cuda")


def rz(t):  # truncation: what a TF32 tensor core does with raw fp32 bits
    b = t.float().contiguous().view(torch.int32)
    return (b & ~0x1FFF).view(torch.float32)


def d(t):
    return t.double()


def same(t):
    return t


modes = {"rn / rn": (rn, rn), "rne / rne": (rne, rne), "rz / rz": (rz, rz), "rz / rn": (rz, rn), "rn / rz": (rn, rz),
         "exact": (same, same)}
with torch.no_grad():
    w1, b1 = ref.pointwise.weight, ref.pointwise.bias
    w2, b2 = ref.project_back.weight, ref.project_back.bias
    h1 = F.conv1d(x, w1, b1)
    print("expand (x -> h1), cuDNN alone: max |cuDNN - emulation|, rounding of activation / weight")
    for name, (fa, fw) in modes.items():
        print(f"  {name:9s} {(d(h1) - F.conv1d(d(fa(x)), d(fw(w1)), d(b1))).abs().max().item():.3e}")
    # Is cuDNN's output itself on the TF32 grid (its low 13 mantissa bits zero)?
    low13 = lambda t: (rz(t) == t).float().mean().item()
    rnrn = F.conv1d(d(rn(x)), d(rn(w1)), d(b1))
    print(f"  share of cuDNN's h1 with its low 13 bits zero: {low13(h1):.4f} (fused path's operands: x {low13(rn(x)):.4f})")
    print(f"  rn / rn, then the sum rounded to TF32 (rn): {(d(h1) - d(rn(rnrn.float()))).abs().max().item():.3e}; "
          f"truncated: {(d(h1) - d(rz(rnrn.float()))).abs().max().item():.3e}")
    h3 = F.gelu(ref.depthwise(h1))
    z = F.conv1d(h3, w2, b2)
    print("project (h3 -> y - x), cuDNN alone: max |cuDNN - emulation|")
    for name, (fa, fw) in modes.items():
        print(f"  {name:9s} {(d(z) - F.conv1d(d(fa(h3)), d(fw(w2)), d(b2))).abs().max().item():.3e}")
    print(f"  share of cuDNN's output with its low 13 bits zero: {low13(z):.4f}")
    y_ref, y_new = ref(x), new(x)
    print(f"block: max |fused - cuDNN| = {(y_new - y_ref).abs().max().item():.3e}")
    for name, (fa, fw) in modes.items():
        h = F.gelu(ref.depthwise(F.conv1d(d(fa(x)), d(fw(w1)), d(b1)).float()))
        y = (F.conv1d(d(fa(h)), d(fw(w2)), d(b2)) + d(x)).float()
        print(f"  block emulated {name:9s}: vs cuDNN {(y - y_ref).abs().max().item():.3e}, "
              f"vs fused {(y - y_new).abs().max().item():.3e}")

    # Added 2026-12-08, not yet run: where each of cuDNN's convolutions departs from rn / rn.
    # D = cuDNN - (rn / rn); Rx, Rw = what rounding x alone, w alone to TF32
    # changes in the exact product. A least-squares fit D ~ a Rx + b Rw says
    # which rounding cuDNN leaves out or does differently (a = -1: x not
    # rounded at all; b = -1: w not rounded; a, b near 0 with a large
    # residual: neither, something else, localised below).
    for label, a_in, wt, bias, out in (("expand", x, w1, b1, h1), ("project", h3, w2, b2, z)):
        exact = F.conv1d(d(a_in), d(wt), d(bias))
        rnrn_ = F.conv1d(d(rn(a_in)), d(rn(wt)), d(bias))
        D = (d(out) - rnrn_).flatten()
        Rx = (F.conv1d(d(rn(a_in)), d(wt), d(bias)) - exact).flatten()
        Rw = (F.conv1d(d(a_in), d(rn(wt)), d(bias)) - exact).flatten()
        A = torch.stack([Rx, Rw], 1)
        coef = torch.linalg.lstsq(A, D.unsqueeze(1)).solution.flatten()
        resid = D - A @ coef
        print(f"{label}: D = cuDNN - rn/rn, max {D.abs().max().item():.3e}, rms {D.pow(2).mean().sqrt().item():.3e}; "
              f"fit D ~ a Rx + b Rw: a {coef[0].item():+.3f}, b {coef[1].item():+.3f}, "
              f"residual max {resid.abs().max().item():.3e} rms {resid.pow(2).mean().sqrt().item():.3e}")
        for name, (fa, fw) in {"rn / exact": (rn, same), "exact / rn": (same, rn)}.items():
            print(f"  {name:10s} {(d(out) - F.conv1d(d(fa(a_in)), d(fw(wt)), d(bias))).abs().max().item():.3e}")
        Dm = (d(out) - rnrn_).abs()  # [B, channels, L]
        per_ch = Dm.amax(dim=(0, 2))
        per_pos = Dm.amax(dim=(0, 1))
        per_b = Dm.amax(dim=(1, 2))
        q = torch.quantile(per_ch, torch.tensor([0.0, 0.5, 1.0], dtype=per_ch.dtype, device=per_ch.device))
        print(f"  by output channel: min / median / max {q[0].item():.2e} / {q[1].item():.2e} / {q[2].item():.2e}; "
              f"worst channels {per_ch.topk(4).indices.tolist()}")
        print(f"  by position: first 4 {[f'{v:.1e}' for v in per_pos[:4].tolist()]}, last 4 "
              f"{[f'{v:.1e}' for v in per_pos[-4:].tolist()]}, worst {per_pos.topk(4).indices.tolist()}; "
              f"by batch {[f'{v:.1e}' for v in per_b.tolist()]}")
        print(f"  share of outputs with |D| > 1e-6: {(Dm > 1e-6).double().mean().item():.4f}")
