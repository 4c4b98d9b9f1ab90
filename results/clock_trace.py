"""Writes a copy of kernels/fused_dwsep.cu whose (persistent) wgmma kernel
records %clock over one tile of two CTAs (block 5 and the middle of the grid;
the CTA's tile TILE, 3 unless --tile says otherwise, so that the pipeline is
in its steady state): for thread 0 of each warpgroup, when it enters the
tile, each of its turns' start and end, each depthwise's free-barrier wait
and end, the staging of the next tile's x^T (by turn nc's owner: start and
end) and its epilogue, plus the cycles each
turn spends in its mbarrier waits and bulk-copy issue (the copy alone: the
slot's mbarrier is armed before the wait for its wgmmas).
With --fine, also every step of each ring slot (GEMM1's) and of each
GEMM2 slot of the tile's turn 4 (threads 0 and 32). results/fused_dwsep_driver.cu built
against the copy prints the tables (kernels/NOTES.md, v11 and v12):

    python results/clock_trace.py /tmp/trace [--fine] [--tile N]
    nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -O3 -std=c++17 \\
         -I/tmp/trace -o trace results/fused_dwsep_driver.cu && ./trace 5 [B L]

The stamps cost registers (a few bytes spill) and ~45 cycles each with
--fine; the per-turn figures are for locating time, not for timing.
"""
import argparse
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (anchor in the wgmma kernel, text that replaces it); each anchor must occur
# exactly once after the kernel's namespace opens.
PATCHES = [
    ("namespace wg {\n", """namespace wg {
#define FUSED_DWSEP_CLOCK_TRACE 1
// [traced CTA][warpgroup][slot]: 0 tile entered, 1-2 staging of the next
// x^T, 3-4 epilogue, 8 + 8j.. turn
// j, 200 + j depthwise end, 256.. --fine
__device__ unsigned g_trace[2][2][512];
// [CTA][slot], %globaltimer (ns) by thread 0: 0 kernel entry, 1 + k entry of
// the CTA's k-th tile (k < kTimelineTiles), kTimelineTiles + 1 exit
constexpr int kTimelineCtas = 256, kTimelineTiles = 14;
__device__ unsigned long long g_timeline[kTimelineCtas][kTimelineTiles + 2];
__device__ __forceinline__ unsigned long long trace_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned trace_clock() {
  unsigned c;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
  return c;
}
"""),
    ("""  const int C = static_cast<int>(p.C);
""", """  const int C = static_cast<int>(p.C);
  const int trb = blockIdx.x == 5 ? 0 : (blockIdx.x == gridDim.x / 2 ? 1 : -1);
  const bool trl = trb >= 0 && threadIdx.x % kWarpgroupThreads == 0;
  unsigned* const tr = trl ? g_trace[trb][threadIdx.x / kWarpgroupThreads] : nullptr;
  unsigned tr_mbar = 0, tr_refill = 0;
  // (threads 0 and 32 of each warpgroup: the owner of turn 4 writes)
  const bool trs = FINE && trb >= 0 && (threadIdx.x % kWarpgroupThreads == 0 || threadIdx.x % kWarpgroupThreads == 32);
  unsigned* const trp = trs ? g_trace[trb][threadIdx.x % kWarpgroupThreads == 32] + 256 : nullptr;
  const int tr_tile = blockIdx.x + TILE * gridDim.x;
  unsigned long long* const tl = threadIdx.x == 0 && blockIdx.x < kTimelineCtas ? g_timeline[blockIdx.x] : nullptr;
  if (tl) tl[0] = trace_ns();
  int tl_k = 0;
"""),
    ("""    auto last_tile = [&] { return tile + static_cast<int>(gridDim.x) >= tiles(); };
""", """    auto last_tile = [&] { return tile + static_cast<int>(gridDim.x) >= tiles(); };
    const bool trt = trl && tile == tr_tile, trf = trs && tile == tr_tile;
    if (trt) tr[0] = trace_clock();
    if (tl && tl_k < kTimelineTiles) tl[1 + tl_k] = trace_ns();
    ++tl_k;
"""),
    ("""      named_sync<kTokenBarrier>(wgi, kThreads);
""", """      named_sync<kTokenBarrier>(wgi, kThreads);
      if (trt) { tr[8 + j * 8 + 0] = trace_clock(); tr_mbar = tr_refill = 0; }
"""),
    ("""      auto release = [&](const Refill& r) {
        if (r.go) bulk_copy(r.dst, r.src, W::kSlotBytes, r.bar);
""", """      auto release = [&](const Refill& r) {
        if (r.go) {
          unsigned c1 = trace_clock();
          bulk_copy(r.dst, r.src, W::kSlotBytes, r.bar);
          if (trt) tr_refill += trace_clock() - c1;
        }
"""),
    ("""        mbar_wait(bar(slot), (i / kRingSlots) & 1);
""", """        if (trf && j == 4) trp[u * 6 + 0] = trace_clock();
        unsigned c0 = trt ? trace_clock() : 0;
        mbar_wait(bar(slot), (i / kRingSlots) & 1);
        if (trt) tr_mbar += trace_clock() - c0;
        if (trf && j == 4) trp[u * 6 + 1] = trace_clock();
"""),
    ("""      auto end_g1 = [&](int u) {
        wgmma_commit();
        if (u > 0) {
          const Refill r = arm(u - 1);
          wgmma_wait<1>();
          release(r);""", """      auto end_g1 = [&](int u) {
        wgmma_commit();
        if (trf && j == 4) trp[u * 6 + 2] = trace_clock();
        if (u > 0) {
          const Refill r = arm(u - 1);
          wgmma_wait<1>();
          if (trf && j == 4) trp[u * 6 + 3] = trace_clock();
          if (trf && j == 4) trp[u * 6 + 4] = trace_clock();
          release(r);
          if (trf && j == 4) trp[u * 6 + 5] = trace_clock();"""),
    ("""        if (u < g2) {
          wgmma_fence();
#pragma unroll
          for (int h = 0; h < kG2SlotStages; ++h) {
""", """        if (u < g2) {
          if (trf && j == 4) trp[128 + u * 6 + 0] = trace_clock();
          wgmma_fence();
          if (trf && j == 4) trp[128 + u * 6 + 1] = trace_clock();
#pragma unroll
          for (int h = 0; h < kG2SlotStages; ++h) {
"""),
    ("""          wgmma_commit();
          wgmma_wait<0>();
          retire_g2(u);
""", """          wgmma_commit();
          if (trf && j == 4) trp[128 + u * 6 + 2] = trace_clock();
          wgmma_wait<0>();
          if (trf && j == 4) trp[128 + u * 6 + 3] = trace_clock();
          retire_g2(u);
          if (trf && j == 4) trp[128 + u * 6 + 4] = trace_clock();
"""),
    ("""        if (!last_tile() || j + 1 < turns.count()) named_arrive<kTokenBarrier>(1 - wgi, kThreads);
""", """        if (trt) {
          tr[8 + j * 8 + 1] = trace_clock();
          tr[8 + j * 8 + 2] = tr_mbar;
          tr[8 + j * 8 + 3] = tr_refill;
          tr[8 + j * 8 + 5] = g2 * kG2SlotStages + (has_g1 ? n1 * W::kSlotStages : 0);
        }
        if (!last_tile() || j + 1 < turns.count()) named_arrive<kTokenBarrier>(1 - wgi, kThreads);
"""),
    ("""        if (j == turns.nc && !last_tile()) {
""", """        if (j == turns.nc && !last_tile()) {
          if (trt) tr[1] = trace_clock();
"""),
    ("""          fence_proxy_async();  // read by wgmma after the token this warpgroup passes after turn nc+2
""", """          fence_proxy_async();  // read by wgmma after the token this warpgroup passes after turn nc+2
          if (trt) tr[2] = trace_clock();
"""),
    ("""        if (j >= 2) named_sync<kFreeBarrier>(wgi, kThreads);  // chunk j-2's h3 is read by both
""", """        if (trt) tr[8 + j * 8 + 6] = trace_clock();
        if (j >= 2) named_sync<kFreeBarrier>(wgi, kThreads);  // chunk j-2's h3 is read by both
        if (trt) tr[8 + j * 8 + 7] = trace_clock();
"""),
    ("""        fence_proxy_async();  // h3^T is read by wgmma after the next token barrier
      }
""", """        fence_proxy_async();  // h3^T is read by wgmma after the next token barrier
        if (trt) tr[200 + j] = trace_clock();
      }
"""),
    ("""    store_y<W>(acc, p, C, L, tile_row(tile), tile_t0(tile), (first_owner + wgi) % kWarpgroups, wq);
  }
""", """    if (trt) tr[3] = trace_clock();
    store_y<W>(acc, p, C, L, tile_row(tile), tile_t0(tile), (first_owner + wgi) % kWarpgroups, wq);
    if (trt) tr[4] = trace_clock();
  }
  if (tl) tl[kTimelineTiles + 1] = trace_ns();
"""),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--fine", action="store_true", help="also stamp every step of turn 4's ring and GEMM2 slots")
    ap.add_argument("--tile", type=int, default=3, help="which of each traced CTA's tiles to trace (from 0)")
    args = ap.parse_args()
    src = (ROOT / "kernels" / "fused_dwsep.cu").read_text()
    cut = src.index("namespace wg {\n")
    head, body = src[:cut], src[cut:]
    for anchor, text in PATCHES:
        n = body.count(anchor)
        if n != 1:
            raise SystemExit(f"clock_trace.py: the anchor below occurs {n} times in the wgmma kernel "
                             f"(the kernel changed; update PATCHES):\n{anchor}")
        body = body.replace(anchor, text.replace("FINE", "true" if args.fine else "false").replace("TILE", str(args.tile)))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "fused_dwsep.cu").write_text(head + body)
    shutil.copy(ROOT / "kernels" / "fused_dwsep.h", args.out_dir / "fused_dwsep.h")
    print(f"wrote {args.out_dir / 'fused_dwsep.cu'}")


if __name__ == "__main__":
    main()
