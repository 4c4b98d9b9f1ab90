// Checks, on a GPU, the two hardware facts the "MN-major" plan in
// kernels/NOTES.md ("Next after v41") rests on, before any kernel is changed:
//  1. wgmma reads a bf16 B operand N-major (imm-trans-b = 1) with the
//     descriptor strides read from the PTX ISA's canonical layouts: 128-byte
//     swizzle for 64 columns (SBO = 1024 bytes between 8-row groups of K) and
//     no swizzle for the 8 halo columns (LBO = 128 bytes between K groups);
//  2. 4-byte cp.async copies (zero fill by src-size) place x's position pairs
//     into GEMM1's column order (column 8j + 2q + b = position 16q + 2j + b,
//     the halo -4..-1 and 64..67 in columns 64..71) in those layouts.
// One warpgroup, C = 16 channels (one k16 step), 64 expanded rows; values
// are small integers, so fp32 sums are exact and any layout error shows.
// The kernel's own helpers (smem_u32, smem_desc, sw128_desc, swizzled, the
// 4-byte cp.async, the wgmma fences) and Tile128's column order come from the
// kernel source, as in results/wgmma_layouts.cu.
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Ikernels \
//        -o mn_check results/wgmma_mn_major_check.cu && ./mn_check
#include <cstdio>
#include <cstdlib>
#include <vector>
#define FUSED_DWSEP_SM90A 1
#include "fused_dwsep.cu"
using namespace fused_dwsep;
using namespace fused_dwsep::wg;
using namespace fused_dwsep::wg::h16;  // kRowBytes (128), swizzled, sw128_desc
using G = Tile128;

constexpr int kC = 16, kE = 64, kN = G::kGroupT, kHaloCols = 8, kL = 80;

__global__ void __launch_bounds__(128, 1) check(const __nv_bfloat16* w1, const __nv_bfloat16* x, float* d64, float* d8) {
  __shared__ __align__(1024) unsigned char a_s[kE * kRowBytes];  // W1: 64 rows x 16 k, K-major, 128B swizzle
  __shared__ __align__(1024) unsigned char b_s[kC * kRowBytes];  // x: 16 k rows x 64 columns, N-major, 128B swizzle
  __shared__ __align__(128) unsigned char h_s[kC * 16];          // x halo: 2 cores of 8 k x 8 columns, no swizzle
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  for (int i = t; i < kE * kC; i += 128) {  // A as the kernel's W1 slot: row e, channel k
    const int e = i / kC, k = i % kC;
    *reinterpret_cast<__nv_bfloat16*>(a_s + swizzled(e, k)) = w1[i];
  }
  for (int i = t; i < kC * kRowBytes / 4; i += 128) reinterpret_cast<uint32_t*>(b_s)[i] = ~0u;  // poison (NaN)
  if (t < kC * 4) reinterpret_cast<uint32_t*>(h_s)[t] = ~0u;
  __syncthreads();
  // x, main columns: lane (j, q) copies the pair at position 16q + 2j of one channel (a warp: one 128-byte line)
  const int j = lane / 4, q = lane % 4;
  for (int c = warp; c < kC; c += 4)
    cp_async_4_zfill_shared(smem_u32(b_s + swizzled(c, 8 * j + 2 * q)), x + c * kL + 16 * q + 2 * j, true);
  if (t < kC * 4) {  // halo: 4 pairs a channel, zero outside [0, L)
    const int c = t / 4, h = 2 * (t % 4), p = G::position_of(kN + h);
    const bool inside = p >= 0 && p + 1 < kL;
    cp_async_4_zfill_shared(smem_u32(h_s + c / 8 * 128 + c % 8 * 16 + h * 2), x + c * kL + (inside ? p : 0), inside);
  }
  cp_async_commit();
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();

  float d[32], e8[4];
  // the kernel's 128-byte-swizzled descriptor for both (B: SBO 1024 between 8-row groups of K; its
  // LBO, the next 64 columns, unused at n64); the halo unswizzled, LBO the next 8 k, SBO (unused) the next 8 columns
  const uint64_t da = sw128_desc(smem_u32(a_s)), db = sw128_desc(smem_u32(b_s));
  const uint64_t dh = smem_desc(smem_u32(h_s), 128, 256);
  wgmma_fence();
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]),
        "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]),
        "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]),
        "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31])
      : "l"(da), "l"(db));
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 1;\n}\n"
      : "=f"(e8[0]), "=f"(e8[1]), "=f"(e8[2]), "=f"(e8[3])
      : "l"(da), "l"(dh));
  wgmma_commit();
  wgmma_wait<0>();
  // D fragments: register 4j + 2h + b holds row 16 warp + lane / 4 + 8h, column 8j + 2 (lane % 4) + b
  for (int r = 0; r < 32; ++r) {
    const int row = 16 * warp + lane / 4 + 8 * (r / 2 % 2), col = 8 * (r / 4) + 2 * (lane % 4) + r % 2;
    d64[row * kN + col] = d[r];
  }
  for (int r = 0; r < 4; ++r) {
    const int row = 16 * warp + lane / 4 + 8 * (r / 2), col = 2 * (lane % 4) + r % 2;
    d8[row * kHaloCols + col] = e8[r];
  }
}

int main() {
  std::vector<__nv_bfloat16> w1(kE * kC), x(kC * kL);
  std::vector<float> w1f(kE * kC), xf(kC * kL);
  srand(7);
  for (int i = 0; i < kE * kC; ++i) w1f[i] = static_cast<float>(rand() % 9 - 4), w1[i] = __float2bfloat16(w1f[i]);
  for (int i = 0; i < kC * kL; ++i) xf[i] = static_cast<float>(rand() % 17 - 8), x[i] = __float2bfloat16(xf[i]);
  __nv_bfloat16 *w1_d, *x_d;
  float *d64_d, *d8_d;
  cudaMalloc(&w1_d, w1.size() * 2), cudaMalloc(&x_d, x.size() * 2);
  cudaMalloc(&d64_d, kE * kN * 4), cudaMalloc(&d8_d, kE * kHaloCols * 4);
  cudaMemcpy(w1_d, w1.data(), w1.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(x_d, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
  check<<<1, 128>>>(w1_d, x_d, d64_d, d8_d);
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return printf("CUDA error: %s\n", cudaGetErrorString(err)), 1;
  std::vector<float> d64(kE * kN), d8(kE * kHaloCols);
  cudaMemcpy(d64.data(), d64_d, d64.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(d8.data(), d8_d, d8.size() * 4, cudaMemcpyDeviceToHost);
  int wrong64 = 0, wrong8 = 0;
  for (int e = 0; e < kE; ++e)
    for (int n = 0; n < kN + kHaloCols; ++n) {
      const int p = G::position_of(n);
      float ref = 0;
      for (int c = 0; c < kC; ++c) ref += w1f[e * kC + c] * (p >= 0 && p < kL ? xf[c * kL + p] : 0.0f);
      const float got = n < kN ? d64[e * kN + n] : d8[e * kHaloCols + n - kN];
      if (got != ref) (n < kN ? wrong64 : wrong8) += 1;
    }
  printf("N-major sw128 n64: %d of %d wrong; N-major no-swizzle n8 (halo): %d of %d wrong\n", wrong64, kE * kN,
         wrong8, kE * kHaloCols);
  return wrong64 || wrong8;
}
