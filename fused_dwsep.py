"""fused_dwsep: a 1D inverted-residual block as one fused CUDA kernel.

    y = x + W2 @ gelu(dwconv_K(W1 @ x + b1) + bd) + b2

``ModelNew`` is a drop-in for the reference ``Model`` (same constructor, same
submodules in the same order, same state_dict). On CUDA float32, bfloat16 and
float16 tensors (and under ``torch.autocast``) its forward runs the fused
kernel in ``kernels/`` (where one serves the shape; ``kernel_path`` says),
compiled on first import with ``torch.utils.cpp_extension.load_inline`` and
cached; on the CPU it runs the same math with PyTorch ops.

Numerics on CUDA: float32 follows ``torch.backends.cudnn.allow_tf32`` (read at
every call), like the reference's cuDNN convolutions: True rounds the GEMM
operands to TF32 (round-to-nearest) with fp32 accumulation; False is
fp32-accurate. bfloat16 / float16: fp32 accumulation and intermediates, the
GELU output rounded to the dtype before the second GEMM, y rounded once.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import sys
import time
import warnings
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["ModelNew", "fused_dwsep", "fused_dwsep_reference", "kernel_path"]

_KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
_HEADER, _CPP_SOURCE = "fused_dwsep.h", "fused_dwsep.cpp"
_CUDA_SOURCES = ("fused_dwsep.cu", "fused_dwsep_backward.cu")  # the forward; the backward's depthwise stage
# No fast-math: it flushes denormals and would change the exact-GELU numerics.
_CUDA_FLAGS = ["-O3"]
_CXX_FLAGS = ["-O2"]
# A build lock older than this was left by a killed build; waiting on it would hang.
_STALE_LOCK_SECONDS = 15 * 60


# ----------------------------------------------------------------------------
# JIT build (once per machine; later imports load the cached library)
# ----------------------------------------------------------------------------


def _arch_flags() -> list[str]:
    """-gencode for every distinct GPU present. Compute capability 9.0 (H100,
    H200) builds as sm_90a, whose wgmma instructions the fast kernel uses."""
    caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
    flags = []
    for ma, mi in caps:
        arch = f"{ma}{mi}a" if (ma, mi) == (9, 0) else f"{ma}{mi}"
        flags.append(f"-gencode=arch=compute_{arch},code=sm_{arch}")
    if (9, 0) in caps:
        flags.append("-DFUSED_DWSEP_SM90A")
    return flags


def _build_dir(sources: dict[str, str], flags: list[str]) -> Path:
    """A cache folder keyed on everything that changes the binary."""
    key = hashlib.sha256()
    for name in sorted(sources):
        key.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    key.update(repr((flags, torch.__version__, torch.version.cuda, sys.version_info[:2])).encode())
    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR", Path.home() / ".cache" / "torch_extensions"))
    return root / f"fused_dwsep_{key.hexdigest()[:16]}"


def _clear_stale_lock(build_dir: Path) -> None:
    lock = build_dir / "lock"
    try:
        if time.time() - lock.stat().st_mtime > _STALE_LOCK_SECONDS:
            warnings.warn(f"fused_dwsep: removing a stale build lock left by a killed build: {lock}")
            lock.unlink()
    except FileNotFoundError:
        pass


def _load_extension():
    """Compile (or load the cached) extension; None when CUDA is absent."""
    if not torch.cuda.is_available():
        return None
    from torch.utils.cpp_extension import load_inline

    sources = {n: (_KERNEL_DIR / n).read_text() for n in (_HEADER, _CPP_SOURCE, *_CUDA_SOURCES)}
    cuda_flags = _CUDA_FLAGS + _arch_flags()
    build_dir = _build_dir(sources, cuda_flags + _CXX_FLAGS)
    build_dir.mkdir(parents=True, exist_ok=True)
    _clear_stale_lock(build_dir)
    library = build_dir / f"{build_dir.name}.so"
    if library.exists() and not (build_dir / "lock").exists():
        # A finished build of exactly these sources and flags: import it
        # directly and skip the ninja up-to-date check.
        spec = importlib.util.spec_from_file_location(build_dir.name, library)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    kwargs = {}
    if "no_implicit_headers" in inspect.signature(load_inline).parameters:
        # The .cu includes no torch headers; skipping torch/types.h keeps nvcc fast.
        kwargs["no_implicit_headers"] = True
    try:
        return load_inline(
            name=build_dir.name,
            cpp_sources=[sources[_CPP_SOURCE]],
            cuda_sources=[sources[n] for n in _CUDA_SOURCES],  # load_inline joins them into one file
            extra_cflags=_CXX_FLAGS,
            extra_cuda_cflags=cuda_flags,
            extra_include_paths=[str(_KERNEL_DIR)],
            build_directory=str(build_dir),
            verbose=False,
            **kwargs,
        )
    except Exception as exc:  # surface the compiler's own message
        raise RuntimeError(
            f"fused_dwsep: building the CUDA kernel failed (build folder {build_dir}):\n{exc}"
        ) from exc


_ext = _load_extension()

# fused_dwsep::Path in kernels/fused_dwsep.h, by value. The last, kNone, means
# no fused kernel serves the shape (C > 512, K > 9, or a GPU before sm_80);
# fused_dwsep then runs the reference computation with PyTorch's kernels
# (a CUDA-core fused kernel measured 2-236x slower than them there).
_KERNEL_PATHS = ("tensor_core", "tensor_core_wide", "wgmma", "wgmma16", "pytorch")
_PYTORCH_PATH = _KERNEL_PATHS[-1]
# fused_dwsep::DType by value: the binding's dtype argument.
_DTYPE_CODES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}
# (B, L) that kernel_path assumes when not told: enough positions for every SM.
_LONG_INPUT = (1, 1 << 22)


# ----------------------------------------------------------------------------
# Reference math (CPU path, and what the tests compare against)
# ----------------------------------------------------------------------------


def fused_dwsep_reference(x, w1, b1, wd, bd, w2, b2):
    """The block with PyTorch ops, exactly as the reference Model computes it."""
    h = F.conv1d(x, w1, b1)
    h = F.conv1d(h, wd, bd, padding=wd.shape[-1] // 2, groups=wd.shape[0])
    h = F.gelu(h)
    return F.conv1d(h, w2, b2) + x


# ----------------------------------------------------------------------------
# Functional entry point
# ----------------------------------------------------------------------------


def _check_inputs(x, w1, b1, wd, bd, w2, b2) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"fused_dwsep: x must be a torch.Tensor, got {type(x).__name__}")
    if w1.dim() != 3 or w1.shape[2] != 1:
        raise ValueError(f"fused_dwsep: w1 must be [E, C, 1], got {list(w1.shape)}")
    E, C = w1.shape[0], w1.shape[1]
    if wd.dim() != 3 or wd.shape[0] != E or wd.shape[1] != 1:
        raise ValueError(f"fused_dwsep: wd must be [E, 1, K] with E == {E}, got {list(wd.shape)}")
    K = wd.shape[2]
    expected = {"b1": (b1, [E]), "bd": (bd, [E]), "w2": (w2, [C, E, 1]), "b2": (b2, [C])}
    for name, (t, shape) in expected.items():
        if list(t.shape) != shape:
            raise ValueError(f"fused_dwsep: {name} must be {shape}, got {list(t.shape)}")
    if K % 2 == 0:
        raise ValueError(f"fused_dwsep: kernel_size must be odd ('same' padding), got {K}")
    if x.dim() != 3 or x.shape[1] != C:
        raise ValueError(f"fused_dwsep: x must be [B, C, L] with C == {C}, got {list(x.shape)}")
    if x.shape[2] < 1:
        raise ValueError(f"fused_dwsep: x must have L >= 1 positions, got {list(x.shape)}")
    for name, t in (("w1", w1), ("b1", b1), ("wd", wd), ("bd", bd), ("w2", w2), ("b2", b2)):
        if t.dtype != x.dtype:
            raise TypeError(f"fused_dwsep: x has dtype {x.dtype} but {name} has dtype {t.dtype}")
        if t.device != x.device:
            raise ValueError(f"fused_dwsep: x is on {x.device} but {name} is on {t.device}")


@functools.lru_cache(maxsize=256)
def _launch_info(device_index: int, C: int, E: int, K: int, tf32: bool, dtype_code: int) -> tuple[bool, int]:
    """(whether a fused kernel serves the shape, scratch floats) on a GPU.
    B and L only choose between the fused kernels, so they are not needed."""
    with torch.cuda.device(device_index):
        path = _KERNEL_PATHS[_ext.path(1, C, E, 1, K, tf32, dtype_code)]
        return path != _PYTORCH_PATH, _ext.workspace_floats(C, E, K, tf32, dtype_code)


# The dtypes the CUDA kernel takes (x and all six weights the same one).
_KERNEL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _one_product(dtype) -> bool:
    """The binding's tf32 flag: one tensor-core product a multiply. float32
    follows allow_tf32 (else the exact mode); bfloat16 and float16 values are
    TF32 values, so one TF32 product of them is exact."""
    return torch.backends.cudnn.allow_tf32 or dtype != torch.float32


def _cuda_launch_info(x, w1, wd) -> tuple[bool, int]:
    """(fused kernel or not, scratch floats) for a checked CUDA input under the current flag."""
    if _ext is None:  # pragma: no cover - CUDA tensors exist only where CUDA does
        raise RuntimeError("fused_dwsep: the CUDA kernel was not built in this process")
    if x.dtype not in _KERNEL_DTYPES:
        raise TypeError(f"fused_dwsep: the CUDA kernel supports float32, bfloat16 and float16, got {x.dtype}")
    index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    return _launch_info(index, w1.shape[1], w1.shape[0], wd.shape[2], _one_product(x.dtype), _DTYPE_CODES[x.dtype])


def _cuda_forward(x, w1, b1, wd, bd, w2, b2, ws_floats: int):
    """The fused kernel (for a shape whose path is not 'pytorch'), with the
    scratch size _cuda_launch_info gave."""
    E, C, K = w1.shape[0], w1.shape[1], wd.shape[2]
    tf32 = _one_product(x.dtype)
    x = x.contiguous()
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    workspace = torch.empty(ws_floats, dtype=torch.float32, device=x.device)
    _forward_into(
        y,
        x,
        w1.reshape(E, C).contiguous(),
        b1.contiguous(),
        wd.reshape(E, K).contiguous(),
        bd.contiguous(),
        w2.reshape(C, E).contiguous(),
        b2.contiguous(),
        workspace,
        tf32,
    )
    return y


# The binding's error codes (kernels/fused_dwsep.cpp, ErrorKind): kind * 1000 +
# the index of the tensor concerned in the binding function's argument order.
_BINDING_ERROR_STRIDE = 1000
(
    _ERR_NOT_CUDA_OR_RANK,
    _ERR_UNDEFINED,
    _ERR_WRONG_DEVICE,
    _ERR_WRONG_DTYPE,
    _ERR_WRONG_SHAPE,
    _ERR_NOT_CONTIGUOUS,
    _ERR_EVEN_KERNEL,
    _ERR_NO_KERNEL,
    _ERR_LAUNCH_FAILED,
) = range(1, 10)
_BINDING_ERRORS = {
    _ERR_NOT_CUDA_OR_RANK: "{ranks}",
    _ERR_UNDEFINED: "{name} is undefined",
    _ERR_WRONG_DEVICE: "{name} is on {device} but {ref_name} is on {ref_device}",
    _ERR_WRONG_DTYPE: "{name} has dtype {dtype}: the kernel takes float32, bfloat16 or float16, every "
    "tensor of {ref_name}'s dtype ({ref_dtype}), its workspace float32",
    _ERR_WRONG_SHAPE: "{name} must be {expected}, got {shape}",
    _ERR_NOT_CONTIGUOUS: "{name} must be contiguous",
    _ERR_EVEN_KERNEL: "kernel_size must be odd",
    _ERR_NO_KERNEL: "no fused kernel serves this shape on this GPU (see kernel_path)",
    _ERR_LAUNCH_FAILED: "kernel launch failed: {cuda_error}",
}
_TENSOR_ERRORS = (_ERR_UNDEFINED, _ERR_WRONG_DEVICE, _ERR_WRONG_DTYPE, _ERR_WRONG_SHAPE, _ERR_NOT_CONTIGUOUS)


def _raise_on_code(code: int, tensors: dict, ref_name: str, expected_shapes, ranks: str) -> None:
    """Turn a binding's return code into an exception (nothing for 0).
    `tensors`: the binding's tensor arguments by name, in its order;
    `ref_name`: the one whose device the others must share;
    `expected_shapes()`: their expected shapes, in the same order;
    `ranks`: the message for the binding's rank / CUDA check."""
    if code == 0:
        return
    kind, detail = divmod(code, _BINDING_ERROR_STRIDE)
    fields = {"code": code, "ranks": ranks}
    if kind == _ERR_LAUNCH_FAILED:  # detail: the cudaError_t
        fields["cuda_error"] = f"{_ext.error_string(detail)} ({detail})"
    if kind in _TENSOR_ERRORS:  # detail: which tensor
        name, t = list(tensors.items())[detail]
        fields.update(name=name, expected=expected_shapes()[detail], shape=list(t.shape), dtype=t.dtype,
                      device=t.device, ref_name=ref_name, ref_device=tensors[ref_name].device,
                      ref_dtype=tensors[ref_name].dtype)
    template = _BINDING_ERRORS.get(kind, "unknown error code {code}")
    raise RuntimeError("fused_dwsep: " + template.format(**fields))


