// fused_dwsep.cpp: the PyTorch binding for the fused kernel in fused_dwsep.cu.
//
// fused_dwsep.py validates the inputs (with the user-facing messages),
// allocates the output and the scratch, and calls forward(). The binding checks
// again on its own, takes a device guard and the current stream, and launches.
// It reports every problem as a returned message (empty on success) instead of
// throwing: a C++ exception thrown from this extension was seen to end the
// process on the H200 image (kernels/NOTES.md), so nothing here throws for
// bad input; fused_dwsep.py raises the Python exception.

#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <sstream>
#include <string>
#include <vector>

#include "fused_dwsep.h"

namespace {

std::string shape_str(at::IntArrayRef sizes) {
  std::ostringstream s;
  s << sizes;
  return s.str();
}

// "" when t is a contiguous float32 tensor of `shape` on x's device.
std::string check_tensor(const at::Tensor& t, const char* name, const std::vector<int64_t>& shape,
                         const at::Tensor& x) {
  std::ostringstream s;
  if (!t.defined()) {
    s << "fused_dwsep: " << name << " is undefined";
  } else if (t.device() != x.device()) {
    s << "fused_dwsep: " << name << " is on " << t.device() << " but x is on " << x.device();
  } else if (t.scalar_type() != at::kFloat) {
    s << "fused_dwsep: " << name << " must be float32, got " << t.scalar_type();
  } else if (t.sizes() != at::IntArrayRef(shape)) {
    s << "fused_dwsep: " << name << " must be " << shape_str(shape) << ", got " << shape_str(t.sizes());
  } else if (!t.is_contiguous()) {
    s << "fused_dwsep: " << name << " must be contiguous";
  }
  return s.str();
}

}  // namespace

// y = block(x), written into y. Shapes: x, y [B, C, L]; w1 [E, C]; b1 [E];
// wd [E, K]; bd [E]; w2 [C, E]; b2 [C]; workspace [workspace_floats(...)];
// all contiguous float32 on one CUDA device. Returns "" or an error message.
std::string fused_dwsep_forward(const at::Tensor& y, const at::Tensor& x, const at::Tensor& w1,
                                const at::Tensor& b1, const at::Tensor& wd, const at::Tensor& bd,
                                const at::Tensor& w2, const at::Tensor& b2,
                                const at::Tensor& workspace, bool allow_tf32) {
  if (!x.defined() || !x.is_cuda() || x.dim() != 3 || w1.dim() != 2 || wd.dim() != 2) {
    return "fused_dwsep: x must be a CUDA [B, C, L] tensor, w1 [E, C] and wd [E, K]";
  }
  const int64_t B = x.size(0), C = x.size(1), L = x.size(2), E = w1.size(0), K = wd.size(1);
  const std::pair<const at::Tensor*, std::pair<const char*, std::vector<int64_t>>> expected[] = {
      {&x, {"x", {B, C, L}}},   {&y, {"y", {B, C, L}}},   {&w1, {"w1", {E, C}}},
      {&b1, {"b1", {E}}},       {&wd, {"wd", {E, K}}},    {&bd, {"bd", {E}}},
      {&w2, {"w2", {C, E}}},    {&b2, {"b2", {C}}},
  };
  for (const auto& [t, spec] : expected) {
    std::string err = check_tensor(*t, spec.first, spec.second, x);
    if (!err.empty()) return err;
  }
  if (K % 2 != 1) return "fused_dwsep: kernel_size must be odd, got " + std::to_string(K);
  if (x.numel() == 0) return "";

  const c10::cuda::CUDAGuard guard(x.device());
  const int device = x.get_device();
  fused_dwsep::Params p{};
  p.x = static_cast<const float*>(x.data_ptr());
  p.w1 = static_cast<const float*>(w1.data_ptr());
  p.b1 = static_cast<const float*>(b1.data_ptr());
  p.wd = static_cast<const float*>(wd.data_ptr());
  p.bd = static_cast<const float*>(bd.data_ptr());
  p.w2 = static_cast<const float*>(w2.data_ptr());
  p.b2 = static_cast<const float*>(b2.data_ptr());
  p.y = static_cast<float*>(y.data_ptr());
  p.B = B;
  p.C = C;
  p.E = E;
  p.L = L;
  p.K = K;
  p.tf32 = allow_tf32;

  const int64_t max_k = fused_dwsep::max_kernel_size(device);
  if (K > max_k) {
    return "fused_dwsep: kernel_size " + std::to_string(K) + " is larger than the CUDA kernel's limit " +
           std::to_string(max_k) + " on this GPU";
  }
  const int64_t ws_floats = static_cast<int64_t>(fused_dwsep::workspace_floats(p, device));
  if (ws_floats > 0) {
    std::string err = check_tensor(workspace, "workspace", {ws_floats}, x);
    if (!err.empty()) return err;
    p.workspace = static_cast<float*>(workspace.data_ptr());
  }
  const cudaError_t err = fused_dwsep::launch(p, at::cuda::getCurrentCUDAStream(device).stream());
  if (err != cudaSuccess) return std::string("fused_dwsep: kernel launch failed: ") + cudaGetErrorString(err);
  return "";
}

// The sizes that decide the path and the scratch (B and L do not).
fused_dwsep::Params shape_params(int64_t C, int64_t E, int64_t K, bool allow_tf32) {
  fused_dwsep::Params p{};
  p.B = p.L = 1;
  p.C = C;
  p.E = E;
  p.K = K;
  p.tf32 = allow_tf32;
  return p;
}

// Floats of scratch forward() needs for this shape on the current device.
int64_t fused_dwsep_workspace_floats(int64_t C, int64_t E, int64_t K, bool allow_tf32) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  return static_cast<int64_t>(fused_dwsep::workspace_floats(shape_params(C, E, K, allow_tf32), device));
}

// Which kernel serves a shape on the current device: "tensor_core", "general"
// or "unsupported". For tests and the benchmark's table.
std::string fused_dwsep_path(int64_t C, int64_t E, int64_t K, bool allow_tf32) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return "unsupported";
  switch (fused_dwsep::select_path(shape_params(C, E, K, allow_tf32), device)) {
    case fused_dwsep::Path::kTensorCore: return "tensor_core";
    case fused_dwsep::Path::kGeneral: return "general";
    default: return "unsupported";
  }
}

int64_t fused_dwsep_max_kernel_size() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  return fused_dwsep::max_kernel_size(device);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &fused_dwsep_forward, "fused_dwsep forward into y; returns '' or an error");
  m.def("workspace_floats", &fused_dwsep_workspace_floats, "scratch floats forward() needs");
  m.def("path", &fused_dwsep_path, "which kernel serves (C, E, K) on the current device");
  m.def("max_kernel_size", &fused_dwsep_max_kernel_size,
        "largest odd kernel_size the CUDA kernels take on the current device");
}
