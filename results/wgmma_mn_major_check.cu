// Checks, on a GPU, the hardware facts the kernel's x by channel on aligned
// rows (kernels/NOTES.md, v43) rests on, with the kernel's own code:
//  1. wgmma reads a 16-bit B operand N-major (imm-trans-b = 1) without
//     swizzle as xs_desc_of describes it: the next 8 channels (K) 128 bytes
//     on (LBO), the next n8 column tile kXsTileBytes on (SBO);
//  2. stage_x_by_channel's 4-byte cp.async copies (zero fill by src-size)
//     put x's position pairs into GEMM1's column order (column_of), halo
//     included, zero outside [0, L), leaving channels C .. kCMax alone;
//  3. init_acc's ldmatrix (no .trans) reads x back in the accumulators'
//     layout (xs_block_addr).
// One warpgroup, a tile of 64 channels (4 k16 steps), 64 expanded rows;
// values are small integers, so fp32 sums are exact and any layout error
// shows. Three (C, L, pw0): full, partial channels with the right edge, an
// interior tile.
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Ikernels \
//        -o mn_check results/wgmma_mn_major_check.cu && ./mn_check
#include <cstdio>
#include <cstdlib>
#include <vector>
#define FUSED_DWSEP_SM90A 1
#include "fused_dwsep.cu"
using namespace fused_dwsep;
using namespace fused_dwsep::wg;
using namespace fused_dwsep::wg::h16;
using G = Tile<64, 64, 1, true>;  // one 64-channel block
using In = __nv_bfloat16;

constexpr int kE = 64, kCMaxC = G::kCMax, kN = G::kCols, kPos = G::kGroupT;

__global__ void __launch_bounds__(128, 1)
    check(const In* w1, const In* x, int C, int L, int pw0, float* d, float* xinit) {
  __shared__ __align__(1024) unsigned char a_s[kE * kRowBytes];  // W1: 64 rows x 64 k, K-major, 128B swizzle
  __shared__ __align__(128) unsigned char xs[G::kXBytes];
  __shared__ __align__(128) unsigned char valid[G::kValidBytes];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  for (int i = t; i < kE * kCMaxC; i += 128) {  // the kernel's W1 slot: row e, channel k
    const int e = i / kCMaxC, k = i % kCMaxC;
    *reinterpret_cast<In*>(a_s + swizzled(e, k)) = w1[i];
  }
  // channels below C poisoned (NaN), the others zero, as the kernel leaves them
  for (int c = 0; c < kCMaxC; ++c)
    for (int n = t; n < kN; n += 128)
      *reinterpret_cast<uint16_t*>(xs + xs_offset<G>(c, n)) = c < C ? 0xffffu : 0;
  __syncthreads();
  stage_x_by_channel<G, In>(smem_u32(xs), valid, x, C, L, pw0, t);
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();

  float acc[36];
  const uint64_t a = sw128_desc(smem_u32(a_s)), b = xs_desc_of(smem_u32(xs), G::kXsTileBytes);
  wgmma_fence();
  wgmma16<In, false, true>(acc, a, b);
  for (int ks = 1; ks < kCMaxC / kKStep; ++ks)
    wgmma16<In, true, true>(acc, a + desc_units(ks * kKStep * 2), b + desc_units(ks * kKStep * kChunkBytes));
  wgmma_commit();
  wgmma_wait<0>();
  // D: register 4j + 2h + b holds row 16 warp + lane / 4 + 8h, column 8j + 2 (lane % 4) + b
  for (int r = 0; r < 36; ++r)
    d[(16 * warp + lane / 4 + 8 * (r / 2 % 2)) * kN + 8 * (r / 4) + 2 * (lane % 4) + r % 2] = acc[r];
  // init_acc's reads: channel 16 warp + 8h + g, column 8 (j + k / 2) + 2q + b
  for (int j = 0; j < G::kPosTiles; j += 2) {
    uint32_t r[4];
    ldmatrix_x4<false>(xs_block_addr<G>(smem_u32(xs), 0, j, warp, lane), r);
    for (int k = 0; k < 4; ++k) {
      const float2 v = unpack2<In>(r[k]);
      const int c = 16 * warp + 8 * (k % 2) + lane / 4, n = 8 * (j + k / 2) + 2 * (lane % 4);
      xinit[c * kPos + n] = v.x, xinit[c * kPos + n + 1] = v.y;
    }
  }
}

int main() {
  struct Case { int C, L, pw0; } cases[] = {{64, 160, 0}, {40, 96, 64}, {64, 256, 128}};
  int bad = 0;
  for (const Case& k : cases) {
    std::vector<In> w1(kE * kCMaxC), x(k.C * k.L);
    std::vector<float> w1f(w1.size()), xf(x.size());
    srand(7 + k.C);
    for (size_t i = 0; i < w1.size(); ++i) w1f[i] = static_cast<float>(rand() % 9 - 4), w1[i] = __float2bfloat16(w1f[i]);
    for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(rand() % 17 - 8), x[i] = __float2bfloat16(xf[i]);
    In *w1_d, *x_d;
    float *d_d, *xi_d;
    cudaMalloc(&w1_d, w1.size() * 2), cudaMalloc(&x_d, x.size() * 2);
    cudaMalloc(&d_d, kE * kN * 4), cudaMalloc(&xi_d, kCMaxC * kPos * 4);
    cudaMemcpy(w1_d, w1.data(), w1.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(x_d, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
    check<<<1, 128>>>(w1_d, x_d, k.C, k.L, k.pw0, d_d, xi_d);
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) return printf("CUDA error: %s\n", cudaGetErrorString(err)), 1;
    std::vector<float> d(kE * kN), xi(kCMaxC * kPos);
    cudaMemcpy(d.data(), d_d, d.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(xi.data(), xi_d, xi.size() * 4, cudaMemcpyDeviceToHost);
    auto xv = [&](int c, int p) { return c < k.C && p >= 0 && p < k.L ? xf[c * k.L + p] : 0.0f; };
    int wrong_main = 0, wrong_halo = 0, wrong_init = 0;
    for (int e = 0; e < kE; ++e)
      for (int n = 0; n < kN; ++n) {
        float ref = 0;
        for (int c = 0; c < kCMaxC; ++c) ref += w1f[e * kCMaxC + c] * xv(c, k.pw0 + G::position_of(n));
        if (d[e * kN + n] != ref) (n < kPos ? wrong_main : wrong_halo) += 1;
      }
    for (int c = 0; c < kCMaxC; ++c)
      for (int n = 0; n < kPos; ++n) wrong_init += xi[c * kPos + n] != xv(c, k.pw0 + G::position_of(n));
    printf("C %d L %d pw0 %d: GEMM1 N-major %d of %d wrong, halo %d of %d wrong; init_acc reads %d of %d wrong\n",
           k.C, k.L, k.pw0, wrong_main, kE * kPos, wrong_halo, kE * (kN - kPos), wrong_init, kCMaxC * kPos);
    bad += wrong_main + wrong_halo + wrong_init;
    cudaFree(w1_d), cudaFree(x_d), cudaFree(d_d), cudaFree(xi_d);
  }
  return bad != 0;
}