def _forward_into(y, x, w1, b1, wd, bd, w2, b2, workspace, tf32: bool) -> None:
    """Launch the kernel into y ([B, C, L]) from 2-D weights (w1 [E, C],
    wd [E, K], w2 [C, E]); raise with the binding's reason when it refuses."""
    code = _ext.forward(y, x, w1, b1, wd, bd, w2, b2, workspace, tf32)

    def expected():
        (B, C, L), E, K = x.shape, w1.shape[0], wd.shape[1]
        ws = _ext.workspace_floats(C, E, K, tf32, _DTYPE_CODES.get(x.dtype, 0))
        return [B, C, L], [B, C, L], [E, C], [E], [E, K], [E], [C, E], [C], [ws]

    tensors = dict(y=y, x=x, w1=w1, b1=b1, wd=wd, bd=bd, w2=w2, b2=b2, workspace=workspace)
    _raise_on_code(code, tensors, "x", expected, "x must be a CUDA [B, C, L] tensor, w1 [E, C] and wd [E, K]")


def _forward_impl(x, w1, b1, wd, bd, w2, b2):
    """The forward without autograd on any device: the fused kernel where one
    serves the shape, PyTorch's own kernels elsewhere (and on the CPU)."""
    if x.is_cuda:
        fused, ws_floats = _cuda_launch_info(x, w1, wd)
        if fused:
            return _cuda_forward(x, w1, b1, wd, bd, w2, b2, ws_floats)
    return fused_dwsep_reference(x, w1, b1, wd, bd, w2, b2)


