"""For each ragged test shape under allow_tf32=True: the fused output against
the reference at atol=rtol=1e-4, and which numerics cuDNN used for the
reference (TF32 or exact fp32, told apart by re-running it with the flag off).
Wrote h200_tf32_vs_cudnn_ragged.txt:  python results/tf32_vs_cudnn.py"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from test_fused_dwsep import RAGGED, make_pair
torch.backends.cudnn.allow_tf32 = True
rows = []
for (B, C, E, L, K) in RAGGED:
    for seed in range(3):
        ref, new = make_pair(C, E, K, seed=seed, device="cuda")
        g = torch.Generator(device="cuda").manual_seed(100 + seed)
        x = torch.randn(B, C, L, device="cuda", generator=g)
        with torch.no_grad():
            out = new(x); r_tf32 = ref(x)
            torch.backends.cudnn.allow_tf32 = False
            r_exact = ref(x)
            torch.backends.cudnn.allow_tf32 = True
        err = (out - r_tf32).abs().max().item()
        ok = torch.allclose(out, r_tf32, atol=1e-4, rtol=1e-4)
        mode = "exact" if torch.equal(r_tf32, r_exact) else "tf32/mixed"
        rows.append((B, C, E, L, K, seed, err, ok, mode))
        print(f"{B}x{C}x{E}x{L} K={K} seed={seed}: max|out-ref|={err:.2e} allclose1e-4={ok} cudnn={mode}")
print("failures:", sum(not r[7] for r in rows), "of", len(rows))
