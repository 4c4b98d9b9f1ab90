// fused_dwsep_backward.cu: the depthwise stage of the backward, one kernel.
//
// The backward saves only the block's inputs and recomputes the intermediates
// (fused_dwsep.py, _block_backward). Its GEMMs run in cuDNN; the depthwise
// stage runs here, because PyTorch's depthwise kernels for fp32 take ~0.8 ms
// each at the headline shape, 6-8x their memory time (kernels/NOTES.md).
// From h1 = W1 x (without b1) and g3, the gradient at h3:
//
//   h2  = dwconv_K(h1 + b1) + bd     recomputed over the tile and a halo
//   h3  = gelu(h2)                   (for W2's gradient)
//   g2  = g3 * gelu'(h2)             the gradient at h2
//   gh1 = dwconv_K^T(g2)             the gradient at h1
//   per-tile sums of g2 * (h1 + b1) for each tap (wd's gradient), of g2 (bd's)
//   and of gh1 (b1's)
//
// Two reads (h1, g3) and two writes (h3, gh1) per position: the stage is
// memory-bound, so it runs in fp32 on CUDA cores. Each CTA takes one
// (batch, channel) row and a tile of kTile positions, stages its inputs with
// their halos in shared memory (zero outside [0, L): the "same" padding, which
// pads h1 + b1, not h1), and each thread computes kVec neighbouring outputs
// from one register window of whole float4s. The weight gradients are reduced
// per CTA into one partial per (batch, tile); fused_dwsep.py sums them (no
// atomics, so the result is deterministic).

#include "fused_dwsep.h"

#include <cstdint>

namespace fused_dwsep {
namespace dw {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kVec = 4;                     // outputs per thread, one float4
constexpr int kTile = kThreads * kVec;      // positions per CTA
static_assert(kDepthwiseMaxK == 9, "the switch in launch_depthwise_backward covers K = 1, 3, ..., 9");

// A K = 2 * kHalf + 1 filter. The halo is rounded up to whole float4s so that
// every shared-memory window starts 16-byte aligned.
template <int kHalf>
struct Taps {
  static constexpr int kK = 2 * kHalf + 1;
  static constexpr int kHalo = (kHalf + kVec - 1) / kVec * kVec;
  static constexpr int kWindow = kVec + 2 * kHalo;  // floats that cover kVec outputs and their taps
};

__device__ __forceinline__ float gelu(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
}

// d gelu(v) / dv = Phi(v) + v * phi(v), as PyTorch's gelu_backward computes it.
__device__ __forceinline__ float gelu_grad(float v) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f, kInvSqrt2Pi = 0.39894228040143267794f;
  const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
  return cdf + v * kInvSqrt2Pi * expf(-0.5f * v * v);
}

// dst[i] = row[start + i] + add for i < n, 0 where start + i is outside [0, L).
__device__ __forceinline__ void load_segment(float* dst, const float* row, float add, int64_t start, int n,
                                             int64_t L) {
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const int64_t pos = start + i;
    dst[i] = pos >= 0 && pos < L ? row[pos] + add : 0.0f;
  }
}

// row[start + i] = src[i] for i < kTile where start + i < L.
__device__ __forceinline__ void store_segment(float* row, const float* src, int64_t start, int64_t L) {
  for (int i = threadIdx.x; i < kTile; i += kThreads) {
    if (start + i < L) row[start + i] = src[i];
  }
}

// The kWindow floats from buf[kVec * first_vec] on (16-byte aligned).
template <int kHalf>
__device__ __forceinline__ void load_window(float (&w)[Taps<kHalf>::kWindow], const float* buf,
                                            int first_vec) {
  const float4* v = reinterpret_cast<const float4*>(buf) + first_vec;
#pragma unroll
  for (int i = 0; i < Taps<kHalf>::kWindow / kVec; ++i) {
    const float4 f = v[i];
    w[kVec * i] = f.x;
    w[kVec * i + 1] = f.y;
    w[kVec * i + 2] = f.z;
    w[kVec * i + 3] = f.w;
  }
}

// h2 at the kVec positions of a window whose first float sits kHalo before
// the first output's position: h2[j] = bd + sum_k wd[k] * h1[j + k - kHalf].
template <int kHalf>
__device__ __forceinline__ void depthwise4(float (&h2)[kVec], const float (&w)[Taps<kHalf>::kWindow],
                                           const float (&taps)[Taps<kHalf>::kK], float bias) {
  constexpr int kOffset = Taps<kHalf>::kHalo - kHalf;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    float acc = bias;
#pragma unroll
    for (int k = 0; k < Taps<kHalf>::kK; ++k) acc = fmaf(taps[k], w[kOffset + j + k], acc);
    h2[j] = acc;
  }
}

struct Row {
  int64_t row, tile, t0;  // row = b * E + e; the tile's first position
};

__device__ __forceinline__ Row this_row(int64_t tiles) {
  const int64_t block = blockIdx.x;
  return {block / tiles, block % tiles, (block % tiles) * kTile};
}

