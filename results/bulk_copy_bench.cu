// Weight-feed microbenchmark (kernels/NOTES.md, 2026-12-03): how fast one SM
// streams a 1 MB L2-resident buffer, read by every CTA as the kernel's packed
// weights are, into shared memory (bulk copies into a ring of R slots with one
// mbarrier each; cp.async 16-byte copies) or into registers, for one CTA and
// for one CTA on each of 132 SMs. The consumer only touches each stage.
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -o bb results/bulk_copy_bench.cu && ./bb
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
__device__ __forceinline__ uint32_t su32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t c) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(c)); }
__device__ __forceinline__ void bulk(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t par) {
  asm volatile("{\n.reg .pred d;\nW: mbarrier.try_wait.parity.shared::cta.b64 d, [%0], %1;\n@!d bra W;\n}" ::"r"(bar), "r"(par) : "memory");
}
constexpr int kSrcBytes = 1 << 20;
// S bytes a copy, R slots, CH copies per stage (split among CH issuing threads)
template <int S, int R, int CH>
__global__ void __launch_bounds__(128, 1) bulk_ring(const char* src, int n, unsigned long long* out) {
  extern __shared__ __align__(128) char sm[];
  const uint32_t ring = su32(sm), bars = su32(sm + R * S);
  const int tid = threadIdx.x;
  if (tid == 0) { for (int s = 0; s < R; ++s) mbar_init(bars + 8 * s, CH); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  __syncthreads();
  auto issue = [&](int i) {
    if (tid < CH) bulk(ring + (i % R) * S + tid * (S / CH), src + ((size_t)i * S) % kSrcBytes + tid * (S / CH), S / CH, bars + 8 * (i % R));
  };
  for (int s = 0; s < R && s < n; ++s) issue(s);
  unsigned long long t0 = clock64();
  float acc = 0;
  for (int i = 0; i < n; ++i) {
    mbar_wait(bars + 8 * (i % R), (i / R) & 1);
    acc += reinterpret_cast<const float*>(sm + (i % R) * S)[tid];
    asm volatile("bar.sync 1, 128;" ::: "memory");
    if (i + R < n) issue(i + R);
  }
  unsigned long long t1 = clock64();
  if (tid == 0) out[blockIdx.x] = t1 - t0;
  if (acc == 12345.f) out[1000] = 1;
}
// LDGSTS (cp.async 16 B a thread), S bytes a stage, R stages in flight
template <int S, int R>
__global__ void __launch_bounds__(128, 1) ldgsts_ring(const char* src, int n, unsigned long long* out) {
  extern __shared__ __align__(128) char sm[];
  const int tid = threadIdx.x;
  constexpr int kPer = S / (128 * 16);
  auto issue = [&](int i) {
    for (int k = 0; k < kPer; ++k) {
      const int off = (k * 128 + tid) * 16;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(su32(sm + (i % R) * S + off)), "l"(src + ((size_t)i * S) % kSrcBytes + off));
    }
    asm volatile("cp.async.commit_group;");
  };
  for (int s = 0; s < R - 1; ++s) issue(s);
  unsigned long long t0 = clock64();
  float acc = 0;
  for (int i = 0; i < n; ++i) {
    if (i + R - 1 < n) issue(i + R - 1); else asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group %0;" ::"n"(R - 1));
    asm volatile("bar.sync 1, 128;" ::: "memory");
    acc += reinterpret_cast<const float*>(sm + (i % R) * S)[tid];
    asm volatile("bar.sync 1, 128;" ::: "memory");
  }
  unsigned long long t1 = clock64();
  if (tid == 0) out[blockIdx.x] = t1 - t0;
  if (acc == 12345.f) out[1000] = 1;
}
// LDG into registers: S bytes a stage (float4 a thread per 2 KB), D stages ahead
template <int S, int D>
__global__ void __launch_bounds__(128, 1) ldg_regs(const char* src, int n, unsigned long long* out) {
  constexpr int kPer = S / (128 * 16);
  const int tid = threadIdx.x;
  float4 buf[D][kPer];
  auto ld = [&](int i, float4 (&b)[kPer]) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) b[k] = __ldcg(reinterpret_cast<const float4*>(src + ((size_t)i * S) % kSrcBytes + (k * 128 + tid) * 16));
  };
#pragma unroll
  for (int d = 0; d < D; ++d) ld(d, buf[d]);
  unsigned long long t0 = clock64();
  float acc = 0;
  for (int i = 0; i < n; i += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) acc += buf[d][k].x + buf[d][k].w;
      ld(i + d + D, buf[d]);
    }
  }
  unsigned long long t1 = clock64();
  if (tid == 0) out[blockIdx.x] = t1 - t0;
  if (acc == 12345.f) out[1000] = 1;
}
template <class K>
void run(const char* name, K k, int grid, int n, int stage_bytes, const char* src, unsigned long long* dout) {
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  std::vector<double> med;
  for (int rep = 0; rep < 3; ++rep) {
    k<<<grid, 128, 200 * 1024>>>(src, n, dout);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> h(grid);
    CK(cudaMemcpy(h.data(), dout, grid * 8, cudaMemcpyDeviceToHost));
    std::sort(h.begin(), h.end());
    med.push_back((double)h[grid / 2]);
  }
  double c = med[2];
  printf("%-28s grid %3d  %7.1f cycles/stage  %6.1f B/clk/SM\n", name, grid, c / n, (double)stage_bytes * n / c);
}
int main() {
  char* src; CK(cudaMalloc(&src, kSrcBytes + (1 << 16))); CK(cudaMemset(src, 1, kSrcBytes + (1 << 16)));
  unsigned long long* dout; CK(cudaMalloc(&dout, 8192 * 8));
  const int n = 2048;
  for (int grid : {1, 132}) {
    run("bulk 4K x5", bulk_ring<4096, 5, 1>, grid, n, 4096, src, dout);
    run("bulk 4K x1 (latency)", bulk_ring<4096, 1, 1>, grid, 512, 4096, src, dout);
    run("bulk 4K x3", bulk_ring<4096, 3, 1>, grid, n, 4096, src, dout);
    run("bulk 4K x10", bulk_ring<4096, 10, 1>, grid, n, 4096, src, dout);
    run("bulk 4K x20", bulk_ring<4096, 20, 1>, grid, n, 4096, src, dout);
    run("bulk 4K x5, 4 issuers 1K", bulk_ring<4096, 5, 4>, grid, n, 4096, src, dout);
    run("bulk 2K x10", bulk_ring<2048, 10, 1>, grid, n, 2048, src, dout);
    run("bulk 8K x5", bulk_ring<8192, 5, 1>, grid, n, 8192, src, dout);
    run("bulk 8K x2", bulk_ring<8192, 2, 1>, grid, n, 8192, src, dout);
    run("bulk 16K x5", bulk_ring<16384, 5, 1>, grid, n, 16384, src, dout);
    run("ldgsts 4K x5", ldgsts_ring<4096, 5>, grid, n, 4096, src, dout);
    run("ldgsts 4K x10", ldgsts_ring<4096, 10>, grid, n, 4096, src, dout);
    run("ldg regs 2K, 4 ahead", ldg_regs<2048, 4>, grid, n, 2048, src, dout);
    run("ldg regs 2K, 8 ahead", ldg_regs<2048, 8>, grid, n, 2048, src, dout);
    run("ldg regs 4K, 8 ahead", ldg_regs<4096, 8>, grid, n, 4096, src, dout);
  }
  return 0;
}
