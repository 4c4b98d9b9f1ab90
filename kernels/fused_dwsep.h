// fused_dwsep: the interface between the CUDA kernels (fused_dwsep.cu) and the
// PyTorch binding (fused_dwsep.cpp). Plain C++ and the CUDA runtime only: no
// torch headers, so that nvcc compiles the .cu quickly and on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

namespace fused_dwsep {

// All tensors are contiguous fp32 on one device; sizes are in elements.
struct Params {
  const float* x;    // [B, C, L]
  const float* w1;   // [E, C]   pointwise expand
  const float* b1;   // [E]
  const float* wd;   // [E, K]   depthwise taps
  const float* bd;   // [E]
  const float* w2;   // [C, E]   pointwise project back
  const float* b2;   // [C]
  float* y;          // [B, C, L] output, fully written
  float* workspace;  // packed weights for the tensor-core path (workspace_floats())
  int64_t B, C, E, L, K;
  // true: GEMM operands rounded to TF32 (round-to-nearest), fp32 accumulate,
  //       i.e. what cuDNN does under torch.backends.cudnn.allow_tf32 = True.
  // false: fp32-accurate GEMMs (3xTF32 on tensor cores, or plain FFMA).
  bool tf32;
};

enum class Path : int {
  kTensorCore = 0,  // mma.sync fused kernel: C <= 256, K <= 9, sm_80+
  kGeneral = 1,     // CUDA-core fused kernel: any C and E, K up to max_kernel_size()
  kUnsupported = 2, // K too large for the general kernel's shared memory
  kWgmma = 3,       // the tensor-core tiling with wgmma: TF32 mode on sm_90 (built as sm_90a)
  kTensorCoreWide = 4,  // mma.sync fused kernel, 64-position tiles: 256 < C <= 512, K <= 9, sm_80+
};

// Which kernel launch() will use for this problem on `device`.
Path select_path(const Params& p, int device);
// Floats of scratch launch() needs in p.workspace (0 when the path needs none).
size_t workspace_floats(const Params& p, int device);
// Largest odd K the CUDA kernels accept on `device` (shared-memory bound).
int64_t max_kernel_size(int device);
// Enqueues the forward on `stream`. Returns the first CUDA error, or
// cudaErrorInvalidValue for sizes the kernels cannot take.
cudaError_t launch(const Params& p, cudaStream_t stream);

}  // namespace fused_dwsep
