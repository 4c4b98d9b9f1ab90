// What the depthwise costs beside the tensor cores (kernels/NOTES.md,
// fifteenth session). One CTA of 384 threads on each SM: warpgroup 0 issues
// nothing but TF32 wgmmas of one shape (operands in shared memory, or A in
// registers; groups of 8, one group in flight, as the kernel's turns do),
// while 0-2 other warpgroups run a loop shaped like the kernel's depthwise
// row groups (each lane: 4 rows x 4 positions, 16-byte window loads, taps by
// shuffles: a record's 12 floats a row, where the kernel takes its 10; 9
// FFMAs an output, the kernel's GELU and TF32 rounding, 16-byte h3^T
// stores). Prints the cycles a wgmma and a depthwise group take (SM 0,
// %clock64), each alone and together; "windows/taps in registers" variants
// leave out the window loads or the tap shuffles; "quad mapping" gives each
// lane one row of the group at 16 positions (one tap record, six window
// loads) and transposes the outputs 4 x 4 within each quad for the stores.
//   nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -O3 -std=c++17 \
//        -Ikernels -o probe results/ws_probe.cu && ./probe
#include "fused_dwsep.cu"
#include <cstdio>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
using namespace fused_dwsep;
using namespace fused_dwsep::wg;

constexpr int kGroups = 2000;          // wgmma groups of 8 a launch
constexpr int kAlonePasses = 400;      // depthwise passes (4 row groups each) when no wgmma runs
constexpr int kSmem = 96 * 1024;
constexpr int kOperandBytes = 8192;    // A at 0, B from here; the depthwise's rows from kRowsOffset
constexpr int kRowsOffset = 20480;
constexpr int kRowFloats = 132;        // the head tile's h1 row

struct Out { unsigned long long mma_cycles, dw_cycles, dw_passes; };