# ----------------------------------------------------------------------------
# The operator: autograd, torch.compile and CUDA graphs go through it
# ----------------------------------------------------------------------------

# Peak memory of the backward: the recomputed E-channel intermediates are
# built for a slice of the batch at a time, at most this many bytes each. At
# the headline shape on the H200 (fwd+bwd, kernels/NOTES.md) 128 MB peaks at
# 961 MB; 64 MB at 610 MB for ~0.2 ms more; unsliced at 1283 MB, above the
# reference's own 1169 MB.
_BACKWARD_SLICE_BYTES = 128 << 20


@torch.library.custom_op(
    "fused_dwsep::forward",
    mutates_args=(),
    schema="(Tensor x, Tensor w1, Tensor b1, Tensor wd, Tensor bd, Tensor w2, Tensor b2) -> Tensor",
)
def _fused_dwsep_op(x, w1, b1, wd, bd, w2, b2):
    # A fresh contiguous tensor on every path, as the fake implementation says.
    return _forward_impl(x, w1, b1, wd, bd, w2, b2).contiguous()


@_fused_dwsep_op.register_fake
def _(x, w1, b1, wd, bd, w2, b2):
    return x.new_empty(x.shape)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)  # the inputs only: the backward recomputes the rest


def _backward(ctx, grad_y):
    return _block_backward(grad_y, *ctx.saved_tensors, needs=ctx.needs_input_grad)


