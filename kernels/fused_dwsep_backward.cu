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
//   per-CTA sums of g2 * (h1 + b1) for each tap (wd's gradient), of g2 (bd's)
//   and of gh1 (b1's)
//
// Two reads (h1, g3) and two writes (h3, gh1) per position: the stage is
// memory-bound, so it runs in fp32 on CUDA cores. Each CTA takes one
// (batch, channel) row and walks up to kTilesPerCta tiles of kTile positions
// along it. Per tile it stages h1 and g3 with their halos in shared memory
// (zero outside [0, L): the "same" padding, which pads h1 + b1, not h1) while
// the next tile's loads are in flight, and each thread computes kVec
// neighbouring outputs from one register window of whole float4s. The
// weight-gradient sums stay in registers across the tiles and are reduced
// once per CTA into one partial per (batch, group of tiles); fused_dwsep.py
// sums those (no atomics, so the result is deterministic).

#include "fused_dwsep.h"

#include <cstdint>

namespace fused_dwsep {
namespace dw {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kVec = 4;                     // outputs per thread, one float4
constexpr int kTile = kThreads * kVec;      // positions per tile
// Tiles per CTA, walked in order along the row: the weight-gradient sums are
// reduced once per CTA, and the next tile's loads are in flight while the
// current one computes.
constexpr int kTilesPerCta = 4;
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

// A span of a row staged through registers: element i = threadIdx.x + j *
// kThreads of [start, start + kN) is row[start + i] + add inside [0, L) and 0
// outside (the "same" padding). load() issues the global loads; store() puts
// them in shared memory later, so the loads can be in flight meanwhile.
template <int kN>
struct Staged {
  static constexpr int kPerThread = (kN + kThreads - 1) / kThreads;
  float v[kPerThread];

  __device__ __forceinline__ void load(const float* row, float add, int64_t start, int64_t L) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = threadIdx.x + j * kThreads;
      const int64_t pos = start + i;
      v[j] = i < kN && pos >= 0 && pos < L ? __ldg(row + pos) + add : 0.0f;
    }
  }
  __device__ __forceinline__ void store(float* dst) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < kN) dst[i] = v[j];
    }
  }
};

// row[m + j] = v[j] for the kVec positions from m that lie before L: one
// 16-byte store where the row allows it.
__device__ __forceinline__ void store4(float* row, int64_t m, int64_t L, bool aligned, float4 v) {
  if (aligned && m + kVec <= L) {
    __stcs(reinterpret_cast<float4*>(row + m), v);
  } else {
    const float e[kVec] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      if (m + j < L) __stcs(row + m + j, e[j]);
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

template <int kHalf>
__global__ void __launch_bounds__(kThreads) depthwise_backward_kernel(DepthwiseParams p, int64_t tiles,
                                                                      int64_t groups) {
  using T = Taps<kHalf>;
  constexpr int kH = T::kHalo, kK = T::kK;
  constexpr int kSums = kK + 2;  // per tap (wd), bd, b1: the partials' last dimension
  // Per tile: h1 (+ b1) at [t0 - 2 kH, t0 + kTile + 2 kH) (g2 is needed kH
  // beyond the tile, and h2 there needs h1 another kH out), and g3 then g2 at
  // [t0 - kH, t0 + kTile + kH).
  constexpr int kH1Span = kTile + 4 * kH, kG2Span = kTile + 2 * kH;
  __shared__ __align__(16) float h1s[kH1Span];
  __shared__ __align__(16) float g2s[kG2Span];
  __shared__ float warp_sums[kWarps][kSums];

  const int64_t row = blockIdx.x / groups, group = blockIdx.x % groups;  // row = b * E + e
  const int64_t e = row % p.E, b = row / p.E, L = p.L;
  const int64_t first_tile = group * kTilesPerCta;
  const int64_t end_tile = first_tile + kTilesPerCta < tiles ? first_tile + kTilesPerCta : tiles;
  const float* h1_row = p.h1 + row * L;
  const float* g3_row = p.g3 + row * L;
  float* h3_row = p.h3 + row * L;
  float* gh1_row = p.gh1 + row * L;
  const bool aligned = L % kVec == 0 && reinterpret_cast<uintptr_t>(p.h3) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(p.gh1) % 16 == 0;
  float taps[kK];
#pragma unroll
  for (int k = 0; k < kK; ++k) taps[k] = p.wd[e * kK + k];
  const float bias = p.bd[e], b1 = p.b1[e];

  Staged<kH1Span> h1_next;
  Staged<kG2Span> g3_next;  // g3 is 0 outside [0, L), so g2 is too: h2 has no positions there
  h1_next.load(h1_row, b1, first_tile * kTile - 2 * kH, L);
  g3_next.load(g3_row, 0.0f, first_tile * kTile - kH, L);
  float sums[kSums] = {};
  for (int64_t tile = first_tile; tile < end_tile; ++tile) {
    const int64_t t0 = tile * kTile;
    __syncthreads();  // the previous tile's reads of h1s and g2s are done
    h1_next.store(h1s);
    g3_next.store(g2s);
    __syncthreads();
    if (tile + 1 < end_tile) {
      h1_next.load(h1_row, b1, t0 + kTile - 2 * kH, L);
      g3_next.load(g3_row, 0.0f, t0 + kTile - kH, L);
    }

    // h2 over the tile and its halo, a float4 at a time: g2 = g3 * gelu'(h2)
    // everywhere, h3 = gelu(h2) written out on the tile. The window for
    // g2s[kVec * v] starts at h1s[kVec * v] (kH before, as depthwise4 wants).
    for (int v = threadIdx.x; v < kG2Span / kVec; v += kThreads) {
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
        store4(h3_row, t0 + kVec * tile_vec, L, aligned,
               make_float4(gelu(h2[0]), gelu(h2[1]), gelu(h2[2]), gelu(h2[3])));
      }
    }
    __syncthreads();

    // This thread's positions m = m0 + j. gwin starts kH before m0 in g2s,
    // hwin kH before m0 in h1s.
    float gwin[T::kWindow], hwin[T::kWindow];
    load_window<kHalf>(gwin, g2s, threadIdx.x);
    load_window<kHalf>(hwin, h1s, threadIdx.x + kH / kVec);
    const int64_t m0 = t0 + kVec * threadIdx.x;
    float gh1[kVec];
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
      if (m0 + j < L) sums[kK + 1] += acc;  // gh1 itself is not 0 past L (the halo reaches back)
    }
    store4(gh1_row, m0, L, aligned, make_float4(gh1[0], gh1[1], gh1[2], gh1[3]));
  }

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
    p.partials[((b * groups + group) * p.E + e) * kSums + threadIdx.x] = s;
  }
}

using KernelFn = void (*)(DepthwiseParams, int64_t, int64_t);

}  // namespace
}  // namespace dw

int64_t depthwise_groups(int64_t L) {
  const int64_t tiles = (L + dw::kTile - 1) / dw::kTile;
  return (tiles + dw::kTilesPerCta - 1) / dw::kTilesPerCta;
}

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
  const int64_t tiles = (p.L + kTile - 1) / kTile, groups = depthwise_groups(p.L);
  const int64_t blocks = p.B * p.E * groups;  // one CTA per (row, group of tiles)
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, tiles, groups);
  return cudaGetLastError();
}

}  // namespace fused_dwsep
