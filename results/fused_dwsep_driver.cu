// Standalone timing of launch() (random data, median of CUDA-event timings
// over back-to-back launches; no torch), at the headline shape, B x 256 x
// 512 x L or B x C x E x L. Prints a hash of y's bits, so that variants of the kernel can be
// checked for bitwise-equal outputs (kernels/NOTES.md). Built against the
// copy results/clock_trace.py writes, it also prints that copy's clock trace.
//   nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -O3 -std=c++17 \
//        -Ikernels -o driver results/fused_dwsep_driver.cu && ./driver 40 [B L [C E]]
// -DFUSED_DWSEP_DRIVER_EXACT times the exact mode (allow_tf32 off) instead of TF32;
// -DFUSED_DWSEP_DRIVER_BF16 x, the weights and y in bfloat16 (the 16-bit
// kernel where it serves the shape); -DFUSED_DWSEP_DRIVER_FP16 the same in
// float16.
#include "fused_dwsep.cu"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#if defined(FUSED_DWSEP_DRIVER_BF16)
using Elt = __nv_bfloat16;
#elif defined(FUSED_DWSEP_DRIVER_FP16)
using Elt = __half;
#else
using Elt = float;
#endif
static Elt* dev_rand(size_t n, float scale, unsigned seed) {
  std::vector<Elt> h(n); unsigned s = seed;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = Elt(scale * ((s >> 8) * (1.0f / 16777216.0f) - 0.5f)); }
  Elt* d; CK(cudaMalloc(&d, n * sizeof(Elt))); CK(cudaMemcpy(d, h.data(), n * sizeof(Elt), cudaMemcpyHostToDevice)); return d;
}

