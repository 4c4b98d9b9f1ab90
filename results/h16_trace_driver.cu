// The driver, then CTA 0's turn trace of the 16-bit kernel: build against a
// copy of kernels/ with results/h16_probes.patch applied, with -DFD_H16_TRACE
// (the patch's other flags: FD_ABL_NODW, FD_ABL_NOGELU, FD_ABL_TAPCONST,
// FD_V_SPLIT, FD_V_ONEDW, FD_V_HLOOP; kernels/NOTES.md, v28 on a GPU):
//   mkdir -p ab/p && cp kernels/fused_dwsep.cu kernels/fused_dwsep.h ab/p &&
//   (cd ab/p && patch -s fused_dwsep.cu < ../../results/h16_probes.patch) &&
//   nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A \
//        -DFUSED_DWSEP_DRIVER_BF16 -DFD_H16_TRACE -O3 -std=c++17 -Iab/p -o trace results/h16_trace_driver.cu &&
//   ./trace 3 [B L [C E]]
#define main driver_main
#include "fused_dwsep_driver.cu"
#undef main
int main(int argc, char** argv) {
  driver_main(argc, argv);
  static unsigned tr[2][2048];
  CK(cudaMemcpyFromSymbol(tr, fused_dwsep::wg::h16::g_h16_trace, sizeof(tr)));
  const unsigned t0 = std::min(tr[0][0], tr[1][0]);
  printf("turn wg: entry sync+ full+ issue+ tail+ wait+ release+ after+ (cycles from the previous mark; entry from the CTA's first)\n");
  for (int k = 0; k < 2048 / 8; ++k)
    for (int w = 0; w < 2; ++w) {
      const unsigned* m = tr[w] + 8 * k;
      if (m[0] == 0 || k > 40) continue;
      printf("%3d %d: %8d", k, w, (int)(m[0] - t0));
      for (int i = 1; i < 8; ++i) printf(" %6d", m[i] ? (int)(m[i] - m[i - 1]) : -1);
      printf("\n");
    }
  return 0;
}
