"""A small workload for compute-sanitizer: small and ragged shapes, both TF32
settings (so the wgmma kernel, every mma.sync tiling and the packing kernel
run), and a forward + backward on each (the backward's depthwise kernel, for
K = 1 to 9, single and several tiles per row); then a forward in bfloat16
and in float16 on each.

    compute-sanitizer --tool memcheck  python results/sanitizer_workload.py
    compute-sanitizer --tool racecheck python results/sanitizer_workload.py
    FUSED_DWSEP_SANITIZE=half compute-sanitizer ...   # the 16-bit forwards only
"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fused_dwsep import ModelNew  # noqa: E402

SHAPES = [
    (2, 16, 32, 130, 9),  # small problems: the 32- and 64-position tiles
    (3, 3, 5, 5, 3),
    (1, 100, 264, 77, 5),
    (1, 300, 72, 67, 7),  # 256 < C <= 384 (TF32 on Hopper: the wgmma kernel's wide tile)
    (1, 384, 136, 2 * 132 * 64 + 5, 9),  # the wide wgmma tile, ~2 tiles a CTA, 3 chunks, odd L
    (1, 400, 40, 33, 3),  # 384 < C <= 512
    (1, 16, 32, 132 * 128 - 3, 9),  # enough positions for the 128-position tiles (and wgmma)
    (2, 64, 64, 8192, 9),  # the wgmma kernel on 16-byte-aligned rows, C < 256
    (1, 40, 264, 132 * 128 + 5, 5),  # the wgmma kernel with 5 chunks of E: every kind of turn and barrier
    (1, 24, 136, 3 * 132 * 128 + 7, 9),  # persistent wgmma kernel: ~3 tiles a CTA, odd L (the shifted epilogue)
    (2, 32, 128, 2 * 132 * 128 - 4, 9),  # 4 tiles a CTA; 5 turns a tile, so the warpgroups swap halves of C
    (1, 72, 128, 132 * 128 * 2, 9),  # C = 72: the residual loads of channels past C predicated off
    (1, 348, 72, 132 * 64 * 2, 9),  # 16 bits, aligned rows at C <= 384 (x by channel), 2 tiles a CTA
    (1, 256, 72, 132 * 128 + 8, 9),  # 16 bits, aligned rows: the last tile's second warpgroup past L
    (1, 384, 72, 132 * 64 + 8, 9),  # the same on the 64-position tile
    (1, 384, 64, 2 * 132 * 64, 9),  # 16 bits, one chunk on the 3-slot ring, 2 tiles a CTA: refills wrap every fill
    (1, 320, 64, 132 * 96 + 8, 9),  # 16 bits, aligned, C <= 320: a 96-position tile's second warpgroup past L
    (2, 8, 16, 1, 1),
    (1, 8, 8, 5000, 9),  # the backward's depthwise kernel: two CTAs per row, 16-byte stores
]
half_only = os.environ.get("FUSED_DWSEP_SANITIZE") == "half"
for B, C, E, L, K in SHAPES:
    for dtype in (torch.bfloat16, torch.float16):
        torch.manual_seed(0)
        model = ModelNew(C, E, K).cuda().to(dtype)
        with torch.no_grad():
            model(torch.randn(B, C, L, device="cuda", dtype=dtype))
        torch.cuda.synchronize()
    for tf32 in () if half_only else (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.manual_seed(0)
        model = ModelNew(C, E, K).cuda()
        x = torch.randn(B, C, L, device="cuda")
        with torch.no_grad():
            model(x)
        x.requires_grad_()
        model(x).backward(torch.randn_like(x))
        torch.cuda.synchronize()
print("sanitizer workload done")
