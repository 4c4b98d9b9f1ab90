// Does compute-sanitizer's racecheck flag a store / load pair separated by
// __syncthreads once the CTA has used bar.arrive / bar.sync named barriers
// (the pattern of the wgmma kernel's turns)? kernels/NOTES.md, v8.
//   nvcc -arch=sm_90 -O3 -o rc results/racecheck_named_barriers.cu
//   compute-sanitizer --tool racecheck ./rc
// kPattern 0: no named barrier (must report nothing); 1: one arrive / sync
// pair; 2: turns passed back and forth between the two 128-thread halves as
// in the kernel (the last turn's owner does not pass the token on).
#include <cstdio>
template <int kPattern>
__global__ void k(float* out, int turns) {
  __shared__ float s[256];
  const int w = threadIdx.x / 128;
  if (kPattern == 1) {
    if (w == 1) asm volatile("bar.arrive 3, 256;" ::: "memory");
    else asm volatile("bar.sync 3, 256;" ::: "memory");
  }
  if (kPattern == 2) {
    if (w == 1) asm volatile("bar.arrive 3, 256;" ::: "memory");
    for (int j = 0; j < turns; ++j) {
      if (j % 2 != w) continue;
      if (w == 0) asm volatile("bar.sync 3, 256;" ::: "memory");
      else asm volatile("bar.sync 4, 256;" ::: "memory");
      if (j + 1 < turns) {
        if (w == 0) asm volatile("bar.arrive 4, 256;" ::: "memory");
        else asm volatile("bar.arrive 3, 256;" ::: "memory");
      }
    }
  }
  __syncthreads();
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x];
}
int main() {
  float* o;
  cudaMalloc(&o, 2 * 256 * sizeof(float));
  k<0><<<2, 256>>>(o, 0);
  cudaDeviceSynchronize();
  printf("pattern 0 (no named barrier) done\n");
  k<1><<<2, 256>>>(o, 0);
  cudaDeviceSynchronize();
  printf("pattern 1 (one arrive / sync pair) done\n");
  k<2><<<2, 256>>>(o, 11);
  cudaDeviceSynchronize();
  printf("pattern 2 (11 turns) done: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
