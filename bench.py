"""bench.py: time fused_dwsep's ModelNew against PyTorch eager and torch.compile.

    python bench.py                       # headline shape, TF32 on (PyTorch's default)
    python bench.py --no-tf32             # same, cudnn.allow_tf32 = False (exact fp32)
    python bench.py --dtype bfloat16      # model and input in bf16 (or float16)
    python bench.py --B 8 --C 128 --E 256 --L 1000 --K 5
    python bench.py --suite --json results/h200.json
    python bench.py --train               # forward + backward and peak memory

Every row is checked in the same run: ModelNew's output must pass
torch.allclose(atol=1e-4, rtol=1e-4) against the eager reference under the
same flag (1e-2 in bf16 and fp16, eager in the same dtype), or the row is
marked WRONG, reports no speedup, and the script exits 1. Times are CUDA-event medians (p20/p80 in the JSON) after warm-up,
with L2 flushed before every timed call.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys

import torch

from fused_dwsep import ModelNew, kernel_path
from reference_model import Model

ATOL = RTOL = 1e-4
HALF_ATOL = HALF_RTOL = 1e-2  # bf16 and fp16 rows
# A row's mode: fp32 under allow_tf32 True / False, or a 16-bit dtype.
MODE_DTYPES = {"tf32": torch.float32, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DTYPE_MODES = {"bfloat16": "bf16", "float16": "fp16"}
GRAD_ATOL = GRAD_RTOL = 1e-3  # the gradient check of --train (as in the tests)
HEADLINE = dict(B=32, C=256, E=512, L=4096, K=9)
LARGE = [dict(B=64, C=320, E=512, L=8192, K=9), dict(B=64, C=384, E=512, L=16384, K=9)]
# Small problems, where eager is bound by kernel launches and the fused kernel
# by having too few tiles for the GPU: it must not lose to eager here either.
SMALL = [
    dict(B=2, C=16, E=32, L=64, K=3),
    dict(B=4, C=64, E=128, L=1000, K=9),
    dict(B=4, C=128, E=256, L=1000, K=3),
    dict(B=8, C=256, E=512, L=1000, K=9),
]
JITTER_DRAWS, JITTER_LOW, JITTER_HIGH = 3, 0.85, 1.15
TARGET_MS_PER_TIMING = 1500.0  # how long each timed series runs, roughly
MIN_REPS, MAX_REPS, WARMUP = 10, 200, 5


def flops(B, C, E, L, K):
    """GEMM1 + GEMM2 + depthwise, 2 FLOP per multiply-add."""
    return 2 * B * L * (2 * C * E + E * K)


def time_ms(fn, flush):
    """Median, p20 and p80 of fn() in ms, CUDA events, L2 flushed before each call."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    reps = int(min(MAX_REPS, max(MIN_REPS, TARGET_MS_PER_TIMING / max(start.elapsed_time(end), 1e-3))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    q = statistics.quantiles(times, n=5)
    return statistics.median(times), q[0], q[-1]


def matmul_ceiling_tflops(flush, dtype=torch.float32):
    """cuBLAS's matmul rate on this GPU (TF32 for float32): the ceiling we compare with."""
    n = 8192
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        a, b = torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype)
        ms, _, _ = time_ms(lambda: torch.mm(a, b), flush)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return 2 * n**3 / ms / 1e9


def row_fields(label, shape, mode, kernel, correct, ms):
    """What every JSON row holds; no speedups for a wrong output."""
    return {
        "case": label,
        "shape": {k: shape[k] for k in ("B", "C", "E", "L", "K")},
        "mode": mode,
        "kernel": kernel,
        "correct": correct,
        "ms": ms,
        "speedup_vs_eager": ms["eager"] / ms["fused_dwsep"] if correct else None,
        "speedup_vs_compile": ms["compile"] / ms["fused_dwsep"] if correct else None,
    }


def bench_row(shape, mode, flush, ceilings, label):
    """One row; ceilings: cuBLAS's matmul rate by dtype."""
    B, C, E, L, K = (shape[k] for k in ("B", "C", "E", "L", "K"))
    dtype = MODE_DTYPES[mode]
    tol = ATOL if dtype == torch.float32 else HALF_ATOL
    torch.manual_seed(0)
    ref = Model(C, E, K).cuda().to(dtype)
    torch.manual_seed(0)
    new = ModelNew(C, E, K).cuda().to(dtype)
    x = torch.randn(B, C, L, device="cuda", dtype=dtype)
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = mode != "fp32"
    try:
        kernel = kernel_path(C, E, K, B, L, dtype)  # under the flag
        with torch.no_grad():
            expected = ref(x)
            out = new(x)
            err = (out - expected).abs().max().item()
            correct = bool(torch.isfinite(out).all()) and torch.allclose(out, expected, atol=tol, rtol=tol)
            del out, expected
            # A fresh compiler cache each row: past its recompile limit (8
            # Models), dynamo runs the rest eagerly, and the suite's later
            # compile column timed eager (seen in a suite run).
            torch._dynamo.reset()
            compiled = torch.compile(ref)
            compiled(x)  # compile outside the timing
            t_new = time_ms(lambda: new(x), flush)
            t_eager = time_ms(lambda: ref(x), flush)
            t_compile = time_ms(lambda: compiled(x), flush)
    finally:
        torch.backends.cudnn.allow_tf32 = old
    tflops = flops(B, C, E, L, K) / t_new[0] / 1e9
    ceiling = ceilings[dtype]
    ms = {"fused_dwsep": t_new[0], "eager": t_eager[0], "compile": t_compile[0]}
    return {
        **row_fields(label, shape, mode, kernel, correct, ms),
        "max_abs_err": err,
        "p20_p80_ms": {"fused_dwsep": t_new[1:], "eager": t_eager[1:], "compile": t_compile[1:]},
        "tflops": tflops if correct else None,
        "pct_of_ceiling": 100 * tflops / ceiling if correct else None,
    }