#if defined(FUSED_DWSEP_CLOCK_TRACE)
// The tables of results/clock_trace.py's copy, for the traced tile of each
// traced CTA: per warpgroup when it entered the tile, its staging of the next
// tile's x^T and its epilogue (cycles from the first warpgroup's entry); per
// turn its owner, start, length, stages, and the cycles its elected thread
// spent in mbarrier waits and bulk-copy issue; per chunk
// the owner's free-barrier wait and depthwise; with --fine, each ring slot
// and each GEMM2 slot of turn 4.
static void print_trace(int64_t grid) {
  static unsigned tr[2][2][512];
  CK(cudaMemcpyFromSymbol(tr, fused_dwsep::wg::g_trace, sizeof(tr)));
  for (int b = 0; b < 2; ++b) {
    const unsigned base = std::min(tr[b][0][0], tr[b][1][0]);
    auto at = [&](unsigned v) { return static_cast<long long>(static_cast<int>(v - base)); };
    printf("CTA %lld:\n", b ? (long long)(grid / 2) : 5LL);
    for (int w = 0; w < 2; ++w) {
      const unsigned* t = tr[b][w];
      printf("  wg %d: entered %lld", w, at(t[0]));
      if (t[1] != 0) printf(", staged next x^T %lld .. %lld", at(t[1]), at(t[2]));
      printf(", epilogue %lld .. %lld\n", at(t[3]), at(t[4]));
    }
    printf("  turn wg   start  cycles stages cyc/stage  mbar refill | free-wait depthwise\n");
    long long cycles = 0, stages = 0;
    for (int j = 0; 8 + j * 8 + 8 <= 200; ++j) {
      const int w = tr[b][0][8 + j * 8] != 0 ? 0 : 1;
      const unsigned* t = tr[b][w] + 8 + j * 8;
      if (t[0] == 0) break;
      const int len = static_cast<int>(t[1] - t[0]);
      cycles += len; stages += t[5];
      printf("  %4d %2d %7lld %7d %6u %9.0f %5u %6u", j, w, at(t[0]), len, t[5], t[5] ? (double)len / t[5] : 0.0,
             t[2], t[3]);
      if (tr[b][w][200 + j] != 0)
        printf(" | %9d %9d", static_cast<int>(t[7] - t[6]), static_cast<int>(tr[b][w][200 + j] - t[7]));
      printf("\n");
    }
    printf("  turns: %lld cycles, %lld stages, %.0f a stage\n", cycles, stages, (double)cycles / stages);
    for (int w = 0; w < 2; ++w) {
      const unsigned* s = tr[b][w] + 256;
      if (s[0] == 0) continue;
      printf("  turn 4, thread %d of its warpgroup, each ring slot (GEMM1): mbar wait, issue, wait<1>, to release, refill, "
             "to next slot\n", w * 32);
      for (int u = 0; u < 16 && s[u * 6] != 0; ++u)
        printf("    %2d: %5d %5d %5d %5d %5d %5d\n", u, (int)(s[u * 6 + 1] - s[u * 6]), (int)(s[u * 6 + 2] - s[u * 6 + 1]),
               u ? (int)(s[u * 6 + 3] - s[u * 6 + 2]) : 0, u ? (int)(s[u * 6 + 4] - s[u * 6 + 3]) : 0,
               u ? (int)(s[u * 6 + 5] - s[u * 6 + 4]) : 0, s[u * 6 + 6] ? (int)(s[u * 6 + 6] - s[u * 6]) : 0);
    }
    for (int w = 0; w < 2; ++w) {
      const unsigned* s = tr[b][w] + 384;  // GEMM2's slots (head tile: A from registers)
      if (s[0] == 0) continue;
      printf("  turn 4, thread %d of its warpgroup, each GEMM2 slot: fence wait, issue, wait<0>, next slot's loads, "
             "to next slot\n", w * 32);
      for (int u = 0; u < 16 && s[u * 6] != 0; ++u)
        printf("    %2d: %5d %5d %5d %5d %5d\n", u, (int)(s[u * 6 + 1] - s[u * 6]), (int)(s[u * 6 + 2] - s[u * 6 + 1]),
               (int)(s[u * 6 + 3] - s[u * 6 + 2]), (int)(s[u * 6 + 4] - s[u * 6 + 3]),
               s[u * 6 + 6] ? (int)(s[u * 6 + 6] - s[u * 6]) : 0);
    }
  }
}
// The whole launch by %globaltimer: when each CTA entered the kernel, each of
// its tiles and left, relative to the first CTA's entry (us); the spread of
// entries, the tiles' periods and the exits say whether the time a launch
// takes is its tiles or its start and end.
static void print_timeline(int64_t grid, int64_t tiles) {
  using fused_dwsep::wg::kTimelineTiles;
  static unsigned long long tl[fused_dwsep::wg::kTimelineCtas][kTimelineTiles + 2];
  CK(cudaMemcpyFromSymbol(tl, fused_dwsep::wg::g_timeline, sizeof(tl)));
  const int n = static_cast<int>(std::min<int64_t>(grid, fused_dwsep::wg::kTimelineCtas));
  unsigned long long t0 = ~0ull;
  for (int c = 0; c < n; ++c) t0 = std::min(t0, tl[c][0]);
  auto us = [&](unsigned long long v) { return (v - t0) * 1e-3; };
  double entry_max = 0, exit_min = 1e30, exit_max = 0, period_sum = 0, first_sum = 0, last_sum = 0;
  long long periods = 0;
  for (int c = 0; c < n; ++c) {
    const int k_count = static_cast<int>(std::min<int64_t>((tiles - c + grid - 1) / grid, kTimelineTiles));
    entry_max = std::max(entry_max, us(tl[c][0]));
    exit_min = std::min(exit_min, us(tl[c][kTimelineTiles + 1]));
    exit_max = std::max(exit_max, us(tl[c][kTimelineTiles + 1]));
    first_sum += us(tl[c][1]) - us(tl[c][0]);
    for (int k = 1; k < k_count; ++k, ++periods) period_sum += us(tl[c][1 + k]) - us(tl[c][k]);
    last_sum += us(tl[c][kTimelineTiles + 1]) - us(tl[c][k_count]);
  }
  printf("timeline (us from the first CTA's entry, %d CTAs): entries up to %.1f; entry to first tile %.1f (mean); "
         "tile period %.2f (mean of %lld); last tile %.1f (mean); exits %.1f .. %.1f\n",
         n, entry_max, first_sum / n, period_sum / periods, periods, last_sum / n, exit_min, exit_max);
  for (int c : {0, 5, n / 2, n - 1}) {
    printf("  CTA %3d: entry %.1f tiles", c, us(tl[c][0]));
    for (int k = 0; k < kTimelineTiles && tl[c][1 + k] != 0; ++k) printf(" %.1f", us(tl[c][1 + k]));
    printf(" exit %.1f\n", us(tl[c][kTimelineTiles + 1]));
  }
}
#endif