// wgmma shapes: 0 none, 1 m64n72k8 (the wide tile's GEMM1), 2 m64n136k8 (the
// head tile's GEMM1), 3 m64n192k8 (the wide tile's GEMM2), all from shared
// memory; 4 m64n128k8 with A in registers (the head tile's GEMM2).
constexpr int kMmaAcc[5] = {1, 36, 68, 96, 64};
// Depthwise loop kinds: bit 0 windows from registers, bit 1 taps from
// registers; 4 the quad mapping.
template <int MMA, int DW, int DWK>
__global__ void __launch_bounds__(384, 1) probe(Out* out) {
  extern __shared__ __align__(128) unsigned char sm[];
  volatile int* stop = reinterpret_cast<volatile int*>(sm + kSmem - 16);
  const int wgi = threadIdx.x / kWarpgroupThreads, lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  for (int i = threadIdx.x; i < (kSmem - 16) / 4; i += blockDim.x) reinterpret_cast<float*>(sm)[i] = 0.001f * (i % 97);
  if (threadIdx.x == 0) *stop = 0;
  __syncthreads();
  if (wgi == 0) {
    if constexpr (MMA != 0) {
      const uint32_t base = smem_u32(sm);
      const uint64_t a = smem_desc(base, kCoreBytes, 2 * kCoreBytes);
      const uint64_t b = smem_desc(base + kOperandBytes, kCoreBytes, 2 * kCoreBytes);
      float acc[kMmaAcc[MMA]] = {};
      float4 af[8];
      for (int k = 0; k < 8; ++k) af[k] = make_float4(0.01f * k, 0.02f, 0.03f, 0.04f * lane);
      const unsigned long long t0 = clock64();
      for (int it = 0; it < kGroups; ++it) {
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          if constexpr (MMA == 4)
            wgmma_rs(acc, af[k], b + desc_units(256 * k));
          else
            wgmma_ss(acc, a + desc_units(256 * k), b + desc_units(256 * k));
        }
        wgmma_commit();
        wgmma_wait<1>();
      }
      wgmma_wait<0>();
      fence_operands(acc);
      const unsigned long long t1 = clock64();
      float s = 0;
      for (float v : acc) s += v;
      if (threadIdx.x == 0) {
        *stop = 1;
        if (blockIdx.x == 0) out->mma_cycles = t1 - t0;
        if (s == 12345.0f) out->dw_passes = 0;  // keeps the sums
      }
    }
    return;
  }
  if (wgi > DW) return;
  // The depthwise-like loop over this warp's 16 rows, until the wgmmas are done.
  float* rows = reinterpret_cast<float*>(sm + kRowsOffset) + (warp - kGroupWarps) * kDwRows * kRowFloats;
  float tapv[5];
  for (int j = 0; j < 5; ++j) tapv[j] = 0.01f * (lane * 5 + j);
  const unsigned long long t0 = clock64();
  int pass = 0;
  for (;; ++pass) {
    if (MMA != 0 ? *stop != 0 : pass >= kAlonePasses) break;
    if constexpr (DWK == 4) {
      // lane (rr, blk): row rr of the group, positions 16 blk .. 16 blk + 15
      const int rr = lane % 4, blk = lane / 4;
#pragma unroll 1
      for (int kc = 0; kc < kDwGroups; ++kc) {
        const int row = kc * 4 + rr;
        float tap[kTapRecord];
#pragma unroll
        for (int m = 0; m < kTapRecord; ++m) tap[m] = __shfl_sync(0xffffffffu, tapv[m % 5], row * 2 + m / 5);
        const float* hrow = rows + row * kRowFloats + blk * 16;
        float win[24];
#pragma unroll
        for (int w = 0; w < 6; ++w) {
          const float4 q = *reinterpret_cast<const float4*>(hrow + 4 * w);
          win[4 * w] = q.x, win[4 * w + 1] = q.y, win[4 * w + 2] = q.z, win[4 * w + 3] = q.w;
        }
        float h[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          float e = tap[kTapRecord - 1], o = 0.0f;
#pragma unroll
          for (int m = 0; m < 9; m += 2) e = fmaf(tap[m], win[j + m], e);
#pragma unroll
          for (int m = 1; m < 9; m += 2) o = fmaf(tap[m], win[j + m], o);
          h[j] = tf32_operand(gelu_from_half(e + o));
        }
        __syncwarp();
        // 4x4 transposes within the quad: lane rr ends with channels 0..3 of position 16 blk + 4 i + rr
        const bool odd = rr & 1, hi = rr & 2;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float x0 = h[4 * i], x1 = h[4 * i + 1], x2 = h[4 * i + 2], x3 = h[4 * i + 3];
          // stage 1 (xor 1): keep columns of my parity, receive the partner's at my parity
          const float s0 = odd ? x0 : x1, s1 = odd ? x2 : x3;
          const float r0 = __shfl_xor_sync(0xffffffffu, s0, 1), r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
          // held: column p (= rr & 1): mine m_p, partner's r0; column p + 2: mine m_p2, partner's r1
          const float mp = odd ? x1 : x0, mp2 = odd ? x3 : x2;
          // rows (even, odd) of the pair at column p and p + 2
          const float ce = odd ? r0 : mp, co = odd ? mp : r0, ce2 = odd ? r1 : mp2, co2 = odd ? mp2 : r1;
          // stage 2 (xor 2): my column is p (rr < 2) or p + 2; send the other one's two rows
          const float t0 = __shfl_xor_sync(0xffffffffu, hi ? ce : ce2, 2);
          const float t1 = __shfl_xor_sync(0xffffffffu, hi ? co : co2, 2);
          // channels: rows 0,1 and 2,3 at my column
          const float4 out = hi ? make_float4(t0, t1, ce2, co2) : make_float4(ce, co, t0, t1);
          reinterpret_cast<float4*>(rows + kc * 512)[blk * 16 + 4 * i + rr] = out;
        }
        __syncwarp();
      }
      continue;
    }
