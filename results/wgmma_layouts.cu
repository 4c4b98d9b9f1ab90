// wgmma m64n136k8 TF32 throughput by operand source and shared-memory layout,
// one warpgroup per SM (data not initialised meaningfully: timing only).
// kernels/NOTES.md, v8: 1023 MAC/clk/SM in every layout.
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Ikernels \
//        -o layouts results/wgmma_layouts.cu && ./layouts
#include <cstdio>
#include <cstdint>
#define FUSED_DWSEP_SM90A 1
#include "fused_dwsep.cu"
using namespace fused_dwsep;
using namespace fused_dwsep::wg;
__device__ __forceinline__ void wg136_reg(float (&d)[68], const uint32_t (&a)[4], uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
  "wgmma.mma_async.sync.aligned.m64n136k8.f32.tf32.tf32 {"
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67},"
  "{%68,%69,%70,%71}, %72, p, 1, 1;\n}\n"
  : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),"+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15]),
    "+f"(d[16]),"+f"(d[17]),"+f"(d[18]),"+f"(d[19]),"+f"(d[20]),"+f"(d[21]),"+f"(d[22]),"+f"(d[23]),"+f"(d[24]),"+f"(d[25]),"+f"(d[26]),"+f"(d[27]),"+f"(d[28]),"+f"(d[29]),"+f"(d[30]),"+f"(d[31]),
    "+f"(d[32]),"+f"(d[33]),"+f"(d[34]),"+f"(d[35]),"+f"(d[36]),"+f"(d[37]),"+f"(d[38]),"+f"(d[39]),"+f"(d[40]),"+f"(d[41]),"+f"(d[42]),"+f"(d[43]),"+f"(d[44]),"+f"(d[45]),"+f"(d[46]),"+f"(d[47]),
    "+f"(d[48]),"+f"(d[49]),"+f"(d[50]),"+f"(d[51]),"+f"(d[52]),"+f"(d[53]),"+f"(d[54]),"+f"(d[55]),"+f"(d[56]),"+f"(d[57]),"+f"(d[58]),"+f"(d[59]),"+f"(d[60]),"+f"(d[61]),"+f"(d[62]),"+f"(d[63]),
    "+f"(d[64]),"+f"(d[65]),"+f"(d[66]),"+f"(d[67])
  : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"l"(db));
}
// desc with layout type (0 none, 1 = 128B, 2 = 64B, 3 = 32B)
__device__ __forceinline__ uint64_t dsc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint64_t type) {
  return smem_desc(addr, lbo, sbo) | (type << 62);
}
// MODE 0: A smem none (LBO128,SBO512) + B none (LBO128, SBO8192)   [current G1]
// MODE 1: A regs + B none                                           [old kernel G1]
// MODE 2: A smem SW128 (SBO1024) + B SW128 (SBO1024)
// MODE 3: A smem SW64 (SBO512) + B SW128
// MODE 4: A regs + B SW128
// MODE 5: A smem none + B SW128
// MODE 6: A smem SW32 (SBO256) + B SW128
// MODE 7: A smem none but SBO=LBO-swapped "8 rows apart 16B" style: LBO=1024(K), SBO=128 (N groups adjacent) ; B same style LBO=17408,SBO=128
template <int MODE>
__global__ void __launch_bounds__(128, 1) mb(int iters, float* out, long long* cyc) {
  extern __shared__ __align__(1024) unsigned char sm[];
  const uint32_t base = (smem_u32(sm) + 1023) & ~1023u;
  for (int i = threadIdx.x; i < 200 * 1024 / 4; i += 128) reinterpret_cast<float*>(sm)[i] = 0.001f * (i % 7);
  fence_proxy_async();
  __syncthreads();
  const uint32_t A = base, B = base + 32768;
  float d[68];
  for (int i = 0; i < 68; ++i) d[i] = 0.f;
  uint32_t ar[4] = {0x3f800000u, 0, 0, 0};
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint64_t da, db;
      if (MODE == 0) { da = dsc(A + k * 256, 128, 512, 0); db = dsc(B + k * 256, 128, 8192, 0); }
      if (MODE == 2) { da = dsc(A + k * 32, 16, 1024, 1); db = dsc(B + k * 32, 16, 1024, 1); }
      if (MODE == 3) { da = dsc(A + (k & 1) * 32 + (k >> 1) * 4096, 16, 512, 2); db = dsc(B + k * 32, 16, 1024, 1); }
      if (MODE == 5) { da = dsc(A + k * 256, 128, 512, 0); db = dsc(B + k * 32, 16, 1024, 1); }
      if (MODE == 6) { da = dsc(A + k * 2048, 16, 256, 3); db = dsc(B + k * 32, 16, 1024, 1); }
      if (MODE == 7) { da = dsc(A + k * 2048, 1024, 128, 0); db = dsc(B + k * 2 * 17408 / 2, 17408, 128, 0); }
      if (MODE == 1) { db = dsc(B + k * 256, 128, 8192, 0); wg136_reg(d, ar, db); }
      else if (MODE == 4) { db = dsc(B + k * 32, 16, 1024, 1); wg136_reg(d, ar, db); }
      else wgmma_m64n136k8(d, da, db);
    }
    wgmma_commit();
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  fence_operands(d);
  long long t1 = clock64();
  float s = 0; for (int i = 0; i < 68; ++i) s += d[i];
  out[blockIdx.x * 128 + threadIdx.x] = s;
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}
template <int MODE> void run(const char* name, int ctas) {
  int iters = 2000; float* out; long long* cyc; cudaMalloc(&out, 132 * 128 * 4 * 4); cudaMalloc(&cyc, 132 * 8 * 4);
  cudaFuncSetAttribute(mb<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, 210 * 1024);
  mb<MODE><<<ctas, 128, 210 * 1024>>>(10, out, cyc); cudaDeviceSynchronize();
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a); mb<MODE><<<ctas, 128, 210 * 1024>>>(iters, out, cyc); cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b); long long c; cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost);
  double macs = 64.0 * 136 * 8 * 4 * iters;
  printf("%-34s ctas %3d: %.3f ms  %.0f MAC/clk/SM (clock64)  %.1f TFLOP/s  err=%s\n", name, ctas, ms, macs / c,
         2 * macs * ctas / (ms * 1e-3) / 1e12, cudaGetErrorString(cudaGetLastError()));
}
int main() {
  run<0>("A smem none + B none (current)", 132);
  run<1>("A regs + B none (old kernel)", 132);
  run<2>("A SW128 + B SW128", 132);
  run<3>("A SW64 + B SW128", 132);
  run<4>("A regs + B SW128", 132);
  run<5>("A none + B SW128", 132);
  run<6>("A SW32 + B SW128", 132);
  run<7>("A none (K-cores 1KB apart) + B same", 132);
  return 0;
}