int main(int argc, char** argv) {
  int64_t B = 32, C = 256, E = 512, L = 4096, K = 9;
  const int reps = argc > 1 ? atoi(argv[1]) : 30;
  if (argc > 3) { B = atoll(argv[2]); L = atoll(argv[3]); }
  if (argc > 5) { C = atoll(argv[4]); E = atoll(argv[5]); }
  fused_dwsep::Params p{};
  p.B = B; p.C = C; p.E = E; p.L = L; p.K = K; p.tf32 = true;
#if defined(FUSED_DWSEP_DRIVER_EXACT)
  p.tf32 = false;  // the exact mode (allow_tf32 off)
#endif
#if defined(FUSED_DWSEP_DRIVER_BF16)
  p.dtype = fused_dwsep::DType::kBFloat16;
#elif defined(FUSED_DWSEP_DRIVER_FP16)
  p.dtype = fused_dwsep::DType::kFloat16;
#endif
  p.x = dev_rand(B * C * L, 2.0f, 1); p.w1 = dev_rand(E * C, 0.12f, 2); p.b1 = dev_rand(E, 0.1f, 3);
  p.wd = dev_rand(E * K, 0.6f, 4); p.bd = dev_rand(E, 0.1f, 5); p.w2 = dev_rand(C * E, 0.09f, 6); p.b2 = dev_rand(C, 0.1f, 7);
  Elt* y; CK(cudaMalloc(&y, B * C * L * sizeof(Elt))); p.y = y;
  CK(cudaMemset(y, 0xff, B * C * L * sizeof(Elt)));  // NaN: an element never written changes the hash
  size_t ws = fused_dwsep::workspace_floats(p, 0); float* w; CK(cudaMalloc(&w, ws * 4)); p.workspace = w;
  printf("%lldx%lldx%lldx%lld: path %d ws %zu\n", (long long)B, (long long)C, (long long)E, (long long)L,
         (int)fused_dwsep::select_path(p, 0), ws);
  for (int i = 0; i < 3; ++i) CK(fused_dwsep::launch(p, 0));
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a); CK(fused_dwsep::launch(p, 0)); cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  // FNV-1a over y's bits: equal hashes mean bitwise-equal outputs.
  std::vector<Elt> hy(B * C * L);
  CK(cudaMemcpy(hy.data(), y, hy.size() * sizeof(Elt), cudaMemcpyDeviceToHost));
  // and y's sum and sum of magnitudes (double): where a variant's y differs
  // from base's by design (results/ab_winner.py's MAY_DIFFER), last-bit
  // changes move them by a tiny fraction of |y|'s sum, a wrong kernel by far more
  unsigned long long hash = 1469598103934665603ull;
  double sum = 0.0, abs_sum = 0.0;
  for (const Elt& v : hy) {
    unsigned u = 0; memcpy(&u, &v, sizeof(Elt)); hash = (hash ^ u) * 1099511628211ull;
    const double f = static_cast<float>(v); sum += f; abs_sum += f < 0 ? -f : f;
  }
  printf("median %.4f ms min %.4f y hash %016llx sum %.9e abs %.9e\n", t[t.size() / 2], t[0], hash, sum, abs_sum);
#if defined(FUSED_DWSEP_CLOCK_TRACE)
  using fused_dwsep::wg::WgHead;
  using fused_dwsep::wg::WgWide;
  const int64_t tiles = B * fused_dwsep::ceil_div(L, C <= WgHead::kCMax ? WgHead::kTileT : WgWide::kTileT);
  print_trace(std::min<int64_t>(tiles, fused_dwsep::device_sm_count(0)));  // launch()'s grid
  print_timeline(std::min<int64_t>(tiles, fused_dwsep::device_sm_count(0)), tiles);
#endif
  return 0;
}