def train_row(shape, tf32, flush, label):
    """Forward + backward (x and all parameters) of each model: time and the
    peak memory it allocates on top of inputs and parameters."""
    B, C, E, L, K = (shape[k] for k in ("B", "C", "E", "L", "K"))
    torch.manual_seed(0)
    ref = Model(C, E, K).cuda()
    torch.manual_seed(0)
    new = ModelNew(C, E, K).cuda()
    x = torch.randn(B, C, L, device="cuda", requires_grad=True)
    grad_y = torch.randn_like(x)
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch._dynamo.reset()  # (as bench_row)
    models = {"fused_dwsep": new, "eager": ref, "compile": torch.compile(ref)}

    def step(model):
        def run():
            x.grad = None
            model.zero_grad(set_to_none=True)
            model(x).backward(grad_y)

        return run

    def grads(model):
        step(model)()
        return [x.grad] + [p.grad for p in model.parameters()]

    try:
        kernel = kernel_path(C, E, K, B, L)
        pairs = list(zip(grads(new), grads(ref)))
        errs = [(a - b).abs().max().item() for a, b in pairs]
        correct = all(torch.allclose(a, b, atol=GRAD_ATOL, rtol=GRAD_RTOL) for a, b in pairs)
        del pairs
        step(models["compile"])()  # compile outside the timing
        ms, peak_mb = {}, {}
        for name, model in models.items():
            ms[name] = time_ms(step(model), flush)[0]
            x.grad = None
            model.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            step(model)()
            torch.cuda.synchronize()
            peak_mb[name] = (torch.cuda.max_memory_allocated() - base) / 2**20
    finally:
        torch.backends.cudnn.allow_tf32 = old
    return {
        **row_fields(label, shape, "tf32" if tf32 else "fp32", kernel, correct, ms),
        "max_abs_grad_err": max(errs),
        "peak_mb": peak_mb,
    }


def print_lines(head, lines):
    print(head)
    print("-" * len(head))
    for line in lines:
        print(line)


def row_start(r):
    """The case, shape and mode columns every table starts with."""
    s = r["shape"]
    shape = f"{s['B']}x{s['C']}x{s['E']}x{s['L']}, {s['K']}"
    return f"{r['case']:<10} {shape:<24} {r['mode']:<5}"


def print_train_table(rows):
    head = (
        f"{'case':<10} {'B x C x E x L, K':<24} {'mode':<5} {'fwd+bwd ms: fused':>17} {'eager':>7} "
        f"{'compile':>8} {'vs eager':>9} {'vs comp':>8} {'peak MB: fused':>15} {'eager':>7} {'compile':>8}"
    )
    lines = []
    for r in rows:
        ms, mb = r["ms"], r["peak_mb"]
        speed = (
            f"{r['speedup_vs_eager']:>8.2f}x {r['speedup_vs_compile']:>7.2f}x"
            if r["correct"]
            else f"  WRONG: grad err {r['max_abs_grad_err']:.2e}"
        )
        lines.append(
            f"{row_start(r)} {ms['fused_dwsep']:>17.3f} {ms['eager']:>7.3f} {ms['compile']:>8.3f} {speed} "
            f"{mb['fused_dwsep']:>15.0f} {mb['eager']:>7.0f} {mb['compile']:>8.0f}"
        )
    print_lines(head, lines)


def suite_cases(seed):
    """(label, shape, mode) for every row of --suite: fp32 (TF32 and exact),
    then bf16 and fp16 at the headline, bf16 at the jittered and large shapes."""
    cases = [("headline", HEADLINE, "tf32"), ("headline", HEADLINE, "fp32")]
    rng = random.Random(seed)
    jitter = []
    for i in range(JITTER_DRAWS):
        B = max(1, round(HEADLINE["B"] * rng.uniform(JITTER_LOW, JITTER_HIGH)))
        L = round(HEADLINE["L"] * rng.uniform(JITTER_LOW, JITTER_HIGH)) | 1  # odd
        jitter.append((f"jitter {i + 1}", dict(HEADLINE, B=B, L=L)))
    cases += [(label, shape, "tf32") for label, shape in jitter]
    cases += [("large", shape, "tf32") for shape in LARGE]
    cases += [("small", shape, "tf32") for shape in SMALL]
    cases += [("headline", HEADLINE, "bf16"), ("headline", HEADLINE, "fp16")]
    cases += [(label, shape, "bf16") for label, shape in jitter]
    cases += [("large", shape, "bf16") for shape in LARGE]
    return cases


