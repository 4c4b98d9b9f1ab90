// fused_dwsep: the interface between the CUDA kernels (fused_dwsep.cu) and the
// PyTorch binding (fused_dwsep.cpp). Plain C++ and the CUDA runtime only: no
// torch headers, so that nvcc compiles the .cu quickly and on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

namespace fused_dwsep {

// The element type of x, y and the six weights.
enum class DType : int { kFloat32 = 0, kBFloat16 = 1, kFloat16 = 2 };

// All tensors are contiguous, of one dtype, on one device; sizes are in elements.
struct Params {
  const void* x;     // [B, C, L]
  const void* w1;    // [E, C]   pointwise expand
  const void* b1;    // [E]
  const void* wd;    // [E, K]   depthwise taps
  const void* bd;    // [E]
  const void* w2;    // [C, E]   pointwise project back
  const void* b2;    // [C]
  void* y;           // [B, C, L] output, fully written
  float* workspace;  // packed weights (workspace_floats()), fp32 whatever dtype is
  int64_t B, C, E, L, K;
  DType dtype;
  // true: GEMM operands rounded to TF32 (round-to-nearest), fp32 accumulate,
  //       i.e. what cuDNN does under torch.backends.cudnn.allow_tf32 = True.
  // false: fp32-accurate GEMMs (three products of split operands on tensor cores).
  // bf16 and fp16 need true: their values are TF32 values, so one TF32 product
  // of them is exact (launch() refuses false with them).
  bool tf32;
};

enum class Path : int {
  kTensorCore = 0,      // mma.sync fused kernel, 128-position tiles: C <= 256, K <= 9, sm_80+
  kTensorCoreWide = 1,  // mma.sync fused kernel, 64-position tiles: 256 < C <= 512, K <= 9, sm_80+
  kWgmma = 2,           // wgmma kernel on sm_90 (built as sm_90a): C <= 384 (T = 128 to 256, then 64), exact mode C <= 256
  kWgmma16 = 3,         // bf16 / fp16 wgmma kernel on sm_90 (built as sm_90a): C <= 384 (T = 128, then 64), K <= 9
  kNone = 4,            // no kernel here serves the shape (the caller runs PyTorch's own)
};

// Which kernel launch() will use for this problem on `device`.
Path select_path(const Params& p, int device);
// Floats of scratch launch() needs in p.workspace (packed weights; 0 for kNone).
size_t workspace_floats(const Params& p, int device);
// Enqueues the forward on `stream`. Returns the first CUDA error, or
// cudaErrorInvalidValue for sizes no kernel takes (Path::kNone).
cudaError_t launch(const Params& p, cudaStream_t stream);

// The depthwise stage of the backward (fused_dwsep_backward.cu). All tensors
// contiguous fp32 on one device; h1, g3, h3, gh1 are [B, E, L].
struct DepthwiseParams {
  const float* h1;   // W1 x: the pointwise expand's output without its bias
  const float* b1;   // [E]
  const float* wd;   // [E, K]
  const float* bd;   // [E]
  const float* g3;   // the gradient at h3
  float* h3;         // gelu(dwconv_K(h1 + b1) + bd)
  float* gh1;        // the gradient at h1
  float* partials;   // [B * depthwise_groups(L), E, K + 2]: per (batch, group of
                     // tiles), the sums that make the gradients of wd (K taps), bd and b1
  int64_t B, E, L, K;
};

constexpr int64_t kDepthwiseMaxK = 9;  // odd K up to this; PyTorch's kernels beyond
// CTAs per row, each a group of position tiles (the partials' first
// dimension is B times this).
int64_t depthwise_groups(int64_t L);
// Enqueues the kernel on `stream`; cudaErrorInvalidValue for sizes it does not take.
cudaError_t launch_depthwise_backward(const DepthwiseParams& p, cudaStream_t stream);

}  // namespace fused_dwsep
