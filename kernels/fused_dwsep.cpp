// fused_dwsep.cpp: the PyTorch binding for the fused kernel in fused_dwsep.cu.
//
// fused_dwsep.py validates the inputs (with the user-facing messages),
// allocates the output and the scratch, and calls forward(). The binding checks
// again on its own, takes a device guard and the current stream, and launches.
// It reports every problem as a small integer code (0 on success) that
// fused_dwsep.py turns into an exception with the message: no C++ exception
// and no std::string crosses from here into torch or Python (both ended the
// process on the H200 image; kernels/NOTES.md has the history).

#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>

#include "fused_dwsep.h"

namespace {

// forward()'s return value: kind * kErrorStride + the index of the tensor it
// concerns in forward()'s argument order (y, x, w1, b1, wd, bd, w2, b2,
// workspace). fused_dwsep.py keeps the same table (_BINDING_ERRORS).
enum ErrorKind : int64_t {
  kOk = 0,
  kNotCudaOrRank = 1,  // x not a CUDA [B, C, L] tensor, or w1 / wd not 2-D
  kUndefined = 2,
  kWrongDevice = 3,
  kWrongDtype = 4,  // not float32, bfloat16 or float16, or not x's dtype (the workspace: not float32)
  kWrongShape = 5,
  kNotContiguous = 6,
  kEvenKernel = 7,
  kNoKernel = 8,  // no fused kernel serves this shape on this GPU (Path::kNone)
  kLaunchFailed = 9,  // + the cudaError_t, see error_string()
};
constexpr int64_t kErrorStride = 1000;

int64_t error(ErrorKind kind, int64_t detail) { return kind * kErrorStride + detail; }

// kOk when t is a contiguous tensor of `dtype` and `shape` on x's device.
template <size_t N>
int64_t check_tensor(const at::Tensor& t, int64_t index, const int64_t (&shape)[N], const at::Tensor& x,
                     at::ScalarType dtype = at::kFloat) {
  if (!t.defined()) return error(kUndefined, index);
  if (t.device() != x.device()) return error(kWrongDevice, index);
  if (t.scalar_type() != dtype) return error(kWrongDtype, index);
  if (t.dim() != static_cast<int64_t>(N)) return error(kWrongShape, index);
  for (size_t d = 0; d < N; ++d) {
    if (t.size(d) != shape[d]) return error(kWrongShape, index);
  }
  if (!t.is_contiguous()) return error(kNotContiguous, index);
  return kOk;
}

// The first failing check's code, or kOk.
template <size_t N>
int64_t first_error(const int64_t (&codes)[N]) {
  for (const int64_t code : codes) {
    if (code != kOk) return code;
  }
  return kOk;
}

// The code for a launch's result.
int64_t launch_code(cudaError_t err) {
  return err == cudaSuccess ? kOk : error(kLaunchFailed, static_cast<int64_t>(err));
}

// The kernels' element type for a tensor dtype, or false where none serves it.
bool kernel_dtype(at::ScalarType t, fused_dwsep::DType* out) {
  switch (t) {
    case at::kFloat: *out = fused_dwsep::DType::kFloat32; return true;
    case at::kBFloat16: *out = fused_dwsep::DType::kBFloat16; return true;
    case at::kHalf: *out = fused_dwsep::DType::kFloat16; return true;
    default: return false;
  }
}

// The sizes and dtype that decide the path (B and L only pick the tile
// length) and the scratch (B and L do not change it). allow_tf32: the flag,
// for fp32; 16-bit values always take the one-product path (Params::tf32).
fused_dwsep::Params shape_params(int64_t B, int64_t C, int64_t E, int64_t L, int64_t K, bool allow_tf32,
                                 fused_dwsep::DType dtype) {
  fused_dwsep::Params p{};
  p.dtype = dtype;
  p.B = B;
  p.L = L;
  p.C = C;
  p.E = E;
  p.K = K;
  p.tf32 = allow_tf32 || dtype != fused_dwsep::DType::kFloat32;
  return p;
}

}  // namespace