torch.library.register_autograd("fused_dwsep::forward", _backward, setup_context=_setup_context)


# The depthwise stage of the backward as one operator (so that torch.compile
# traces the backward through it): the binding's kernel for CUDA float32 with
# K up to depthwise_max_kernel_size(), PyTorch's kernels elsewhere.
_DEPTHWISE_RANKS = "h1 must be a CUDA [B, E, L] tensor and wd [E, K]"


def _own_depthwise(h1, wd) -> bool:
    return (
        _ext is not None and h1.is_cuda and h1.dtype == torch.float32
        and wd.shape[-1] <= _ext.depthwise_max_kernel_size()
    )


@torch.library.custom_op(
    "fused_dwsep::depthwise_backward",
    mutates_args=(),
    schema="(Tensor g3, Tensor h1, Tensor b1, Tensor wd, Tensor bd) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
)
def _depthwise_backward_op(g3, h1, b1, wd, bd):
    """For h3 = gelu(dwconv_K(h1 + b1) + bd) with "same" zero padding, given
    g3, the gradient at h3: (h3, and the gradients at h1, b1, wd, bd).
    g3, h1 [B, E, L] (h1 without its bias b1), b1 [E], wd [E, 1, K], bd [E]."""
    E, K = wd.shape[0], wd.shape[-1]
    if not _own_depthwise(h1, wd):
        h1 = h1 + b1[:, None]
        h2 = F.conv1d(h1, wd, bd, padding=K // 2, groups=E)
        gh1, gwd, gbd = _conv_grads(torch.ops.aten.gelu_backward(g3, h2), h1, wd, E, K // 2, [True, True, True])
        return F.gelu(h2), gh1, gh1.sum((0, 2)), gwd, gbd
    g3, h1, b1, bd = g3.contiguous(), h1.contiguous(), b1.contiguous(), bd.contiguous()
    wd2 = wd.reshape(E, K).contiguous()
    (B, _, L), groups = h1.shape, _ext.depthwise_groups(h1.shape[2])
    h3, gh1 = torch.empty_like(h1), torch.empty_like(h1)
    partials = torch.empty(B * groups, E, K + 2, dtype=h1.dtype, device=h1.device)
    code = _ext.depthwise_backward(h3, gh1, partials, g3, h1, b1, wd2, bd)
    tensors = dict(h3=h3, gh1=gh1, partials=partials, g3=g3, h1=h1, b1=b1, wd=wd2, bd=bd)
    shapes = lambda: [[B, E, L]] * 2 + [[B * groups, E, K + 2]] + [[B, E, L]] * 2 + [[E], [E, K], [E]]  # noqa: E731
    _raise_on_code(code, tensors, "h1", shapes, _DEPTHWISE_RANKS)
    # Per (batch, group of tiles) sums from the kernel: wd's taps, then bd, then b1.
    return h3, gh1, partials[..., K + 1].sum(0), partials[..., :K].sum(0).view(E, 1, K), partials[..., K].sum(0)


@_depthwise_backward_op.register_fake
def _(g3, h1, b1, wd, bd):
    h3, gh1 = h1.new_empty(h1.shape), h1.new_empty(h1.shape)
    return h3, gh1, b1.new_empty(b1.shape), wd.new_empty(wd.shape), bd.new_empty(bd.shape)


def _conv_grads(grad, inp, weight, groups, padding, mask):
    """ATen's Conv1d backward (stride 1): (grad input, grad weight, grad bias) where mask says."""
    return torch.ops.aten.convolution_backward.default(
        grad, inp, weight, [weight.shape[0]], [1], [padding], [1], False, [0], groups, mask
    )


def _block_backward(gy, x, w1, b1, wd, bd, w2, b2, needs=(True,) * 7):
    """Gradients of the block for (x, w1, b1, wd, bd, w2, b2), None where not
    needed. Recomputes h1 (cuDNN, under the same allow_tf32 flag as the
    reference's own backward) and, in the depthwise operator, h2 and
    h3 = gelu(h2), a batch slice at a time; the pointwise layers' gradients
    come from the same ATen kernels autograd uses for the reference."""
    E, K = w1.shape[0], wd.shape[2]
    need_x, need_w1, need_b1, need_wd, need_bd, need_w2, need_b2 = needs
    need_g3 = need_x or need_w1 or need_b1 or need_wd or need_bd  # anything below the GELU
    gy = gy.contiguous()
    grads = dict.fromkeys(("w1", "b1", "wd", "bd", "w2"))

    def accumulate(name, g, need=True):
        if need and g is not None:
            grads[name] = g if grads[name] is None else grads[name] + g

    gx = torch.empty_like(gy) if need_x else None
    B, L = x.shape[0], x.shape[2]
    rows = max(1, _BACKWARD_SLICE_BYTES // max(1, E * L * x.element_size()))
    for b0 in range(0, B, rows):
        xs, gys = x[b0 : b0 + rows], gy[b0 : b0 + rows]
        h1 = F.conv1d(xs, w1)  # b1 is added inside the depthwise operator: one pass less
        if need_g3:
            g3 = _conv_grads(gys, h1, w2, 1, 0, [True, False, False])[0]  # input grad: h1 only gives the shape
            h3, gh1, gb1, gwd, gbd = _depthwise_backward_op(g3, h1, b1, wd, bd)
            del g3
            accumulate("b1", gb1, need_b1)
            accumulate("wd", gwd, need_wd)
            accumulate("bd", gbd, need_bd)
        else:  # only w2 and b2 train
            h3 = F.gelu(F.conv1d(h1 + b1[:, None], wd, bd, padding=K // 2, groups=E))
        del h1
        if need_w2:
            accumulate("w2", _conv_grads(gys, h3, w2, 1, 0, [False, True, False])[1])
        del h3
        if need_x or need_w1:
            gxs, gw1, _ = _conv_grads(gh1, xs, w1, 1, 0, [need_x, need_w1, False])
            accumulate("w1", gw1)
            if need_x:
                torch.add(gys, gxs, out=gx[b0 : b0 + rows])
    gb2 = gy.sum((0, 2)) if need_b2 else None
    return gx, grads["w1"], grads["b1"], grads["wd"], grads["bd"], grads["w2"], gb2


def fused_dwsep(x, w1, b1, wd, bd, w2, b2):
    """The fused block, functional form.

    Shapes (as the Conv1d modules store them):
        x  [B, C, L]     input, any strides
        w1 [E, C, 1]     pointwise expand weight;  b1 [E]
        wd [E, 1, K]     depthwise weight, K odd;  bd [E]
        w2 [C, E, 1]     project-back weight;      b2 [C]
    Returns a new [B, C, L] tensor; x is not modified. CUDA tensors (float32,
    bfloat16 or float16, all of one dtype) run the fused kernel where one
    serves the shape (``kernel_path``) and PyTorch's own kernels elsewhere; CPU
    tensors run the reference math. Under ``torch.autocast("cuda", dtype)``
    with a 16-bit dtype, CUDA inputs run the kernel in that dtype and the
    result has the dtype the reference's would (x's, promoted with it).
    Differentiable (the backward recomputes the intermediates: nothing
    E-channel is saved), and traceable by torch.compile as the operator
    torch.ops.fused_dwsep.forward.
    """
    params = (x, w1, b1, wd, bd, w2, b2)
    if isinstance(x, torch.Tensor) and x.is_cuda and torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        if dtype in (torch.bfloat16, torch.float16):
            # The reference's convolutions run in `dtype` and its residual add
            # promotes: the block in `dtype`, then the promoted dtype.
            with torch.autocast("cuda", enabled=False):
                y = fused_dwsep(*(t.to(dtype) if isinstance(t, torch.Tensor) else t for t in params))
            return y.to(torch.promote_types(dtype, x.dtype))
    _check_inputs(*params)
    if torch.compiler.is_compiling() or (torch.is_grad_enabled() and any(t.requires_grad for t in params)):
        return _fused_dwsep_op(*params)
    # Inference in eager mode: straight to the kernel, without the dispatcher.
    return _forward_impl(*params)


def kernel_path(
    channels: int,
    expanded_channels: int,
    kernel_size: int,
    batch: int | None = None,
    length: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> str:
    """What serves an input [batch, channels, length] of `dtype` on the
    current device under the current allow_tf32 flag: 'wgmma16' (Hopper,
    bfloat16 and float16, C <= 384, K <= 9), 'wgmma' (Hopper: C <= 256
    with enough positions to fill the GPU, float32 in every mode; TF32 also
    256 < C <= 384; bfloat16 and float16 only for inputs too large for the
    16-bit kernel's 32-bit counters), 'tensor_core' (mma.sync, C <= 256),
    'tensor_core_wide' (mma.sync, 256 < C <= 512) or 'pytorch' (no fused
    kernel: PyTorch's own convolutions, as the reference runs them); 'cpu'
    without CUDA. Without both batch and length: for an input long enough to
    fill the GPU."""
    if _ext is None:
        return "cpu"
    B, L = (batch, length) if batch is not None and length is not None else _LONG_INPUT
    path = _ext.path(B, channels, expanded_channels, L, kernel_size, _one_product(dtype), _DTYPE_CODES.get(dtype, 0))
    return _KERNEL_PATHS[path]


# ----------------------------------------------------------------------------
# Module
# ----------------------------------------------------------------------------


class ModelNew(nn.Module):
    """Drop-in for the reference Model: pointwise expand -> depthwise conv
    ("same" padding) -> exact GELU -> pointwise project back -> + x."""

    def __init__(self, channels: int, expanded_channels: int, kernel_size: int):
        for name, value in (
            ("channels", channels),
            ("expanded_channels", expanded_channels),
            ("kernel_size", kernel_size),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"fused_dwsep: {name} must be an integer >= 1, got {value!r}")
        if kernel_size % 2 == 0:
            raise ValueError(
                f"fused_dwsep: kernel_size must be odd ('same' padding keeps the length only "
                f"for odd sizes), got {kernel_size}"
            )
        super().__init__()
        # Same submodules in the same order as the reference: a seeded
        # construction draws identical parameters and state_dicts match.
        self.pointwise = nn.Conv1d(channels, expanded_channels, 1)
        self.depthwise = nn.Conv1d(
            expanded_channels,
            expanded_channels,
            kernel_size,
            padding=kernel_size // 2,
            groups=expanded_channels,
        )
        self.activation = nn.GELU()
        self.project_back = nn.Conv1d(expanded_channels, channels, 1)
        self.channels, self.expanded_channels, self.kernel_size = channels, expanded_channels, kernel_size

    def extra_repr(self) -> str:
        return (
            f"channels={self.channels}, expanded_channels={self.expanded_channels}, "
            f"kernel_size={self.kernel_size}, fused CUDA forward"
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fused_dwsep(
            x,
            self.pointwise.weight,
            self.pointwise.bias,
            self.depthwise.weight,
            self.depthwise.bias,
            self.project_back.weight,
            self.project_back.bias,
        )
