// fused_dwsep.cpp: the PyTorch binding for the fused kernel in fused_dwsep.cu.
// Checks tensors (naming the op and the problem), takes a device guard and the
// current stream, allocates the output and the scratch, launches, and turns a
// CUDA error into a Python exception. fused_dwsep.py validates first, with
// friendlier messages; these checks keep the C++ entry safe on its own.

#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <string>

#include "fused_dwsep.h"

namespace {

std::string shape_str(const at::Tensor& t) { return c10::str(t.sizes()); }

void check_param(const at::Tensor& t, const char* name, at::IntArrayRef shape, const at::Tensor& x) {
  TORCH_CHECK(t.device() == x.device(), "fused_dwsep: ", name, " is on ", t.device(),
              " but x is on ", x.device());
  TORCH_CHECK(t.scalar_type() == x.scalar_type(), "fused_dwsep: ", name, " has dtype ",
              t.scalar_type(), " but x has dtype ", x.scalar_type());
  TORCH_CHECK(t.sizes() == shape, "fused_dwsep: ", name, " must be ", shape, ", got ", shape_str(t));
}

fused_dwsep::Params make_params(const at::Tensor& x, const at::Tensor& w1, const at::Tensor& b1,
                                const at::Tensor& wd, const at::Tensor& bd, const at::Tensor& w2,
                                const at::Tensor& b2, bool allow_tf32) {
  fused_dwsep::Params p{};
  p.x = x.data_ptr<float>();
  p.w1 = w1.data_ptr<float>();
  p.b1 = b1.data_ptr<float>();
  p.wd = wd.data_ptr<float>();
  p.bd = bd.data_ptr<float>();
  p.w2 = w2.data_ptr<float>();
  p.b2 = b2.data_ptr<float>();
  p.B = x.size(0);
  p.C = x.size(1);
  p.L = x.size(2);
  p.E = w1.size(0);
  p.K = wd.size(1);
  p.tf32 = allow_tf32;
  return p;
}

}  // namespace

// x [B, C, L]; w1 [E, C]; b1 [E]; wd [E, K]; bd [E]; w2 [C, E]; b2 [C]; all
// float32 on one CUDA device. Returns a new [B, C, L] tensor.
at::Tensor fused_dwsep_forward(const at::Tensor& x_in, const at::Tensor& w1_in,
                               const at::Tensor& b1_in, const at::Tensor& wd_in,
                               const at::Tensor& bd_in, const at::Tensor& w2_in,
                               const at::Tensor& b2_in, bool allow_tf32) {
  TORCH_CHECK(x_in.is_cuda(), "fused_dwsep: x must be a CUDA tensor, got ", x_in.device());
  TORCH_CHECK(x_in.dim() == 3, "fused_dwsep: x must be [B, C, L], got ", shape_str(x_in));
  TORCH_CHECK(x_in.scalar_type() == at::kFloat,
              "fused_dwsep: the CUDA kernel takes float32, got ", x_in.scalar_type());
  TORCH_CHECK(w1_in.dim() == 2 && wd_in.dim() == 2,
              "fused_dwsep: w1 must be [E, C] and wd [E, K], got ", shape_str(w1_in), " and ",
              shape_str(wd_in));
  const int64_t C = x_in.size(1), E = w1_in.size(0), K = wd_in.size(1);
  check_param(w1_in, "w1", {E, C}, x_in);
  check_param(b1_in, "b1", {E}, x_in);
  check_param(wd_in, "wd", {E, K}, x_in);
  check_param(bd_in, "bd", {E}, x_in);
  check_param(w2_in, "w2", {C, E}, x_in);
  check_param(b2_in, "b2", {C}, x_in);
  TORCH_CHECK(K % 2 == 1, "fused_dwsep: kernel_size must be odd, got ", K);

  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous();
  at::Tensor y = at::empty_like(x);
  if (x.numel() == 0) return y;

  const at::Tensor w1 = w1_in.contiguous(), b1 = b1_in.contiguous(), wd = wd_in.contiguous();
  const at::Tensor bd = bd_in.contiguous(), w2 = w2_in.contiguous(), b2 = b2_in.contiguous();
  fused_dwsep::Params p = make_params(x, w1, b1, wd, bd, w2, b2, allow_tf32);
  p.y = y.data_ptr<float>();

  const int device = x.get_device();
  const int64_t max_k = fused_dwsep::max_kernel_size(device);
  TORCH_CHECK(K <= max_k, "fused_dwsep: kernel_size ", K, " is larger than the CUDA kernel's limit ",
              max_k, " on this GPU (shared memory); run the module on the CPU for such sizes");

  at::Tensor workspace;
  const size_t ws_floats = fused_dwsep::workspace_floats(p, device);
  if (ws_floats > 0) {
    workspace = at::empty({static_cast<int64_t>(ws_floats)}, x.options());
    p.workspace = workspace.data_ptr<float>();
  }
  const cudaError_t err = fused_dwsep::launch(p, at::cuda::getCurrentCUDAStream(device).stream());
  TORCH_CHECK(err == cudaSuccess, "fused_dwsep: kernel launch failed: ", cudaGetErrorString(err));
  return y;
}

// Which kernel serves a shape on the current device: "tensor_core", "general"
// or "unsupported". For tests and the benchmark's table.
std::string fused_dwsep_path(int64_t C, int64_t E, int64_t K, bool allow_tf32) {
  fused_dwsep::Params p{};
  p.B = 1;
  p.C = C;
  p.E = E;
  p.L = 1;
  p.K = K;
  p.tf32 = allow_tf32;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  switch (fused_dwsep::select_path(p, device)) {
    case fused_dwsep::Path::kTensorCore: return "tensor_core";
    case fused_dwsep::Path::kGeneral: return "general";
    default: return "unsupported";
  }
}

int64_t fused_dwsep_max_kernel_size() {
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  return fused_dwsep::max_kernel_size(device);
}

// wrap_pybind_function turns c10::Error into the matching Python exception
// with the message alone (no C++ backtrace to symbolize).
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", torch::wrap_pybind_function(fused_dwsep_forward),
        "fused_dwsep forward (CUDA, float32)");
  m.def("path", torch::wrap_pybind_function(fused_dwsep_path),
        "which kernel serves (C, E, K) on the current device");
  m.def("max_kernel_size", torch::wrap_pybind_function(fused_dwsep_max_kernel_size),
        "largest odd kernel_size the CUDA kernels take on the current device");
}
