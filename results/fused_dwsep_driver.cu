// Standalone timing of launch() at the headline shape (random data, median of
// CUDA-event timings over back-to-back launches; no torch). Used to time
// kernel variants built with compile-time switches (kernels/NOTES.md, v8).
//   nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -O3 -std=c++17 \
//        -Ikernels -o driver results/fused_dwsep_driver.cu && ./driver 30
#include "fused_dwsep.cu"
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstdlib>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
static float* dev_rand(size_t n, float scale, unsigned seed) {
  std::vector<float> h(n); unsigned s = seed;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = scale * ((s >> 8) * (1.0f / 16777216.0f) - 0.5f); }
  float* d; CK(cudaMalloc(&d, n * 4)); CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice)); return d;
}
int main(int argc, char** argv) {
  int64_t B = 32, C = 256, E = 512, L = 4096, K = 9;
  int reps = argc > 1 ? atoi(argv[1]) : 30;
  fused_dwsep::Params p{};
  p.B = B; p.C = C; p.E = E; p.L = L; p.K = K; p.tf32 = true;
  p.x = dev_rand(B * C * L, 2.0f, 1); p.w1 = dev_rand(E * C, 0.12f, 2); p.b1 = dev_rand(E, 0.1f, 3);
  p.wd = dev_rand(E * K, 0.6f, 4); p.bd = dev_rand(E, 0.1f, 5); p.w2 = dev_rand(C * E, 0.09f, 6); p.b2 = dev_rand(C, 0.1f, 7);
  float* y; CK(cudaMalloc(&y, B * C * L * 4)); p.y = y;
  size_t ws = fused_dwsep::workspace_floats(p, 0); float* w; CK(cudaMalloc(&w, ws * 4)); p.workspace = w;
  printf("path %d ws %zu\n", (int)fused_dwsep::select_path(p, 0), ws);
  for (int i = 0; i < 3; ++i) CK(fused_dwsep::launch(p, 0));
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a); CK(fused_dwsep::launch(p, 0)); cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  printf("median %.4f ms min %.4f\n", t[t.size() / 2], t[0]);
  return 0;
}