#pragma unroll 1
    for (int kc = 0; kc < kDwGroups; ++kc) {
      float4 v[kCoreK];
#pragma unroll
      for (int r = 0; r < kCoreK; ++r) {
        const float* hrow = rows + (kc * kCoreK + r) * kRowFloats + lane * kVec;
        float win[12];
#pragma unroll
        for (int w = 0; w < 3; ++w) {
          const float4 q = (DWK & 1) ? make_float4(tapv[w] + pass, tapv[w + 1] + kc, tapv[w + 2] + r, tapv[(w + 3) % 5])
                                     : *reinterpret_cast<const float4*>(hrow + kVec * w);
          win[4 * w] = q.x, win[4 * w + 1] = q.y, win[4 * w + 2] = q.z, win[4 * w + 3] = q.w;
        }
        float tap[kTapRecord];
#pragma unroll
        for (int m = 0; m < kTapRecord; ++m)
          tap[m] = (DWK & 2) ? tapv[m % 5] * (1.0f + r) : __shfl_sync(0xffffffffu, tapv[m % 5], (kc * 4 + r) * 2 + m / 5);
        float h[kVec];
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          float e = tap[kTapRecord - 1], o = 0.0f;
#pragma unroll
          for (int m = 0; m < 9; m += 2) e = fmaf(tap[m], win[j + m], e);
#pragma unroll
          for (int m = 1; m < 9; m += 2) o = fmaf(tap[m], win[j + m], o);
          h[j] = tf32_operand(gelu_from_half(e + o));
        }
        v[r] = make_float4(h[0], h[1], h[2], h[3]);
      }
      __syncwarp();
      float4* core = reinterpret_cast<float4*>(rows + kc * 512 + lane * 16);
      core[0] = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
      core[1] = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
      core[2] = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
      core[3] = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
      __syncwarp();
    }
  }
  const unsigned long long t1 = clock64();
  if (blockIdx.x == 0 && threadIdx.x == kWarpgroupThreads) {
    out->dw_cycles = t1 - t0;
    out->dw_passes = pass;
  }
}

template <int MMA, int DW, int DWK = 0>
void run(const char* name, int sms) {
  Out* d;
  CK(cudaMalloc(&d, sizeof(Out)));
  CK(cudaMemset(d, 0, sizeof(Out)));
  CK(cudaFuncSetAttribute(probe<MMA, DW, DWK>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  for (int rep = 0; rep < 2; ++rep) probe<MMA, DW, DWK><<<sms, 3 * kWarpgroupThreads, kSmem>>>(d);
  CK(cudaDeviceSynchronize());
  Out o;
  CK(cudaMemcpy(&o, d, sizeof(Out), cudaMemcpyDeviceToHost));
  printf("%-44s", name);
  if (MMA) printf("  wgmma %6.1f cycles", double(o.mma_cycles) / (kGroups * 8.0));
  if (DW) printf("  depthwise group %7.1f cycles", double(o.dw_cycles) / (o.dw_passes * double(kDwGroups)));
  printf("\n");
  CK(cudaFree(d));
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  run<0, 1>("depthwise alone (1 warpgroup)", sms);
  run<0, 2>("depthwise alone (2 warpgroups, each)", sms);
  run<0, 1, 1>("depthwise alone, windows in registers", sms);
  run<0, 1, 2>("depthwise alone, taps in registers", sms);
  run<0, 1, 3>("depthwise alone, both in registers", sms);
  run<1, 0>("m64n72k8 alone", sms);
  run<1, 1>("m64n72k8 + depthwise", sms);
  run<2, 0>("m64n136k8 alone", sms);
  run<2, 1>("m64n136k8 + depthwise", sms);
  run<2, 1, 1>("m64n136k8 + depthwise, windows in registers", sms);
  run<2, 1, 2>("m64n136k8 + depthwise, taps in registers", sms);
  run<2, 1, 3>("m64n136k8 + depthwise, both in registers", sms);
  run<3, 0>("m64n192k8 alone", sms);
  run<3, 1>("m64n192k8 + depthwise", sms);
  run<4, 0>("m64n128k8, A in registers, alone", sms);
  run<4, 1>("m64n128k8, A in registers, + depthwise", sms);
  run<4, 1, 3>("m64n128k8 A in regs + depthwise, both in regs", sms);
  run<0, 1, 4>("quad mapping alone", sms);
  run<2, 1, 4>("m64n136k8 + quad mapping", sms);
  run<4, 1, 4>("m64n128k8, A in registers, + quad mapping", sms);
  return 0;
}