template <int kHalf>
__global__ void __launch_bounds__(kThreads) depthwise_backward_kernel(DepthwiseParams p, int64_t tiles) {
  using T = Taps<kHalf>;
  constexpr int kH = T::kHalo, kK = T::kK;
  constexpr int kSums = kK + 2;  // per tap (wd), bd, b1: the partials' last dimension
  // h1 (+ b1) at [t0 - 2 kH, t0 + kTile + 2 kH): g2 is needed kH beyond the
  // tile, and h2 there needs h1 another kH out.
  __shared__ __align__(16) float h1s[kTile + 4 * kH];
  __shared__ __align__(16) float g2s[kTile + 2 * kH];  // [t0 - kH, t0 + kTile + kH): g3, then g2
  __shared__ __align__(16) float h3s[kTile];
  __shared__ __align__(16) float gh1s[kTile];
  __shared__ float warp_sums[kWarps][kSums];
  const Row r = this_row(tiles);
  const int64_t e = r.row % p.E, b = r.row / p.E;
  load_segment(h1s, p.h1 + r.row * p.L, p.b1[e], r.t0 - 2 * kH, kTile + 4 * kH, p.L);
  // g3 is 0 outside [0, L), so g2 is too: h2 has no positions there.
  load_segment(g2s, p.g3 + r.row * p.L, 0.0f, r.t0 - kH, kTile + 2 * kH, p.L);
  float taps[kK], bias;
#pragma unroll
  for (int k = 0; k < kK; ++k) taps[k] = p.wd[e * kK + k];
  bias = p.bd[e];
  __syncthreads();

  // h2 over the tile and its halo, a float4 at a time: g2 = g3 * gelu'(h2)
  // everywhere, h3 = gelu(h2) on the tile. The window for g2s[kVec * v]
  // starts at h1s[kVec * v] (kH before, as depthwise4 wants).
  for (int v = threadIdx.x; v < (kTile + 2 * kH) / kVec; v += kThreads) {
    float w[T::kWindow], h2[kVec];
    load_window<kHalf>(w, h1s, v);
    depthwise4<kHalf>(h2, w, taps, bias);
    float4 g = reinterpret_cast<float4*>(g2s)[v];
    g.x *= gelu_grad(h2[0]);
    g.y *= gelu_grad(h2[1]);
    g.z *= gelu_grad(h2[2]);
    g.w *= gelu_grad(h2[3]);
    reinterpret_cast<float4*>(g2s)[v] = g;
    const int tile_vec = v - kH / kVec;
    if (tile_vec >= 0 && tile_vec < kTile / kVec) {
      reinterpret_cast<float4*>(h3s)[tile_vec] = make_float4(gelu(h2[0]), gelu(h2[1]), gelu(h2[2]), gelu(h2[3]));
    }
  }
  __syncthreads();

  // This thread's positions m = t0 + kVec * tid + j. gwin starts kH before m
  // in g2s, hwin kH before m in h1s.
  float gwin[T::kWindow], hwin[T::kWindow];
  load_window<kHalf>(gwin, g2s, threadIdx.x);
  load_window<kHalf>(hwin, h1s, threadIdx.x + kH / kVec);
  float gh1[kVec];
  float sums[kSums] = {};
  const int64_t m0 = r.t0 + kVec * threadIdx.x;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    // h2[m'] used h1[m] with tap k where m' = m - k + kHalf.
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kK; ++k) acc = fmaf(taps[k], gwin[kH + kHalf + j - k], acc);
    gh1[j] = acc;
    const float g2 = gwin[kH + j];  // 0 at m >= L
#pragma unroll
    for (int k = 0; k < kK; ++k) sums[k] = fmaf(g2, hwin[kH - kHalf + j + k], sums[k]);
    sums[kK] += g2;
    if (m0 + j < p.L) sums[kK + 1] += acc;  // gh1 itself is not 0 past L (the halo reaches back)
  }
  reinterpret_cast<float4*>(gh1s)[threadIdx.x] = make_float4(gh1[0], gh1[1], gh1[2], gh1[3]);

  // CTA sums: within each warp, then across warps.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int k = 0; k < kSums; ++k) {
    float s = sums[k];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (lane == 0) warp_sums[warp][k] = s;
  }
  __syncthreads();
  if (threadIdx.x < kSums) {
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += warp_sums[w][threadIdx.x];
    p.partials[((b * tiles + r.tile) * p.E + e) * kSums + threadIdx.x] = s;
  }
  store_segment(p.h3 + r.row * p.L, h3s, r.t0, p.L);
  store_segment(p.gh1 + r.row * p.L, gh1s, r.t0, p.L);
}

using KernelFn = void (*)(DepthwiseParams, int64_t);

}  // namespace
}  // namespace dw

int64_t depthwise_tiles(int64_t L) { return (L + dw::kTile - 1) / dw::kTile; }

cudaError_t launch_depthwise_backward(const DepthwiseParams& p, cudaStream_t stream) {
  using namespace dw;
  if (p.B < 1 || p.E < 1 || p.L < 1 || p.K < 1 || p.K % 2 == 0 || p.K > kDepthwiseMaxK) {
    return cudaErrorInvalidValue;
  }
  KernelFn kernel = nullptr;
  switch (p.K / 2) {
    case 0: kernel = depthwise_backward_kernel<0>; break;
    case 1: kernel = depthwise_backward_kernel<1>; break;
    case 2: kernel = depthwise_backward_kernel<2>; break;
    case 3: kernel = depthwise_backward_kernel<3>; break;
    default: kernel = depthwise_backward_kernel<4>; break;
  }
  const int64_t tiles = depthwise_tiles(p.L);
  const int64_t blocks = p.B * p.E * tiles;  // one CTA per (row, tile)
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, tiles);
  return cudaGetLastError();
}

}  // namespace fused_dwsep