def print_table(rows, ceilings):
    head = (
        f"{'case':<10} {'B x C x E x L, K':<24} {'mode':<5} {'kernel':<16} {'fused ms':>9} "
        f"{'eager ms':>9} {'compile':>9} {'vs eager':>9} {'vs comp':>8} {'TFLOP/s':>8} {'% ceil':>7}"
    )
    lines = []
    for r in rows:
        ms = r["ms"]
        if r["correct"]:
            tail = (
                f"{r['speedup_vs_eager']:>8.2f}x {r['speedup_vs_compile']:>7.2f}x "
                f"{r['tflops']:>8.1f} {r['pct_of_ceiling']:>6.1f}%"
            )
        else:
            tail = f"  WRONG: max abs err {r['max_abs_err']:.2e}, no speedup reported"
        lines.append(
            f"{row_start(r)} {r['kernel']:<16} {ms['fused_dwsep']:>9.3f} {ms['eager']:>9.3f} "
            f"{ms['compile']:>9.3f} {tail}"
        )
    print_lines(head, lines)
    rates = ", ".join(f"{str(t).replace('torch.', '')} {c:.0f}" for t, c in ceilings.items())
    print(f"ceiling (% ceil): cuBLAS matmul 8192^3 in the row's dtype (TF32 for float32), TFLOP/s in this run: {rates}")


def cpu_check():
    torch.manual_seed(0)
    ref = Model(16, 32, 9)
    torch.manual_seed(0)
    new = ModelNew(16, 32, 9)
    x = torch.randn(2, 16, 100)
    with torch.no_grad():
        ok = torch.allclose(new(x), ref(x), atol=ATOL, rtol=RTOL)
    print(f"CPU path check (2x16x32x100, K=9): {'ok' if ok else 'WRONG'}")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for k, v in HEADLINE.items():
        ap.add_argument(f"--{k}", type=int, default=v, help=f"default {v}")
    ap.add_argument("--no-tf32", action="store_true", help="time with cudnn.allow_tf32 = False")
    ap.add_argument("--dtype", choices=["float32", *DTYPE_MODES], default="float32",
                    help="model and input dtype (bf16 / fp16 rows check at 1e-2)")
    ap.add_argument("--suite", action="store_true", help="headline (both modes), jittered B/L, large and small shapes")
    ap.add_argument("--seed", type=int, default=2026, help="seed for the jittered shapes")
    ap.add_argument("--train", action="store_true",
                    help="forward + backward time and peak memory, at the shape given and the small row "
                         "4x64x128x1000 (where per-call overhead shows)")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = ap.parse_args(argv)

    if not torch.cuda.is_available():
        print("CUDA is not available: nothing to time. The fused kernel needs an NVIDIA GPU.")
        return 0 if cpu_check() else 1

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(4 * l2, dtype=torch.int8, device="cuda")
    if args.train:
        shape = {k: getattr(args, k) for k in HEADLINE}
        cases = [("custom" if shape != HEADLINE else "headline", shape), ("small", SMALL[1])]
        rows = [train_row(shape, not args.no_tf32, flush, label) for label, shape in cases]
        print_train_table(rows)
        return finish(args, rows, {})
    if args.suite:
        cases = suite_cases(args.seed)
    else:
        shape = {k: getattr(args, k) for k in HEADLINE}
        mode = DTYPE_MODES.get(args.dtype, "fp32" if args.no_tf32 else "tf32")
        cases = [("custom" if shape != HEADLINE else "headline", shape, mode)]
    ceilings = {t: matmul_ceiling_tflops(flush, t) for t in dict.fromkeys(MODE_DTYPES[m] for _, _, m in cases)}

    rows = []
    for label, shape, mode in cases:
        rows.append(bench_row(shape, mode, flush, ceilings, label))
        print(f"  done: {label} {shape} {mode}", file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    print_table(rows, ceilings)
    names = {torch.float32: "tf32", torch.bfloat16: "bf16", torch.float16: "fp16"}
    return finish(args, rows, {f"matmul_{names[t]}_ceiling_tflops": c for t, c in ceilings.items()})


def finish(args, rows, extra):
    """Writes --json and returns the exit status (1 if any row was wrong)."""
    if args.json:
        report = {
            "gpu": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "date": datetime.date.today().isoformat(),
            **extra,
            "rows": rows,
        }
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {args.json}")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
