// Does compute-sanitizer's racecheck flag a store / load pair separated by
// __syncthreads once the CTA has used a bar.arrive / bar.sync named-barrier
// pair (the pattern of the wgmma kernel's turns)? kernels/NOTES.md, v8.
//   nvcc -arch=sm_90 -O3 -o rc results/racecheck_named_barriers.cu
//   compute-sanitizer --tool racecheck ./rc   (k<false> must report nothing)
#include <cstdio>
template <bool kNamed>
__global__ void k(float* out) {
  __shared__ float s[256];
  const int w = threadIdx.x / 128;
  if (kNamed) {
    if (w == 1) asm volatile("bar.arrive 3, 256;" ::: "memory");
    else asm volatile("bar.sync 3, 256;" ::: "memory");
  }
  __syncthreads();
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[255 - threadIdx.x];
}
int main() {
  float* o; cudaMalloc(&o, 1024);
  k<false><<<2, 256>>>(o); cudaDeviceSynchronize(); printf("plain done\n");
  k<true><<<2, 256>>>(o); cudaDeviceSynchronize(); printf("named done %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