// y = block(x), written into y. Shapes: x, y [B, C, L]; w1 [E, C]; b1 [E];
// wd [E, K]; bd [E]; w2 [C, E]; b2 [C]; workspace [workspace_floats(...)];
// all contiguous, of x's dtype (float32, bfloat16 or float16; the workspace
// float32), on one CUDA device. Returns 0 or an error code.
int64_t fused_dwsep_forward(const at::Tensor& y, const at::Tensor& x, const at::Tensor& w1,
                            const at::Tensor& b1, const at::Tensor& wd, const at::Tensor& bd,
                            const at::Tensor& w2, const at::Tensor& b2, const at::Tensor& workspace,
                            bool allow_tf32) {
  if (!x.defined() || !x.is_cuda() || x.dim() != 3 || !w1.defined() || w1.dim() != 2 ||
      !wd.defined() || wd.dim() != 2) {
    return error(kNotCudaOrRank, 0);
  }
  const int64_t B = x.size(0), C = x.size(1), L = x.size(2), E = w1.size(0), K = wd.size(1);
  fused_dwsep::DType dtype{};
  if (!kernel_dtype(x.scalar_type(), &dtype)) return error(kWrongDtype, 1);
  const at::ScalarType t = x.scalar_type();
  const int64_t act_shape[] = {B, C, L}, w1_shape[] = {E, C}, wd_shape[] = {E, K},
                w2_shape[] = {C, E}, e_shape[] = {E}, c_shape[] = {C};
  const int64_t checks[] = {
      check_tensor(y, 0, act_shape, x, t),  check_tensor(x, 1, act_shape, x, t),
      check_tensor(w1, 2, w1_shape, x, t),  check_tensor(b1, 3, e_shape, x, t),
      check_tensor(wd, 4, wd_shape, x, t),  check_tensor(bd, 5, e_shape, x, t),
      check_tensor(w2, 6, w2_shape, x, t),  check_tensor(b2, 7, c_shape, x, t),
  };
  if (const int64_t code = first_error(checks); code != kOk) return code;
  if (K % 2 != 1) return error(kEvenKernel, 0);
  if (x.numel() == 0) return kOk;

  const c10::cuda::CUDAGuard guard(x.device());
  const int device = x.get_device();

  fused_dwsep::Params p = shape_params(B, C, E, L, K, allow_tf32, dtype);
  p.x = x.data_ptr();
  p.w1 = w1.data_ptr();
  p.b1 = b1.data_ptr();
  p.wd = wd.data_ptr();
  p.bd = bd.data_ptr();
  p.w2 = w2.data_ptr();
  p.b2 = b2.data_ptr();
  p.y = y.data_ptr();
  if (fused_dwsep::select_path(p, device) == fused_dwsep::Path::kNone) return error(kNoKernel, 0);
  const int64_t ws_shape[] = {static_cast<int64_t>(fused_dwsep::workspace_floats(p, device))};
  const int64_t ws_code = check_tensor(workspace, 8, ws_shape, x);
  if (ws_code != kOk) return ws_code;
  p.workspace = static_cast<float*>(workspace.data_ptr());
  return launch_code(fused_dwsep::launch(p, at::cuda::getCurrentCUDAStream(device).stream()));
}

