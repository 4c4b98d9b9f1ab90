// The driver, then a mark trace of one CTA of the 16-bit kernel (thread 0 of
// each warpgroup; the last launch): build against a copy of v29's kernel
// (the patch's target; main's kernel is v30 since) with
// results/h16_probes.patch applied (its flags: FD_NODW, FD_NOGELU,
// FD_GELU6, FD_NOFILL, FD_NOSTORE, FD_NOSTAGE, FD_NOSTG, FD_PLAINST,
// FD_NOLDX; FD_TRACE with FD_TRACE_CTA=n for the marks; kernels/NOTES.md,
// v30):
//   mkdir -p ab/p && git show a35a5e8:kernels/fused_dwsep.cu > ab/p/fused_dwsep.cu &&
//   git show a35a5e8:kernels/fused_dwsep.h > ab/p/fused_dwsep.h &&
//   (cd ab/p && patch -s fused_dwsep.cu < ../../results/h16_probes.patch) &&
//   nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -DFUSED_DWSEP_DRIVER_BF16 \
//        -DFD_TRACE -DFD_TRACE_CTA=7 -O3 -std=c++17 -Iab/p -Iresults -o trace results/h16_trace_driver.cu &&
//   ./trace 5 [B L [C E]]
// For main's kernel (v49): bash results/trace_run.sh results/h16_trace_v49.patch
// (the same mark ids where they exist, 4 past the warpgroup's own barrier
// since v47, plus 25 init_acc done and 31 the next tile's x landed).
// Prints "warpgroup mark-id clock delta" a mark: ids 1-3 a turn's entry
// (GEMM1 only, GEMM2 only, both), 4 token (v29's), 5 ring, 6 issued, 7 tail, 8
// wgmma wait, 9 released, 10 depthwise done, 20-24 store_y (entry,
// ldmatrix pass, barrier, copy-out, barrier), 30-31 the next tile's staging;
// delta: cycles since the warpgroup's previous mark.
#define main driver_main
#include "fused_dwsep_driver.cu"
#undef main
int main(int argc, char** argv) {
  driver_main(argc, argv);
  static unsigned tr[2][4096][2];
  int n[2];
  CK(cudaMemcpyFromSymbol(tr, fused_dwsep::wg::h16::g_tr, sizeof(tr)));
  CK(cudaMemcpyFromSymbol(n, fused_dwsep::wg::h16::g_trn, sizeof(n)));
  const unsigned t0 = std::min(tr[0][0][1], tr[1][0][1]);
  for (int w = 0; w < 2; ++w) {
    printf("WG %d marks %d\n", w, n[w]);
    for (int k = 0; k < n[w] && k < 4096; ++k)
      printf("%d %d %u %d\n", w, tr[w][k][0], tr[w][k][1] - t0, k ? (int)(tr[w][k][1] - tr[w][k - 1][1]) : 0);
  }
  return 0;
}