// The depthwise stage of the backward (fused_dwsep_backward.cu): from h1 = W1 x
// (without b1) and g3, the gradient at h3, writes h3, the gradient at h1 and
// the partial sums (per batch row and group of tiles) for the gradients of wd,
// bd and b1.
// Arguments: (h3, gh1, partials, g3, h1, b1, wd, bd); shapes h3, gh1, g3, h1
// [B, E, L]; partials [B * depthwise_groups(L), E, K + 2]; b1, bd [E]; wd
// [E, K]; contiguous float32 on h1's device. Returns 0 or an error code whose
// tensor index follows that order.
int64_t fused_dwsep_depthwise_backward(const at::Tensor& h3, const at::Tensor& gh1, const at::Tensor& partials,
                                       const at::Tensor& g3, const at::Tensor& h1, const at::Tensor& b1,
                                       const at::Tensor& wd, const at::Tensor& bd) {
  if (!h1.defined() || !h1.is_cuda() || h1.dim() != 3 || !wd.defined() || wd.dim() != 2) {
    return error(kNotCudaOrRank, 0);
  }
  const int64_t B = h1.size(0), E = h1.size(1), L = h1.size(2), K = wd.size(1);
  const int64_t act_shape[] = {B, E, L}, partial_shape[] = {B * fused_dwsep::depthwise_groups(L), E, K + 2},
                wd_shape[] = {E, K}, e_shape[] = {E};
  const int64_t checks[] = {
      check_tensor(h3, 0, act_shape, h1), check_tensor(gh1, 1, act_shape, h1),
      check_tensor(partials, 2, partial_shape, h1), check_tensor(g3, 3, act_shape, h1),
      check_tensor(h1, 4, act_shape, h1), check_tensor(b1, 5, e_shape, h1),
      check_tensor(wd, 6, wd_shape, h1), check_tensor(bd, 7, e_shape, h1),
  };
  if (const int64_t code = first_error(checks); code != kOk) return code;
  if (K % 2 != 1) return error(kEvenKernel, 0);
  if (K > fused_dwsep::kDepthwiseMaxK) return error(kNoKernel, 0);
  if (h1.numel() == 0) return kOk;

  const c10::cuda::CUDAGuard guard(h1.device());
  fused_dwsep::DepthwiseParams p{};
  p.h1 = static_cast<const float*>(h1.data_ptr());
  p.b1 = static_cast<const float*>(b1.data_ptr());
  p.wd = static_cast<const float*>(wd.data_ptr());
  p.bd = static_cast<const float*>(bd.data_ptr());
  p.g3 = static_cast<const float*>(g3.data_ptr());
  p.h3 = static_cast<float*>(h3.data_ptr());
  p.gh1 = static_cast<float*>(gh1.data_ptr());
  p.partials = static_cast<float*>(partials.data_ptr());
  p.B = B;
  p.E = E;
  p.L = L;
  p.K = K;
  return launch_code(
      fused_dwsep::launch_depthwise_backward(p, at::cuda::getCurrentCUDAStream(h1.get_device()).stream()));
}

// The CUDA runtime's text for a cudaError_t (a static string: no allocation).
const char* fused_dwsep_error_string(int64_t cuda_error) {
  return cudaGetErrorString(static_cast<cudaError_t>(cuda_error));
}

// dtype: fused_dwsep::DType's value (0 float32, 1 bfloat16, 2 float16).
fused_dwsep::DType dtype_of(int64_t dtype) {
  return dtype == 1 ? fused_dwsep::DType::kBFloat16
                    : dtype == 2 ? fused_dwsep::DType::kFloat16 : fused_dwsep::DType::kFloat32;
}

// Floats of scratch forward() needs for this shape and dtype on the current device.
int64_t fused_dwsep_workspace_floats(int64_t C, int64_t E, int64_t K, bool allow_tf32, int64_t dtype) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  return static_cast<int64_t>(
      fused_dwsep::workspace_floats(shape_params(1, C, E, 1, K, allow_tf32, dtype_of(dtype)), device));
}

// Which kernel serves a problem on the current device, as fused_dwsep::Path.
int64_t fused_dwsep_path(int64_t B, int64_t C, int64_t E, int64_t L, int64_t K, bool allow_tf32, int64_t dtype) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return static_cast<int64_t>(fused_dwsep::Path::kNone);
  return static_cast<int64_t>(
      fused_dwsep::select_path(shape_params(B, C, E, L, K, allow_tf32, dtype_of(dtype)), device));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &fused_dwsep_forward, "fused_dwsep forward into y; returns 0 or an error code");
  m.def("error_string", &fused_dwsep_error_string, "the CUDA runtime's text for an error number");
  m.def("workspace_floats", &fused_dwsep_workspace_floats, "scratch floats forward() needs (dtype: 0 float32, 1 bfloat16, 2 float16)");
  m.def("path", &fused_dwsep_path, "which kernel serves (B, C, E, L, K, tf32, dtype) on the current device");
  m.def("depthwise_backward", &fused_dwsep_depthwise_backward,
        "the backward's depthwise stage (h3, gradient at h1, partials); returns 0 or an error code");
  m.def("depthwise_groups", &fused_dwsep::depthwise_groups,
        "CTAs per row in depthwise_backward (the partials' first dimension is B times this)");
  m.def("depthwise_max_kernel_size", [] { return fused_dwsep::kDepthwiseMaxK; },
        "largest K the depthwise kernels take");
}
