// fused_dwsep.cu: one fused CUDA kernel for a 1D inverted-residual block.
//
//   h1 = W1 x + b1                 W1 [E, C]   pointwise expand
//   h2 = dwconv_K(h1) + bd         wd [E, K]   depthwise, zero padding K//2 on h1
//   h3 = gelu(h2)                              exact (erf) GELU
//   y  = W2 h3 + b2 + x            W2 [C, E]   pointwise project back + residual
//
// x and y are [B, C, L] contiguous, fp32, bf16 or fp16 (the weights of the same
// dtype; see "element types"). The intermediates h1..h3 never leave
// the chip: each CTA owns one batch row and a tile of positions, walks E in
// chunks, and keeps the C x T output accumulator in registers.
//
// Two kernels, one gate (select_path):
// * tensor-core kernel (C <= 512, odd K <= 9, sm_80+): mma.sync m16n8k8 TF32.
//   Per CTA: T = 128 positions for C <= 256 (64 or 32 when B * L is too
//   small to fill the GPU; 64 for 256 < C <= 512: see Tiling). The x tile with a 4-column halo each side
//   (136 columns) is staged once in shared memory. For each chunk of 64
//   expanded channels: GEMM1 [64 x C] x [C x 136] -> h1 (shared, + b1, and
//   forced to 0 at positions outside [0, L) so padding contributes 0, not b1);
//   depthwise + bd + GELU -> h3 [64 x 128], in place over h1; GEMM2
//   [C x 64] x [64 x 128] accumulates into registers. The epilogue adds b2 and x and
//   writes y once. Weights are packed per call into mma A-fragment order
//   (zero-padded, pre-rounded) so each warp loads them with one 16-byte load.
// * wgmma kernel (compute capability 9.0 built as sm_90a; C <= 384 in the
//   TF32 mode, C <= 256 in the exact mode): T = 128 for C <= 256 (the
//   mma.sync kernel's C256 tile), 64 for 256 < C <= 384 (WgTile), with
//   Hopper's warpgroup mma, activations read by the tensor cores from shared
//   memory, W1 streamed by bulk copies, and the two warpgroups taking turns
//   on the tensor cores so that one runs the depthwise while the other runs
//   GEMMs; persistent (one CTA per SM walks its tiles, y written from the
//   accumulators; see its section below).
// Shapes outside the gate (C > 512, K > 9, GPUs before sm_80) have no kernel
// here: fused_dwsep.py runs them with PyTorch's own convolutions. (A CUDA-core
// version of this fusion measured 2-236x slower than those; kernels/NOTES.md.)
//
// Numerics (Params::tf32): true rounds both operands of both GEMMs to TF32
// with round-to-nearest (cvt.rna) and accumulates in fp32, matching cuDNN
// under allow_tf32; false is fp32-accurate, three products on the tensor
// cores (a*b ~ ah*bh + ah*bl + al*bh with a = ah + al): TF32 pairs (3xTF32)
// in the mma.sync kernel, scaled fp16 pairs in the wgmma kernel (see "the
// exact mode" there). The depthwise and GELU always run in fp32. bf16 and
// fp16 run the TF32 path (their values are TF32 values: exact) with h3
// rounded to the dtype.
//
// Build (no torch headers needed): nvcc -gencode=arch=compute_90a,code=sm_90a
// -DFUSED_DWSEP_SM90A -O3 -c fused_dwsep.cu for an H100/H200 (with the wgmma
// kernel); nvcc -arch=sm_XY -O3 -c fused_dwsep.cu for other GPUs.

#include "fused_dwsep.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

namespace fused_dwsep {
namespace {

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

constexpr int kWarpSize = 32;
constexpr int kPackThreads = 256;  // threads per CTA of the weight-packing kernels

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// fp32 -> TF32 with round-to-nearest (ties away), returned as fp32 bits with
// the low 13 mantissa bits cleared. Passing raw fp32 bits to a TF32 mma would
// truncate instead, which drifts from cuDNN (DESIGN.md section 3).
__device__ __forceinline__ uint32_t tf32_bits(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ float tf32_round(float v) { return __uint_as_float(tf32_bits(v)); }
// The same rounding for a value only a TF32 wgmma reads: such a wgmma uses
// the top 19 bits of each 32-bit operand and ignores the low 13, so adding
// half a TF32 ulp is the whole rounding, one instruction fewer than cvt.rna
// (its mask). Infinities and NaNs are left as they are, as cvt.rna leaves
// them. (The wgmma kernel's y is bitwise equal either way, H200.)
__device__ __forceinline__ float tf32_operand(float v) {
  constexpr uint32_t kHalfTf32Ulp = 1u << 12;
  const uint32_t b = __float_as_uint(v);
  return __uint_as_float(fabsf(v) < INFINITY ? b + kHalfTf32Ulp : b);
}

// ---- element types -------------------------------------------------------------
// x, y and the weights are fp32, bf16 or fp16 (Params::dtype); every kernel
// is templated on that type, In. bf16 and fp16 values are TF32 values (8 and
// 11 significant bits, exponents inside fp32's), so the TF32 tensor-core path
// multiplies them exactly, and the 16-bit kernels are the TF32 ones with other
// loads and stores and h3 rounded to In (the half-precision numerics: h1 and
// h2 in fp32, h3 rounded to the dtype before GEMM2, y rounded once).
template <class In>
struct Elem;
template <>
struct Elem<float> {
  __device__ __forceinline__ static float to_float(float v) { return v; }
  __device__ __forceinline__ static float from_float(float v) { return v; }
  // h3 as GEMM2 reads it: rounded to TF32 (mma.sync), or as a TF32 wgmma's operand
  __device__ __forceinline__ static float h3(float v) { return tf32_round(v); }
  __device__ __forceinline__ static float h3_operand(float v) { return tf32_operand(v); }
};
// bf16 and fp16: h3 rounded to the type itself (round to nearest even), for
// either GEMM2; the specialisations below add the conversions.
template <class In>
struct Elem16 {
  __device__ __forceinline__ static float h3(float v) { return Elem<In>::to_float(Elem<In>::from_float(v)); }
  __device__ __forceinline__ static float h3_operand(float v) { return h3(v); }
};
template <>
struct Elem<__nv_bfloat16> : Elem16<__nv_bfloat16> {
  __device__ __forceinline__ static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ __forceinline__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Elem<__half> : Elem16<__half> {
  __device__ __forceinline__ static float to_float(__half v) { return __half2float(v); }
  __device__ __forceinline__ static __half from_float(float v) { return __float2half_rn(v); }
};
// The exact mode's h3: unrounded (it splits h3 into fp16 pairs itself).
struct Unrounded {
  __device__ __forceinline__ static float h3_operand(float v) { return v; }
};
template <class In>
__device__ __forceinline__ float ldg_f(const In* p) {
  return Elem<In>::to_float(__ldg(p));
}
// Params' tensors as In (x .. b2; y through out_ptr).
template <class In>
__device__ __forceinline__ const In* in_ptr(const void* p) {
  return static_cast<const In*>(p);
}
template <class In>
__device__ __forceinline__ In* out_ptr(void* p) {
  return static_cast<In*>(p);
}
// Four consecutive values at p (16-byte aligned for fp32, 8-byte for 16 bits).
__device__ __forceinline__ float4 ldg4(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
template <class In>
__device__ __forceinline__ float4 ldg4(const In* p) {
  const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
  const In* v = reinterpret_cast<const In*>(&u);
  return make_float4(Elem<In>::to_float(v[0]), Elem<In>::to_float(v[1]), Elem<In>::to_float(v[2]),
                     Elem<In>::to_float(v[3]));
}
__device__ __forceinline__ void stcs4(float* p, float4 v) { __stcs(reinterpret_cast<float4*>(p), v); }
template <class In>
__device__ __forceinline__ void stcs4(In* p, float4 v) {
  In h[4] = {Elem<In>::from_float(v.x), Elem<In>::from_float(v.y), Elem<In>::from_float(v.z),
             Elem<In>::from_float(v.w)};
  __stcs(reinterpret_cast<uint2*>(p), *reinterpret_cast<const uint2*>(h));
}
// Two consecutive values (8-byte aligned for fp32, 4-byte for 16 bits), and one.
__device__ __forceinline__ void stcs2(float* p, float a, float b) {
  __stcs(reinterpret_cast<float2*>(p), make_float2(a, b));
}
template <class In>
__device__ __forceinline__ void stcs2(In* p, float a, float b) {
  In h[2] = {Elem<In>::from_float(a), Elem<In>::from_float(b)};
  __stcs(reinterpret_cast<unsigned*>(p), *reinterpret_cast<const unsigned*>(h));
}
template <class In>
__device__ __forceinline__ void stcs1(In* p, float a) {
  if constexpr (std::is_same_v<In, float>) {
    __stcs(p, a);
  } else {
    const In h = Elem<In>::from_float(a);
    __stcs(reinterpret_cast<unsigned short*>(p), *reinterpret_cast<const unsigned short*>(&h));
  }
}

// Exact GELU, v * Phi(v), from w = v / 2 (the depthwise records hold half
// the taps and bias, so the depthwise sum comes out halved at no cost; see
// pack_taps). Through erfc, so that neither tail cancels:
//   gelu(v) = max(v, 0) - (|v| / 2) erfc(u) = (w + |w|) - |w| erfc(u),
//   u = |v| / sqrt(2) = sqrt(2) |w|,
// with erfc(u) = 2^P(a), a = |w|, P(a) ~ log2(erfc(u)) = -u^2 log2(e) +
// log2(erfcx(u)): a degree-10 polynomial in a on [0, 2 sqrt(2)] (u <= 4),
// evaluated by one Horner chain, fit by Lawson-weighted least squares
// (results/gelu_fit.py, which also measures it). The Gaussian's -u^2 log2(e)
// is P's a^2 term, so it costs no v^2 of its own. a is clamped at 2 sqrt(2):
// beyond it erfc(u) < 1.6e-8, and the clamped a erfc(4) < 4.4e-8 is the
// result's absolute error there (for v > 0 below half an ulp of v; for
// v < 0 as much as the erff-based form's, which cancels to 0 there).
// Against float64: <= 2.4e-7 absolute everywhere; for v >= 2, where h3 is
// large and one TF32 rounding decision that goes the other way shows in y,
// 0.25 ulp mean (erff-based 0.5 v (1 + erf): 0.34); for -4 <= v < -1 at most
// 22 ulp (erff-based: 4000, from 1 + erf cancelling); near 0 at most 8 ulp
// (erff-based: 2). One MUFU.EX2 and 13 other instructions against ~30 for
// erff; each instruction fewer was worth ~0.5% of the headline after v19
// (kernels/NOTES.md, v20-v22).
// No branch and no predicate: the depthwise that calls it is latency-bound
// (one warp per scheduler in the wgmma kernel), and with a select on v >= 0
// ptxas evaluated the GELUs one after another; without it, it interleaves
// them (kernels/NOTES.md, v10).
constexpr float kGeluHalfMax = 2.82842712474619009760f;  // 2 sqrt(2): u = 4
// (w + |w|) - a erfc(u) with erfc(u) = 2^p: the GELUs' common end.
__device__ __forceinline__ float gelu_finish(float w, float a, float p) {
  // MUFU.EX2; P >= -27, far from ex2's flush to zero below 2^-126.
  float erfc_u;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(erfc_u) : "f"(p));
  // w + |w| is max(v, 0) exactly (w = v / 2 exactly: the halving is a power
  // of two), except NaN for v = -inf: gelu(-inf) = -inf * 0 = NaN and
  // gelu(+inf) = +inf, as PyTorch's; a NaN v propagates.
  return fmaf(-a, erfc_u, w + fabsf(w));
}
__device__ __forceinline__ float gelu_from_half(float w) {
  const float a = fminf(fabsf(w), kGeluHalfMax);  // a NaN w gives kGeluHalfMax here
  float p = -1.624368269e-05f;
  p = fmaf(p, a, 2.620319137e-04f);
  p = fmaf(p, a, -1.808581757e-03f);
  p = fmaf(p, a, 6.716968026e-03f);
  p = fmaf(p, a, -1.228504907e-02f);
  p = fmaf(p, a, -6.243416574e-03f);
  p = fmaf(p, a, 1.152959764e-01f);
  p = fmaf(p, a, -4.210792482e-01f);
  p = fmaf(p, a, -1.836595178e+00f);
  p = fmaf(p, a, -2.302228689e+00f);
  p = fmaf(p, a, 2.319477801e-07f);
  return gelu_finish(w, a, p);
}
// The 16-bit kernel's GELU: the same form with a degree-6 P (results/gelu_fit.py
// 6), 4 FMAs fewer. Its error is ~500x the degree-10 form's in float32 ulps,
// but the result is rounded to bf16 or fp16 next (h3): at most 0.064 of an
// fp16 ulp and 0.008 of a bf16 ulp on [-4, 4) (0.016 / 0.002 mean), so h3
// changes by at most one ulp, rarely. The depthwise and GELU are ~40% of
// the kernel's issue slots; this measured -7% at the headline in bf16
// (kernels/NOTES.md, v30). For bf16 (8 bits of mantissa against fp16's
// 11) degree 5 (results/gelu_fit.py 5) is as far below h3's half ulp as
// degree 6 is for fp16: at most 0.072 of a bf16 ulp (0.018 mean), one FMA
// fewer (kernels/NOTES.md, v49).
template <class In>
__device__ __forceinline__ float gelu16_from_half(float w) {
  const float a = fminf(fabsf(w), kGeluHalfMax);
  float p;
  if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    p = -7.130337879e-03f;
    p = fmaf(p, a, 7.585030049e-02f);
    p = fmaf(p, a, -3.523836136e-01f);
    p = fmaf(p, a, -1.882488489e+00f);
    p = fmaf(p, a, -2.291425228e+00f);
    p = fmaf(p, a, -4.085583787e-04f);
  } else {
    p = 1.608879422e-03f;
    p = fmaf(p, a, -2.065367438e-02f);
    p = fmaf(p, a, 1.183937117e-01f);
    p = fmaf(p, a, -4.139140248e-01f);
    p = fmaf(p, a, -1.842396736e+00f);
    p = fmaf(p, a, -2.300939798e+00f);
    p = fmaf(p, a, -4.384846034e-05f);
  }
  return gelu_finish(w, a, p);
}

// D += A * B for one m16n8k8 TF32 tile. Fragment ownership (g = lane / 4,
// q = lane % 4): A a0 (g, q), a1 (g + 8, q), a2 (g, q + 4), a3 (g + 8, q + 4);
// B b0 (k = q, n = g), b1 (k = q + 4, n = g); D d0,d1 (g, 2q..2q+1),
// d2,d3 (g + 8, 2q..2q+1).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ void to_bits(uint32_t (&a)[4], const float4& v) {
  a[0] = __float_as_uint(v.x);
  a[1] = __float_as_uint(v.y);
  a[2] = __float_as_uint(v.z);
  a[3] = __float_as_uint(v.w);
}

// cp.async: global -> shared without a register round trip (sm_80+).
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(src));
}
// Copies 4 bytes to the shared-memory address dst, or writes zero when
// !valid (src is then not read).
__device__ __forceinline__ void cp_async_4_zfill_shared(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_4_zfill(void* dst, const void* src, bool valid) {
  cp_async_4_zfill_shared(smem_u32(dst), src, valid);
}
// The same for 16 bytes (both addresses 16-byte aligned), through L2 only.
__device__ __forceinline__ void cp_async_16_zfill_shared(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
// The same for 8 bytes (both addresses 8-byte aligned).
__device__ __forceinline__ void cp_async_8_zfill_shared(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 8 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's newest groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// A B-fragment element as the mma takes it. kSplit: raw fp32 split into a
// TF32 high part and a TF32 remainder; otherwise already TF32-rounded.
template <bool kSplit>
struct BElem {
  uint32_t hi, lo;
  __device__ __forceinline__ explicit BElem(float v) {
    if constexpr (kSplit) {
      hi = tf32_bits(v);
      lo = tf32_bits(v - __uint_as_float(hi));
    } else {
      hi = __float_as_uint(v);
      lo = 0;
    }
  }
};

// acc += a * b on TF32 tensor cores. kSplit: three products give fp32
// accuracy (the small terms first); otherwise one TF32 product.
template <bool kSplit>
__device__ __forceinline__ void mma_step(float (&acc)[4], const uint32_t (&a_hi)[4],
                                         const uint32_t (&a_lo)[4], const BElem<kSplit>& b0,
                                         const BElem<kSplit>& b1) {
  if constexpr (kSplit) {
    mma_tf32(acc, a_lo, b0.hi, b1.hi);
    mma_tf32(acc, a_hi, b0.lo, b1.lo);
  }
  mma_tf32(acc, a_hi, b0.hi, b1.hi);
}

// ---------------------------------------------------------------------------
// Tensor-core kernel: tile constants
// ---------------------------------------------------------------------------

namespace tc {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 8;

constexpr int kMaxHalf = 4;                    // largest K / 2 served (K <= 9)
constexpr int kMaxK = 2 * kMaxHalf + 1;
constexpr int kEChunk = 64;                    // expanded channels per chunk
constexpr int kVec = 4;                        // floats per 16-byte copy

// GEMM1 (h1 = W1 x): 4 warps along M (one m16 tile each of the 64-row chunk)
// x 2 warps along N (the h1 columns; see Tiling).
constexpr int kG1WarpsM = kEChunk / kMmaM;
constexpr int kG1WarpsN = kWarps / kG1WarpsM;
static_assert(kG1WarpsM * kG1WarpsN == kWarps && kG1WarpsN == 2, "GEMM1 warp grid covers the CTA");
constexpr int kG2KSteps = kEChunk / kMmaK;

// Depthwise: each warp produces 8 rows of h3; each lane 4 consecutive
// positions of a row, from a 12-column window read as three 16-byte loads.
constexpr int kDwRowsPerWarp = kEChunk / kWarps;
constexpr int kDwWindow = kVec + kMaxK - 1;
static_assert(kDwRowsPerWarp * kWarps == kEChunk, "depthwise rows split evenly");
static_assert(kDwWindow % kVec == 0, "windows are whole 16-byte loads");
// Packed depthwise record per channel e: kMaxK taps, bd, the b1 of channel
// e + kEChunk (the 16-bit kernel's, see pack_taps), padding to 16 bytes.
constexpr int kTapBias = kMaxK;
constexpr int kTapNextB1 = kTapBias + 1;
constexpr int kTapRecord = 12;
static_assert(kTapBias == kMaxK && kTapNextB1 < kTapRecord && kTapRecord % kVec == 0,
              "record holds the taps, then bias, then the next chunk's b1");

// The tilings of the tensor-core kernel. The whole x tile (every input
// channel, T positions plus the halo) lives in shared memory for GEMM1, so
// the largest C served and the tile length T trade against each other:
//   C256: C <= 256, T = 128 (the headline shape; also the wgmma kernel's).
//   C256T64, C256T32: C <= 256 with shorter tiles, for problems whose B * L
//   gives fewer 128-position tiles than the GPU has SMs (choose_c256_tile).
//   C384, C512: T = 64 (more halo per position: 72 h1 columns per 64). GEMM2
//   gives each warp kCMax / 8 rows, so a C of 320 on C512 would leave 3 of 8
//   warps idle in GEMM2: C384 was 14-17% faster at C = 320 and 384 (H200).
// Weight A fragments stream from L2 through a per-thread ring of kRingSlots
// 16-byte slots in shared memory (cp.async, [slot][thread] so a warp's reads
// are conflict-free). Each thread reads back only what it copied, so the ring
// needs no barriers; it is deep enough to cover L2 latency.
template <int kCMax_, int kTileT_, int kRingSlots_>
struct Tiling {
  static constexpr int kCMax = kCMax_;      // largest C served
  static constexpr int kTileT = kTileT_;    // output positions per CTA
  static constexpr int kRingSlots = kRingSlots_;
  static constexpr int kNX = kTileT + 2 * kMaxHalf;  // h1 columns: tile plus halo

  // Shared-memory row strides (floats). B fragments read rows k = q and q + 4
  // at column n = g: a stride that is 8 (mod 32) puts the 32 lanes on 32
  // banks. h holds h1 for the chunk, then h3 in place (the depthwise is per
  // channel).
  static constexpr int kXStride = kNX;
  static constexpr int kHStride = kNX;

  // GEMM1: the n8 column tiles split between the two N halves, e.g. 17 tiles
  // as 0..8 and 8..16: both halves compute the middle tile and only the first
  // stores it, which keeps the inner loop free of branches (a branch around
  // each mma serialises it).
  static constexpr int kG1NTiles = kNX / kMmaN;
  static constexpr int kG1NTilesPerWarp = (kG1NTiles + kG1WarpsN - 1) / kG1WarpsN;
  static constexpr int kG1NStride = kG1NTiles - kG1NTilesPerWarp;  // first tile of the second half

  // GEMM2 (acc += W2 h3): each warp owns kCMax / 8 output channels over all
  // T positions: kCMax * T / 256 accumulator registers per thread (128 for
  // C256 and C512).
  static constexpr int kG2RowsPerWarp = kCMax / kWarps;
  static constexpr int kG2MTiles = kG2RowsPerWarp / kMmaM;
  static constexpr int kG2NTiles = kTileT / kMmaN;

  // Depthwise: kTileT / 4 lanes cover a row, so a warp does 1 (T = 128),
  // 2 (T = 64) or 4 (T = 32) rows per pass.
  static constexpr int kDwLanesPerRow = kTileT / kVec;
  static constexpr int kDwRowsPerPass = kWarpSize / kDwLanesPerRow;

  static constexpr int kSmemFloats = kCMax * kXStride + kEChunk * kHStride + kRingSlots * kThreads * kVec;
  static constexpr size_t kSmemBytes = kSmemFloats * sizeof(float);

  // Ring stages: a k-step takes one slot per m16 tile, twice with the
  // (hi, lo) split.
  __host__ __device__ static constexpr int g1_stages(bool split) { return kRingSlots / (split ? 2 : 1); }
  __host__ __device__ static constexpr int g2_slots_per_step(bool split) { return kG2MTiles * (split ? 2 : 1); }
  __host__ __device__ static constexpr int g2_stages(bool split) { return kRingSlots / g2_slots_per_step(split); }
};

template <class S>
constexpr bool tiling_ok() {
  static_assert(S::kXStride % 32 == 8 && S::kHStride % 32 == 8,
                "B-fragment rows must be 8 (mod 32) floats apart to avoid bank conflicts");
  static_assert(S::kNX % kMmaN == 0 && S::kTileT % kMmaN == 0, "tiles are whole n8 columns");
  static_assert(S::kNX % kVec == 0 && S::kXStride % kVec == 0 && kMaxHalf % kVec == 0,
                "x rows stage as aligned 16-byte pieces");
  static_assert(S::kG1NStride <= S::kG1NTilesPerWarp, "the two halves cover every tile");
  static_assert(S::kG2MTiles * kMmaM * kWarps == S::kCMax, "GEMM2 warps cover kCMax rows");
  static_assert(S::kDwLanesPerRow * S::kDwRowsPerPass == kWarpSize &&
                    kDwRowsPerWarp % S::kDwRowsPerPass == 0,
                "depthwise rows tile the warp");
  static_assert(S::g1_stages(true) >= 2 && S::g2_stages(true) >= 2, "the ring must double-buffer");
  static_assert(S::kSmemBytes <= 227 * 1024, "fits one CTA per SM on sm_90");
  return true;
}

using C256 = Tiling<256, 128, 14>;
using C256T64 = Tiling<256, 64, 16>;  // C <= 256 on grids too small to fill the GPU
using C256T32 = Tiling<256, 32, 16>;  // (see choose_c256_tile)
using C384 = Tiling<384, 64, 16>;
using C512 = Tiling<512, 64, 16>;
static_assert(tiling_ok<C256>() && tiling_ok<C256T64>() && tiling_ok<C256T32>() && tiling_ok<C384>() &&
                  tiling_ok<C512>(),
              "tilings are consistent");

// Packed weights: A fragments in [tile][k-step][lane] float4 order.
//   W1p: tiles of 16 expanded channels (E padded to kEChunk), k-steps over C8.
//   W2p: tiles of 16 output channels (C padded to the tiling's kCMax, so
//   every row a GEMM2 warp fetches exists), k-steps over E.
// With kSplit a second copy holds the low TF32 parts.
//   taps: per expanded channel, kTapRecord floats: the K depthwise taps placed
//   centred in kMaxK slots (zeros around them, so every K <= kMaxK runs the
//   same unconditional 9-tap loop), then bd, then zeros; all halved (pack_taps).
struct PackedLayout {
  int64_t C8, E64, CPad;
  int64_t w1_floats, w2_floats;  // one copy each
  bool split;
  __host__ __device__ PackedLayout(int64_t C, int64_t E, bool tf32, int c_max)
      : C8(round_up(C, kMmaK)), E64(round_up(E, kEChunk)), CPad(round_up(C, c_max)),
        w1_floats(E64 * C8), w2_floats(CPad * E64), split(!tf32) {}
  __host__ __device__ int64_t weight_floats() const { return (w1_floats + w2_floats) * (split ? 2 : 1); }
  __host__ __device__ int64_t total_floats() const { return weight_floats() + E64 * kTapRecord; }
  __host__ __device__ int64_t w1_hi() const { return 0; }
  __host__ __device__ int64_t w2_hi() const { return w1_floats; }
  __host__ __device__ int64_t w1_lo() const { return w1_floats + w2_floats; }
  __host__ __device__ int64_t w2_lo() const { return 2 * w1_floats + w2_floats; }
  __host__ __device__ int64_t taps() const { return weight_floats(); }
};

// ---------------------------------------------------------------------------
// Tensor-core kernel: weight packing
// ---------------------------------------------------------------------------

// Element r of lane's A fragment for the m16k8 tile at (row0, col0) of a
// [rows, cols] row-major matrix, zero outside it.
template <class In>
__device__ __forceinline__ float a_frag_elem(const In* m, int64_t rows, int64_t cols,
                                             int64_t row0, int64_t col0, int lane, int r) {
  const int64_t row = row0 + lane / 4 + (r & 1) * 8;
  const int64_t col = col0 + lane % 4 + (r >> 1) * 4;
  return (row < rows && col < cols) ? Elem<In>::to_float(m[row * cols + col]) : 0.0f;
}

// The depthwise records (PackedLayout::taps) for e64 expanded channels (E
// rounded up to a chunk), grid-stride over the launch. Taps and bias are
// stored halved: the depthwise then sums h2 / 2, which is what
// gelu_from_half takes (it saves the GELU a multiply; a power of two, so
// the sum is exactly half of the unscaled one, barring subnormals). Slot
// kTapNextB1 holds b1[e + kEChunk] (cyclically in e64, 0 beyond E), not
// halved: the 16-bit kernel's depthwise of a chunk hands the next chunk's
// GEMM1 its bias step this way (the TF32 kernels do not read it).
constexpr float kTapScale = 0.5f;
template <class In>
__device__ __forceinline__ void pack_taps(const Params& p, float* taps, int64_t e64) {
  const In* const wd = in_ptr<In>(p.wd);
  const In* const bd = in_ptr<In>(p.bd);
  const int64_t tap_floats = e64 * kTapRecord;
  const int64_t first_tap = kMaxHalf - p.K / 2;  // slot of tap 0: centres the K taps
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < tap_floats;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t e = i / kTapRecord, slot = i % kTapRecord, k = slot - first_tap;
    float v = 0.0f;
    if (slot == kTapNextB1) {  // not halved; a subtraction, as a modulo made the TF32 pack kernels spill
      const int64_t next = e + kEChunk < e64 ? e + kEChunk : e + kEChunk - e64;
      taps[i] = next < p.E ? Elem<In>::to_float(in_ptr<In>(p.b1)[next]) : 0.0f;
      continue;
    }
    if (e < p.E && slot < kMaxK && k >= 0 && k < p.K) v = Elem<In>::to_float(wd[e * p.K + k]);
    if (e < p.E && slot == kTapBias) v = Elem<In>::to_float(bd[e]);
    taps[i] = kTapScale * v;
  }
}

// c_max: the kCMax of the tiling that will read the packed weights.
template <class In>
__global__ void pack_weights_kernel(Params p, int c_max) {
  const PackedLayout lay(p.C, p.E, p.tf32, c_max);
  float* ws = p.workspace;
  const int64_t n1 = lay.w1_floats, n2 = lay.w2_floats;
  const int64_t ks1 = lay.C8 / kMmaK, ks2 = lay.E64 / kMmaK;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n1 + n2;
       i += (int64_t)gridDim.x * blockDim.x) {
    const bool first = i < n1;
    const int64_t j = first ? i : i - n1;
    const int r = j % 4, lane = (j / 4) % kWarpSize;
    const int64_t frag = j / (4 * kWarpSize);
    const int64_t ksteps = first ? ks1 : ks2;
    const int64_t tile = frag / ksteps, ks = frag % ksteps;
    const float v = first ? a_frag_elem(in_ptr<In>(p.w1), p.E, p.C, tile * kMmaM, ks * kMmaK, lane, r)
                          : a_frag_elem(in_ptr<In>(p.w2), p.C, p.E, tile * kMmaM, ks * kMmaK, lane, r);
    const float hi = tf32_round(v);
    ws[(first ? lay.w1_hi() : lay.w2_hi()) + j] = hi;
    if (lay.split) ws[(first ? lay.w1_lo() : lay.w2_lo()) + j] = tf32_round(v - hi);
  }
  pack_taps<In>(p, ws + lay.taps(), lay.E64);
}

// ---------------------------------------------------------------------------
// Tensor-core kernel
// ---------------------------------------------------------------------------

// The ring stage after s, of kStages. Stages advance by this, not `ks % kStages`:
// a modulo by a non-power of two costs several integer instructions per k-step.
// The stage read next is always next_stage of the stage fetched last.
template <int kStages>
__device__ __forceinline__ int next_stage(int s) {
  return s + 1 == kStages ? 0 : s + 1;
}

// The per-thread weight ring (see Tiling).
struct Ring {
  float4* base;  // slot s of this thread: base[s * kThreads]
  __device__ __forceinline__ float4* slot(int s) const { return base + s * kThreads; }
  __device__ __forceinline__ void fetch(int s, const float4* src) const { cp_async_16(slot(s), src); }
  __device__ __forceinline__ void read(int s, uint32_t (&a)[4]) const { to_bits(a, *slot(s)); }
};

// h1 = acc1 + b1 for one warp's GEMM1 fragment (m16 tile g1m of chunk ch,
// n8 tiles nt0.. of the h1 columns), exactly 0 where the position is padding.
// Tiles below `skip` are stored by the other N half.
template <class S, class In>
__device__ __forceinline__ void store_h1(float* hs, const float (&acc1)[S::kG1NTilesPerWarp][4],
                                         const Params& p, int ch, int g1m, int nt0, int skip,
                                         int64_t xcol0, int lane) {
  constexpr int kHStride = S::kHStride;
  const int g = lane / 4, q = lane % 4;
  const int row_a = g1m * kMmaM + g, row_b = row_a + 8;
  const int64_t e_a = static_cast<int64_t>(ch) * kEChunk + row_a, e_b = e_a + 8;
  const float b1_a = e_a < p.E ? ldg_f(in_ptr<In>(p.b1) + e_a) : 0.0f;
  const float b1_b = e_b < p.E ? ldg_f(in_ptr<In>(p.b1) + e_b) : 0.0f;
#pragma unroll
  for (int nt = 0; nt < S::kG1NTilesPerWarp; ++nt) {
    if (nt >= skip) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int col = (nt0 + nt) * kMmaN + 2 * q + r;
        const int64_t pos = xcol0 + col;
        const bool inside = pos >= 0 && pos < p.L;
        hs[row_a * kHStride + col] = inside ? acc1[nt][r] + b1_a : 0.0f;
        hs[row_b * kHStride + col] = inside ? acc1[nt][2 + r] + b1_b : 0.0f;
      }
    }
  }
}

// The depthwise records (kTapRecord floats: taps, bd) of one warp's kRows
// rows of a chunk, spread over its lanes: lane l holds floats
// kTapsPerLane * l onwards. Loaded once GEMM1 is done, so that their L2
// latency hides behind the h1 store and its barriers; each row then takes
// its record by shuffles.
// (Loading the record per row stalled the depthwise on it: 9% of the wgmma
// kernel's stall samples, ncu on the H200.)
template <int kRows>
struct WarpTaps {
  static constexpr int kTapsPerLane = kRows * kTapRecord / kWarpSize;
  static_assert(kTapsPerLane * kWarpSize == kRows * kTapRecord && kTapRecord % kTapsPerLane == 0,
                "records spread evenly over the lanes");
  float v[kTapsPerLane];
  // taps: the packed records; rows first_row.. of chunk ch.
  __device__ __forceinline__ void load(const float* taps, int ch, int first_row, int lane) {
    const float* src = taps + (static_cast<int64_t>(ch) * kEChunk + first_row) * kTapRecord + lane * kTapsPerLane;
#pragma unroll
    for (int j = 0; j < kTapsPerLane; ++j) v[j] = __ldg(src + j);
  }
  // Float i of the record of the warp's row local_row (i a compile-time
  // constant once unrolled; every lane of the warp must call it).
  __device__ __forceinline__ float get(int local_row, int i) const {
    return __shfl_sync(0xffffffffu, v[i % kTapsPerLane],
                       local_row * (kTapRecord / kTapsPerLane) + i / kTapsPerLane);
  }
};

// Depthwise + bd + GELU for kOut consecutive outputs of one h1 row:
// h3[t] = gelu(h2[t]), h2[t] = bd + sum_m tap[m] * h1[t + m], m < kMaxK
// (taps centred, zeros around them), from the row's window win (kOut +
// kMaxK - 1 floats from the first output's column) and its tap record. The
// records hold bd / 2 and tap / 2 (pack_taps), so the sums here are h2 / 2.
// Round::h3_operand rounds each output as it is made (Elem<In>: for a TF32
// wgmma; Unrounded: not at all).
template <int kOut, class Round = Unrounded>
__device__ __forceinline__ void depthwise_run(const float (&win)[kOut + kMaxK - 1], const float (&tap)[kMaxK + 1],
                                              float (&h3)[kOut]) {
#pragma unroll
  for (int j = 0; j < kOut; ++j) {
    // Even and odd taps in two sums: half the dependency chain (latency-bound,
    // as the GELU's polynomial; 0.5% at the headline).
    float acc_even = tap[kTapBias], acc_odd = 0.0f;
#pragma unroll
    for (int m = 0; m < kMaxK; m += 2) acc_even = fmaf(tap[m], win[j + m], acc_even);
#pragma unroll
    for (int m = 1; m < kMaxK; m += 2) acc_odd = fmaf(tap[m], win[j + m], acc_odd);
    const float g = gelu_from_half(acc_even + acc_odd);
    h3[j] = Round::h3_operand(g);
  }
}

// The same for 4 outputs of the warp's row local_row, its window as three
// 16-byte windows and its record from the warp's taps.
constexpr int kDwWindows = kDwWindow / kVec;
template <class Taps>
__device__ __forceinline__ float4 depthwise4(const float4 (&windows)[kDwWindows], const Taps& taps,
                                             int local_row) {
  float tap[kMaxK + 1];
#pragma unroll
  for (int m = 0; m <= kTapBias; ++m) tap[m] = taps.get(local_row, m);
  float win[kDwWindow];
#pragma unroll
  for (int v = 0; v < kDwWindows; ++v) {
    const float4 w4 = windows[v];
    win[v * kVec + 0] = w4.x;
    win[v * kVec + 1] = w4.y;
    win[v * kVec + 2] = w4.z;
    win[v * kVec + 3] = w4.w;
  }
  static_assert(kDwWindow == kVec + kMaxK - 1, "a window: 4 outputs and their taps' reach");
  float h3[kVec];
  depthwise_run<kVec>(win, tap, h3);
  return make_float4(h3[0], h3[1], h3[2], h3[3]);
}
// The same with the windows read from hrow (16-byte aligned).
template <class Taps>
__device__ __forceinline__ float4 depthwise4(const float* hrow, const Taps& taps, int local_row) {
  float4 windows[kDwWindows];
#pragma unroll
  for (int v = 0; v < kDwWindows; ++v) windows[v] = *reinterpret_cast<const float4*>(hrow + v * kVec);
  return depthwise4(windows, taps, local_row);
}

// y[b, c, t0 + j] = ys[c][j] + x[b, c, t0 + j] for the tile (ys already holds
// acc + b2): whole rows, 16-byte coalesced where aligned. (C and L as plain
// values: taking them from Params here cost the split kernel's GEMM1 loop 15
// register moves per k-step, measured in its SASS.)
template <class S, class In>
__device__ __forceinline__ void store_tile(const float* ys, const Params& p, int C, int64_t L,
                                           const In* xb, In* yb, int64_t t0) {
  constexpr int kPieces = S::kTileT / kVec;
  constexpr uintptr_t kPieceBytes = kVec * sizeof(In);
  const bool aligned = L % kVec == 0 && reinterpret_cast<uintptr_t>(p.x) % kPieceBytes == 0 &&
                       reinterpret_cast<uintptr_t>(p.y) % kPieceBytes == 0;
  if (aligned && t0 + S::kTileT <= L) {
    // Whole tile inside the row: kBatch 4-value loads of x in flight before
    // their adds (one at a time, each load's latency stalled the loop: 5% of
    // the wgmma kernel's stall samples, ncu on the H200).
    constexpr int kBatch = 4;
    for (int i0 = threadIdx.x; i0 < C * kPieces; i0 += kBatch * kThreads) {
      float4 xv[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * kThreads;
        if (i < C * kPieces) xv[u] = ldg4(xb + (i / kPieces) * L + t0 + (i % kPieces) * kVec);
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * kThreads;
        if (i < C * kPieces) {
          const int c = i / kPieces, j = (i % kPieces) * kVec;
          const float4 a = *reinterpret_cast<const float4*>(ys + c * S::kXStride + j);
          stcs4(yb + c * L + t0 + j, make_float4(a.x + xv[u].x, a.y + xv[u].y, a.z + xv[u].z, a.w + xv[u].w));
        }
      }
    }
    return;
  }
  // Otherwise (rows not 16-byte aligned, or a row's last tile): 4-byte
  // accesses, a warp's 32 consecutive in a row (128 coalesced bytes), with
  // kBatchScalar loads of x in flight a thread before their adds (a float4
  // piece at a time, its 4 loads one after another, was 1-3% slower on the
  // suite's rows with L % 4 != 0, measured in the wgmma kernel, which wrote y
  // through this function until v12; kernels/NOTES.md, v11c).
  constexpr int kBatchScalar = 16;
  const int elems = C * S::kTileT;
  for (int e0 = threadIdx.x; e0 < elems; e0 += kBatchScalar * kThreads) {
    float xv[kBatchScalar];
#pragma unroll
    for (int u = 0; u < kBatchScalar; ++u) {
      const int e = e0 + u * kThreads, c = e / S::kTileT, j = e % S::kTileT;
      xv[u] = e < elems && t0 + j < L ? ldg_f(xb + c * L + t0 + j) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kBatchScalar; ++u) {
      const int e = e0 + u * kThreads, c = e / S::kTileT, j = e % S::kTileT;
      if (e < elems && t0 + j < L) stcs1(yb + c * L + t0 + j, ys[c * S::kXStride + j] + xv[u]);
    }
  }
}

template <class S, bool kSplit, class In>
__global__ void __launch_bounds__(kThreads, 1) fused_dwsep_tc_kernel(Params p) {
  static_assert(std::is_same_v<In, float> || !kSplit, "16-bit values need one product");
  constexpr int kCMax = S::kCMax, kTileT = S::kTileT, kNX = S::kNX;
  constexpr int kXStride = S::kXStride, kHStride = S::kHStride;
  constexpr int kG1NTilesPerWarp = S::kG1NTilesPerWarp, kG1NStride = S::kG1NStride;
  constexpr int kG2RowsPerWarp = S::kG2RowsPerWarp, kG2MTiles = S::kG2MTiles, kG2NTiles = S::kG2NTiles;
  constexpr int kG1SlotsPerStep = kSplit ? 2 : 1, kG2SlotsPerStep = S::g2_slots_per_step(kSplit);
  constexpr int kS1 = S::g1_stages(kSplit), kS2 = S::g2_stages(kSplit);
  extern __shared__ float4 smem_f4[];
  float* xs = reinterpret_cast<float*>(smem_f4);  // [kCMax][kXStride]
  float* hs = xs + kCMax * kXStride;              // [kEChunk][kHStride]
  const Ring ring{reinterpret_cast<float4*>(hs + kEChunk * kHStride) + threadIdx.x};

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int g = lane / 4, q = lane % 4;
  const int C = static_cast<int>(p.C);
  const int64_t L = p.L;
  const int64_t tiles_per_row = ceil_div(L, kTileT);
  const int64_t b = blockIdx.x / tiles_per_row;
  const int64_t t0 = (blockIdx.x % tiles_per_row) * kTileT;
  const int64_t xcol0 = t0 - kMaxHalf;  // position of h1 column 0

  const PackedLayout lay(p.C, p.E, p.tf32, kCMax);
  const int c8 = static_cast<int>(lay.C8);
  const int ks1 = c8 / kMmaK;
  const int ks2_total = static_cast<int>(lay.E64 / kMmaK);
  const float4* w1p_hi = reinterpret_cast<const float4*>(p.workspace + lay.w1_hi()) + lane;
  const float4* w2p_hi = reinterpret_cast<const float4*>(p.workspace + lay.w2_hi()) + lane;
  const float4* w1p_lo = reinterpret_cast<const float4*>(p.workspace + (kSplit ? lay.w1_lo() : 0)) + lane;
  const float4* w2p_lo = reinterpret_cast<const float4*>(p.workspace + (kSplit ? lay.w2_lo() : 0)) + lane;

  const In* xb = in_ptr<In>(p.x) + b * p.C * L;
  In* yb = out_ptr<In>(p.y) + b * p.C * L;

  // ---- stage x[b, :, xcol0 : xcol0 + kNX] ------------------------------------
  // Zeros outside [0, L) and for rows C..C8 that pad the GEMM1 reduction.
  // fp32: 16-byte copies where the piece is aligned and inside, 4-byte
  // elsewhere. 16 bits (cp.async has no 2-byte form): loads, 8 bytes where
  // aligned and inside, widened to fp32 as they are stored (exact).
  constexpr int kPieces = kNX / kVec;
  const bool aligned = L % kVec == 0 && reinterpret_cast<uintptr_t>(p.x) % (kVec * sizeof(In)) == 0;
  for (int i = threadIdx.x; i < c8 * kPieces; i += kThreads) {
    const int c = i / kPieces, j = (i % kPieces) * kVec;
    const int64_t pos = xcol0 + j;
    float* dst = xs + c * kXStride + j;
    const In* src = xb + c * L + pos;
    const bool whole = aligned && c < C && pos >= 0 && pos + kVec <= L;
    if constexpr (std::is_same_v<In, float>) {
      if (whole) {
        cp_async_16(dst, src);
      } else {
#pragma unroll
        for (int r = 0; r < kVec; ++r) {
          const bool inside = c < C && pos + r >= 0 && pos + r < L;
          cp_async_4_zfill(dst + r, inside ? src + r : xb, inside);
        }
      }
    } else {
      float e[kVec];
      if (whole) {
        const float4 v = ldg4(src);
        e[0] = v.x, e[1] = v.y, e[2] = v.z, e[3] = v.w;
      } else {
#pragma unroll
        for (int r = 0; r < kVec; ++r) e[r] = c < C && pos + r >= 0 && pos + r < L ? ldg_f(src + r) : 0.0f;
      }
      *reinterpret_cast<float4*>(dst) = make_float4(e[0], e[1], e[2], e[3]);
    }
  }
  if constexpr (std::is_same_v<In, float>) {
    cp_async_commit();
    cp_async_wait<0>();
    if constexpr (!kSplit) {  // TF32 mode keeps x rounded; split mode splits at load
      for (int i = threadIdx.x; i < c8 * kPieces; i += kThreads) {
        float4* v = reinterpret_cast<float4*>(xs + (i / kPieces) * kXStride + (i % kPieces) * kVec);
        float4 t = *v;
        *v = make_float4(tf32_round(t.x), tf32_round(t.y), tf32_round(t.z), tf32_round(t.w));
      }
    }
  }
  __syncthreads();

  float acc[kG2MTiles][kG2NTiles][4];
#pragma unroll
  for (int mt = 0; mt < kG2MTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kG2NTiles; ++nt)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][nt][r] = 0.0f;

  const int g1m = warp % kG1WarpsM, g1n = warp / kG1WarpsM;
  const int g1_nt0 = g1n * kG1NStride;
  const int g1_skip = g1n * (kG1NTilesPerWarp - kG1NStride);  // tiles the first half stores
  const int g2_row0 = warp * kG2RowsPerWarp;
  const bool g2_active = g2_row0 < C;  // warps past C have no output rows
  const int nchunks = static_cast<int>(lay.E64 / kEChunk);

  const float* taps = p.workspace + lay.taps();
  for (int ch = 0; ch < nchunks; ++ch) {
    WarpTaps<kDwRowsPerWarp> warp_taps;  // the depthwise's taps, loaded after GEMM1 (its registers are full)
    // ---- GEMM1: h1[64 x kNX] = W1[chunk] x xs -----------------------------
    {
      const int64_t a_base = (static_cast<int64_t>(ch) * kG1WarpsM + g1m) * ks1 * kWarpSize;
      int fetch_stage = 0;
      // One commit group per k-step (empty past the end keeps the count uniform).
      auto fetch = [&](int ks) {
        if (ks < ks1) {
          const int s = fetch_stage * kG1SlotsPerStep;
          ring.fetch(s, w1p_hi + a_base + ks * kWarpSize);
          if constexpr (kSplit) ring.fetch(s + 1, w1p_lo + a_base + ks * kWarpSize);
        }
        cp_async_commit();
        fetch_stage = next_stage<kS1>(fetch_stage);
      };
#pragma unroll
      for (int s = 0; s < kS1 - 1; ++s) fetch(s);

      float acc1[kG1NTilesPerWarp][4];
#pragma unroll
      for (int nt = 0; nt < kG1NTilesPerWarp; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc1[nt][r] = 0.0f;

      // Software pipeline: the operands of k-step ks + 1 (B from xs, A from
      // the ring) are loaded while the mmas of step ks run, so the mmas never
      // wait on shared-memory latency. The load after the last step reads one
      // k-step past the end (inside shared memory) and is not used.
      struct Operands {
        uint32_t a_hi[4], a_lo[4];
        float b0[kG1NTilesPerWarp], b1[kG1NTilesPerWarp];
      };
      const float* b_base = xs + q * kXStride + g1_nt0 * kMmaN + g;  // k-step 0, row q
      auto load = [&](int ks, Operands& o) {
        const float* b_row = b_base + ks * (kMmaK * kXStride);
#pragma unroll
        for (int nt = 0; nt < kG1NTilesPerWarp; ++nt) {
          o.b0[nt] = b_row[nt * kMmaN];
          o.b1[nt] = b_row[4 * kXStride + nt * kMmaN];
        }
        cp_async_wait<kS1 - 2>();  // this thread's copy for this k-step has landed
        const int read_stage = next_stage<kS1>(fetch_stage);
        const int s = read_stage * kG1SlotsPerStep;
        ring.read(s, o.a_hi);
        if constexpr (kSplit) ring.read(s + 1, o.a_lo);
      };
      Operands cur;
      load(0, cur);
#pragma unroll(kSplit ? 1 : 2)  // renames cur/next instead of copying (split: registers)
      for (int ks = 0; ks < ks1; ++ks) {
        fetch(ks + kS1 - 1);  // refills the stage read two steps ago
        Operands next;
        load(ks + 1, next);
#pragma unroll
        for (int nt = 0; nt < kG1NTilesPerWarp; ++nt)
          mma_step<kSplit>(acc1[nt], cur.a_hi, cur.a_lo, BElem<kSplit>(cur.b0[nt]),
                           BElem<kSplit>(cur.b1[nt]));
        cur = next;
      }
      warp_taps.load(taps, ch, warp * kDwRowsPerWarp, lane);  // in flight through store_h1 and the barriers
      __syncthreads();  // every warp is done reading the previous chunk's h3 from hs
      store_h1<S, In>(hs, acc1, p, ch, g1m, g1_nt0, g1_skip, xcol0, lane);
    }
    __syncthreads();  // h1 complete

    // GEMM2's first weight fragments travel while the depthwise runs.
    const int64_t w2_base = static_cast<int64_t>(ch) * kG2KSteps * kWarpSize;
    auto fetch2 = [&](int ks) {
      if (g2_active && ks < kG2KSteps) {
        const int s = (ks % kS2) * kG2SlotsPerStep;
#pragma unroll
        for (int mt = 0; mt < kG2MTiles; ++mt) {
          const int64_t off = (warp * kG2MTiles + mt) * static_cast<int64_t>(ks2_total) * kWarpSize +
                              w2_base + ks * kWarpSize;
          ring.fetch(s + mt, w2p_hi + off);
          if constexpr (kSplit) ring.fetch(s + kG2MTiles + mt, w2p_lo + off);
        }
      }
      cp_async_commit();
    };
#pragma unroll
    for (int s = 0; s < kS2 - 1; ++s) fetch2(s);

    // ---- depthwise + bd + GELU, in place ----------------------------------------
    // A warp owns whole rows, so reading a row then writing it back needs only
    // the warp to agree: the lane at column col writes col..col+3, which the
    // lanes at col-8..col of the same row read.
    const int dw_col = (lane % S::kDwLanesPerRow) * kVec;
    const int dw_local0 = lane / S::kDwLanesPerRow;  // this lane's first row within the warp's rows
#pragma unroll(kSplit ? 1 : 2)  // two passes in flight; split mode has no registers to spare
    for (int rr = 0; rr < kDwRowsPerWarp; rr += S::kDwRowsPerPass) {
      const int row = warp * kDwRowsPerWarp + dw_local0 + rr;
      float4 h3 = depthwise4(hs + row * kHStride + dw_col, warp_taps, dw_local0 + rr);
      if constexpr (!kSplit) {
        using E = Elem<In>;
        h3 = make_float4(E::h3(h3.x), E::h3(h3.y), E::h3(h3.z), E::h3(h3.w));
      }
      __syncwarp();
      *reinterpret_cast<float4*>(hs + row * kHStride + dw_col) = h3;
    }
    __syncthreads();  // h3 complete

    // ---- GEMM2: acc[C x T] += W2[:, chunk] x h3 ----------------------------
    if (g2_active) {
      for (int ks = 0; ks < kG2KSteps; ++ks) {
        cp_async_wait<kS2 - 2>();
        uint32_t a_hi[kG2MTiles][4], a_lo[kG2MTiles][4];
        const int s = (ks % kS2) * kG2SlotsPerStep;
#pragma unroll
        for (int mt = 0; mt < kG2MTiles; ++mt) {
          ring.read(s + mt, a_hi[mt]);
          if constexpr (kSplit) ring.read(s + kG2MTiles + mt, a_lo[mt]);
        }
        fetch2(ks + kS2 - 1);
        const float* b_row0 = hs + (ks * kMmaK + q) * kHStride + g;
        const float* b_row1 = b_row0 + 4 * kHStride;
        float b0[kG2NTiles], b1[kG2NTiles];
#pragma unroll
        for (int nt = 0; nt < kG2NTiles; ++nt) {  // all loads first, then the mmas
          b0[nt] = b_row0[nt * kMmaN];
          b1[nt] = b_row1[nt * kMmaN];
        }
#pragma unroll
        for (int nt = 0; nt < kG2NTiles; ++nt) {
          const BElem<kSplit> e0(b0[nt]), e1(b1[nt]);
#pragma unroll
          for (int mt = 0; mt < kG2MTiles; ++mt) mma_step<kSplit>(acc[mt][nt], a_hi[mt], a_lo[mt], e0, e1);
        }
      }
    }
    cp_async_wait<0>();  // the ring is empty before GEMM1 of the next chunk reuses it
  }

  // ---- epilogue: y = acc + b2 + x --------------------------------------------
  // The accumulators go through shared memory (xs is free once every warp is
  // past its last GEMM) so that x is read and y written in whole rows: 16-byte
  // coalesced accesses instead of the mma fragment's scattered 4-byte ones.
  __syncthreads();
  float* ys = xs;  // [kCMax][kXStride], columns 0..kTileT-1
  if (g2_active) {
#pragma unroll
    for (int mt = 0; mt < kG2MTiles; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int c = g2_row0 + mt * kMmaM + g + half * 8;
        const float bias = c < C ? ldg_f(in_ptr<In>(p.b2) + c) : 0.0f;
#pragma unroll
        for (int nt = 0; nt < kG2NTiles; ++nt) {
          const float2 v = make_float2(acc[mt][nt][half * 2] + bias, acc[mt][nt][half * 2 + 1] + bias);
          *reinterpret_cast<float2*>(ys + c * kXStride + nt * kMmaN + 2 * q) = v;
        }
      }
    }
  }
  __syncthreads();
  store_tile<S>(ys, p, C, L, xb, yb, t0);
}

}  // namespace tc

#if defined(FUSED_DWSEP_SM90A)
// ---------------------------------------------------------------------------
// Hopper kernel (sm_90a): two warpgroups taking turns on the tensor cores
// ---------------------------------------------------------------------------
//
// One batch row and T positions a tile (x^T with its halo staged once in
// shared memory, E in chunks of 64), computed so that the tensor cores are
// busy while the CUDA cores run the depthwise; WgTile holds what depends on
// the largest C served and on T (128 up to C = 256, as described here; 64
// up to C = 384). Chunk c belongs to warpgroup c % 2: its GEMM1
// (h1 = W1[c] x^T, one m64n136k8 wgmma per k-step over all 136 columns)
// leaves warp w of the owner with rows 16w..16w+15 of h1, which that warp
// stores in the owner's h buffer and turns into h3 = gelu(dwconv(h1)) in
// place, with no barrier but __syncwarp. GEMM2 is split by output channel:
// warpgroup w accumulates y[128w .. 128w+127] over every chunk, its own and
// the other's.
//
// The tensor-core work is cut into turns, which the warpgroups take
// alternately (a token passed through named barriers). Turn j belongs to
// warpgroup j % 2 and runs, for those of the chunks that exist,
//   GEMM2 of chunk j-3 (the other warpgroup's), GEMM2 of chunk j-2 (its own),
//   GEMM1 of chunk j (its own),
// so that between two turns a warpgroup runs the depthwise of the chunk its
// last GEMM1 made while the other warpgroup holds the tensor cores. Chunk c's
// h3 is read by its owner in turn c+2 and by the other in turn c+3, after
// which the owner may overwrite the buffer with h1 of chunk c+2 (a second
// named barrier says so).
//
// Both GEMMs read their activations (B) from shared memory, K-major in core
// matrices (8 rows x 4 TF32 = 128 contiguous bytes, no swizzle). The weights
// are packed per call into stages. GEMM1's (W1, in the same core layout)
// stream through a ring of kRingSlots slots of several stages by bulk copies
// (cp.async.bulk), one mbarrier per slot; the warpgroup whose turn it is
// issues a slot's wgmmas as one group and refills the slot as soon as that
// group is done in all its warps. GEMM2's (W2) come straight from L2 into
// registers, as the wgmma's A operand, a slot at a time: acc1 is dead while
// GEMM2 runs, which leaves the registers (kernels/NOTES.md, v16, v24).
// The exact mode (TF32 off) runs the same kernel on the 128-position tile with
// fp16 hi/lo pairs in place of TF32 values (see "the exact mode" below).

namespace wg {

using namespace tc;

constexpr int kWarpgroupThreads = 128;
constexpr int kWarpgroups = kThreads / kWarpgroupThreads;
constexpr int kGroupWarps = kWarpgroupThreads / kWarpSize;
constexpr int kWgmmaM = 64;
static_assert(kWarpgroups == 2 && kEChunk == kWgmmaM, "two warpgroups; a chunk is one m64 block of GEMM1");

// K-major core-matrix layout: element (row n, k) of an operand whose K extent
// is kext sits at this float offset. Core matrices adjacent in K are adjacent
// in memory; 8-row groups are kext / 4 cores apart.
constexpr int kCoreRows = 8, kCoreK = 4, kCoreFloats = kCoreRows * kCoreK;
constexpr uint32_t kCoreBytes = kCoreFloats * sizeof(float);
__host__ __device__ constexpr int core_offset(int n, int k, int kext) {
  return (n / kCoreRows) * (kext / kCoreK) * kCoreFloats + (k / kCoreK) * kCoreFloats +
         (n % kCoreRows) * kCoreK + k % kCoreK;
}
// The (row, k) that core_offset places at offset r (for packing).
__host__ __device__ constexpr int core_row(int r, int kext) {
  return (r / (kext * kCoreRows)) * kCoreRows + (r % kCoreFloats) / kCoreK;
}
__host__ __device__ constexpr int core_k(int r, int kext) {
  return (r % (kext * kCoreRows)) / kCoreFloats * kCoreK + r % kCoreK;
}
static_assert(core_offset(core_row(777, 16), core_k(777, 16), 16) == 777 &&
                  core_offset(core_row(555, 8), core_k(555, 8), 8) == 555,
              "core_row / core_k invert core_offset");

// Weight stages, as the wgmma reads A:
//   W1 stage (4 KB): [64 expanded channels][16 input channels] of a chunk, in
//   core matrices (shared memory): two GEMM1 k-steps;
//   W2 stage: [the kG2Rows channels of one warpgroup's half][8 expanded
//   channels] of a chunk, in register order: one GEMM2 k-step for all the
//   half's m64 blocks (WgTile::kG2StageFloats).
constexpr int kStageFloats = 1024;
constexpr uint32_t kStageBytes = kStageFloats * sizeof(float);
constexpr int kG1StageK = kStageFloats / kEChunk;
constexpr int kG1StepsPerStage = kG1StageK / kMmaK;
constexpr int kG2StagesPerChunk = kEChunk / kMmaK;
static_assert(kG1StageK == 16, "a W1 stage is two k-steps");
// The ring: kRingSlots slots of WgTile::kSlotStages consecutive W1 stages,
// each slot filled by one bulk copy and waited on, released and refilled as
// a unit. The turns are bound by the fixed cost of each of these steps
// (mbarrier wait, wgmma group, warpgroup barrier, bulk-copy issue: ~480
// cycles a 4 KB stage at the headline against ~130 of tensor-core work,
// clock64 trace, kernels/NOTES.md), so a slot holds several stages: two at
// the headline's tile, where three slots is what shared memory leaves after
// x^T and the two h buffers; four at the wide tile, whose stages carry half
// the tensor work.
constexpr int kRingSlots = 3;
// GEMM2 runs in slots of kG2SlotStages k-steps: a turn's GEMM2 is at most
// two chunks' slots. At the headline's tile W2 is GEMM2's A and comes
// through registers, one slot's at a time (kG2Blocks float4s a thread and
// k-step, 32 floats) in acc1's registers, which are dead from the h1 store
// to GEMM1's first wgmma: each slot's wgmmas are waited for, then the next
// slot's A is loaded (prefetched into L1 a slot earlier). Why one set of
// four k-steps: every wgmma fence waits for all of the warp's outstanding
// loads (they share one scoreboard), so each slot's fence costs the loads'
// latency however many sets are in flight. Two sets of two k-steps (v23)
// ran 3% slower at the headline, deeper sets slower still, one set of
// eight 9% slower (faster turns, but the depthwise beside them slows
// more), and two sets of four make ptxas serialise every wgmma
// (kernels/NOTES.md, v24). At the wide tile GEMM2 runs transposed
// (WgTile::kG2T) and W2^T, its B, comes through the ring in slots of
// WgTile::kG2SlotSteps k-steps.
constexpr int kG2SlotStages = 4;
static_assert(kG2StagesPerChunk % kG2SlotStages == 0, "a chunk's W2 stages (a turn's GEMM2 parts) fill whole slots");
constexpr int kG2SlotsPerChunk = kG2StagesPerChunk / kG2SlotStages;
constexpr int kMaxG2Slots = 2 * kG2SlotsPerChunk;
// The right halo of a warp's first 4 rows (the later rows' go where the
// h3^T cores leave their h1 rows free, see the depthwise): 16 floats a warp.
constexpr int kTailFloats = kCoreK * kMaxHalf;
// A warp's rows of a chunk (its GEMM1 accumulator rows), in depthwise groups
// of 4: one K-core of h3^T each.
constexpr int kDwRows = kEChunk / kGroupWarps;
constexpr int kDwGroups = kDwRows / kCoreK;

// The tile: every constant that depends on the largest C served (x^T holds
// all of it) and on the tile length T.
//   WgHead: C <= 256, T = 128 (the headline's).
//   WgWide: 256 < C <= 384, T = 64: at T = 128, x^T of 384 channels would
//   not fit in shared memory, nor GEMM2's accumulators (C / 2 a thread) in
//   registers.
// kSlotStages: W1 stages a ring slot (see kRingSlots).
// kG2T: GEMM2 transposed. At T = 64 GEMM2 as W2 h3 took three m64n64k8 a
// k-step (m64 blocks of output channels), and small wgmmas cost more than
// they compute (kernels/NOTES.md, v17, v18); transposed, y^T = h3^T W2^T is
// one m64n(C / 2)k8 a k-step: A = h3^T (its K-cores as they are), B = W2^T
// through the ring, the accumulators position-major.
template <int kCMax_, int kTileT_, int kSlotStages_, bool kG2T_>
struct WgTile {
  static constexpr int kCMax = kCMax_, kTileT = kTileT_, kSlotStages = kSlotStages_;
  static constexpr bool kG2T = kG2T_;
  static constexpr int kSlotSteps = kSlotStages * kG1StepsPerStage;  // GEMM1 k-steps a ring slot
  static constexpr int kNX = kTileT + 2 * kMaxHalf;  // h1 columns: tile plus halo
  // GEMM1 of a chunk: [64 x kNX] per warpgroup. GEMM2: warpgroup w owns output
  // channels [kG2Rows * w, kG2Rows * (w + 1)), kG2Blocks m64 blocks x kTileT
  // (kG2T: one block, [kTileT positions x kG2Rows]), one wgmma each a k-step.
  static constexpr int kG1Acc = kWgmmaM * kNX / kWarpgroupThreads;
  static constexpr int kG2Rows = kCMax / kWarpgroups;
  static constexpr int kG2Blocks = kG2T ? 1 : kG2Rows / kWgmmaM;
  static constexpr int kG2Acc = kG2Rows * kTileT / kWarpgroupThreads / kG2Blocks;
  static constexpr int kG2StageFloats = kG2Rows * kMmaK;
  static constexpr uint32_t kG2StageBytes = kG2StageFloats * sizeof(float);
  // GEMM2's slots: kG2SlotSteps k-steps each (kG2T: a ring fill of W2^T
  // stages; half a chunk, so that a fill's ~400 cycles of tensor work cover
  // its fixed costs: with two, W2^T through the ring was 6% slower than W2
  // through registers, kernels/NOTES.md, v18)
  static constexpr int kG2SlotSteps = kG2T ? kG2StagesPerChunk / 2 : kG2SlotStages;
  static constexpr int kG2SlotsPerChunk = kG2StagesPerChunk / kG2SlotSteps;
  // A ring slot: kSlotStages W1 stages, or with kG2T a GEMM2 slot's W2^T
  // stages if larger (every fill copies the whole slot: W1's fills end in zeros)
  static constexpr uint32_t kSlotBytes =
      kG2T && kG2SlotSteps * kG2StageBytes > kSlotStages * kStageBytes ? kG2SlotSteps * kG2StageBytes
                                                                       : kSlotStages * kStageBytes;
  static constexpr int kSlotFloats = kSlotBytes / sizeof(float);

  // h buffers, one per warpgroup: warp w of the owner holds rows 16w..16w+15
  // of the chunk as h1 rows of kHRowFloats floats: columns 0..kTileT+3 of
  // the kNX; the last kMaxHalf (the right halo, read only by the last window
  // of a row's last lane) are gathered from the accumulators by shuffles and
  // stored in gaps the h3^T cores leave (see the depthwise), which is what
  // leaves shared memory room for the ring's third slot at the headline's
  // tile (a row stride of 4 mod 32 makes the accumulator stores 2-way bank
  // conflicts; 136 was conflict-free). The depthwise overwrites the first
  // kDwGroups * kH3CoreFloats floats of those rows with h3^T of the same 16
  // channels: K-cores of [kTileT positions][4 channels] (a K-core of h3^T is
  // position-major: 8-row groups adjacent), which GEMM2 reads with a K-core
  // stride of kH3CoreFloats. K-core kc ends before h1 row 4(kc+1) begins, so
  // it overlaps only rows already read once the rows of group kc are.
  static constexpr int kHRowFloats = kNX - kMaxHalf;
  static constexpr int kHWarpFloats = kDwRows * kHRowFloats;
  static constexpr int kHBufFloats = kGroupWarps * kHWarpFloats;
  static constexpr int kH3CoreFloats = kTileT * kCoreK;
  // Depthwise: each lane 4 consecutive outputs of a row, kDwRowsPerPass rows
  // at once (T = 64: lanes 0-15 one row, lanes 16-31 another).
  static constexpr int kDwLanesPerRow = kTileT / kVec;
  static constexpr int kDwRowsPerPass = kWarpSize / kDwLanesPerRow;

  // Shared memory: x^T | h buffers | weight ring | mbarriers | tails.
  //
  // x^T (GEMM1's B operand, [kNX positions][kCMax channels] K-major) in core
  // matrices ordered K-core by K-core: the kNX / 8 cores of channels
  // 4kc..4kc+3 are adjacent (8-position groups 128 bytes apart, K-cores
  // kNX * 16 bytes apart), so that a K-core occupies exactly as many bytes
  // as x's 4 rows of kNX positions: the 16-byte staging lands rows as they
  // lie in x and turns them around K-core by K-core (stage_x_16).
  static constexpr int kXtKCoreFloats = kNX * kCoreK;
  static constexpr uint32_t kXtKCoreBytes = kXtKCoreFloats * sizeof(float);
  __host__ __device__ static constexpr int xt_offset(int n, int k) {
    return (k / kCoreK) * kXtKCoreFloats + (n / kCoreRows) * kCoreFloats + (n % kCoreRows) * kCoreK + k % kCoreK;
  }
  static constexpr size_t kXtBytes = static_cast<size_t>(kNX) * kCMax * sizeof(float);
  static constexpr size_t kHOffset = kXtBytes;
  static constexpr size_t kRingOffset = kHOffset + kWarpgroups * kHBufFloats * sizeof(float);
  static constexpr size_t kBarOffset = kRingOffset + kRingSlots * size_t{kSlotBytes};
  static constexpr size_t kTailOffset = round_up(kBarOffset + kRingSlots * sizeof(uint64_t), sizeof(float4));
  static constexpr size_t kSmemBytes = kTailOffset + kWarps * kTailFloats * sizeof(float);

  // The rounding pass over x^T (round_x): kRoundBatch float4 loads before
  // their stores, whole batches for 8 warps and for 4.
  static constexpr int kXtVectors = kNX * kCMax / kVec;
  static constexpr int kRoundBatch = kXtVectors % (17 * kThreads) == 0 ? 17 : 9;  // 68 or 36 registers
  // x^T by 16-byte copies (stage_x_16)
  static constexpr int kXtGranules = kNX / kVec;                 // 16-byte pieces of a landed row
  static constexpr int kXtKCoreGranules = kCoreK * kXtGranules;  // of a K-core
  static constexpr int kXtColsPerLane = static_cast<int>(ceil_div(kNX, kWarpSize));
  // GEMM2's accumulators in n8 tiles (the epilogue)
  static constexpr int kNTiles = kTileT / kMmaN;
};
using WgHead = WgTile<256, 128, 2, false>;
using WgWide = WgTile<384, 64, 4, true>;

template <class W>
constexpr bool wg_tile_ok() {
  static_assert(W::kG2Rows * kWarpgroups == W::kCMax && (W::kG2T ? W::kTileT == kWgmmaM && W::kG2Rows % kMmaN == 0 &&
                                                                          W::kG2Acc == 96 && W::kG2Blocks == 1
                                                                    : W::kG2Blocks * kWgmmaM == W::kG2Rows),
                "GEMM2: each half of C whole m64 blocks, or (transposed) the tile one m64 block of positions "
                "and half of C one wgmma's N (the m64n192k8 wrapper)");
  static_assert(!W::kG2T || (W::kG2SlotSteps * W::kG2StageBytes <= W::kSlotBytes &&
                              kG2StagesPerChunk % W::kG2SlotSteps == 0 && W::kSlotBytes % 128 == 0),
                "a slot holds a GEMM2 slot's W2^T; a chunk's GEMM2 whole slots; slots stay 128-byte aligned");
  static_assert(W::kG2T || W::kG2SlotsPerChunk == kG2SlotsPerChunk,
                "GEMM2 from registers: the register slots (kG2SlotStages k-steps) are the tile's GEMM2 slots");
  static_assert(W::kCMax / kG1StageK % W::kSlotStages == 0 && W::kSlotStages * kG1StageK % (kCoreK * kWarps) == 0,
                "x^T holds every channel a chunk's W1 slots read (c16 <= kCMax); the 16-byte staging's K-cores "
                "split evenly over 8 warps and over 4");
  static_assert(kDwGroups * W::kH3CoreFloats <= W::kHWarpFloats, "h3^T of a warp's rows fits over them");
  static_assert(W::kH3CoreFloats <= kCoreK * W::kHRowFloats, "K-core kc overlaps no h1 row of a later group");
  static_assert(kTailFloats <= kCoreK * W::kHRowFloats - W::kH3CoreFloats, "a group's tails fit in the gap");
  static_assert(W::kHRowFloats % kVec == 0 && W::kHRowFloats == W::kTileT + kVec &&
                    W::kDwLanesPerRow * W::kDwRowsPerPass == kWarpSize && kCoreK % W::kDwRowsPerPass == 0,
                "h1 rows: whole 16-byte windows; a lane has 4 outputs; a row's last lane's last window is the "
                "tail; a depthwise group is whole passes");
  static_assert(2 * kCoreK * W::kH3CoreFloats / (kMmaK / kCoreK) <= W::kHWarpFloats && kDwRows == 2 * kMmaK,
                "a warp's rows are two GEMM2 k-steps");
  static_assert(W::xt_offset(9, 6) == W::kXtKCoreFloats + 9 * kCoreK + 2, "within a K-core, position-major");
  static_assert(W::kSmemBytes <= 227 * 1024, "fits one CTA per SM on sm_90");
  static_assert(W::kRingOffset % 128 == 0 && W::kBarOffset % 8 == 0 && W::kTailOffset % 16 == 0,
                "bulk copies, mbarriers and 16-byte tail loads aligned");
  static_assert(W::kXtVectors % (W::kRoundBatch * kThreads) == 0 &&
                    W::kXtVectors % (W::kRoundBatch * kWarpgroupThreads) == 0,
                "the rounding pass in whole batches");
  static_assert(W::kNX % kVec == 0 && W::kNX % kCoreRows == 0, "whole 16-byte pieces and 8-position groups");
  static_assert(W::kNX % kWarpSize == kCoreRows,
                "a lane's last column only in lanes below 8; conflict-free reads (kNX = 8 mod 32)");
  return true;
}
static_assert(wg_tile_ok<WgHead>() && wg_tile_ok<WgWide>(), "the wgmma tiles");

// The exact mode's constants (see its section below).
namespace exact {
constexpr int kAmaxBlocks = 264;  // CTAs of amax_kernel: each writes one partial maximum of each quantity
constexpr int kAmaxThreads = 256;
enum Quantity { kX, kW1, kB1, kWd, kBd, kW2, kQuantities };
constexpr int kTopExp = 15;   // scaled maxima below 2^15 (fp16's largest finite is 65504)
constexpr int kMaxShift = 62; // scale exponents within +-62: a product of two scales stays a normal fp32
// What the packing works out for the kernel (floats at WgLayout::scales()):
// the scales of x and h3 and the factors that undo GEMM1's and GEMM2's.
enum Scale { kSx, kSh, kUndo1, kUndo2, kResidual, kScales };
// h3^T of a warp's 16 rows: K-cores of hi pairs of channels 0-7, their lo
// pairs, hi of 8-15, lo of 8-15; a k16 step's two K-cores lie this many apart.
constexpr int kH3StepCores = 2;
}  // namespace exact

// Packed weights for this kernel: a tile's ring fills in the order the turns
// consume them, kSlotFloats each (so fill i of a tile is simply the slot's
// worth from kSlotFloats i on here: the refill on the turn's critical path is
// one address computation): W1 stages, and with kG2T the W2^T stages between
// them (Turns::fill_of); without kG2T, then the W2 stages in register order;
// then the depthwise records (as PackedLayout::taps).
template <class W>
struct WgLayout {
  // chunks of E; W1 stages per chunk (C in steps of 16, rounded up to whole
  // ring slots: a turn's stages fill whole slots; the extra stages are zeros)
  int64_t nc, nkb;
  __host__ __device__ WgLayout(int64_t C, int64_t E)
      : nc(ceil_div(E, kEChunk)), nkb(round_up(ceil_div(C, kG1StageK), W::kSlotStages)) {}
  // W1 stages (the ring's), chunk by chunk, then W2 stages: per chunk, per
  // half of C, per k-step, GEMM2's A operands in register order (a float4 per
  // thread and m64 block: block-major, then the warpgroup's threads).
  __host__ __device__ int64_t w1_stages() const { return nc * nkb; }
  __host__ __device__ int64_t w2_stages() const { return nc * kWarpgroups * kG2StagesPerChunk; }
  // a tile's ring fills: W1's, and with kG2T W2^T's (a GEMM2 slot's
  // kG2SlotSteps k-steps of a chunk and half of C a fill)
  __host__ __device__ int64_t fills() const {
    return w1_stages() / W::kSlotStages + (W::kG2T ? w2_stages() / W::kG2SlotSteps : 0);
  }
  __host__ __device__ int64_t w2() const { return fills() * W::kSlotFloats; }
  __host__ __device__ int64_t taps() const { return w2() + (W::kG2T ? 0 : w2_stages() * W::kG2StageFloats); }
  // the packing kernel's CTAs: one per fill, and one per W2 stage in registers' order
  __host__ __device__ int64_t pack_blocks() const { return fills() + (W::kG2T ? 0 : w2_stages()); }
  // the exact mode's partial maxima (amax_kernel) and scales (exact::Scale)
  __host__ __device__ int64_t partials() const { return taps() + nc * kEChunk * kTapRecord; }
  __host__ __device__ int64_t scales() const { return partials() + exact::kAmaxBlocks * exact::kQuantities; }
  __host__ __device__ int64_t total_floats() const { return scales() + exact::kScales; }
};

// Named barriers (0 is __syncthreads): per warpgroup, + the warpgroup index.
constexpr int kGroupBarrier = 1;  // the warpgroup's own 128 threads
constexpr int kTokenBarrier = 3;  // "your turn": the other warpgroup arrives, this one syncs
constexpr int kFreeBarrier = 5;   // "your h buffer is free": likewise

// The turns of one tile (see the section comment): nc chunks, nkb W1 stages
// each, n1 ring fills of them a chunk; with g2_steps > 0, GEMM2's W2^T
// through the ring too, g2_steps k-steps a fill, a turn's GEMM2 fills
// before its GEMM1 fills.
struct Turns {
  int nc, nkb, n1, g2_steps;
  __host__ __device__ bool has(int c) const { return c >= 0 && c < nc; }
  __host__ __device__ int count() const { return nc + 3; }
  __host__ __device__ int first_g2(int j) const { return has(j - 3) ? j - 3 : j - 2; }
  __host__ __device__ int g2_stages(int j) const {
    return kG2StagesPerChunk * (static_cast<int>(has(j - 3)) + static_cast<int>(has(j - 2)));
  }
  // chunks c < j with has(c)
  __host__ __device__ int chunks_below(int j) const { return j < 0 ? 0 : j < nc ? j : nc; }
  // ring fills of turn j's GEMM2, and of the turns before j
  __host__ __device__ int g2_fills(int j) const { return g2_steps > 0 ? g2_stages(j) / g2_steps : 0; }
  __host__ __device__ int fill0(int j) const {
    return (g2_steps > 0 ? kG2StagesPerChunk / g2_steps * (chunks_below(j - 3) + chunks_below(j - 2)) : 0) +
           chunks_below(j) * n1;
  }
  // What a tile's ring fill i holds (the packing walks the turns): GEMM2's
  // k-steps first.. of chunk `chunk`, the half of C turn j serves (j % 2), or
  // W1 stages first.. of chunk `chunk`.
  struct Fill {
    bool w2;
    int chunk, half, first;
  };
  __host__ __device__ Fill fill_of(int i) const {
    for (int j = 0; j < count(); ++j) {
      if (i < g2_fills(j)) {
        const int t = i * g2_steps;
        return Fill{true, first_g2(j) + t / kG2StagesPerChunk, j % kWarpgroups, t % kG2StagesPerChunk};
      }
      i -= g2_fills(j);
      if (has(j)) {
        if (i < n1) return Fill{false, j, 0, i * (nkb / n1)};
        i -= n1;
      }
    }
    return Fill{false, nc, 0, 0};  // past the tile's fills: none
  }
};
// The turns of a tile of layout lay (32-bit counts).
template <class W>
__host__ __device__ Turns tile_turns(const WgLayout<W>& lay) {
  const int nkb = static_cast<int>(lay.nkb);
  return Turns{static_cast<int>(lay.nc), nkb, nkb / W::kSlotStages, W::kG2T ? W::kG2SlotSteps : 0};
}

// ---- mbarriers, bulk copies, named barriers --------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Arms `bar` for `bytes` (one arrival) ...
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// ... and copies them from global src to shared dst; the barrier's phase
// completes when they have landed.
__device__ __forceinline__ void bulk_copy(uint32_t dst, const float* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void bulk_load(uint32_t dst, const float* src, uint32_t bytes, uint32_t bar) {
  mbar_expect_tx(bar, bytes);
  bulk_copy(dst, src, bytes, bar);
}
// Waits until the phase of `bar` with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Named barrier kBase + w for warpgroup index w (0 or 1): the ID stays an
// immediate (with IDs in registers ptxas reserves all 16 barriers).
template <int kBase>
__device__ __forceinline__ void named_sync(int w, int threads) {
  if (w == 0)
    asm volatile("bar.sync %0, %1;\n" ::"n"(kBase), "r"(threads) : "memory");
  else
    asm volatile("bar.sync %0, %1;\n" ::"n"(kBase + 1), "r"(threads) : "memory");
}
template <int kBase>
__device__ __forceinline__ void named_arrive(int w, int threads) {
  if (w == 0)
    asm volatile("bar.arrive %0, %1;\n" ::"n"(kBase), "r"(threads) : "memory");
  else
    asm volatile("bar.arrive %0, %1;\n" ::"n"(kBase + 1), "r"(threads) : "memory");
}

// ---- wgmma --------------------------------------------------------------
// Shared-memory matrix descriptor, no swizzle: start address, leading byte
// offset (the next core along K), stride byte offset (the next 8 rows).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t k_core_bytes, uint32_t row_group_bytes) {
  // Fields hold byte values / 16: start in bits 0-13 (an 18-bit shared
  // address), leading offset in bits 16-29, stride offset in bits 32-45.
  return ((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(k_core_bytes >> 4) << 16) |
         (static_cast<uint64_t>(row_group_bytes >> 4) << 32);
}

// A byte offset in a descriptor's address fields (16-byte units). Adding it
// to a descriptor moves its start address: shared addresses stay below 2^18,
// so the 14-bit field never carries into the next.
__host__ __device__ constexpr uint64_t desc_units(uint32_t bytes) { return bytes >> 4; }

// GEMM1's A (W1 in a ring slot) and B (x^T) descriptors.
struct G1Desc {
  uint64_t a, b;
};
// k-step q of a ring slot (its stage q / kG1StepsPerStage, k-step
// q % kG1StepsPerStage in that stage) relative to the slot's descriptors.
template <class W>
__device__ __forceinline__ constexpr G1Desc g1_step(int q) {
  const int h = q / kG1StepsPerStage, ks = q % kG1StepsPerStage;
  return G1Desc{desc_units(h * kStageBytes + ks * (kMmaK / kCoreK) * kCoreBytes),
                desc_units((h * kG1StageK + ks * kMmaK) / kCoreK * W::kXtKCoreBytes)};
}

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most N of this warpgroup's newest wgmma groups are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Keeps the compiler from moving accesses of in-flight wgmma operands (the
// first kCount registers of d, all of them by default) across the wgmma
// fence / wait.
template <int kCount = 0, int N>
__device__ __forceinline__ void fence_operands(float (&d)[N]) {
  static_assert(kCount <= N, "a prefix of d");
#pragma unroll
  for (int i = 0; i < (kCount > 0 ? kCount : N); ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Starts fetching the 128-byte line at a into L1 (no register, so no wgmma
// fence waits for it).
__device__ __forceinline__ void prefetch_l1(const void* a) { asm volatile("prefetch.global.L1 [%0];" ::"l"(a)); }
// Orders this thread's ordinary shared-memory stores before the tensor
// cores' (async proxy) reads of the same bytes.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// The accumulator operands of a wgmma with N/2 fp32 registers per thread, as
// inline-asm operands with constraint `c` ("+f" accumulates, "=f" overwrites).
#define FD_ACC8(c, i)                                                                                  \
  c(d[i]), c(d[i + 1]), c(d[i + 2]), c(d[i + 3]), c(d[i + 4]), c(d[i + 5]), c(d[i + 6]), c(d[i + 7])
#define FD_ACC16(c) FD_ACC8(c, 0), FD_ACC8(c, 8)
#define FD_ACC20(c) FD_ACC16(c), c(d[16]), c(d[17]), c(d[18]), c(d[19])
#define FD_ACC32(c) FD_ACC8(c, 0), FD_ACC8(c, 8), FD_ACC8(c, 16), FD_ACC8(c, 24)
#define FD_ACC36(c) FD_ACC32(c), c(d[32]), c(d[33]), c(d[34]), c(d[35])
#define FD_ACC64(c) FD_ACC32(c), FD_ACC8(c, 32), FD_ACC8(c, 40), FD_ACC8(c, 48), FD_ACC8(c, 56)
#define FD_ACC68(c) FD_ACC64(c), c(d[64]), c(d[65]), c(d[66]), c(d[67])
#define FD_ACC96(c) FD_ACC64(c), FD_ACC8(c, 64), FD_ACC8(c, 72), FD_ACC8(c, 80), FD_ACC8(c, 88)
#define FD_REGS16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define FD_REGS20 FD_REGS16 ", %16, %17, %18, %19"
#define FD_REGS32                                                                                      \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "    \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define FD_REGS36 FD_REGS32 ", %32, %33, %34, %35"
#define FD_REGS64                                                                                      \
  FD_REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, "  \
            "%49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define FD_REGS68 FD_REGS64 ", %64, %65, %66, %67"
#define FD_REGS96                                                                                      \
  FD_REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, "  \
            "%81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"

// The wgmmas of both tiles, overloaded by accumulator size (N / 2 registers
// a thread): GEMM1 m64n136k8 (WgHead) or m64n72k8 (WgWide), GEMM2 m64n128k8
// with A from registers (WgHead) or m64n192k8 transposed (WgWide).
//
// wgmma_ss: D (64 x N, fp32) += A (64 x 8, TF32) * B (8 x N, TF32), both from
// shared memory (descriptors), for one warpgroup. D's layout per warp and n8
// tile matches mma.sync's C fragment: warp w of the warpgroup holds rows
// 16w..16w+15. wgmma_ss_overwrite: the same with D overwritten (scale-d
// false): D's old values are not inputs, so the compiler need not keep them
// alive.
__device__ __forceinline__ void wgmma_ss(float (&d)[68], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n136k8.f32.tf32.tf32 {" FD_REGS68 "}, %68, %69, p, 1, 1;\n}\n"
      : FD_ACC68("+f")
      : "l"(desc_a), "l"(desc_b), "r"(1));
#endif
}
__device__ __forceinline__ void wgmma_ss_overwrite(float (&d)[68], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n136k8.f32.tf32.tf32 {" FD_REGS68 "}, %68, %69, p, 1, 1;\n}\n"
      : FD_ACC68("=f")
      : "l"(desc_a), "l"(desc_b), "r"(0));
#endif
}
__device__ __forceinline__ void wgmma_ss(float (&d)[36], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n72k8.f32.tf32.tf32 {" FD_REGS36 "}, %36, %37, p, 1, 1;\n}\n"
      : FD_ACC36("+f")
      : "l"(desc_a), "l"(desc_b), "r"(1));
#endif
}
__device__ __forceinline__ void wgmma_ss_overwrite(float (&d)[36], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n72k8.f32.tf32.tf32 {" FD_REGS36 "}, %36, %37, p, 1, 1;\n}\n"
      : FD_ACC36("=f")
      : "l"(desc_a), "l"(desc_b), "r"(0));
#endif
}
// GEMM2 transposed (WgWide): y^T (64 positions x 192 channels) += h3^T W2^T.
__device__ __forceinline__ void wgmma_ss(float (&d)[96], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 {" FD_REGS96 "}, %96, %97, p, 1, 1;\n}\n"
      : FD_ACC96("+f")
      : "l"(desc_a), "l"(desc_b), "r"(1));
#endif
}

// wgmma_rs: D (64 x N) += A (64 x 8) * B (8 x N), B from shared memory, A
// from registers: this thread's four elements of A, as CUTLASS's
// ALayout_64x8 places them (thread t = 32 w + 4 g + q of the warpgroup: rows
// 16 w + g and + 8, columns q and q + 4, in the order (g, q), (g + 8, q),
// (g, q + 4), (g + 8, q + 4)). The registers must keep their values until the
// wgmma is complete (wgmma_wait).
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const float4& a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" FD_REGS64 "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
      : FD_ACC64("+f")
      : "r"(__float_as_uint(a.x)), "r"(__float_as_uint(a.y)), "r"(__float_as_uint(a.z)), "r"(__float_as_uint(a.w)),
        "l"(desc_b), "r"(1));
#endif
}
// The same three for the exact mode's fp16 pairs (k16: the same bytes a k-step
// as k8 TF32; both operands K-major, so the transpose flags are 0). A from
// registers: rows 16 w + g and + 8, K pairs (2q, 2q + 1) and + 8, in the
// order (g, 2q), (g + 8, 2q), (g, 2q + 8), (g + 8, 2q + 8), each register
// two fp16 (the lower k in the low half), carried as the bits of a float4.
__device__ __forceinline__ void wgmma_ss_f16(float (&d)[68], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n136k16.f32.f16.f16 {" FD_REGS68 "}, %68, %69, p, 1, 1, 0, 0;\n}\n"
      : FD_ACC68("+f")
      : "l"(desc_a), "l"(desc_b), "r"(1));
#endif
}
__device__ __forceinline__ void wgmma_ss_f16_overwrite(float (&d)[68], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n136k16.f32.f16.f16 {" FD_REGS68 "}, %68, %69, p, 1, 1, 0, 0;\n}\n"
      : FD_ACC68("=f")
      : "l"(desc_a), "l"(desc_b), "r"(0));
#endif
}
__device__ __forceinline__ void wgmma_rs_f16(float (&d)[64], const float4& a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" FD_REGS64 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : FD_ACC64("+f")
      : "r"(__float_as_uint(a.x)), "r"(__float_as_uint(a.y)), "r"(__float_as_uint(a.z)), "r"(__float_as_uint(a.w)),
        "l"(desc_b), "r"(1));
#endif
}
// The 16-bit kernel's wgmmas (wg::h16 below): bf16 or fp16 operands (In), both
// from shared memory, fp32 accumulators; A K-major and 128-byte swizzled, B
// the same or, kTransB, N-major (x by channel on aligned rows). GEMM1
// m64n72k16, GEMM2 m64n64k16; kAcc false overwrites D (whose old values are
// then no input, so the compiler need not keep them alive).
#define FD_WGMMA16(N, REGS, ACC, A, B, T, TYPE, ACCUM)                                                \
  asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, %" #A      \
               ", %" #B ", " #ACCUM ", 1, 1, 0, %" #T ";\n"                                             \
               : ACC                                                                                    \
               : "l"(desc_a), "l"(desc_b), "n"(kTransB ? 1 : 0))
// (the four forms: fp16 or bf16, accumulating or overwriting; B's major-ness
// an immediate operand)
#define FD_WGMMA16_FORMS(N, REGS, ACC, A, B, T)                                     \
  constexpr bool kF16 = std::is_same_v<In, __half>;                                 \
  if constexpr (kF16 && kAcc) FD_WGMMA16(N, REGS, ACC("+f"), A, B, T, "f16", 1);    \
  if constexpr (kF16 && !kAcc) FD_WGMMA16(N, REGS, ACC("=f"), A, B, T, "f16", 0);   \
  if constexpr (!kF16 && kAcc) FD_WGMMA16(N, REGS, ACC("+f"), A, B, T, "bf16", 1);  \
  if constexpr (!kF16 && !kAcc) FD_WGMMA16(N, REGS, ACC("=f"), A, B, T, "bf16", 0)
template <class In, bool kAcc, bool kTransB = false>
__device__ __forceinline__ void wgmma16(float (&d)[36], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  FD_WGMMA16_FORMS(72, FD_REGS36, FD_ACC36, 36, 37, 38);
#endif
}
template <class In, bool kAcc, bool kTransB = false>
__device__ __forceinline__ void wgmma16(float (&d)[32], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  FD_WGMMA16_FORMS(64, FD_REGS32, FD_ACC32, 32, 33, 34);
#endif
}
// The narrow tile (C <= 384): GEMM1 m64n40k16, GEMM2 m64n32k16.
template <class In, bool kAcc, bool kTransB = false>
__device__ __forceinline__ void wgmma16(float (&d)[20], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  FD_WGMMA16_FORMS(40, FD_REGS20, FD_ACC20, 20, 21, 22);
#endif
}
template <class In, bool kAcc, bool kTransB = false>
__device__ __forceinline__ void wgmma16(float (&d)[16], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  FD_WGMMA16_FORMS(32, FD_REGS16, FD_ACC16, 16, 17, 18);
#endif
}
#undef FD_WGMMA16_FORMS
#undef FD_WGMMA16
// GEMM1's bias step: A (64 x 16) from registers (rows 16 w + g and + 8, k
// pairs 2q and 2q + 8, as for wgmma_rs_f16), B from shared memory.
#define FD_WGMMA16_RS(N, REGS, ACC, OPS, TYPE)                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                           \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, " OPS      \
               ", p, 1, 1, 0;\n}\n"                                                                    \
               : ACC("+f")                                                                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b))
#define FD_WGMMA16_RS_FORMS(N, REGS, ACC, OPS)                          \
  if constexpr (std::is_same_v<In, __half>)                             \
    FD_WGMMA16_RS(N, REGS, ACC, OPS, "f16");                            \
  else                                                                  \
    FD_WGMMA16_RS(N, REGS, ACC, OPS, "bf16")
template <class In>
__device__ __forceinline__ void wgmma16_rs(float (&d)[36], const uint32_t (&a)[4], uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  FD_WGMMA16_RS_FORMS(72, FD_REGS36, FD_ACC36, "{%36, %37, %38, %39}, %40");
#endif
}
template <class In>
__device__ __forceinline__ void wgmma16_rs(float (&d)[20], const uint32_t (&a)[4], uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  FD_WGMMA16_RS_FORMS(40, FD_REGS20, FD_ACC20, "{%20, %21, %22, %23}, %24");
#endif
}
#undef FD_WGMMA16_RS_FORMS
#undef FD_WGMMA16_RS
#undef FD_ACC8
#undef FD_ACC16
#undef FD_ACC20
#undef FD_ACC32
#undef FD_ACC36
#undef FD_ACC64
#undef FD_ACC68
#undef FD_ACC96
#undef FD_REGS16
#undef FD_REGS20
#undef FD_REGS32
#undef FD_REGS36
#undef FD_REGS64
#undef FD_REGS68
#undef FD_REGS96

// ---- the exact mode: fp16 pairs --------------------------------------------------
// With TF32 off (Params::tf32 false) the wgmma kernel runs each GEMM on fp16
// pairs: an fp32 operand v, scaled by a power of two s (below), is hi =
// fp16(s v) and lo = fp16(s v - hi), 22 significant bits between them (3xTF32
// keeps as many), and a product a b is ah bh + ah bl + al bh (fp16 products
// are exact in the fp32 accumulators; al bl, ~2^-22 of a b, is left out, as
// 3xTF32 leaves it out). A pair takes the bytes of one fp32 and a k16 wgmma
// those of a k8 TF32 one at twice its rate, so x^T, h3^T and the ring keep
// their sizes and the three products cost 1.5 TF32 passes of tensor time.
// (3xTF32 on wgmma needs x's and h3's low parts in shared memory beside
// them, which do not fit at T = 128; kernels/NOTES.md.)
//
// fp16 has 5 exponent bits: hi overflows at 65520 and loses bits below
// 2^-14, so every operand is scaled by a power of two (exact) that puts its
// largest magnitude in [2^14, 2^15): values from there down to 2^-3 keep all
// 22 bits, and below that the absolute error stays under 2^-25 in scaled
// units, 2^-40 of the largest. The scales are per tensor, from maxima one
// kernel (amax_kernel) takes before the packing: x, W1, W2 by their own
// maxima; h3 (made in the kernel) by a bound, |h3| <= |h2| <= K max|wd| (C
// max|W1| max|x| + max|b1|) + max|bd|, which is loose (by about 2^5 to 2^7
// for PyTorch's default initialisation, estimated, not measured) but needs no
// pass over h3 and costs nothing while it is below 2^18. The products come out scaled by
// 2^(k1 + kx) (GEMM1) and 2^(k2 + kh) (GEMM2) and are scaled back in fp32.

// fp16 pairs of two fp32 values (a in the low half: the lower k index), by
// round-to-nearest; and back.
__device__ __forceinline__ uint32_t f16x2(float a, float b) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}
__device__ __forceinline__ float2 f16x2_value(uint32_t h) {
  float2 v;
  asm("{\n.reg .f16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}\n"
      : "=f"(v.x), "=f"(v.y)
      : "r"(h));
  return v;
}
// The hi and lo fp16 pairs of (a, b).
struct F16Pair {
  uint32_t hi, lo;
};
__device__ __forceinline__ F16Pair split_f16(float a, float b) {
  const uint32_t hi = f16x2(a, b);
  const float2 h = f16x2_value(hi);
  return F16Pair{hi, f16x2(a - h.x, b - h.y)};
}
// |v| where finite, else 0.
__device__ __forceinline__ float finite_abs(float v) { return fabsf(v) < INFINITY ? fabsf(v) : 0.0f; }
// Partial maxima of |value| over x, W1, b1, wd, bd and W2, one per CTA and
// quantity: partials[q * kAmaxBlocks + CTA]. Infinities and NaNs are passed
// over: they reach y through the arithmetic as they reach the reference's (an
// infinity taken into the maximum would scale every finite value to 0).
__global__ void __launch_bounds__(exact::kAmaxThreads) amax_kernel(Params p, float* partials) {
  using namespace exact;
  float m[kQuantities] = {};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nx = p.B * p.C * p.L;
  const float* const x = in_ptr<float>(p.x);  // the exact mode: fp32 only
  int64_t from = 0;  // x by 16-byte loads where it is 16-byte aligned
  if (reinterpret_cast<uintptr_t>(x) % sizeof(float4) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (int64_t i = first; i < nx / kVec; i += stride) {
      const float4 v = __ldcs(x4 + i);
      m[kX] = fmaxf(m[kX], fmaxf(fmaxf(finite_abs(v.x), finite_abs(v.y)), fmaxf(finite_abs(v.z), finite_abs(v.w))));
    }
    from = nx / kVec * kVec;
  }
  for (int64_t i = from + first; i < nx; i += stride) m[kX] = fmaxf(m[kX], finite_abs(__ldcs(x + i)));
  auto over = [&](Quantity q, const void* a, int64_t n) {
    for (int64_t i = first; i < n; i += stride) m[q] = fmaxf(m[q], finite_abs(__ldg(in_ptr<float>(a) + i)));
  };
  over(kW1, p.w1, p.E * p.C);
  over(kB1, p.b1, p.E);
  over(kWd, p.wd, p.E * p.K);
  over(kBd, p.bd, p.E);
  over(kW2, p.w2, p.C * p.E);
  __shared__ float warp_max[kAmaxThreads / kWarpSize][kQuantities];
#pragma unroll
  for (int q = 0; q < kQuantities; ++q) {
    for (int o = kWarpSize / 2; o > 0; o /= 2) m[q] = fmaxf(m[q], __shfl_xor_sync(0xffffffffu, m[q], o));
    if (threadIdx.x % kWarpSize == 0) warp_max[threadIdx.x / kWarpSize][q] = m[q];
  }
  __syncthreads();
  if (threadIdx.x < kQuantities) {
    float v = 0.0f;
    for (int w = 0; w < kAmaxThreads / kWarpSize; ++w) v = fmaxf(v, warp_max[w][threadIdx.x]);
    partials[threadIdx.x * kAmaxBlocks + blockIdx.x] = v;
  }
}

// The exponent k that puts m's largest power of two at 2^(kTopExp - 1):
// 2^k m in [2^14, 2^15), within +-kMaxShift; 0 for m = 0 (or NaN),
// -kMaxShift for m = inf.
__device__ __forceinline__ int scale_exp(double m) {
  using namespace exact;
  if (!(m > 0.0)) return 0;
  int e = 0;
  frexp(m, &e);  // m in [2^(e-1), 2^e); inf gives a huge e
  const int k = m < INFINITY ? kTopExp - e : -kMaxShift;
  return k < -kMaxShift ? -kMaxShift : k > kMaxShift ? kMaxShift : k;
}
// The scale exponents, from the partial maxima (by the whole CTA: every
// thread must call it; the result in every thread).
struct ScaleExps {
  int kx, k1, k2, kh;
};
__device__ ScaleExps scale_exps(const Params& p, const float* partials) {
  using namespace exact;
  __shared__ float m[kQuantities];
  if (threadIdx.x < kQuantities) {
    float v = 0.0f;
    for (int b = 0; b < kAmaxBlocks; ++b) v = fmaxf(v, partials[threadIdx.x * kAmaxBlocks + b]);
    m[threadIdx.x] = v;
  }
  __syncthreads();
  const double h3_bound =
      static_cast<double>(p.K) * m[kWd] * (static_cast<double>(p.C) * m[kW1] * m[kX] + m[kB1]) + m[kBd];
  const ScaleExps s{scale_exp(m[kX]), scale_exp(m[kW1]), scale_exp(m[kW2]), scale_exp(h3_bound)};
  __syncthreads();  // m is read by all before any thread leaves (a later call reuses it)
  return s;
}

// ---- weight packing ----------------------------------------------------------
// One CTA per ring fill of a tile (WgLayout's order), then (without kG2T) one
// per W2 stage. W1 stage: [64 e][16 c] of a chunk in core matrices; W2^T
// stage (kG2T): [kG2Rows c][8 e] of a half and a chunk in core matrices, K-core
// by K-core (GEMM2's B); W2 stage: [kG2Rows c][8 e] of a half and a chunk in
// register order (wgmma_rs's A, block by block). All TF32-rounded, zero
// outside the matrices and in a fill's unused tail.
// kExact (the fp16 pairs, WgHead only): a W1 stage's 16 k-columns of 32 bits
// are the hi pairs of its 16 channels, then their lo pairs (core_k 0-7 and
// 8-15: two k16 steps' A); a chunk's 8 W2 stages are, for each warp's 16
// channels, one k16 step's A of their hi pairs, then of their lo pairs.
// CTA 0 also writes the kernel's scales.
template <class W, bool kExact, class In>
__global__ void __launch_bounds__(kPackThreads) pack_weights_kernel(Params p) {
  static_assert(!kExact || !W::kG2T, "the exact mode's GEMM2 takes W2 from registers");
  static_assert(!kExact || std::is_same_v<In, float>, "the exact mode: fp32 only");
  const In* const w1 = in_ptr<In>(p.w1);
  const In* const w2 = in_ptr<In>(p.w2);
  const WgLayout<W> lay(p.C, p.E);
  const int64_t i = blockIdx.x;
  float s1 = 1.0f, s2 = 1.0f;  // W1's and W2's scales
  if constexpr (kExact) {
    const ScaleExps k = scale_exps(p, p.workspace + lay.partials());
    s1 = ldexpf(1.0f, k.k1);
    s2 = ldexpf(1.0f, k.k2);
    if (i == 0 && threadIdx.x == 0) {
      float* out = p.workspace + lay.scales();
      out[exact::kSx] = ldexpf(1.0f, k.kx);
      out[exact::kSh] = ldexpf(1.0f, k.kh);
      out[exact::kUndo1] = ldexpf(1.0f, -(k.k1 + k.kx));
      out[exact::kUndo2] = ldexpf(1.0f, -(k.k2 + k.kh));
      out[exact::kResidual] = ldexpf(1.0f, k.k2 + k.kh);
    }
  }
  // element (row, col) of an [rows, cols] matrix scaled by s, 0 outside it
  auto at = [](const In* m, int64_t rows, int64_t cols, int64_t row, int64_t col, float s) {
    return row < rows && col < cols ? Elem<In>::to_float(m[row * cols + col]) * s : 0.0f;
  };
  // the hi (part 0) or lo (part 1) fp16 pair of (a, b), as a float's bits
  auto pair = [](float a, float b, int part) {
    const F16Pair h = split_f16(a, b);
    return __uint_as_float(part == 0 ? h.hi : h.lo);
  };
  if (i < lay.fills()) {
    float* dst = p.workspace + i * W::kSlotFloats;
    const Turns::Fill f = tile_turns(lay).fill_of(static_cast<int>(i));
    for (int r = threadIdx.x; r < W::kSlotFloats; r += blockDim.x) {
      float v = 0.0f;
      if (!f.w2 && r < W::kSlotStages * kStageFloats) {
        const int rs = r % kStageFloats;
        const int64_t e = static_cast<int64_t>(f.chunk) * kEChunk + core_row(rs, kG1StageK);
        const int64_t c0 = static_cast<int64_t>(f.first + r / kStageFloats) * kG1StageK;
        const int k = core_k(rs, kG1StageK);
        if constexpr (kExact) {
          constexpr int kPairs = kG1StageK / 2;  // the stage's hi pairs, then its lo pairs
          const int64_t c = c0 + 2 * (k % kPairs);
          v = pair(at(w1, p.E, p.C, e, c, s1), at(w1, p.E, p.C, e, c + 1, s1), k / kPairs);
        } else {
          v = tf32_round(at(w1, p.E, p.C, e, c0 + k, 1.0f));
        }
      } else if (f.w2 && r < W::kG2SlotSteps * W::kG2StageFloats) {
        constexpr int kKCoreFloats = W::kG2Rows * kCoreK;  // a K-core: kG2Rows rows of 4
        const int o = r % W::kG2StageFloats, n = o % kKCoreFloats / kCoreK, k = o / kKCoreFloats * kCoreK + o % kCoreK;
        const int64_t c = static_cast<int64_t>(f.half) * W::kG2Rows + n;
        const int64_t e = static_cast<int64_t>(f.chunk) * kEChunk + (f.first + r / W::kG2StageFloats) * kMmaK + k;
        v = tf32_round(at(w2, p.C, p.E, c, e, 1.0f));
      }
      dst[r] = v;
    }
  } else {
    const int64_t i2 = i - lay.fills();  // (chunk, half, step)
    float* dst = p.workspace + lay.w2() + i2 * W::kG2StageFloats;
    const int64_t chunk = i2 / (kWarpgroups * kG2StagesPerChunk), half = i2 / kG2StagesPerChunk % kWarpgroups;
    const int step = static_cast<int>(i2 % kG2StagesPerChunk);
    for (int r = threadIdx.x; r < W::kG2StageFloats; r += blockDim.x) {
      const int v4 = r % kVec, t = r / kVec % kWarpgroupThreads, m = r / (kVec * kWarpgroupThreads);
      const int lane = t % kWarpSize, row = m * kWgmmaM + t / kWarpSize * kMmaM + lane / 4 + (v4 % 2) * kCoreRows;
      const int64_t c = half * W::kG2Rows + row;
      if constexpr (kExact) {
        // step 2w + part: the k16 step of the chunk's channels 16w.. (the rows
        // of warp w of the owner), its hi (part 0) or lo pairs (kk, kk + 1)
        const int kk = 2 * (lane % 4) + (v4 / 2) * kMmaK;
        const int64_t e = chunk * kEChunk + step / 2 * kDwRows + kk;
        dst[r] = pair(at(w2, p.C, p.E, c, e, s2), at(w2, p.C, p.E, c, e + 1, s2), step % 2);
      } else {
        const int k = lane % 4 + (v4 / 2) * kCoreK;
        dst[r] = tf32_round(at(w2, p.C, p.E, c, chunk * kEChunk + step * kMmaK + k, 1.0f));
      }
    }
  }
  pack_taps<In>(p, p.workspace + lay.taps(), lay.nc * kEChunk);
}

// The lane index through volatile asm: values worked out from it inside a
// loop then stay there, instead of being hoisted out and held in registers
// across the loop.
__device__ __forceinline__ int lane_id() {
  int i;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(i));
  return i;
}
// v, through volatile asm: what is worked out from it is worked out where
// used, not hoisted out of loops and held.
__device__ __forceinline__ int opaque(int v) {
  asm volatile("" : "+r"(v));
  return v;
}

// ---- x^T staging ----------------------------------------------------------------
// x^T of a tile (positions xcol0.. of batch row xb, every channel), TF32-rounded,
// staged by kStageWarps warps: stage_x_copies issues the copies (sw: this
// warp's index among the stagers); once every stager's copies have landed
// (the caller waits and synchronises), round_x rounds x^T in place.
//
// 4-byte cp.async straight into the transposed layout (lanes along
// positions: coalesced reads), zeros outside [0, L) and past C. Synchronous
// loads here left the SM idle for ~40% of the kernel (ncu), the copies in
// flight being too few; so did float4 loads transposed in registers (4 blocks
// in flight a thread: 25k cycles a tile against 19k; in the persistent kernel
// 6-13% slower). No L2 prefetch of the next tile's x either: before the
// kernel was persistent and in it, 2-5% slower (kernels/NOTES.md, v12).
//
// A lane copies columns lane + 32k of every row: their shared-memory offsets
// and whether they lie inside [0, L) are worked out once, and the source
// address stays valid without a select (channels past C read row C-1, cut
// columns the tile's first position inside the row, both with zero bytes
// copied; offsets from that position stay small), so that a copy costs
// about five instructions (worked out per copy, the 64-bit position tests
// and the core offset took ~26 instructions a 4-byte copy, ncu).
template <class W, int kStageWarps>
__device__ __forceinline__ void stage_x_copies(uint32_t xt_smem, const float* xb, int C, int64_t L, int c16,
                                               int64_t xcol0, int sw) {
  // (Through lane_id(): from a lane index computed once, the column offsets
  // below were hoisted out of the persistent kernel's tile loop and held
  // through the depthwise, where they made ptxas spill.)
  const int lane = lane_id();
  constexpr int kNX = W::kNX, kColsPerLane = W::kXtColsPerLane;
  uint32_t col_smem[kColsPerLane];  // byte offset of (column n, channel 0) in x^T
  uint32_t col_byte[kColsPerLane];  // byte offset of the column from position pos0, 0 where it is cut
  bool col_in[kColsPerLane];        // inside [0, L) (and a column of the tile)
  const int64_t pos0 = xcol0 < 0 ? 0 : xcol0;
#pragma unroll
  for (int k = 0; k < kColsPerLane; ++k) {
    const int n = lane + k * kWarpSize;
    const int64_t pos = xcol0 + n;
    col_in[k] = n < kNX && pos >= 0 && pos < L;
    col_smem[k] = W::xt_offset(n, 0) * sizeof(float);
    col_byte[k] = col_in[k] ? static_cast<uint32_t>(pos - pos0) * sizeof(float) : 0;
  }
  for (int c = sw; c < c16; c += kStageWarps) {
    const char* row = reinterpret_cast<const char*>(xb + static_cast<int64_t>(c < C ? c : C - 1) * L + pos0);
    const uint32_t row_smem = xt_smem + W::xt_offset(0, c) * sizeof(float);
#pragma unroll
    for (int k = 0; k < kColsPerLane; ++k) {
      if (k < kColsPerLane - 1 || lane + k * kWarpSize < kNX)
        cp_async_4_zfill_shared(row_smem + col_smem[k], row + col_byte[k], c < C && col_in[k]);
    }
  }
  cp_async_commit();
}

// Over all of x^T (the channels from c16 on are never read; bounding the
// pass by c16 made ptxas spill). kRoundBatch loads before their stores: one
// at a time, the loop waited out a shared-memory round trip per float4
// (~4.5k cycles a tile). tid: the thread's index among the kStageThreads.
template <class W, int kStageThreads>
__device__ __forceinline__ void round_x(float* xt, int tid) {
  constexpr int kXtVectors = W::kXtVectors, kRoundBatch = W::kRoundBatch;
  static_assert(kXtVectors % (kRoundBatch * kStageThreads) == 0, "whole batches");
  float4* const xt4 = reinterpret_cast<float4*>(xt);
  for (int i0 = tid; i0 < kXtVectors; i0 += kRoundBatch * kStageThreads) {
    float4 v[kRoundBatch];
#pragma unroll
    for (int u = 0; u < kRoundBatch; ++u) v[u] = xt4[i0 + u * kStageThreads];
#pragma unroll
    for (int u = 0; u < kRoundBatch; ++u)
      xt4[i0 + u * kStageThreads] =
          make_float4(tf32_round(v[u].x), tf32_round(v[u].y), tf32_round(v[u].z), tf32_round(v[u].w));
  }
}

// x^T by 16-byte copies, where x's rows are 16-byte aligned (L % 4 == 0 and x
// itself 16-byte aligned; a tile's columns start at a multiple of 4, so each
// 16-byte piece lies wholly inside [0, L) or wholly outside). The 4-byte
// copies above cost the SM ~18 cycles a warp instruction: ~20k cycles to
// issue a tile's, on the critical path at the tile boundary (clock trace,
// kernels/NOTES.md). These are a quarter as many instructions.
//
// A 16-byte copy cannot transpose: the copies land x's rows as they lie,
// [4 channels][kNX positions] a K-core, and each warp then turns its own run
// of K-cores around into x^T's order, rounding to TF32 on the way (no round_x
// pass). Turned around in place, a K-core would need all its values in
// registers across a __syncwarp between its reads and its writes (that made
// ptxas spill in the tile loop, and without the __syncwarp it is a race
// between lanes: kernels/NOTES.md, v13). Instead K-core kc lands one region
// on, in region kc + 1, and step kc reads it there and writes region kc,
// whose landed K-core (kc - 1) the step before read: a cyclic shift over the
// warp's run, whose last K-core lands in the run's first region and is held
// in registers until the end. All of it within one warp, ordered by
// __syncwarp.
// The columns n = lane + 32 j of a landed K-core (kc: its index) as fp32:
// channel k at k kNX + n, as In; with kWords (see stage_x_16) at k (kNX + 2)
// + n + the row's shift, and 0 outside [0, L) (par0: stage_x_16's).
template <class W, bool kWords, class In>
__device__ __forceinline__ void load_landed(const float* region, int lane, int kc, int par0, int64_t L,
                                            int64_t xcol0, float (&v)[W::kXtColsPerLane][kCoreK]) {
  constexpr int kRow = kWords ? W::kNX + 2 : W::kNX;  // landed values a row
  const In* const landed = reinterpret_cast<const In*>(region);
#pragma unroll
  for (int j = 0; j < W::kXtColsPerLane; ++j) {
    const int n = lane + j * kWarpSize;
    const int64_t pos = xcol0 + n;
    const bool inside = kWords ? n < W::kNX && pos >= 0 && pos < L : j + 1 < W::kXtColsPerLane || n < W::kNX;
#pragma unroll
    for (int k = 0; k < kCoreK; ++k) {
      // (kWords: the row's first pair starts one position early)
      const int shift = kWords ? (par0 + static_cast<int>((kc * kCoreK + k) * (L & 1))) & 1 : 0;
      v[j][k] = inside ? Elem<In>::to_float(landed[k * kRow + n + shift]) : 0.0f;
    }
  }
}
// ... written to a K-core region in x^T's order (column n's 4 channels at 4n),
// TF32-rounded (kRound) or as they are.
template <class W, bool kRound>
__device__ __forceinline__ void store_turned(float* region, int lane,
                                             const float (&v)[W::kXtColsPerLane][kCoreK]) {
  auto r = [](float x) { return kRound ? tf32_round(x) : x; };
#pragma unroll
  for (int j = 0; j < W::kXtColsPerLane; ++j) {
    const int n = lane + j * kWarpSize;
    if (j + 1 < W::kXtColsPerLane || n < W::kNX)
      *reinterpret_cast<float4*>(region + n * kCoreK) = make_float4(r(v[j][0]), r(v[j][1]), r(v[j][2]), r(v[j][3]));
  }
}
// 16-bit x: 8-byte copies of 4 positions (x's rows 8-byte aligned), landing
// in the first half of each region, and the same turn-around, widening.
// kWords (16-bit x in rows of any alignment, e.g. odd L): 4-byte copies of
// the aligned pairs that cover each row's kNX positions (kNX / 2 + 1 of
// them, from one position early where the row starts at an odd element),
// landed kNX + 2 values a row; the turn-around skips that position and
// zeroes the positions outside [0, L), which a pair at a row's end brings
// in from the row before or after. (By loads instead: 1.02 ms at a jittered
// bf16 shape against 0.49 at the headline, H200.)
template <class W, int kStageWarps, bool kRound, bool kWords, class In>
__device__ __forceinline__ void stage_x_16(float* xt, const In* xb, int C, int64_t L, int c16, int64_t xcol0,
                                           int sw) {
  static_assert(!kWords || sizeof(In) == 2, "pairs of 16-bit values");
  constexpr int kPieceValues = kWords ? 2 : kVec;
  constexpr uint32_t kPieceBytes = kPieceValues * sizeof(In);
  constexpr int kNX = W::kNX, kXtKCoreFloats = W::kXtKCoreFloats, kXtColsPerLane = W::kXtColsPerLane;
  constexpr int kGranules = kWords ? kNX / 2 + 1 : W::kXtGranules;  // pieces a landed row
  constexpr int kRow = kGranules * kPieceValues;                     // values a landed row
  constexpr int kKCoreGranules = kCoreK * kGranules;
  static_assert(kWords || kKCoreGranules == W::kXtKCoreGranules, "the 16-byte pieces");
  static_assert(kCoreK * kRow * sizeof(In) <= kXtKCoreFloats * sizeof(float), "a landed K-core fits its region");
  static_assert(kRow == (kWords ? kNX + 2 : kNX), "load_landed's rows");
  const int lane = lane_id();
  const int run = c16 / kCoreK / kStageWarps;  // this warp's K-cores: kc0 .. kc0 + run - 1
  const int kc0 = sw * run;
  const uint32_t xt_smem = smem_u32(xt);
  // kWords: the element parity of row 0's position xcol0 (row c's: + c L)
  const int par0 = static_cast<int>((reinterpret_cast<uintptr_t>(xb) / sizeof(In) + xcol0) & 1);
  for (int i = lane; i < run * kKCoreGranules; i += kWarpSize) {
    const int r = i / kKCoreGranules, k = i % kKCoreGranules / kGranules, piece = i % kGranules;
    const int c = (kc0 + r) * kCoreK + k;
    const int shift = kWords ? (par0 + static_cast<int>(c * (L & 1))) & 1 : 0;
    const int64_t pos = xcol0 - shift + piece * kPieceValues;  // the piece's first position
    const bool valid = c < C && pos + kPieceValues - 1 >= 0 && pos < L;
    const int region = r + 1 < run ? kc0 + r + 1 : kc0;
    constexpr int kPerFloat = sizeof(float) / sizeof(In);  // In values a float's bytes hold
    const uint32_t dst = xt_smem + (region * kXtKCoreFloats * kPerFloat + k * kRow + piece * kPieceValues) * sizeof(In);
    const In* const src = valid ? xb + c * L + pos : xb;
    if constexpr (kPieceBytes == 16) cp_async_16_zfill_shared(dst, src, valid);
    else if constexpr (kPieceBytes == 8) cp_async_8_zfill_shared(dst, src, valid);
    else cp_async_4_zfill_shared(dst, src, valid);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncwarp();
  float held[kXtColsPerLane][kCoreK];
  load_landed<W, kWords, In>(xt + kc0 * kXtKCoreFloats, lane, kc0 + run - 1, par0, L, xcol0, held);
  for (int r = 0; r + 1 < run; ++r) {
    __syncwarp();  // region kc0 + r's landed K-core was read in the step before
    float v[kXtColsPerLane][kCoreK];
    load_landed<W, kWords, In>(xt + (kc0 + r + 1) * kXtKCoreFloats, lane, kc0 + r, par0, L, xcol0, v);
    store_turned<W, kRound>(xt + (kc0 + r) * kXtKCoreFloats, lane, v);
  }
  __syncwarp();
  store_turned<W, kRound>(xt + (kc0 + run - 1) * kXtKCoreFloats, lane, held);
}

// The exact mode's x^T: from fp32 in x^T's order to fp16 pairs, in place,
// W1 stage by W1 stage (16 channels, 4 K-cores): a position's 16 values
// scaled by sx become the hi pairs of channels 0-7 and 8-15 (K-cores 0, 1),
// then their lo pairs (K-cores 2, 3), as the packed W1 stages' A (GEMM1 takes
// k16 steps of both). Over the channels below c16, after every stager's
// values have landed.
template <class W, int kStageThreads>
__device__ __forceinline__ void split_x(float* xt, int tid, int c16, float sx) {
  constexpr int kNX = W::kNX, kKCores = kG1StageK / kCoreK;
  static_assert(kKCores == 4, "a stage's 16 values: 4 K-cores in, 2 hi and 2 lo out");
  const int items = c16 / kG1StageK * kNX;  // (stage, position), positions fastest: conflict-free
#pragma unroll 2
  for (int i = tid; i < items; i += kStageThreads) {
    float* const at = xt + (i / kNX) * kKCores * W::kXtKCoreFloats + (i % kNX) * kCoreK;
    float4 v[kKCores];
#pragma unroll
    for (int c = 0; c < kKCores; ++c) v[c] = *reinterpret_cast<const float4*>(at + c * W::kXtKCoreFloats);
    F16Pair h[kKCores * 2];  // channel pairs (0, 1) .. (14, 15)
#pragma unroll
    for (int c = 0; c < kKCores; ++c) {
      h[2 * c] = split_f16(v[c].x * sx, v[c].y * sx);
      h[2 * c + 1] = split_f16(v[c].z * sx, v[c].w * sx);
    }
    uint4* const out = reinterpret_cast<uint4*>(at);
    constexpr int kCoreStride = W::kXtKCoreFloats / kVec;  // uint4s between K-cores
    out[0 * kCoreStride] = make_uint4(h[0].hi, h[1].hi, h[2].hi, h[3].hi);
    out[1 * kCoreStride] = make_uint4(h[4].hi, h[5].hi, h[6].hi, h[7].hi);
    out[2 * kCoreStride] = make_uint4(h[0].lo, h[1].lo, h[2].lo, h[3].lo);
    out[3 * kCoreStride] = make_uint4(h[4].lo, h[5].lo, h[6].lo, h[7].lo);
  }
}

// x^T of a tile by kStageWarps warps (sw: this warp's index among them): by
// 16-byte copies where x16 (stage_x_16: each warp turns its own K-cores
// around), else by 4-byte copies and, once every stager's have landed
// (sync: the stagers' barrier), round_x over all of x^T. kExact: either way
// unrounded, then (after sync) split_x into fp16 pairs scaled by sx. 16-bit
// x: stage_x_16 either way, 8-byte copies where x16, else 4-byte copies of
// aligned pairs; its values need no rounding. The caller fences the result
// for the tensor cores.
template <class W, int kStageWarps, bool kExact, class In, class Sync>
__device__ __forceinline__ void stage_x(float* xt, uint32_t xt_smem, const In* xb, int C, int64_t L, int c16,
                                        int64_t xcol0, int sw, int tid, bool x16, float sx, Sync sync) {
  constexpr bool kFloat = std::is_same_v<In, float>;
  if (x16) {
    stage_x_16<W, kStageWarps, kFloat && !kExact, false>(xt, xb, C, L, c16, xcol0, sw);
    if constexpr (kExact) sync();
  } else if constexpr (!kFloat) {
    stage_x_16<W, kStageWarps, false, true>(xt, xb, C, L, c16, xcol0, sw);
  } else {
    stage_x_copies<W, kStageWarps>(xt_smem, xb, C, L, c16, xcol0, sw);
    cp_async_wait<0>();
    sync();
    if constexpr (!kExact) round_x<W, kStageWarps * kWarpSize>(xt, tid);
  }
  if constexpr (kExact) split_x<W, kStageWarps * kWarpSize>(xt, tid, c16, sx);
}

// ---- the residual and the epilogue ----------------------------------------------
// The kG2Rows output channels a warpgroup accumulates (`half` of them) sit in
// its fragments as mma.sync's C layout: lane (g, q) of warp wq holds, for m64
// block m and n8 tile nt, channels 16 wq + g and + 8, positions 8 nt + 2q
// and + 1. The accumulators start each tile at x (init_acc: loads straight
// into them, nothing waits on them before the tile's first turn ends, which
// uses acc1 only), and store_y writes y = acc + b2. With x loaded at the end
// instead, the epilogue took ~12-15k cycles a tile on the critical path
// (clock traces; leaving it out saved ~11% of the kernel, kernels/NOTES.md).
constexpr int kQuad = 4;  // lanes of a quad hold one row's 8 columns of an n8 tile
// a0, a1 = x at p, p + 1: one 8-byte load (pair), else each alone where ok0 /
// ok1, else unchanged. Predicated, not branched: with the accumulators
// defined in branches ptxas serialised every wgmma of the kernel (C7515).
__device__ __forceinline__ void load_x_pair(float& a0, float& a1, const float* p, bool pair, bool ok0, bool ok1) {
  asm volatile(
      "{\n.reg .pred p, q, r;\nsetp.ne.b32 p, %3, 0;\nsetp.ne.b32 q, %4, 0;\nsetp.ne.b32 r, %5, 0;\n"
      "@p ld.global.nc.v2.f32 {%0, %1}, [%2];\n@q ld.global.nc.f32 %0, [%2];\n@r ld.global.nc.f32 %1, [%2+4];\n}\n"
      : "+f"(a0), "+f"(a1)
      : "l"(p), "r"(static_cast<int>(pair)), "r"(static_cast<int>(ok0)), "r"(static_cast<int>(ok1)));
}
// a = x at p where ok, else unchanged (predicated, as load_x_pair).
__device__ __forceinline__ void load_x_one(float& a, const float* p, bool ok) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %2, 0;\n@p ld.global.nc.f32 %0, [%1];\n}\n"
               : "+f"(a)
               : "l"(p), "r"(static_cast<int>(ok)));
}
// GEMM2 transposed (kG2T): the fragments hold y^T, lane (g, q) of warp wq
// positions 16 wq + g and + 8, channels 8 nt + 2q and + 1 of the
// warpgroup's half: for a fixed register, the 8 lanes of each q run along
// positions (32 bytes of a row of x or y a channel), so every access is 4
// bytes and needs no alignment.
// G2TLane: a lane's elements as offsets into x or y. Element i is channel
// c0 + channel(i) (its column of y^T), position t0 + pos + position(i) (its
// row); the offsets step from one base by multiples of L: worked out as
// (b C + c) L + t per element they cost ~15 dependent instructions each
// (SASS) on the tile boundary's critical path (kernels/NOTES.md, v19).
struct G2TLane {
  int c0, C;
  int64_t base, L;  // offset of element 0; row stride
  bool t_ok[2];     // positions pos and pos + 8 inside the row
  // The lane's channels: 2 a n8 tile, element i's is number slot(i).
  __device__ __forceinline__ static int slot(int i) { return i / 4 * 2 + i % 2; }
  __device__ __forceinline__ static int slot_channel(int k) { return k / 2 * kMmaN + k % 2; }
  __device__ __forceinline__ static int channel(int i) { return slot_channel(slot(i)); }
  __device__ __forceinline__ static int position(int i) { return i % 4 / 2 * 8; }
  __device__ __forceinline__ G2TLane(int C_, int64_t L_, int64_t b, int64_t t0, int cbase, int wq, int g, int q)
      : c0(cbase + 2 * q), C(C_), L(L_) {
    const int pos = wq * kMmaM + g;
    base = (b * C + c0) * L + t0 + pos;
    t_ok[0] = t0 + pos < L;
    t_ok[1] = t0 + pos + 8 < L;
  }
  __device__ __forceinline__ bool ok(int i) const { return c0 + channel(i) < C && t_ok[i % 4 / 2]; }
  __device__ __forceinline__ int64_t offset(int i) const {
    return base + static_cast<int64_t>(i / 4 * kMmaN) * L + (i % 2 == 1 ? L : 0) + position(i);
  }
};

// 16-bit x: zeros here, and store_y adds x. (Loaded here as bits and widened
// in place before the first GEMM2, the 16-bit kernel needed more registers
// than the fp32 one: ptxas spilled and serialised the wgmmas, C7514; 0.58 ms
// at the headline in bf16 against fp32's 0.44, H200. kernels/NOTES.md.)
template <class W, class In>
__device__ __forceinline__ void init_acc(float (&acc)[W::kG2Blocks][W::kG2Acc], const Params& p, int C, int64_t L,
                                         int64_t b, int64_t t0, int half, int wq) {
  constexpr int kG2Blocks = W::kG2Blocks, kG2Acc = W::kG2Acc, kG2Rows = W::kG2Rows, kTileT = W::kTileT;
  constexpr int kNTiles = W::kNTiles;
  const int lane = lane_id(), g = lane / kQuad, q = lane % kQuad;
#pragma unroll
  for (int m = 0; m < kG2Blocks; ++m)
#pragma unroll
    for (int i = 0; i < kG2Acc; ++i) acc[m][i] = 0.0f;
  if constexpr (!std::is_same_v<In, float>) return;
  const float* const x = in_ptr<float>(p.x);
  if constexpr (W::kG2T) {
    const G2TLane e(C, L, b, t0, half * kG2Rows, wq, g, q);
#pragma unroll
    for (int i = 0; i < kG2Acc; ++i) {
      const bool ok = e.ok(i);
      load_x_one(acc[0][i], x + (ok ? e.offset(i) : 0), ok);
    }
    return;
  }
  const bool interior = L - t0 >= kTileT;  // the tile inside its row
#pragma unroll
  for (int m = 0; m < kG2Blocks; ++m) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int c = half * kG2Rows + m * kWgmmaM + wq * kMmaM + g + hh * 8;
      const bool row_ok = c < C;
      // 8-byte loads where the row's pairs are 8-byte aligned (even L, x not
      // a view at an odd float offset), else 4-byte ones up to L
      const float* const xr = x + (b * C + (row_ok ? c : 0)) * L + t0 + 2 * q;  // this lane's first column
      const bool pair = row_ok && interior && reinterpret_cast<uintptr_t>(xr) % sizeof(float2) == 0;
      const int64_t left = row_ok && !pair ? L - t0 - 2 * q : 0;  // positions of the row from this lane's first
      float* const a = acc[m] + hh * 2;  // columns 8 nt + 2q, + 1: a[nt * 4], a[nt * 4 + 1]
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
        load_x_pair(a[nt * 4], a[nt * 4 + 1], xr + nt * kMmaN, pair, nt * kMmaN < left, nt * kMmaN + 1 < left);
    }
  }
}
// A row whose tile starts at an odd float offset (odd L) stores its pairs one
// column on, (2q + 1, 2q + 2) of each n8 tile, the second value from the
// next lane of the quad (for q = 3, lane q = 0's next n8 tile), plus columns
// 0 and kTileT - 1 alone: with 4-byte accesses such a tile's epilogue took ~35k
// cycles against ~14k (clock trace, 28 x 4099 against the headline).
// kExact: the accumulators hold y - b2 scaled by 1 / undo (exact::kUndo2).
// 16-bit x: the accumulators hold y - b2 - x (init_acc), and x is loaded
// here, a row's values in flight together before its stores (x^T's staging
// read the same bytes shortly before, so they come from L2).
template <class W, bool kExact, class In>
__device__ __forceinline__ void store_y(const float (&acc)[W::kG2Blocks][W::kG2Acc], const Params& p, int C,
                                        int64_t L, int64_t b, int64_t t0, int half, int wq, float undo) {
  In* const y = out_ptr<In>(p.y);
  const In* const b2 = in_ptr<In>(p.b2);
  const In* const x = in_ptr<In>(p.x);
  constexpr bool kAddX = !std::is_same_v<In, float>;
  constexpr int kG2Blocks = W::kG2Blocks, kG2Rows = W::kG2Rows, kTileT = W::kTileT;
  constexpr int kNTiles = W::kNTiles;
  const int lane = lane_id(), g = lane / kQuad, q = lane % kQuad;
  static_assert(!kExact || !W::kG2T, "the exact mode: WgHead only");
  auto out = [undo](float a, float bias) {
    if constexpr (kExact) return fmaf(a, undo, bias);
    else return a + bias;
  };
  if constexpr (W::kG2T) {
    const G2TLane e(C, L, b, t0, half * kG2Rows, wq, g, q);
    // b2 of the lane's channels first, all in flight together: loaded just
    // before each store, they chained the stores (~13k cycles a tile, clock
    // trace; kernels/NOTES.md, v19)
    float bias[W::kG2Acc / 2];  // by slot
#pragma unroll
    for (int k = 0; k < W::kG2Acc / 2; ++k) {
      const int c = e.c0 + G2TLane::slot_channel(k);
      bias[k] = c < C ? ldg_f(b2 + c) : 0.0f;
    }
    if constexpr (kAddX) {
      constexpr int kBatch = 16;  // x's loads in flight (all of them at once: ptxas spilled)
      static_assert(W::kG2Acc % kBatch == 0, "whole batches");
#pragma unroll
      for (int i0 = 0; i0 < W::kG2Acc; i0 += kBatch) {
        float res[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) res[u] = e.ok(i0 + u) ? ldg_f(x + e.offset(i0 + u)) : 0.0f;
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int i = i0 + u;
          if (e.ok(i)) stcs1(y + e.offset(i), acc[0][i] + res[u] + bias[G2TLane::slot(i)]);
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < W::kG2Acc; ++i)
        if (e.ok(i)) stcs1(y + e.offset(i), acc[0][i] + bias[G2TLane::slot(i)]);
    }
    return;
  }
  const bool interior = L - t0 >= kTileT;  // the tile inside its row: 8-byte stores in every row
  const int next_lane = g * kQuad + (q + 1) % kQuad;
#pragma unroll
  for (int m = 0; m < kG2Blocks; ++m) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int c = half * kG2Rows + m * kWgmmaM + wq * kMmaM + g + hh * 8;
      const bool row_ok = c < C;  // (lanes past C still take part in the shuffles, for their quad)
      const float bias = row_ok ? ldg_f(b2 + c) : 0.0f;
      In* const yr = y + (b * C + (row_ok ? c : 0)) * L + t0;  // the tile's first position in the row
      // this lane's columns 8 nt + 2q + k: the accumulator, plus x (16 bits)
      float res[kAddX ? kNTiles * 2 : 1];
      if constexpr (kAddX) {
#pragma unroll
        for (int i = 0; i < kNTiles * 2; ++i) {
          const int col = i / 2 * kMmaN + 2 * q + i % 2;
          const bool ok = row_ok && (interior || col < L - t0);
          res[i] = ok ? ldg_f(x + (b * C + c) * L + t0 + col) : 0.0f;
        }
      }
      const float* const acc_row = acc[m] + hh * 2;
      auto a = [&](int i) {  // i: as acc_row's index
        if constexpr (kAddX) return acc_row[i] + res[i / 4 * 2 + i % 4];
        else return acc_row[i];
      };
      if (interior) {
        const int sh = static_cast<int>(reinterpret_cast<uintptr_t>(yr) / sizeof(In) % 2);
        const int col0 = 2 * q + sh;                // this lane's first pair
        const bool cut = sh == 1 && q == kQuad - 1;  // its last pair would reach the next tile: column kTileT - 1 alone
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          const float v0 = out(a(nt * 4), bias), v1 = out(a(nt * 4 + 1), bias);
          const float next0 = nt + 1 < kNTiles ? out(a((nt + 1) * 4), bias) : 0.0f;
          const float nb = __shfl_sync(0xffffffffu, q == 0 ? next0 : v0, next_lane);
          In* const yp = yr + col0 + nt * kMmaN;
          if (!row_ok) continue;
          if (nt + 1 < kNTiles || !cut)
            stcs2(yp, sh == 1 ? v1 : v0, sh == 1 ? nb : v1);
          else
            stcs1(yp, v1);
        }
        if (row_ok && sh == 1 && q == 0) stcs1(yr, out(a(0), bias));
      } else if (row_ok) {  // a row's last tile: one float at a time, up to L
        const int64_t left = L - t0 - 2 * q;
#pragma unroll
        for (int i = 0; i < 2 * kNTiles; ++i) {
          const int col = i / 2 * kMmaN + i % 2;
          if (col < left) stcs1(yr + 2 * q + col, out(a(i / 2 * 4 + i % 2), bias));
        }
      }
    }
  }
}

// ---- the kernel ----------------------------------------------------------------
// Persistent: CTA i takes tiles i, i + gridDim.x, ... (one CTA per SM). The
// turns and the weight ring run on across tiles: turn j of the CTA's k-th
// tile is its turn k (nc + 3) + j overall, owned by warpgroup (k (nc + 3) + j)
// % 2, and the ring's fills repeat the same stages every tile. Between tiles:
// x^T is free once turn nc-1's GEMM1 is done, and turn nc (GEMM2 only) has
// no depthwise after it, so its owner stages the next tile's x^T while the
// other warpgroup runs the depthwise of chunk nc-1 and turn nc+1; each
// warpgroup writes its channels of y from its accumulators after its last
// turn of the tile, while the other runs a turn, and loads the next tile's x
// into them, in flight under its first turn.
// kExact: the GEMMs on fp16 pairs (see "the exact mode"), WgHead and fp32 only.
// In: x's, y's and the weights' type (Elem).
template <class W, bool kExact, class In>
__global__ void __launch_bounds__(kThreads, 1) fused_dwsep_wgmma_kernel(Params p) {
  static_assert(!kExact || !W::kG2T, "the exact mode's GEMM2 takes W2 from registers");
  static_assert(!kExact || std::is_same_v<In, float>, "the exact mode: fp32 only");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kTileT = W::kTileT, kNX = W::kNX, kG1Acc = W::kG1Acc, kG2Blocks = W::kG2Blocks, kG2Acc = W::kG2Acc;
  constexpr int kHRowFloats = W::kHRowFloats, kHWarpFloats = W::kHWarpFloats, kHBufFloats = W::kHBufFloats;
  constexpr int kH3CoreFloats = W::kH3CoreFloats;
  using Layout = WgLayout<W>;
  extern __shared__ float4 smem_f4[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(smem_f4);
  float* xt = reinterpret_cast<float*>(smem);                 // x^T cores [kNX][kCMax]
  float* hbuf = reinterpret_cast<float*>(smem + W::kHOffset);  // [kWarpgroups][kHBufFloats]
  const uint32_t ring = smem_u32(smem + W::kRingOffset);       // kRingSlots x kSlotBytes
  const uint32_t bars = smem_u32(smem + W::kBarOffset);        // one mbarrier per slot
  float* const tail0 = reinterpret_cast<float*>(smem + W::kTailOffset) + threadIdx.x / kWarpSize * kTailFloats;
  auto bar = [&](int slot) { return bars + slot * static_cast<uint32_t>(sizeof(uint64_t)); };
  const uint32_t xt_smem = smem_u32(xt);

  const int warp = threadIdx.x / kWarpSize;
  // The warpgroup index through a shuffle: the compiler then knows it is the
  // same across the warp, so the branches on it are not divergent (wgmma in a
  // divergent branch gets serialized).
  const int wgi = __shfl_sync(0xffffffffu, warp / kGroupWarps, 0), wq = warp % kGroupWarps;
  const bool elected = threadIdx.x % kWarpgroupThreads == 0;     // issues the warpgroup's refills
  const int C = static_cast<int>(p.C);
  const int64_t L = p.L;
  // Tiles in 32 bits (launch() checks the count); launch() keeps the grid no
  // larger than the count, so every CTA has one. These, `taps` and
  // `last_tile` below are worked out from the parameters where used rather
  // than held: the kernel's register peak is the depthwise, and held through
  // it they made ptxas spill.
  auto tiles_per_row = [&] { return opaque(static_cast<int>(ceil_div(p.L, kTileT))); };
  auto tiles = [&] { return static_cast<int>(p.B) * tiles_per_row(); };
  auto tile_row = [&](int tile) { return tile / tiles_per_row(); };
  auto tile_t0 = [&](int tile) { return static_cast<int64_t>(tile % tiles_per_row()) * kTileT; };
  // x^T by 4-position copies (stage_x_16) where x's rows allow them
  const In* const x = in_ptr<In>(p.x);
  auto x16 = [&] {
    return opaque(static_cast<int>(p.L % kVec) |
                  static_cast<int>(reinterpret_cast<uintptr_t>(x) % (kVec * sizeof(In)))) == 0;
  };

  const Layout lay(p.C, p.E);
  const Turns turns = tile_turns(lay);
  // The exact mode's scales (exact::Scale), read where used.
  auto scale = [&](exact::Scale k) { return __ldg(p.workspace + Layout(p.C, p.E).scales() + k); };
  auto x_scale = [&] { return kExact ? scale(exact::kSx) : 1.0f; };
  // lay.fills() in 32 bits: the ring's slot fills of a tile (at least one)
  const int total_fills = turns.fill0(turns.count());
  const float* ws = p.workspace;
  auto slot_smem = [&](int slot) { return ring + slot * W::kSlotBytes; };
  // fill i of a tile (WgLayout)
  auto fill_src = [&](int i) { return ws + static_cast<int64_t>(i) * W::kSlotFloats; };
  auto refill = [&](int i, int slot) { bulk_load(slot_smem(slot), fill_src(i), W::kSlotBytes, bar(slot)); };  // one thread
  // Fill `next` counted from the first of the CTA's tile `tile` (past that
  // tile's total_fills, its later tiles' fills: the same stages again): the
  // tile's fill it copies, and whether the CTA has that tile. (The loop runs
  // at most kRingSlots times: a tile has at least one fill, and fills run
  // kRingSlots ahead.)
  struct RingFill {
    int fill;
    bool exists;
  };
  auto ring_fill = [&](int tile, int next) {
    int ahead = 0;
    for (; next >= total_fills; next -= total_fills) ++ahead;
    return RingFill{next, tile + ahead * static_cast<int>(gridDim.x) < tiles()};
  };

  // ---- weight ring: the first stages travel while x is staged -----------------
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingSlots; ++s) mbar_init(bar(s), 1);
    fence_mbar_init();
    for (int i = 0; i < kRingSlots; ++i) {
      const RingFill f = ring_fill(blockIdx.x, i);
      if (f.exists) refill(f.fill, i);
    }
  }

  // ---- the first tile's x^T, by all eight warps ------------------------------------
  const int c16 = static_cast<int>(lay.nkb) * kG1StageK;
  stage_x<W, kWarps, kExact>(xt, xt_smem, x + tile_row(blockIdx.x) * p.C * L, C, L, c16,
                             tile_t0(blockIdx.x) - kMaxHalf, warp, threadIdx.x, x16(), x_scale(),
                             [] { __syncthreads(); });
  fence_proxy_async();
  __syncthreads();

  float acc[kG2Blocks][kG2Acc];
  float acc1[kG1Acc];  // GEMM1 of the chunk of the last turn, until its h1 store
  float* const warp_h = hbuf + wgi * kHBufFloats + wq * kHWarpFloats;  // this warp's h rows
  auto taps = [&] { return p.workspace + Layout(p.C, p.E).taps(); };
  auto w2_frags = [&] { return reinterpret_cast<const float4*>(p.workspace + Layout(p.C, p.E).w2()); };
  const uint64_t x_desc0 = smem_desc(xt_smem, W::kXtKCoreBytes, kCoreBytes);

  if (wgi == 1) named_arrive<kTokenBarrier>(0, kThreads);  // warpgroup 0 takes the first turn
  // Per tile: warpgroup first_owner takes turn 0 (and the even turns), the
  // other the odd ones; the W2 stages of turn j hold output channels
  // [kG2Rows * (j % 2), kG2Rows * (j % 2 + 1)) in every tile, so with an odd
  // count of turns a tile the warpgroups swap halves of C from tile to tile.
  // The tile's ring fill i is the ring's fill f + i overall, with f = ring_pos
  // (mod 6): slot (ring_pos + i) % 3, phase parity (ring_pos + i) / 3 % 2.
  constexpr int kRingPeriod = 2 * kRingSlots;
  for (int tile = blockIdx.x, first_owner = 0, ring_pos = 0; tile < tiles(); tile += gridDim.x,
           first_owner ^= turns.count() % kWarpgroups, ring_pos = (ring_pos + total_fills) % kRingPeriod) {
    const int64_t xcol0 = tile_t0(tile) - kMaxHalf;  // position of h1 column 0
    // h1 columns [col_lo, col_hi) are positions inside [0, L) (32-bit: 17
    // hoisted 64-bit positions spilled).
    const int col_lo = xcol0 < 0 ? static_cast<int>(-xcol0) : 0;
    const int col_hi = L - xcol0 < kNX ? static_cast<int>(L - xcol0) : kNX;
    auto last_tile = [&] { return tile + static_cast<int>(gridDim.x) >= tiles(); };
    init_acc<W, In>(acc, p, C, L, tile_row(tile), tile_t0(tile), (first_owner + wgi) % kWarpgroups, wq);

    for (int j = 0; j < turns.count(); ++j) {
      if ((j + first_owner) % kWarpgroups != wgi) continue;
      // ---- turn j on the tensor cores ------------------------------------------
      // In slots: g2 of kG2SlotSteps W2 stages for GEMM2 (a chunk's fill whole
      // slots, so no slot mixes chunks), then n1 ring slots of kSlotStages W1
      // stages for GEMM1. GEMM2's A comes from registers (acc1's, dead until
      // GEMM1), a slot at a time, or with kG2T its B through the ring;
      // GEMM1's A comes through the ring. The turn's ring fills are the
      // tile's fill0.., its GEMM1's from fill0 + g1_at on.
      const bool has_g1 = j < turns.nc;
      const int g2 = turns.g2_stages(j) / W::kG2SlotSteps, n1 = turns.n1, g1_at = W::kG2T ? g2 : 0;
      const int first = turns.first_g2(j), fill0 = turns.fill0(j);
      // Chunk j-3 (first here) lives in the other warpgroup's buffer, which
      // takes h1 of chunk j-1 once this GEMM2 is done with it.
      const bool frees_other = turns.has(j - 3) && j - 1 < turns.nc;
      // GEMM2 slot u's A: k-step h, block m in acc1[a2_at(h, m)..+3]
      static_assert(W::kG2T || kG2SlotStages * kG2Blocks * kVec <= W::kG1Acc, "a GEMM2 slot's A fits in acc1");
      auto a2_at = [](int h, int m) { return (h * kG2Blocks + m) * kVec; };
      auto a2_frag = [&](int h, int m) {
        const int i = a2_at(h, m);
        return make_float4(acc1[i], acc1[i + 1], acc1[i + 2], acc1[i + 3]);
      };
      auto w2_src = [&](int u, int h, int m) {  // this thread's float4 of slot u, k-step h, block m
        const int t = u * kG2SlotStages + h, chunk = first + t / kG2StagesPerChunk;
        const int64_t stage =  // (chunk, this turn's half of C, k-step), as WgLayout
            (static_cast<int64_t>(chunk) * kWarpgroups + j % kWarpgroups) * kG2StagesPerChunk + t % kG2StagesPerChunk;
        return w2_frags() + threadIdx.x % kWarpgroupThreads + (stage * kG2Blocks + m) * kWarpgroupThreads;
      };
      auto load_a2 = [&](int u) {
#pragma unroll
        for (int h = 0; h < kG2SlotStages; ++h)
#pragma unroll
          for (int m = 0; m < kG2Blocks; ++m) {
            const float4 v = __ldg(w2_src(u, h, m));
            const int i = a2_at(h, m);
            acc1[i] = v.x, acc1[i + 1] = v.y, acc1[i + 2] = v.z, acc1[i + 3] = v.w;
          }
      };
      auto prefetch_a2 = [&](int u) {
#pragma unroll
        for (int h = 0; h < kG2SlotStages; ++h)
#pragma unroll
          for (int m = 0; m < kG2Blocks; ++m) prefetch_l1(w2_src(u, h, m));
      };
      // The first slot's A before the token wait, which hides its latency
      // (loaded after it: 3% slower at the headline).
      if (!W::kG2T && g2 > 0) {
        load_a2(0);
        if (g2 > 1) prefetch_a2(1);
      }
      named_sync<kTokenBarrier>(wgi, kThreads);

      // Ring slot fill u's wgmmas are done: the slot takes fill u + kRingSlots
      // at once (with three slots, deferring the copy past the next wgmmas, as
      // the 4 KB ring did, would leave no fill in flight); past the tile's
      // last fill, the fills of the CTA's later tiles (ring_fill).
      // - arm, before the wait for the slot's wgmmas: the elected thread's
      //   ~30 dependent instructions of addresses and the ring's modulo, and
      //   the arrive that arms the slot's mbarrier for the next fill's bytes
      //   (the other warps would otherwise wait for them at their next
      //   wgmma). Safe: the phase cannot complete before the copy lands, and
      //   every warp that waits on the slot's current phase does so before
      //   its wgmmas on it.
      // - release, once the elected thread's own wgmma_wait has returned: the
      //   copy, with no barrier among the warpgroup's warps (a wgmma is one
      //   operation of the whole warpgroup: complete for one warp, it has read
      //   all its operands; CUTLASS's TMA pipelines release a stage the same
      //   way; the warpgroup barrier that used to precede it cost ~1%, H200).
      struct Refill {
        uint32_t dst, bar;
        const float* src;
        bool go;
      };
      auto arm = [&](int u) {
        const int next = fill0 + u + kRingSlots, slot = (ring_pos + next) % kRingSlots;
        const RingFill f = ring_fill(tile, next);
        const Refill r{slot_smem(slot), bar(slot), fill_src(f.fill), elected && f.exists};
        if (r.go) mbar_expect_tx(r.bar, W::kSlotBytes);
        return r;
      };
      auto release = [&](const Refill& r) {
        if (r.go) bulk_copy(r.dst, r.src, W::kSlotBytes, r.bar);
      };
      // GEMM2 slot u's wgmmas are done: acc1 takes slot u + 1's A, and the
      // chunk's last slot frees the other warpgroup's buffer.
      auto retire_g2 = [&](int u) {
        // (the slot's registers only: fencing all of acc1 would keep the rest live through GEMM2)
        fence_operands<kG2SlotStages * kG2Blocks * kVec>(acc1);
        if (u + 1 < g2) load_a2(u + 1);
        if (u + 2 < g2) prefetch_a2(u + 2);
        if (frees_other && u == W::kG2SlotsPerChunk - 1) named_arrive<kFreeBarrier>(1 - wgi, kThreads);
      };
      // Each slot: (ring slots: wait for its bytes,) issue its wgmmas as one
      // group, and once the previous slot's group is done, retire that one
      // (one group stays in flight; GEMM2 from registers waits for its own).
      auto begin_fill = [&](int u) {
        const int i = ring_pos + fill0 + u, slot = i % kRingSlots;
        mbar_wait(bar(slot), (i / kRingSlots) & 1);
        wgmma_fence();
        return ring + slot * W::kSlotBytes;
      };
      // k-step s of chunk `chunk`: channels 8s..8s+7 of the chunk, h3^T in rows
      // of warp s / 2 of its owner, K-cores 2 (s % 2) and the next.
      auto h3t_desc = [&](int chunk, int s) {
        const float* h3t = hbuf + ((chunk % kWarpgroups) ^ first_owner) * kHBufFloats + (s / 2) * kHWarpFloats +
                           (s % 2) * (kMmaK / kCoreK) * kH3CoreFloats;
        return smem_desc(smem_u32(h3t), kH3CoreFloats * sizeof(float), kCoreBytes);
      };
      // The exact mode: the k16 step of chunk `chunk`'s channels 16w.. (the rows
      // of warp w of its owner), their hi (part 0) or lo pairs: K-cores part and
      // part + 2 of the warp's h3^T (hi pairs of 8 channels, lo pairs, then the
      // next 8 channels': see the depthwise).
      auto h3t_exact_desc = [&](int chunk, int w, int part) {
        const float* h3t =
            hbuf + ((chunk % kWarpgroups) ^ first_owner) * kHBufFloats + w * kHWarpFloats + part * kH3CoreFloats;
        return smem_desc(smem_u32(h3t), exact::kH3StepCores * kH3CoreFloats * sizeof(float), kCoreBytes);
      };
      if constexpr (W::kG2T) {
        // GEMM2 transposed, one k-step a stage: acc^T += h3^T[positions, 8 e] W2^T[8 e, this half of C]
#pragma unroll 1
        for (int u = 0; u < g2; ++u) {
          const uint32_t slot = begin_fill(u);
#pragma unroll
          for (int h = 0; h < W::kG2SlotSteps; ++h) {
            const int t = u * W::kG2SlotSteps + h;
            wgmma_ss(acc[0], h3t_desc(first + t / kG2StagesPerChunk, t % kG2StagesPerChunk),
                     smem_desc(slot + h * W::kG2StageBytes, W::kG2Rows * kCoreK * sizeof(float), kCoreBytes));
          }
          wgmma_commit();
          if (u > 0) {
            const Refill r = arm(u - 1);
            wgmma_wait<1>();
            release(r);
            if (frees_other && u - 1 == W::kG2SlotsPerChunk - 1) named_arrive<kFreeBarrier>(1 - wgi, kThreads);
          }
        }
      } else {
        if constexpr (kExact) {
          // The residual (init_acc) scaled as the products will be, before the
          // tile's first GEMM2 (turn 2 or 3, whichever this warpgroup owns).
          if (j < 4 && g2 > 0) {
            const float r = scale(exact::kResidual);
#pragma unroll
            for (int m = 0; m < kG2Blocks; ++m)
#pragma unroll
              for (int i = 0; i < kG2Acc; ++i) acc[m][i] *= r;
          }
        }
#pragma unroll
      for (int u = 0; u < kMaxG2Slots; ++u) {  // GEMM2, one k-step a stage: acc[m] += W2[rows of block m, 8 e] h3^T
        if (u < g2) {
          wgmma_fence();
          if constexpr (kExact) {
            // stages 2i, 2i + 1: W2's hi and lo pairs of one k16 step (the 16
            // channels of one warp's rows), against h3^T's hi and lo
#pragma unroll
            for (int h = 0; h < kG2SlotStages; h += 2) {
              const int t = u * kG2SlotStages + h, chunk = first + t / kG2StagesPerChunk, w = t % kG2StagesPerChunk / 2;
              const uint64_t b_hi = h3t_exact_desc(chunk, w, 0), b_lo = h3t_exact_desc(chunk, w, 1);
#pragma unroll
              for (int m = 0; m < kG2Blocks; ++m) {
                wgmma_rs_f16(acc[m], a2_frag(h, m), b_hi);
                wgmma_rs_f16(acc[m], a2_frag(h, m), b_lo);
                wgmma_rs_f16(acc[m], a2_frag(h + 1, m), b_hi);
              }
            }
          } else {
#pragma unroll
            for (int h = 0; h < kG2SlotStages; ++h) {
              const int t = u * kG2SlotStages + h;
              const uint64_t b_desc = h3t_desc(first + t / kG2StagesPerChunk, t % kG2StagesPerChunk);
#pragma unroll
              for (int m = 0; m < kG2Blocks; ++m) wgmma_rs(acc[m], a2_frag(h, m), b_desc);
            }
          }
          wgmma_commit();
          wgmma_wait<0>();
          retire_g2(u);
        }
      }
      }
      // The turn's end: its wgmmas done, the token passed on.
      auto end_turn = [&] {
        wgmma_wait<0>();
#pragma unroll
        for (int m = 0; m < kG2Blocks; ++m) fence_operands(acc[m]);
      };
      auto pass_token = [&] {
        if (!last_tile() || j + 1 < turns.count()) named_arrive<kTokenBarrier>(1 - wgi, kThreads);
      };
      if (!has_g1) {  // turns nc.. : GEMM2 only, and no depthwise after them
        end_turn();
        if constexpr (W::kG2T)
          if (g2 > 0) release(arm(g2 - 1));
        pass_token();
        // ---- the next tile's x^T, while the other warpgroup runs the depthwise
        // of chunk nc-1 and turn nc+1 (turn nc-1's GEMM1 was the last read) ----
        if (j == turns.nc && !last_tile()) {
          const int next = tile + gridDim.x;
          stage_x<W, kGroupWarps, kExact>(xt, xt_smem, x + tile_row(next) * p.C * L, C, L, c16,
                                          tile_t0(next) - kMaxHalf, wq, threadIdx.x % kWarpgroupThreads, x16(),
                                          x_scale(), [&] { named_sync<kGroupBarrier>(wgi, kWarpgroupThreads); });
          fence_proxy_async();  // read by wgmma after the token this warpgroup passes after turn nc+2
        }
        continue;
      }
      // GEMM1, two k-steps a stage: acc1 = W1[chunk j, all C] x^T. The first
      // k-step overwrites (peeled). (Turns without GEMM1 leave the loop body
      // above, before the depthwise: so on every path acc1 is written before
      // the h1 store reads it, and the compiler sees it dead from that store
      // to here, which leaves its registers to GEMM2's A.)
      // A ring slot's descriptors: W1 at the slot's start, x^T at channel
      // kb0 * kG1StageK (the slot's first stage kb0). Its k-step q adds
      // compile-time offsets to both (g1_step): a slot's wgmmas then issue
      // back to back, where rebuilding each descriptor from the address cost
      // ~10 dependent uniform instructions a wgmma.
      auto g1_base = [&](uint32_t slot, int kb0) {
        return G1Desc{smem_desc(slot, kCoreBytes, kG1StageK / kCoreK * kCoreBytes),
                      x_desc0 + desc_units(kb0 * (kG1StageK / kCoreK) * W::kXtKCoreBytes)};
      };
      // The turn's ring fill u - 1 is done (with kG2T, at GEMM1's first fill
      // that is GEMM2's last).
      auto end_g1 = [&](int u) {
        wgmma_commit();
        if (u > 0) {
          const Refill r = arm(u - 1);
          wgmma_wait<1>();
          release(r);
        }
      };
      if constexpr (kExact) {
        // A stage's k-steps 0 and 1 are its 16 channels' hi and lo pairs (W1's
        // and x^T's alike): hi hi, hi lo, lo hi, k16 each.
        auto g1_stage = [&](const G1Desc& d, int q1) {
          const G1Desc hi = g1_step<W>(q1), lo = g1_step<W>(q1 + 1);
          wgmma_ss_f16(acc1, d.a + hi.a, d.b + lo.b);
          wgmma_ss_f16(acc1, d.a + lo.a, d.b + hi.b);
        };
        const G1Desc d0 = g1_base(begin_fill(g1_at), 0);
        wgmma_ss_f16_overwrite(acc1, d0.a, d0.b);
        g1_stage(d0, 0);
#pragma unroll
        for (int q1 = kG1StepsPerStage; q1 < W::kSlotSteps; q1 += kG1StepsPerStage) {
          wgmma_ss_f16(acc1, d0.a + g1_step<W>(q1).a, d0.b + g1_step<W>(q1).b);
          g1_stage(d0, q1);
        }
        end_g1(g1_at);
        for (int u = 1; u < n1; ++u) {
          const G1Desc d = g1_base(begin_fill(g1_at + u), u * W::kSlotStages);
#pragma unroll
          for (int q1 = 0; q1 < W::kSlotSteps; q1 += kG1StepsPerStage) {
            wgmma_ss_f16(acc1, d.a + g1_step<W>(q1).a, d.b + g1_step<W>(q1).b);
            g1_stage(d, q1);
          }
          end_g1(g1_at + u);
        }
      } else {
        const G1Desc d0 = g1_base(begin_fill(g1_at), 0);
        wgmma_ss_overwrite(acc1, d0.a, d0.b);
#pragma unroll
        for (int q1 = 1; q1 < W::kSlotSteps; ++q1) wgmma_ss(acc1, d0.a + g1_step<W>(q1).a, d0.b + g1_step<W>(q1).b);
        end_g1(g1_at);
        for (int u = 1; u < n1; ++u) {
          const G1Desc d = g1_base(begin_fill(g1_at + u), u * W::kSlotStages);
#pragma unroll
          for (int q1 = 0; q1 < W::kSlotSteps; ++q1) wgmma_ss(acc1, d.a + g1_step<W>(q1).a, d.b + g1_step<W>(q1).b);
          end_g1(g1_at + u);
        }
      }
      end_turn();
      fence_operands(acc1);
      release(arm(g1_at + n1 - 1));
      pass_token();

      // ---- depthwise of chunk j on the CUDA cores, while the other turn runs ----
      {
        // (the lane through lane_id(): not held through the kernel's loops)
        const int lane = lane_id(), g = lane / kQuad, q = lane % kQuad;
        WarpTaps<kDwRows> warp_taps;
        warp_taps.load(taps(), j, wq * kDwRows, lane);
        if (j >= 2) named_sync<kFreeBarrier>(wgi, kThreads);  // chunk j-2's h3 is read by both
        // h1 = acc1 + b1 in this warp's rows g and g + 8 (padding columns below).
        const int64_t e_a = static_cast<int64_t>(j) * kEChunk + wq * kDwRows + g, e_b = e_a + 8;
        const float b1_a = e_a < p.E ? ldg_f(in_ptr<In>(p.b1) + e_a) : 0.0f;
        const float b1_b = e_b < p.E ? ldg_f(in_ptr<In>(p.b1) + e_b) : 0.0f;
        // h1 = GEMM1 + b1 (the exact mode: GEMM1 scaled back first)
        const float undo1 = kExact ? scale(exact::kUndo1) : 1.0f;
        auto h1 = [undo1](float a, float b1) {
          if constexpr (kExact) return fmaf(a, undo1, b1);
          else return a + b1;
        };
#pragma unroll
        for (int nt = 0; nt < kNX / kMmaN; ++nt) {
          const int col = nt * kMmaN + 2 * q;
          if (nt * kMmaN + kMmaN <= kHRowFloats || col < kHRowFloats) {  // not the tail (below)
            *reinterpret_cast<float2*>(warp_h + g * kHRowFloats + col) =
                make_float2(h1(acc1[nt * 4 + 0], b1_a), h1(acc1[nt * 4 + 1], b1_a));
            *reinterpret_cast<float2*>(warp_h + (g + 8) * kHRowFloats + col) =
                make_float2(h1(acc1[nt * 4 + 2], b1_b), h1(acc1[nt * 4 + 3], b1_b));
          }
        }
        // The right halo (columns kHRowFloats.. of row r) to lane r: its two
        // column pairs are in lanes 4 (r % 8) + 2 and + 3, rows r % 8 and
        // r % 8 + 8 in the last n8 tile's registers. Lane r stores it where lane
        // 31 reads it for the rows of its group (tail_at): delivered by 4
        // shuffles a row instead, it cost 4% of the kernel at the headline.
        float4 tail;
        {
          constexpr int kLast = (kNX / kMmaN - 1) * 4;
          static_assert(kHRowFloats == kNX - kMaxHalf && kMaxHalf == 4 && kHRowFloats % kMmaN == 4,
                        "the tail is lanes q = 2, 3 of the last n8 tile");
          const int src = 4 * (lane % 8) + 2;
          const bool upper = lane / 8 % 2 == 1;  // row r % 8 + 8 (lanes 16.. get copies they do not use)
          const float a0 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 0], b1_a), src);
          const float a1 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 1], b1_a), src);
          const float a2 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 0], b1_a), src + 1);
          const float a3 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 1], b1_a), src + 1);
          const float c0 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 2], b1_b), src);
          const float c1 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 3], b1_b), src);
          const float c2 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 2], b1_b), src + 1);
          const float c3 = __shfl_sync(0xffffffffu, h1(acc1[kLast + 3], b1_b), src + 1);
          tail = upper ? make_float4(c0, c1, c2, c3) : make_float4(a0, a1, a2, a3);
          // Padding: columns from col_hi on (col_lo <= kMaxHalf never reaches the tail).
          if (kHRowFloats + 0 >= col_hi) tail.x = 0.0f;
          if (kHRowFloats + 1 >= col_hi) tail.y = 0.0f;
          if (kHRowFloats + 2 >= col_hi) tail.z = 0.0f;
          if (kHRowFloats + 3 >= col_hi) tail.w = 0.0f;
        }
        // Group kc's tails: group 0's in this warp's tail0, group kc's from 1 on
        // in the 16 floats from K-core kc's start, which belong to h1 row 4kc-1
        // (read in group kc-1) and which the core itself overwrites only after
        // group kc is read.
        static_assert(kTailFloats <= kCoreK * kHRowFloats - kH3CoreFloats, "a group's tails fit in the gap");
        auto tail_at = [&](int kc) { return kc == 0 ? tail0 : warp_h + kc * kH3CoreFloats; };
        // Before group kc > 0: its rows' tails (lanes 4kc.. hold them) into place,
        // over the end of h1 row 4kc - 1, so every lane must be done reading
        // that row (a __syncwarp since group kc - 1's reads).
        auto place_tails = [&](int kc) {
          if (kc > 0) {
            if (lane / kCoreK == kc) *reinterpret_cast<float4*>(tail_at(kc) + lane % kCoreK * kMaxHalf) = tail;
            __syncwarp();
          }
        };
        if (lane < kCoreK) *reinterpret_cast<float4*>(tail0 + lane * kMaxHalf) = tail;
        // Columns outside [0, L) (tiles at a row's ends only) back to exactly 0,
        // after the plain stores above: testing every column there cost a third
        // of the h1 store's instructions in every tile (SASS).
        if (col_lo > 0 || col_hi < kNX) {
          __syncwarp();
          for (int i = lane; i < kDwRows * kHRowFloats; i += kWarpSize) {
            const int col = i % kHRowFloats;
            if (col < col_lo || col >= col_hi) warp_h[i] = 0.0f;
          }
        }
        __syncwarp();
        // Rows in groups of 4 (one K-core of h3^T): compute the group, then
        // write its core, which overlaps only rows already read.
        if constexpr (W::kDwRowsPerPass == 1) {
          // T = 128: lane (rr, blk) computes row rr of the group at positions
          // kRun blk .. kRun blk + kRun - 1 (one tap record, 16 outputs, six
          // 16-byte window loads a lane), then the quad's four lanes (the
          // group's four rows at the same positions) transpose their outputs
          // 4 x 4 so that each writes whole 16-byte K-core entries. Against
          // each lane taking 4 positions of all four rows (40 tap shuffles and
          // 12 window loads a group), this halves the group's shared-memory
          // traffic, which is what the tensor cores starve while they run
          // (results/ws_probe.cu: 2.0k cycles a group beside m64n136k8
          // wgmmas against 3.2k; kernels/NOTES.md).
          constexpr int kRun = kTileT / (kWarpSize / kCoreK);
          constexpr int kRunWindows = (kRun + kMaxK - 1) / kVec;
          static_assert(kRun == 4 * kVec && kRunWindows * kVec == kRun + kMaxK - 1 && kMaxHalf == kVec,
                        "a lane: 16 outputs, 6 windows, the last a row's tail in the last block");
          const int rr = lane % kCoreK, blk = lane / kCoreK;
          const bool odd = rr & 1, hi = rr & 2;
          // Group kc: its outputs, turned so that v[i] holds the group's 4 channels
          // at position kRun blk + 4i + rr.
          constexpr int kEntries = kRun / kCoreK;
          auto group = [&](int kc, float4 (&v)[kEntries]) {
            place_tails(kc);
            const int row = kc * kCoreK + rr;
            float tap[kMaxK + 1];
#pragma unroll
            for (int m = 0; m <= kTapBias; ++m) tap[m] = warp_taps.get(row, m);
            const float* hrow = warp_h + row * kHRowFloats + blk * kRun;
            float win[kRun + kMaxK - 1];
#pragma unroll
            for (int w = 0; w < kRunWindows; ++w) {
              // past the row's last column lies the next row: the last block's last window is its tail
              const float4 q = *reinterpret_cast<const float4*>(
                  w + 1 == kRunWindows && blk == kWarpSize / kCoreK - 1 ? tail_at(kc) + rr * kMaxHalf : hrow + w * kVec);
              win[w * kVec + 0] = q.x, win[w * kVec + 1] = q.y, win[w * kVec + 2] = q.z, win[w * kVec + 3] = q.w;
            }
            float h[kRun];
            depthwise_run<kRun, std::conditional_t<kExact, Unrounded, Elem<In>>>(win, tap, h);
#pragma unroll
            for (int i = 0; i < kEntries; ++i) {
              const float x0 = h[4 * i], x1 = h[4 * i + 1], x2 = h[4 * i + 2], x3 = h[4 * i + 3];
              // lanes rr, rr ^ 1: each keeps its positions of its parity p and takes the partner's
              const float r0 = __shfl_xor_sync(0xffffffffu, odd ? x0 : x1, 1);
              const float r1 = __shfl_xor_sync(0xffffffffu, odd ? x2 : x3, 1);
              const float mp = odd ? x1 : x0, mp2 = odd ? x3 : x2;
              // the pair's even and odd rows at positions p and p + 2
              const float ce = odd ? r0 : mp, co = odd ? mp : r0, ce2 = odd ? r1 : mp2, co2 = odd ? mp2 : r1;
              // lanes rr, rr ^ 2: each takes the other pair's rows at its own position
              const float t0 = __shfl_xor_sync(0xffffffffu, hi ? ce : ce2, 2);
              const float t1 = __shfl_xor_sync(0xffffffffu, hi ? co : co2, 2);
              v[i] = hi ? make_float4(t0, t1, ce2, co2) : make_float4(ce, co, t0, t1);
            }
          };
          // (2-way bank conflicts in the stores: blocks 2k and 2k + 1 share banks;
          // a swizzle that removed them measured no faster, kernels/NOTES.md)
          if constexpr (kExact) {
            // Groups in pairs: K-cores 2G and 2G + 1 take the hi and the lo pairs
            // of the pair's 8 channels (position n's at 16n bytes), which GEMM2
            // reads as k16 steps of 16 channels (h3t_exact_desc). They overlap h1
            // rows up to 8G + 7 only, so they are written once both groups are read.
            static_assert(kDwGroups % 2 == 0, "groups in pairs");
            const float sh = scale(exact::kSh);  // h3's scale
#pragma unroll 1
            for (int kc = 0; kc < kDwGroups; kc += 2) {
              float4 ve[kEntries], vo[kEntries];
              group(kc, ve);
              __syncwarp();  // group kc + 1's tails go over the end of h1 row 4kc + 3, which group kc reads
              group(kc + 1, vo);
              __syncwarp();
              uint4* const core_hi = reinterpret_cast<uint4*>(warp_h + kc * kH3CoreFloats);
              uint4* const core_lo = reinterpret_cast<uint4*>(warp_h + (kc + 1) * kH3CoreFloats);
#pragma unroll
              for (int i = 0; i < kEntries; ++i) {
                const F16Pair e0 = split_f16(ve[i].x * sh, ve[i].y * sh), e1 = split_f16(ve[i].z * sh, ve[i].w * sh);
                const F16Pair o0 = split_f16(vo[i].x * sh, vo[i].y * sh), o1 = split_f16(vo[i].z * sh, vo[i].w * sh);
                core_hi[blk * kRun + kCoreK * i + rr] = make_uint4(e0.hi, e1.hi, o0.hi, o1.hi);
                core_lo[blk * kRun + kCoreK * i + rr] = make_uint4(e0.lo, e1.lo, o0.lo, o1.lo);
              }
            }
          } else {
#pragma unroll 1
            for (int kc = 0; kc < kDwGroups; ++kc) {
              float4 v[kEntries];
              group(kc, v);
              __syncwarp();
              // K-core kc, position n's 4 channels at 4n: lane rr writes positions kRun blk + 4i + rr
              float4* const core = reinterpret_cast<float4*>(warp_h + kc * kH3CoreFloats);
#pragma unroll
              for (int i = 0; i < kEntries; ++i) core[blk * kRun + kCoreK * i + rr] = v[i];
            }
          }
        } else {
          // T = 64: lane (rr, pl) computes positions 4 pl.. of rows 2 rr and
          // 2 rr + 1 of the group (16 lanes a row).
          constexpr int kRowsPerLane = kCoreK / W::kDwRowsPerPass;
          static_assert(kRowsPerLane == 2, "two rows a lane: 8-byte stores");
          const int pl = lane % W::kDwLanesPerRow;
          const int r0 = lane / W::kDwLanesPerRow * kRowsPerLane;
          const bool tail_lane = pl == W::kDwLanesPerRow - 1;
#pragma unroll 1
          for (int kc = 0; kc < kDwGroups; ++kc) {
            place_tails(kc);
            const float* const tails = tail_at(kc);
            float4 v[kRowsPerLane];
#pragma unroll
            for (int r = 0; r < kRowsPerLane; ++r) {
              const int row = kc * kCoreK + r0 + r;
              const float* hrow = warp_h + row * kHRowFloats + pl * kVec;
              float4 windows[kDwWindows];
#pragma unroll
              for (int w = 0; w + 1 < kDwWindows; ++w) windows[w] = *reinterpret_cast<const float4*>(hrow + w * kVec);
              // The last window: a row's last lane's is the row's tail (past the row's end lies the next row).
              windows[kDwWindows - 1] = *reinterpret_cast<const float4*>(
                  tail_lane ? tails + (r0 + r) * kMaxHalf : hrow + (kDwWindows - 1) * kVec);
              const float4 h = depthwise4(windows, warp_taps, row);
              using E = Elem<In>;
              v[r] = make_float4(E::h3_operand(h.x), E::h3_operand(h.y), E::h3_operand(h.z), E::h3_operand(h.w));
            }
            __syncwarp();
            // K-core kc: position n's 4 channels at 4n; this lane's positions 4 pl.., channels r0..
            float* const core = warp_h + kc * kH3CoreFloats + pl * kVec * kCoreK + r0;
            *reinterpret_cast<float2*>(core + 0 * kCoreK) = make_float2(v[0].x, v[1].x);
            *reinterpret_cast<float2*>(core + 1 * kCoreK) = make_float2(v[0].y, v[1].y);
            *reinterpret_cast<float2*>(core + 2 * kCoreK) = make_float2(v[0].z, v[1].z);
            *reinterpret_cast<float2*>(core + 3 * kCoreK) = make_float2(v[0].w, v[1].w);
          }
        }
        fence_proxy_async();  // h3^T is read by wgmma after the next token barrier
      }
    }

    // ---- this warpgroup's last turn of the tile is done: its channels of y ----
    store_y<W, kExact, In>(acc, p, C, L, tile_row(tile), tile_t0(tile), (first_owner + wgi) % kWarpgroups, wq,
                       kExact ? scale(exact::kUndo2) : 1.0f);
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}


// ---------------------------------------------------------------------------
// The 16-bit kernel (bf16 / fp16, C <= 384, odd K <= 9, sm_90a)
// ---------------------------------------------------------------------------
// bf16 and fp16 operands on the tensor cores (half the bytes and twice the
// rate of TF32), and the depthwise in registers instead of through shared
// memory. A CTA (persistent: one per SM) walks tiles of kTileT = 128
// positions; each of its two warpgroups owns 64 of them and all C output
// channels, and streams E in chunks of 64 expanded channels (the figures
// below are Tile128's, C <= 256; Tile64C320 and Tile64, for C <= 320 and
// C <= 384, have 32 positions a warpgroup, 40 columns, lanes of 8 positions
// and m64n40 / m64n32 wgmmas):
//   GEMM1  h1 [64 e x 72 cols] = W1 chunk [64 x C] . x^T [72 x C]^T   (m64n72k16)
//   depthwise + GELU on h1 in GEMM1's accumulators (below)
//   GEMM2  acc [C x 64 pos] += W2 chunk [C x 64] . h3^T [64 pos x 64]^T (m64n64k16)
// The 72 columns are the warpgroup's 64 positions and a 4-position halo each
// side, in an order chosen for the depthwise (Tile::column_of): column
// 8j + 2q + b of the first 8 n8 tiles is position 16q + 2j + b, so lane q of
// each quad holds 16 consecutive positions of its two rows (rows g and g + 8
// of its warp's 16), and the last n8 tile holds the halo (lanes 0, 1:
// positions -4 .. -1; lanes 2, 3: 64 .. 67); each lane fetches the 4
// positions on each side of its 16 from its quad neighbours by shuffles: no
// h1 in shared memory. x^T is staged in that column order; h3 goes to shared
// memory by stmatrix .trans in the same order (64 rows), which GEMM2's N and
// so its accumulators then follow: the epilogue's 8 x 8 blocks of x^T are 8
// consecutive rows (kernels/NOTES.md, v30).
// Shared operands are K-major, 128-byte rows (64 channels) swizzled by 16-byte
// chunk (chunk ^ row % 8), 8-row atoms of 1024 bytes: conflict-free for the
// tensor cores, for x^T's 16-byte stores and for stmatrix. The weights are
// packed once per call into that image (pack_kernel) and stream through a
// ring of kSlots slots (32 KB at C = 256) by bulk copies (fill 2n: W1 of chunk n of the
// CTA's sequence, fill 2n + 1: W2 of it). Each warpgroup issues its GEMM2
// of the previous chunk and GEMM1 of this one as soon as its own depthwise
// is done; the ring's refills, which wait for both, keep the two within a
// chunk of each other, so one's wgmmas run while the other's depthwise
// does. (A token that made them alternate strictly cost 1.5-2%:
// kernels/NOTES.md, v47.)
namespace h16 {

constexpr int kGroups = kWarpgroups;          // two warpgroups, nothing else
constexpr int kHalo = kMaxHalf;               // K <= 2 kHalo + 1
constexpr int kEChunk = 64;
constexpr int kKBlock = 64;                   // channels per swizzled 128-byte row
constexpr int kKStep = 16;                    // a k16 wgmma
constexpr uint32_t kRowBytes = kKBlock * 2;   // 128
constexpr uint32_t kAtomBytes = kCoreRows * kRowBytes;   // 1024: 8 rows
constexpr uint32_t kChunkBytes = 16;          // a swizzled chunk: 8 channels
constexpr uint32_t kW1BlockBytes = kEChunk * kRowBytes;  // 8192: 64 e x 64 channels (W2: 64 C rows x 64 e)
using tc::kTapRecord;                         // pack_taps' records: taps / 2 (centred), bd / 2, the next b1
using tc::kTapBias;
using tc::kTapNextB1;
static_assert(kTapRecord == 12 && kTapBias == 9 && kTapNextB1 == 10,
              "a record is 3 float4, the bias in the third's y, the next chunk's b1 in its z");
// GEMM1's bias step: h1 = W1 x + b1 v, v = 1 at positions in [0, L) and 0
// outside (x is 0 there too), so the padding contributes 0, not b1, with no
// masking in the depthwise. One more k16 wgmma a chunk: A = b1 in channel 0
// (registers), B = v^T in shared memory, a row per column x 16 channels, no
// swizzle (cores of 8 rows x 16 bytes: the second 8 channels 128 bytes on,
// the next 8 rows 256), all zero but channel 0.
constexpr uint32_t kValidCoreK = kCoreRows * kChunkBytes;       // 128
constexpr uint32_t kValidRowGroup = 2 * kValidCoreK;            // 256
constexpr int kGroupSync = 1;                 // named barriers 1, 2: a warpgroup's own 128 threads

// Byte offset of (row, channel k) in a swizzled block of 128-byte rows.
__host__ __device__ constexpr uint32_t swizzled(int row, int k) {
  return row * kRowBytes + (((k / 8) ^ (row % 8)) * kChunkBytes) + (k % 8) * 2;
}

// The channel at K index k of x^T in the kernel for unaligned rows (and of
// W1's packed K, W2's packed M and y^T in the epilogue there): chunk r of a
// 64-channel block holds channels 8 i + r, i = 0..7, so that one chunk's
// rows of x (and of y) all start at one alignment (the row of channel c
// starts (b C + c) L elements on: mod 8, for one b, that depends on c mod 8
// only), and 8 channels x 8 positions move by aligned 16-byte blocks of
// every row at any L (stage_x). Its own inverse.
__host__ __device__ constexpr int channel_of(int k) { return k / kKBlock * kKBlock + k % 8 * 8 + k % kKBlock / 8; }
static_assert(channel_of(channel_of(77)) == 77 && channel_of(8 * 3 + 1) == 8 + 3 && channel_of(64 + 9) == 64 + 9,
              "channel_of: the transpose of the 8 x 8 chunk index in each 64-channel block");
// The channel at K index k: channel_of's classes in the kernel for rows of x
// that need not be 16-byte aligned (kByClass), the identity in the kernel
// for aligned rows (the classes cost it 1-3%, kernels/NOTES.md, v35).
template <bool kByClass>
__host__ __device__ constexpr int channel_at(int k) {
  return kByClass ? channel_of(k) : k;
}

// A tiling: kGroupT positions a warpgroup (the CTA's tile is twice that), C up
// to kCMax, kSlots ring slots of one chunk's W1 or W2 each.
template <int kGroupT_, int kCMax_, int kSlots_, bool kSplitRelease_>
struct Tile {
  static constexpr int kGroupT = kGroupT_, kCMax = kCMax_, kSlots = kSlots_;
  // a turn's two ring releases by two warps (v49c) or both by thread 0
  static constexpr bool kSplitRelease = kSplitRelease_;
  static constexpr int kTileT = kGroups * kGroupT;      // positions per CTA tile
  static constexpr int kCols = kGroupT + 2 * kHalo;     // GEMM1's N: the positions and a halo each side
  static constexpr int kNTiles = kCols / kMmaN;         // n8 tiles of GEMM1
  static constexpr int kPosTiles = kGroupT / kMmaN;     // n8 tiles of GEMM2 (GEMM1's but the last)
  static constexpr int kLanePos = kGroupT / kQuad;      // positions a lane holds of each row, halo aside
  static constexpr int kKBlocks = kCMax / kKBlock;      // W1's channel blocks, GEMM2's m64 blocks
  static constexpr uint32_t kXtBlockBytes = kCols * kRowBytes;  // kCols columns x 64 channels
  static constexpr uint32_t kXtBytes = kKBlocks * kXtBlockBytes;
  // x by channel (aligned rows: GEMM1's B N-major, no swizzle): core
  // matrices of 8 channels x 8 columns, 16 bytes a channel, so that channel
  // c of an n8 column tile lies 16 c bytes into it; the tiles kXsTileBytes
  // apart, 16 bytes more than their kCMax channels, so that a warp's 4-byte
  // copies of one channel's 64 positions (8 tiles x 4 pairs) hit 32 distinct
  // banks (stage_x_by_channel)
  static constexpr uint32_t kXsTileBytes = kCMax * kChunkBytes + kChunkBytes;
  static constexpr uint32_t kXsBytes = kNTiles * kXsTileBytes;
  // a warpgroup's x buffer, x^T or x by channel
  static constexpr uint32_t kXBytes = round_up(kXtBytes > kXsBytes ? kXtBytes : kXsBytes, kAtomBytes);
  static constexpr uint32_t kSlotBytes = kKBlocks * kW1BlockBytes;  // a W1 chunk (64 x C) or a W2 chunk (C x 64)
  static constexpr uint32_t kH3Bytes = kGroupT * kRowBytes;         // GEMM2's B: kGroupT columns
  static constexpr uint32_t kValidBytes = kCols / kCoreRows * kValidRowGroup;
  static constexpr int kOctets = (kCols + 2 * kHalo) / 8;  // x^T's staging: octets from pw0 - 8
  static constexpr int kGroupsC = kCMax / 8;               // channel groups of 8
  // Shared memory (offsets from a 1024-aligned base).
  static constexpr uint32_t kXtOff = 0;
  static constexpr uint32_t kH3Off = kXtOff + kGroups * kXBytes;
  static constexpr uint32_t kRingOff = kH3Off + kGroups * kH3Bytes;
  static constexpr uint32_t kValidOff = kRingOff + kSlots * kSlotBytes;
  static constexpr uint32_t kBarOff = kValidOff + kGroups * kValidBytes;
  // after kBarOff: a full mbarrier a slot, then a release counter a slot
  static constexpr uint32_t kSmemBytes = kBarOff + 2 * kSlots * sizeof(uint64_t) + kAtomBytes;  // + alignment slack

  // GEMM1's column of warpgroup position p (-kHalo <= p < kGroupT + kHalo),
  // also GEMM2's (p < kGroupT) and x^T's row: column 8j + 2q + b (j <
  // kPosTiles) is position kLanePos q + 2j + b, so that lane q of a quad
  // holds kLanePos consecutive positions of its rows; the last n8 tile holds
  // the halo, positions -4 .. -1 in its columns 0-3 and kGroupT .. + 3 in
  // 4-7. GEMM2's N is then GEMM1's first kGroupT columns, the same order:
  // the epilogue's 8 x 8 blocks of x^T are 8 consecutive rows (no bank
  // conflicts), and the depthwise makes kLanePos outputs a lane, not
  // kLanePos + 2 (kernels/NOTES.md, v30).
  __host__ __device__ static constexpr int column_of(int p) {
    if (p < 0) return kPosTiles * kMmaN + p + kHalo;
    if (p >= kGroupT) return kPosTiles * kMmaN + p - kGroupT + kHalo;
    const int r = p % kLanePos, q = p / kLanePos;
    return (r / 2) * kMmaN + 2 * q + r % 2;
  }
  // Position of GEMM1 column n (the inverse).
  __host__ __device__ static constexpr int position_of(int n) {
    const int j = n / kMmaN, q = n % kMmaN / 2, b = n % 2, hh = n % kMmaN;
    if (j == kPosTiles) return hh < kHalo ? hh - kHalo : kGroupT + hh - kHalo;
    return q * kLanePos + 2 * j + b;
  }
  // x^T's copies in and out (stage_x, store_y) go by items of 8 positions
  // (an octet) x 8 channels (a group), a 16-byte row of x^T each, an item a
  // thread. Item -> octet, group of the kPosTiles x kGroupsC octets of the
  // positions 0 .. kGroupT - 1: each 8 lanes of a warp take 4 octets of
  // distinct lanes q (x^T rows distinct mod 8) x 2 adjacent groups (swizzled
  // chunks then distinct), so their 16-byte accesses hit 8 distinct chunks
  // of the banks; by octet, group in order they would hit 4 (2-way conflicts).
  static constexpr int kOctetsPerLane = kLanePos / 8;
  __host__ __device__ static constexpr int item_octet(int item) {
    return kOctetsPerLane * (item % 8 % 4) + item / 8 % kOctetsPerLane;
  }
  __host__ __device__ static constexpr int item_group(int item) { return 2 * (item / 8 / kOctetsPerLane) + item % 8 / 4; }

  // Workspace (bytes): per chunk its W1 slot image then its W2 slot image;
  // then the tap records (floats).
  __host__ __device__ static constexpr int64_t taps_offset_floats(int64_t E) {
    return ceil_div(E, kEChunk) * 2 * kSlotBytes / sizeof(float);
  }
  __host__ __device__ static constexpr int64_t workspace_floats(int64_t E) {
    return taps_offset_floats(E) + ceil_div(E, kEChunk) * kEChunk * kTapRecord;
  }
};
using Tile128 = Tile<64, 256, 4, true>;  // C <= 256: 128-position tiles, two chunks in flight
// 320 < C <= 384: 64-position tiles (acc 6 x 16 registers), 1.5 chunks; the
// ring's releases on thread 0: split, this tile ran 3-4% slower in both
// dtypes (measured, not understood: ptxas's schedule at 255 registers;
// kernels/NOTES.md, v50)
using Tile64 = Tile<32, 384, 3, false>;
// 256 < C <= 320: Tile64 with 5 channel blocks, not 6: the GEMMs, the ring's
// fills, x^T and the epilogue run over kCMax, so on Tile64 a sixth of their
// work at C = 320 was padding; 4 slots (two chunks in flight) then fit.
using Tile64C320 = Tile<32, 320, 4, true>;

template <class G>
constexpr bool tile_ok() {
  return G::kSlotBytes == G::kCMax * kRowBytes &&  // a W2 chunk fills a slot as a W1 chunk does
         G::kXtBlockBytes % kAtomBytes == 0 && G::kH3Bytes % kAtomBytes == 0 && G::kRingOff % kAtomBytes == 0 &&
         G::kNTiles == G::kPosTiles + 1 && 2 * kHalo == kMmaN &&  // the halo: GEMM1's last n8 tile
         G::kLanePos % 2 == 0 && G::kLanePos >= kHalo &&            // halos from one neighbour
         G::kPosTiles % 4 == 0 &&                                   // stmatrix: x4s
         G::kPosTiles == 4 * G::kOctetsPerLane && G::kGroupsC % 2 == 0 &&  // item_octet, item_group
         G::kOctets == G::kPosTiles + 2 &&                          // staging: a halo octet each side
         G::position_of(G::column_of(-kHalo)) == -kHalo &&
         G::position_of(G::column_of(G::kGroupT + kHalo - 1)) == G::kGroupT + kHalo - 1 &&
         G::column_of(G::position_of(G::kCols - 3)) == G::kCols - 3;  // a permutation
}
static_assert(tile_ok<Tile128>() && tile_ok<Tile64C320>() && tile_ok<Tile64>(), "the 16-bit tiles");
static_assert(Tile128::kSmemBytes <= 232448 && Tile64C320::kSmemBytes <= 232448 && Tile64::kSmemBytes <= 232448,
              "one CTA per SM (227 KB)");
__host__ __device__ constexpr int64_t chunks(int64_t E) { return ceil_div(E, kEChunk); }

// x by channel, GEMM1's B N-major: on aligned rows x is staged as it lies
// in global memory (stage_x_by_channel: 4-byte copies, no transpose; a pair
// of positions needs an even L, and aligned rows have L % 8 == 0), 4%
// faster than v39's x^T (kernels/NOTES.md, v43). Byte offset of channel c,
// GEMM1 column n:
template <class G>
__host__ __device__ constexpr uint32_t xs_offset(int c, int n) {
  return n / kMmaN * G::kXsTileBytes + c * kChunkBytes + n % kMmaN * 2;
}
// Its wgmma descriptor (N-major, no swizzle): the next 8 channels (K) 128
// bytes on, the next n8 tile kXsTileBytes.
__device__ __forceinline__ uint64_t xs_desc_of(uint32_t xs, uint32_t tile_bytes) {
  return smem_desc(xs, kCoreRows * kChunkBytes, tile_bytes);
}

// wgmma descriptor of a K-major, 128-byte-swizzled operand starting at addr
// (8-row groups 1024 bytes apart; the leading offset is unused there).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  constexpr uint64_t kSwizzle128 = uint64_t{1} << 62;  // layout type, bits 62-63
  return smem_desc(addr, kChunkBytes, kAtomBytes) | kSwizzle128;
}

// Adds 1 to a counter in shared memory and returns the count before it, with
// acquire-release order at CTA scope: the thread that finds the other
// warpgroup's release of a ring slot there has that warpgroup's (completed)
// reads of the slot ordered before the refill it then issues, as an
// mbarrier's arrive and wait would.
__device__ __forceinline__ uint32_t release_count(uint32_t addr) {
  uint32_t old;
  asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;\n" : "=r"(old) : "r"(addr) : "memory");
  return old;
}

// Two fp32 values as one register of In (lo in the low half).
template <class In>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<In, __half>) return f16x2(lo, hi);
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// The weights in the kernel's slot images (In, zero-padded to kCMax channels
// and whole chunks, channels in channel_at's order) and the tap records,
// grid-stride.
template <class G, class In, bool kByClass>
__global__ void __launch_bounds__(kPackThreads) pack_kernel(Params p) {
  const In* const w1 = in_ptr<In>(p.w1);
  const In* const w2 = in_ptr<In>(p.w2);
  In* const ws = reinterpret_cast<In*>(p.workspace);
  const int64_t C = p.C, E = p.E, nc = chunks(E);
  constexpr int64_t kSlotElems = G::kSlotBytes / sizeof(In);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < nc * 2 * kSlotElems; i += stride) {
    const int64_t chunk = i / (2 * kSlotElems);
    const bool is_w2 = i / kSlotElems % 2 != 0;
    const int o = static_cast<int>(i % kSlotElems);
    const int block = o / (kSlotElems / G::kKBlocks);             // W1's channel block (W2: always 0 below)
    const int r = is_w2 ? o / kKBlock : o % (kSlotElems / G::kKBlocks) / kKBlock;  // row in the block
    const int k = ((o % kKBlock / 8) ^ (r % 8)) * 8 + o % 8;      // undo the swizzle
    float v = 0.0f;
    if (!is_w2) {
      const int64_t e = chunk * kEChunk + r, c = channel_at<kByClass>(block * kKBlock + k);
      if (e < E && c < C) v = Elem<In>::to_float(w1[e * C + c]);
    } else {
      const int64_t c = channel_at<kByClass>(r), e = chunk * kEChunk + k;
      if (e < E && c < C) v = Elem<In>::to_float(w2[c * E + e]);
    }
    ws[i] = Elem<In>::from_float(v);
  }
  pack_taps<In>(p, p.workspace + G::taps_offset_floats(E), nc * kEChunk);
}

// x^T of one warpgroup's 72 columns (positions pw0 - 4 .. pw0 + 67 of row xb,
// zero outside [0, L) and beyond C), in column order, and its bias-step
// flags v, in the kernel for unaligned rows (aligned rows take x by
// channel: stage_x_by_channel). Work items of 8 channels (a chunk of x^T,
// channel_of: one alignment class) x 8 positions: eight aligned 16-byte
// loads, one a row, transposed in registers, eight 16-byte stores. The
// chunk's rows start at one alignment, so its blocks are aligned blocks of
// every row at once: the first holds position pw0 - kHalo at element
// `lead`, and kOctets blocks cover the 72 positions whatever `lead` is
// (72 + 7 <= 80). A block is loaded only where it holds a
// position of [0, L) of its row, so one of x's elements: it starts inside
// x's allocation (16-byte aligned at least) and ends inside the granule that
// holds that element (CUDA maps allocations in whole granules of 256 bytes
// and more); positions outside [0, L) are stored as 0. (v31-v34 shifted
// unaligned rows into octets by words or shuffles: kernels/NOTES.md.)
template <class G, class In>
__device__ __forceinline__ void stage_valid(uint8_t* valid, int L, int pw0, int t) {
  if (t < G::kCols) {
    const int pos = pw0 + G::position_of(t);
    *reinterpret_cast<In*>(valid + t / kCoreRows * kValidRowGroup + t % kCoreRows * kChunkBytes) =
        Elem<In>::from_float(pos >= 0 && pos < L ? 1.0f : 0.0f);
  }
}
template <class G, class In>
__device__ __forceinline__ void stage_x(uint8_t* xt, uint8_t* valid, const In* xb, int C, int L, int pw0, int t) {
  stage_valid<G, In>(valid, L, pw0, t);
  // items: the kPosTiles inner blocks by item_octet, item_group; then the
  // first and the last block, 8 adjacent chunks a quarter warp
  constexpr int kInner = G::kPosTiles * G::kGroupsC, kItems = G::kOctets * G::kGroupsC;
  for (int item = t; item < kItems; item += kWarpgroupThreads) {
    const int halo = item - kInner;
    const int oct = halo < 0 ? 1 + G::item_octet(item) : halo < G::kGroupsC ? 0 : G::kOctets - 1;
    const int cg = halo < 0 ? G::item_group(item) : halo % G::kGroupsC;
    const int lead = static_cast<int>((reinterpret_cast<uintptr_t>(xb) / sizeof(In) +
                                       static_cast<uintptr_t>(channel_of(8 * cg)) * L +
                                       static_cast<uintptr_t>(pw0 - kHalo)) % 8);
    const int a = pw0 - kHalo - lead + 8 * oct;  // the block's first position
    uint32_t v[8][4];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int c = channel_of(8 * cg + i);
      uint4 u = make_uint4(0, 0, 0, 0);
      if (c < C && a + 8 > 0 && a < L)
        u = __ldg(reinterpret_cast<const uint4*>(xb + static_cast<int64_t>(c) * L + a));
      v[i][0] = u.x, v[i][1] = u.y, v[i][2] = u.z, v[i][3] = u.w;
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int p = a + j - pw0;  // warpgroup position
      if (p < -kHalo || p >= G::kGroupT + kHalo) continue;
      const uint32_t sel = j % 2 ? 0x7632 : 0x5410;  // the high or low halves of two words
      uint4 w;
      w.x = __byte_perm(v[0][j / 2], v[1][j / 2], sel);
      w.y = __byte_perm(v[2][j / 2], v[3][j / 2], sel);
      w.z = __byte_perm(v[4][j / 2], v[5][j / 2], sel);
      w.w = __byte_perm(v[6][j / 2], v[7][j / 2], sel);
      if (a + j < 0 || a + j >= L) w = make_uint4(0, 0, 0, 0);
      const int n = G::column_of(p);
      *reinterpret_cast<uint4*>(xt + (cg / 8) * G::kXtBlockBytes + swizzled(n, (cg % 8) * 8)) = w;
    }
  }
}

// x of one warpgroup's columns by channel (aligned rows; at xs), and the
// bias step's flags. Lane (j, q) of a warp copies positions pw0 + 16 q + 2 j
// and + 1, GEMM1's columns 8 j + 2 q and + 1 (column_of), by one 4-byte
// cp.async: a warp moves one channel's 128 bytes of x (a line, aligned
// rows) into 32 distinct banks (kXsTileBytes); at Tile64 (8 q + 2 j, j < 4)
// two channels' 64 bytes, c and c + 4, 16 banks apart. Then the halo, the
// pairs at -4, -2, kGroupT and + 2: 16 bytes a channel, 8 channels a warp.
// A pair lies wholly inside or outside [0, L) (pw0 and L even); those
// outside are zero-filled. Channels C .. kCMax are not written: zero since
// the kernel's start. Asynchronous, no registers held: cp_async_wait and
// fence_proxy_async before GEMM1 reads it.
template <class G, class In>
__device__ __forceinline__ void stage_x_by_channel(uint32_t xs, uint8_t* valid, const In* xb, int C, int L, int pw0,
                                                   int t) {
  constexpr int kRowPairs = G::kGroupT / 2;         // a channel's pairs, halo aside
  constexpr int kRowsACopy = kWarpSize / kRowPairs;  // channels a warp copies at once
  static_assert(kRowsACopy * kRowPairs == kWarpSize && kRowsACopy <= 2, "one or two channels a copy");
  stage_valid<G, In>(valid, L, pw0, t);
  // (opaque: the addresses are worked out here each tile, not hoisted out of
  // the tile loop into registers the GEMM turns need)
  t = opaque(t), L = opaque(L);
  const int warp = t / kWarpSize, lane = t % kWarpSize, j = lane % kRowPairs / kQuad, q = lane % kQuad;
  constexpr int kStride = kGroupWarps * kRowsACopy;
  const int c0 = warp + kGroupWarps * (lane / kRowPairs);
  const int pos = pw0 + G::kLanePos * q + 2 * j;
  const bool inside = pos < L;  // (pos >= 0)
  uint32_t dst = xs + xs_offset<G>(c0, kMmaN * j + 2 * q);
  const In* src = xb + c0 * static_cast<int64_t>(L) + (inside ? pos : 0);
  const int64_t step = static_cast<int64_t>(kStride) * L;
#pragma unroll 4
  for (int c = c0; c < C; c += kStride, src += step, dst += kStride * kChunkBytes)
    cp_async_4_zfill_shared(dst, src, inside);
  constexpr int kHaloPairs = kHalo;  // 2 kHalo columns a channel, 2 a copy
  for (int i = t; i < C * kHaloPairs; i += kWarpgroupThreads) {
    const int c = i / kHaloPairs, n = G::kPosTiles * kMmaN + 2 * (i % kHaloPairs);
    const int p = pw0 + G::position_of(n);
    const bool in = p >= 0 && p < L;
    cp_async_4_zfill_shared(xs + xs_offset<G>(c, n), xb + static_cast<int64_t>(c) * L + (in ? p : 0), in);
  }
  cp_async_commit();
}

// Starts fetching into L2 the x that stage_x will read for the warpgroup's
// columns at pw0 (row xb): the lines of each channel's kOctets x 16 bytes
// (160 at Tile128: 3 lines, as they need not start a line), so that the
// staging's loads, on the tile boundary, wait for L2 rather than DRAM.
template <class G, class In>
__device__ __forceinline__ void prefetch_x(const In* xb, int C, int L, int pw0, int t) {
  constexpr int kLineBytes = 128, kLineElems = kLineBytes / sizeof(In);
  constexpr int kLines = (G::kOctets * 8 * static_cast<int>(sizeof(In)) + kLineBytes - 1) / kLineBytes + 1;
  for (int i = t; i < C * kLines; i += kWarpgroupThreads) {
    const int c = i / kLines, pos = pw0 - 2 * kHalo + (i % kLines) * kLineElems;
    const int at = min(max(pos, 0), L - 1);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(xb + static_cast<int64_t>(c) * L + at));
  }
}

// A row's tap record (kTapRecord floats: the taps, kTapBias, kTapNextB1), as
// the depthwise reads it: three 16-byte loads.
struct TapRecord {
  float4 r[kTapRecord / 4];
};
__device__ __forceinline__ TapRecord load_tap_record(const float* rec) {
  TapRecord t;
#pragma unroll
  for (int i = 0; i < kTapRecord / 4; ++i) t.r[i] = __ldg(reinterpret_cast<const float4*>(rec) + i);
  return t;
}

// The depthwise, GELU and h3^T of one chunk from GEMM1's accumulators: lane q
// of a quad holds positions 16q + i (i = 0..15) of rows g and g + 8 of its
// warp in acc[4j + 2h + b] (row g + 8h, i = 2j + b, j < 8), and halo
// positions in acc[32 + 2h + b]: lane 0 -4, -3; lane 1 -2, -1; lane 2 64,
// 65; lane 3 66, 67 (Tile128; Tile64 the same with 8 for 16 and 32 for 64).
// next_b1: the next chunk's b1 of rows g and g + 8 (the tap records'
// kTapNextB1, read with the taps), for the next GEMM1's bias step.
// first: row g's tap record, loaded by the caller ahead of the depthwise;
// row g + 8's is loaded here, under row g's FMAs.
template <class G, class In>
__device__ __forceinline__ void depthwise_h3(const float (&acc)[G::kCols / 2], const float* taps, int e0, uint32_t h3,
                                             int warp, float (&next_b1)[2], const TapRecord& first) {
  constexpr int kN = G::kLanePos;
  // (the lane through volatile asm: the stmatrix addresses below are then
  // worked out where they are used, not held in registers from chunk to chunk)
  const int lane = lane_id(), q = lane % kQuad;
  // stmatrix .trans, matrix m (of an x4) the n8 tile j + m: lane 8m + i gives
  // the address of column i of it, h3^T's row 8 (j + m) + i: the 8 expanded
  // channels of row half h, 16 bytes.
  const int i = lane % 8;
  auto address = [&](int j, int h, int m) {
    const int row = kMmaN * (j + m) + i;
    return h3 + row * kRowBytes + (((2 * warp + h) ^ i) * kChunkBytes);
  };
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const TapRecord rec = h == 0 ? first : load_tap_record(taps + static_cast<int64_t>(e0 + 8) * kTapRecord);
    const float4 r0 = rec.r[0], r1 = rec.r[1], r2 = rec.r[2];
    const float tap[kMaxK] = {r0.x, r0.y, r0.z, r0.w, r1.x, r1.y, r1.z, r1.w, r2.x};
    float v[kN];  // h1, with b1 and the padding (GEMM1's bias step)
#pragma unroll
    for (int k = 0; k < kN; ++k) v[k] = acc[4 * (k / 2) + 2 * h + k % 2];
    const float u[2] = {acc[4 * G::kPosTiles + 2 * h], acc[4 * G::kPosTiles + 2 * h + 1]};  // the halo pair
    const float bias = r2.y;  // slot kTapBias
    next_b1[h] = r2.z;        // slot kTapNextB1
    // the kHalo positions before and after the lane's: from the quad
    // neighbours'; lane 0's before from the halo pairs of lanes 0, 1, lane
    // 3's after from those of lanes 2, 3 (partners under lane ^ 1)
    float lo[kHalo], hi[kHalo];
#pragma unroll
    for (int k = 0; k < kHalo; ++k) {
      lo[k] = __shfl_up_sync(0xffffffffu, v[kN - kHalo + k], 1);
      hi[k] = __shfl_down_sync(0xffffffffu, v[k], 1);
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const float partner = __shfl_xor_sync(0xffffffffu, u[k], 1);
      if (q == 0) lo[k] = u[k], lo[k + 2] = partner;
      if (q == kQuad - 1) hi[k] = partner, hi[k + 2] = u[k];
    }
    // the n8 tile j's two columns of this row, as one register of In
    auto tile = [&](int j) {
      float out[2];
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        float s = bias;
#pragma unroll
        for (int k = 0; k < kMaxK; ++k) {
          const int idx = 2 * j + b + k - kHalo;
          const float in = idx < 0 ? lo[idx + kHalo] : idx >= kN ? hi[idx - kN] : v[idx];
          s = fmaf(tap[k], in, s);
        }
        out[b] = gelu16_from_half<In>(s);
      }
      return pack2<In>(out[0], out[1]);
    };
    // four tiles a store, each stored as soon as it is made: fewer values
    // in flight (the register file holds acc and acc1 besides)
#pragma unroll
    for (int j = 0; j < G::kPosTiles; j += 4)
      stmatrix_x4_trans(address(j, h, lane / 8), tile(j), tile(j + 1), tile(j + 2), tile(j + 3));
  }
  fence_proxy_async();  // read by GEMM2 after the next turn barrier
}

// Two values of In in one register (lo in the low half), as fp32 (exact).
template <class In>
__device__ __forceinline__ float2 unpack2(uint32_t r) {
  if constexpr (std::is_same_v<In, __half>) return __half22float2(*reinterpret_cast<const __half2*>(&r));
  return make_float2(__uint_as_float(r << 16), __uint_as_float(r & 0xffff0000u));
}

// Four 8 x 8 matrices of 16-bit values, transposed (kTrans) or as they lie.
template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
#define FD_LDMATRIX_X4(FORM)                                                              \
  asm volatile("ldmatrix.sync.aligned.m8n8.x4" FORM ".shared.b16 {%0, %1, %2, %3}, [%4];\n" \
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])                          \
               : "r"(addr)                                                                \
               : "memory")
  if constexpr (kTrans)
    FD_LDMATRIX_X4(".trans");
  else
    FD_LDMATRIX_X4("");
#undef FD_LDMATRIX_X4
}

// Lane's address for an ldmatrix / stmatrix x4 .trans over x^T in the
// accumulators' layout: lane 8m + i gives row i of matrix m, matrix m the
// n8 tile j + m / 2 of row half m % 2 of channel block mb (x^T's row of
// acc's column: the same column order).
template <class G>
__device__ __forceinline__ uint32_t xt_block_addr(uint32_t xt, int mb, int j, int warp, int lane) {
  const int i = lane % 8, m = lane / 8;
  const int row = kMmaN * (j + m / 2) + i;
  return xt + mb * G::kXtBlockBytes + row * kRowBytes + (((2 * warp + m % 2) ^ i) * kChunkBytes);
}

// The same blocks where x lies by channel (aligned rows): lane 8m + i gives
// channel 64 mb + 16 warp + 8 (m % 2) + i of n8 tile j + m / 2, read without
// .trans (a channel a row: the core matrix as it lies).
template <class G>
__device__ __forceinline__ uint32_t xs_block_addr(uint32_t xs, int mb, int j, int warp, int lane) {
  const int i = lane % 8, m = lane / 8;
  return xs + xs_offset<G>(kWgmmaM * mb + kMmaM * warp + 8 * (m % 2) + i, kMmaN * (j + m / 2));
}

// acc = b2 + x at the tile's start, in the accumulators' layout (ldmatrix
// .trans reads of x^T's 8 x 8 blocks; on aligned rows, where x lies by
// channel, ldmatrix), so that GEMM2 adds onto the residual and y leaves acc
// as it is. Called in the tail of the tile's first turn, under its GEMM1
// (acc is free there: the previous tile's y has left), not on the path
// between that turn and the next (kernels/NOTES.md, v47).
template <class G, class In, bool kAlignedX>
__device__ __forceinline__ void init_acc(float (&acc)[G::kKBlocks][G::kGroupT / 2], const Params& p, uint32_t xt,
                                         int C, int warp) {
  const int lane = lane_id(), g = lane / kQuad;
  const In* const b2 = in_ptr<In>(p.b2);
#pragma unroll
  for (int mb = 0; mb < G::kKBlocks; ++mb) {
    float bias[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = channel_at<!kAlignedX>(mb * kWgmmaM + warp * kMmaM + 8 * h + g);
      bias[h] = c < C ? Elem<In>::to_float(b2[c]) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < G::kPosTiles; j += 2) {
      uint32_t r[4];
      if constexpr (kAlignedX)
        ldmatrix_x4<false>(xs_block_addr<G>(xt, mb, j, warp, lane), r);
      else
        ldmatrix_x4<true>(xt_block_addr<G>(xt, mb, j, warp, lane), r);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int jj = j + k / 2, h = k % 2;
        const float2 xv = unpack2<In>(r[k]);
        acc[mb][4 * jj + 2 * h] = bias[h] + xv.x;
        acc[mb][4 * jj + 2 * h + 1] = bias[h] + xv.y;
      }
    }
  }
}

// y = acc (b2 + x + the GEMM2 sums: init_acc) for the warpgroup's kGroupT
// positions, where rows of y need not be 16-byte aligned (store_y_aligned
// serves the others): thread (warp, g, q) holds channels channel_at(64 mb +
// 16 warp + 8 h + g) (x^T's alignment classes), columns 8 j + 2 q + b
// (positions position_of), which are also x^T's rows.
// 1. In the accumulators' layout: y is rounded once and stmatrix .trans
//    writes it over x^T's 8 x 8 blocks (8 columns x 8 channels), where
//    init_acc read x.
// 2. After the warpgroup's barrier, y^T leaves x^T by 8 channels x 8
//    positions: eight 16-byte rows, transposed in registers, eight 16-byte
//    stores (narrower where a row of y is not 16-byte aligned).
// A compact loop instead of 64 loads of x from L2 a thread and ~4k
// instructions of unrolled stores, which cost a quarter of the kernel's
// warp samples in instruction fetch and L2 waits (kernels/NOTES.md, v29).
// Ends with a barrier: x^T is free for the next tile's x.
template <class G, class In>
__device__ __forceinline__ void store_y(const float (&acc)[G::kKBlocks][G::kGroupT / 2], const Params& p,
                                        uint8_t* xt_ptr, uint32_t xt, int C, int L, int b, int pw0, int grp,
                                        int warp, int t) {
  // lane_id(): the stmatrix addresses below depend on the lane only; worked
  // out here each tile, not hoisted out of the tile loop into registers the
  // main loop needs
  const int lane = lane_id();
#pragma unroll
  for (int mb = 0; mb < G::kKBlocks; ++mb) {
#pragma unroll
    for (int j = 0; j < G::kPosTiles; j += 2) {
      const uint32_t addr = xt_block_addr<G>(xt, mb, j, warp, lane);
      uint32_t out[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int jj = j + k / 2, h = k % 2;
        out[k] = pack2<In>(acc[mb][4 * jj + 2 * h], acc[mb][4 * jj + 2 * h + 1]);
      }
      stmatrix_x4_trans(addr, out[0], out[1], out[2], out[3]);
    }
  }
  named_sync<kGroupSync>(grp, kWarpgroupThreads);  // y^T complete in x^T
  In* const y = out_ptr<In>(p.y) + static_cast<int64_t>(b) * C * L;
  // (octet, chunk) items over the chunks that hold a channel below C
  const int chunks_c = C / kKBlock * 8 + min(C % kKBlock, 8);
  const int items = G::kPosTiles * static_cast<int>(round_up(chunks_c, 2));
#pragma unroll 1
  for (int item = t; item < items; item += kWarpgroupThreads) {
    const int oct = G::item_octet(item), cg = G::item_group(item), p0 = pw0 + 8 * oct;
    if (p0 >= L || channel_at<true>(8 * cg) >= C) continue;
    uint32_t v[8][4];  // positions p0 + k, channels channel_at(cg * 8 + 0..7) (two a word)
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const uint4 u = *reinterpret_cast<const uint4*>(xt_ptr + (cg / 8) * G::kXtBlockBytes +
                                                       swizzled(G::column_of(8 * oct + k), (cg % 8) * 8));
      v[k][0] = u.x, v[k][1] = u.y, v[k][2] = u.z, v[k][3] = u.w;
    }
#pragma unroll
    for (int ch = 0; ch < 8; ++ch) {
      const int c = channel_at<true>(cg * 8 + ch);
      if (c >= C) continue;
      const uint32_t sel = ch % 2 ? 0x7632 : 0x5410;  // the high or low halves of two words
      uint32_t w[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) w[k] = __byte_perm(v[2 * k][ch / 2], v[2 * k + 1][ch / 2], sel);
      // the widest stores the row's address allows (rows of any L start
      // anywhere): 16 bytes, else pairs, else single values
      In* const yr = y + static_cast<int64_t>(c) * L + p0;
      const uintptr_t a = reinterpret_cast<uintptr_t>(yr);
      if (p0 + 8 <= L && a % sizeof(uint4) == 0) {
        __stcs(reinterpret_cast<uint4*>(yr), make_uint4(w[0], w[1], w[2], w[3]));
      } else if (p0 + 8 <= L && a % sizeof(uint2) == 0) {
        __stcs(reinterpret_cast<uint2*>(yr), make_uint2(w[0], w[1]));
        __stcs(reinterpret_cast<uint2*>(yr + 4), make_uint2(w[2], w[3]));
      } else if (a % sizeof(uint32_t) == 0) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (p0 + 2 * k + 1 < L)
            __stcs(reinterpret_cast<unsigned int*>(yr + 2 * k), w[k]);
          else if (p0 + 2 * k < L)
            __stcs(reinterpret_cast<unsigned short*>(yr + 2 * k), static_cast<unsigned short>(w[k] & 0xffffu));
        }
      } else {  // 2-byte aligned: the first and last position alone, the pairs between as words
        __stcs(reinterpret_cast<unsigned short*>(yr), static_cast<unsigned short>(w[0] & 0xffffu));
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          const uint32_t pair = __funnelshift_r(w[k], w[k + 1], 16);  // positions p0 + 2k + 1, + 2
          if (p0 + 2 * k + 2 < L)
            __stcs(reinterpret_cast<unsigned int*>(yr + 2 * k + 1), pair);
          else if (p0 + 2 * k + 1 < L)
            __stcs(reinterpret_cast<unsigned short*>(yr + 2 * k + 1), static_cast<unsigned short>(pair & 0xffffu));
        }
        if (p0 + 7 < L) __stcs(reinterpret_cast<unsigned short*>(yr + 7), static_cast<unsigned short>(w[3] >> 16));
      }
    }
  }
  named_sync<kGroupSync>(grp, kWarpgroupThreads);  // x^T read: free for the next tile's x
}

// y = acc (b2 + x + the GEMM2 sums: init_acc) straight from the registers,
// for rows of y that are 16-byte aligned (L % 8 == 0, y so aligned): lane q
// of a quad holds kLanePos consecutive positions 16q + 2j + b (Tile64: 8q)
// of its rows (column_of), so each of its kLanePos / 8 blocks of 8 is one
// 16-byte store (by the lane or, with two blocks a lane, its quad partner:
// whole sectors, kernels/NOTES.md, v48), and whole blocks lie inside or
// outside [0, L) (pw0 and L multiples of 8). No pass through shared memory
// and no barrier: the x buffer's last reader (the tile's last GEMM1)
// finished before this warpgroup's last turn began.
template <class G, class In>
__device__ __forceinline__ void store_y_aligned(const float (&acc)[G::kKBlocks][G::kGroupT / 2], const Params& p,
                                                int C, int L, int b, int pw0, int warp) {
  const int lane = lane_id(), g = lane / kQuad, q = lane % kQuad;
  In* const y = out_ptr<In>(p.y) + static_cast<int64_t>(b) * C * L;
  constexpr int kBlocks = G::kLanePos / 8;  // 16-byte blocks a lane and row
  static_assert(kBlocks == 1 || kBlocks == 2, "a lane's positions of a row: one or two 16-byte blocks");
#pragma unroll
  for (int mb = 0; mb < G::kKBlocks; ++mb) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = mb * kWgmmaM + warp * kMmaM + 8 * h + g;
      uint32_t w[kBlocks][4];  // block s: positions kLanePos q + 8s .. + 7 (n8 tiles j = 4s .. 4s + 3)
#pragma unroll
      for (int s = 0; s < kBlocks; ++s)
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int j = 4 * s + k;
          w[s][k] = pack2<In>(acc[mb][4 * j + 2 * h], acc[mb][4 * j + 2 * h + 1]);
        }
      In* const yr = y + static_cast<int64_t>(c) * L + pw0;
      if constexpr (kBlocks == 1) {
        // the quad's 4 blocks are 64 consecutive bytes of the row: whole sectors
        if (c < C && G::kLanePos * q < L - pw0)
          __stcs(reinterpret_cast<uint4*>(yr + G::kLanePos * q), make_uint4(w[0][0], w[0][1], w[0][2], w[0][3]));
      } else {
        // A lane's two blocks are one 32-byte sector of the row; stored as
        // they lie, each 16-byte store would write half of 32 sectors a warp.
        // Lanes q and q ^ 1 swap one block, so that each store writes whole
        // sectors (16 a warp): the first store lane 2i's two blocks (even
        // lanes their own block 0, odd lanes the partner's block 1), the
        // second lane 2i + 1's (even lanes the partner's block 0, odd lanes
        // their own block 1). (Shuffles outside the branches: the whole
        // warp takes part.)
        const bool odd = q % 2;
        uint32_t both[2][4];  // [store][word]
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const uint32_t got = __shfl_xor_sync(0xffffffffu, odd ? w[0][k] : w[1][k], 1);
          both[0][k] = odd ? got : w[0][k];
          both[1][k] = odd ? w[1][k] : got;
        }
#pragma unroll
        for (int st = 0; st < 2; ++st) {
          const int p0 = G::kLanePos * (q - q % 2 + st) + 8 * (q % 2);  // from pw0
          if (c < C && p0 < L - pw0)
            __stcs(reinterpret_cast<uint4*>(yr + p0), make_uint4(both[st][0], both[st][1], both[st][2], both[st][3]));
        }
      }
    }
  }
}

// kAlignedX: every row of x and y 16-byte aligned (L % 8 == 0, x and y so
// aligned: h16_aligned_rows): x by channel (stage_x_by_channel, GEMM1's B
// N-major) and y straight from the accumulators (store_y_aligned).
// Otherwise channel_of's alignment classes, which move unaligned rows by
// aligned blocks (the weights packed to match: pack_kernel's kByClass). A
// template flag, not a runtime one: with the unaligned rows' code in the
// same kernel the aligned case ran 1-3% slower (kernels/NOTES.md, v33 to v35).
template <class G, class In, bool kAlignedX>
__global__ void __launch_bounds__(kGroups * kWarpgroupThreads, 1) fused_dwsep_h16_kernel(Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + kAtomBytes - 1) & ~(kAtomBytes - 1);
  uint8_t* const sbase = smem_raw + (base - raw);
  const int tid = threadIdx.x, grp = tid / kWarpgroupThreads, t = tid % kWarpgroupThreads;
  const int warp = t / kWarpSize, lane = t % kWarpSize;
  const uint32_t xt = base + G::kXtOff + grp * G::kXBytes, h3 = base + G::kH3Off + grp * G::kH3Bytes;
  // released: a counter a slot (8 bytes apart, after the slots' full
  // mbarriers), two releases a fill, one a warpgroup
  const uint32_t ring = base + G::kRingOff, full = base + G::kBarOff, released = full + G::kSlots * sizeof(uint64_t);
  uint8_t* const valid = sbase + G::kValidOff + grp * G::kValidBytes;

  const int C = static_cast<int>(p.C);
  const int L = static_cast<int>(p.L);
  const int nc = static_cast<int>(chunks(p.E));
  // select_path (h16_sizes_fit) keeps tiles and fills below 2^31 and L below 2^31 - kTileT
  const int tiles_per_row = static_cast<int>(ceil_div(L, G::kTileT));
  // the CTA's tiles: blockIdx.x, + gridDim.x, ...
  auto cta_tiles = [&p] {
    const int tiles = static_cast<int>(p.B * ceil_div(p.L, G::kTileT));
    return (tiles - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
  };
  const int my_tiles = cta_tiles();
  // What the turns use rarely is worked out from p (kernel parameters, not
  // registers) where it is used: the register file is full (acc, acc1 and
  // the depthwise), and ptxas would spill it otherwise.
  auto fills = [&] { return 2 * static_cast<int>(chunks(p.E)) * cta_tiles(); };  // 2 ring fills a chunk
  auto taps = [&p] { return p.workspace + G::taps_offset_floats(p.E); };
  auto x_row = [&p](int b) { return in_ptr<In>(p.x) + static_cast<int64_t>(b) * p.C * p.L; };

  auto issue_fill = [&](int f) {
    const int slot = f % G::kSlots;
    const int chunk = f / 2 % static_cast<int>(chunks(p.E));
    bulk_load(ring + slot * G::kSlotBytes,
              reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(p.workspace) +
                                             static_cast<size_t>(2 * chunk + f % 2) * G::kSlotBytes),
              G::kSlotBytes, full + slot * sizeof(uint64_t));
  };
  auto slot_of = [&](int f) { return ring + f % G::kSlots * G::kSlotBytes; };
  auto wait_full = [&](int f) { mbar_wait(full + f % G::kSlots * sizeof(uint64_t), f / G::kSlots % 2); };

  for (uint32_t i = t * sizeof(uint4); i < G::kValidBytes; i += kWarpgroupThreads * sizeof(uint4))
    *reinterpret_cast<uint4*>(valid + i) = make_uint4(0, 0, 0, 0);  // channels 1..15 stay 0
  if constexpr (kAlignedX)  // channels C .. kCMax stay 0 (stage_x_by_channel writes those below C)
    for (uint32_t i = t * sizeof(uint4); i < G::kXBytes; i += kWarpgroupThreads * sizeof(uint4))
      *reinterpret_cast<uint4*>(sbase + (xt - base) + i) = make_uint4(0, 0, 0, 0);
  if (tid == 0) {
    for (int s = 0; s < G::kSlots; ++s) {
      mbar_init(full + s * sizeof(uint64_t), 1);
      *reinterpret_cast<uint32_t*>(sbase + (released - base) + s * sizeof(uint64_t)) = 0;
    }
    fence_mbar_init();
  }
  __syncthreads();
  if (tid == 0)
    for (int f = 0; f < G::kSlots && f < fills(); ++f) issue_fill(f);

  auto tile_at = [&](int it, int& b, int& pw0) {
    const int tile = blockIdx.x + it * gridDim.x;
    b = tile / tiles_per_row;
    pw0 = tile % tiles_per_row * G::kTileT + grp * G::kGroupT;
  };
  int b, pw0;
  // the next tile's x in shared memory, ready for GEMM1 after x_landed
  auto stage = [&](int sb, int spw0) {
    if constexpr (kAlignedX)
      stage_x_by_channel<G, In>(xt, valid, x_row(sb), C, L, spw0, t);
    else
      stage_x<G, In>(sbase + (xt - base), valid, x_row(sb), C, L, spw0, t);
  };
  auto x_landed = [] {
    if constexpr (kAlignedX) cp_async_wait<0>();
    fence_proxy_async();  // read by GEMM1 after the next turn barrier
  };
  if (my_tiles > 0) {
    tile_at(0, b, pw0);
    stage(b, pw0);
    x_landed();
  }

  float acc[G::kKBlocks][G::kGroupT / 2];  // b2 + x from init_acc, then GEMM2 adds to it
  float acc1[G::kCols / 2];                 // each GEMM1's first wgmma overwrites it
  int n = 0;  // chunks of the CTA's sequence whose GEMM1 has been issued
  // b1 of the next GEMM1's chunk, rows g and g + 8 of the warp: from the
  // tap records of the chunk before it (kTapNextB1; cyclically, so chunk
  // 0's from chunk nc - 1's), which the depthwise reads anyway; here for
  // the CTA's first turn. (Loaded at the turn, as in v30 to v47, the loads'
  // latency held the turn: kernels/NOTES.md, v48.)
  auto row_of = [&](int c) { return c * kEChunk + warp * kMmaM + lane / kQuad; };  // the lane's row g of chunk c
  float b1[2];
  TapRecord taps_g;  // row g's tap record of the next depthwise (fetch_taps)
  {
    const float* rec = taps() + static_cast<int64_t>(row_of(nc - 1)) * kTapRecord;
    b1[0] = __ldg(rec + kTapNextB1);
    b1[1] = __ldg(rec + 8 * kTapRecord + kTapNextB1);
  }
  // One turn on the tensor cores: GEMM2 of chunk n - 1 (kG2) and GEMM1 of
  // chunk n (kG1), then the slots they read released. Straight-line wgmmas
  // (flags known at compile time): under a runtime branch ptxas serialises
  // them. GEMM2 adds onto acc (b2 + x: init_acc); `tail` runs while the
  // wgmmas do.
  auto turn = [&](auto g2, auto g1, auto tail) {
    constexpr bool kG2 = decltype(g2)::value, kG1 = decltype(g1)::value;
    uint32_t a_b1[4] = {0, 0, 0, 0};  // the bias step's A: b1 of rows g, g + 8 in channel 0 (lanes q = 0)
    if (kG1 && lane % kQuad == 0) {
      a_b1[0] = pack2<In>(b1[0], 0.0f);
      a_b1[1] = pack2<In>(b1[1], 0.0f);
    }
    // every warp's depthwise (h3) done and its last wgmmas waited for (x's
    // buffer, the next tile's x staged in it)
    named_sync<kGroupSync>(grp, kWarpgroupThreads);
    if (kG2) wait_full(2 * n - 1);
    if (kG1) wait_full(2 * n);
    wgmma_fence();
    // descriptors: a base and compile-time offsets (ptxas otherwise works
    // out every step's descriptor ahead and holds them all in registers)
    if constexpr (kG2) {
      const uint64_t a = sw128_desc(slot_of(2 * n - 1)), b = sw128_desc(h3);
#pragma unroll
      for (int ks = 0; ks < kEChunk / kKStep; ++ks) {
#pragma unroll
        for (int mb = 0; mb < G::kKBlocks; ++mb) {
          const uint64_t da = a + desc_units(mb * kW1BlockBytes + ks * kKStep * 2), db = b + desc_units(ks * kKStep * 2);
          wgmma16<In, true>(acc[mb], da, db);
        }
      }
    }
    if constexpr (kG1) {
      // B: x by channel on aligned rows (N-major, k16 steps of 16 channels
      // two cores apart), else x^T (K-major, swizzled rows of 64 channels)
      const uint64_t a = sw128_desc(slot_of(2 * n));
      const uint64_t b = kAlignedX ? xs_desc_of(xt, G::kXsTileBytes) : sw128_desc(xt);
      constexpr int kBlockSteps = kKBlock / kKStep;  // k16 steps per 128-byte row
#pragma unroll
      for (int ks = 0; ks < G::kKBlocks * kBlockSteps; ++ks) {
        const uint32_t step = ks % kBlockSteps * kKStep * 2;
        const uint64_t da = a + desc_units(ks / kBlockSteps * kW1BlockBytes + step);
        const uint64_t db = b + desc_units(kAlignedX ? ks * kKStep * kChunkBytes
                                                     : ks / kBlockSteps * G::kXtBlockBytes + step);
        if (ks == 0)
          wgmma16<In, false, kAlignedX>(acc1, da, db);
        else
          wgmma16<In, true, kAlignedX>(acc1, da, db);
      }
      wgmma16_rs<In>(acc1, a_b1, smem_desc(smem_u32(valid), kValidCoreK, kValidRowGroup));
    }
    wgmma_commit();
    tail();
    wgmma_wait<0>();
#pragma unroll
    for (int mb = 0; mb < G::kKBlocks; ++mb) fence_operands(acc[mb]);
    fence_operands(acc1);
    // the slots this turn read are free; the second warpgroup to say so
    // refills them, so neither waits for the other here (v30 to v47:
    // warpgroup 1 waited for warpgroup 0's release when it was ahead,
    // ~0.5k cycles a chunk in v47's trace; kernels/NOTES.md, v48). GEMM2's
    // slot by lane 0 of warp 0, GEMM1's by lane 0 of warp 1: the release
    // delays its warp's depthwise, and the next turn's barrier waits for
    // the last warp (kernels/NOTES.md, v49); both by thread 0 where the
    // tile says so (Tile::kSplitRelease, v50d).
    const auto release = [&](int f) {
      if (release_count(released + f % G::kSlots * sizeof(uint64_t)) % 2 == 1 && f + G::kSlots < fills())
        issue_fill(f + G::kSlots);
    };
    if constexpr (G::kSplitRelease) {
      if (lane == 0 && warp < 2 && (warp == 0 ? kG2 : kG1)) release(warp == 0 ? 2 * n - 1 : 2 * n);
    } else if (t == 0) {  // GEMM2's slot (2n - 1), then GEMM1's (2n)
      for (int f = kG2 ? 2 * n - 1 : 2 * n; f <= (kG1 ? 2 * n : 2 * n - 1); ++f) release(f);
    }
    __syncwarp();
  };
  using std::false_type;
  using std::true_type;
  for (int it = 0; it < my_tiles; ++it) {
    const bool last_tile = it + 1 == my_tiles;
    auto stage_next = [&](int& nb, int& npw0) {  // the next tile's x
      tile_at(it + 1, nb, npw0);
      stage(nb, npw0);
    };
    auto depthwise = [&](int c) {
      depthwise_h3<G, In>(acc1, taps(), row_of(c), h3, warp, b1, taps_g);
      ++n;
    };
    // in the tail of the turn before depthwise(c): row g's tap record into
    // registers, row g + 8's into L1 (48 bytes, so up to two lines). Loaded
    // where the depthwise starts, row g's latency held its first FMAs
    // (kernels/NOTES.md, v48, v49).
    auto fetch_taps = [&](int c) {
      const float* rec = taps() + static_cast<int64_t>(row_of(c)) * kTapRecord;
      taps_g = load_tap_record(rec);
      prefetch_l1(rec + 8 * kTapRecord);
      prefetch_l1(rec + 9 * kTapRecord - 1);
    };
    turn(false_type{}, true_type{}, [&] {
      fetch_taps(0);
      init_acc<G, In, kAlignedX>(acc, p, xt, C, warp);  // acc is free: the last tile's y has left
      if (!last_tile) {  // the next tile's x, towards L2, while GEMM1 runs
        int nb, npw0;
        tile_at(it + 1, nb, npw0);
        prefetch_x<G, In>(x_row(nb), C, L, npw0, t);
      }
    });
    depthwise(0);
    for (int c = 1; c < nc; ++c) {
      turn(true_type{}, true_type{}, [&] { fetch_taps(c); });
      depthwise(c);
    }
    // the tile's last turn: GEMM2 only; then y (acc: b2 + x + the GEMM2
    // sums) and the next tile's x
    if constexpr (kAlignedX) {
      // y leaves from the registers, so the x buffer is free once the
      // tile's last GEMM1 is (every warp passed its wait before this turn's
      // barrier): the next tile's x is copied in while this turn's GEMM2
      // runs (v39; by channel since v43)
      int nb = b, npw0 = pw0;
      turn(true_type{}, false_type{}, [&] {
        if (!last_tile) stage_next(nb, npw0);
      });
      store_y_aligned<G, In>(acc, p, C, L, b, pw0, warp);
      if (!last_tile) x_landed();  // (by channel: the copies, in flight through the stores)
      b = nb, pw0 = npw0;
    } else {
      turn(true_type{}, false_type{}, [] {});  // y leaves by way of x^T, then x^T is free
      store_y<G, In>(acc, p, sbase + (xt - base), xt, C, L, b, pw0, grp, warp, t);
      if (!last_tile) {
        stage_next(b, pw0);
        x_landed();
      }
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

}  // namespace h16

}  // namespace wg
#endif  // FUSED_DWSEP_SM90A

int device_smem_optin(int device) {
  int bytes = 0;
  if (cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
    return 0;
  return bytes;
}

int device_sm_count(int device) {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 1;
  return sms > 0 ? sms : 1;
}

int device_major(int device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return 0;
  return major;
}

int device_minor(int device) {
  int minor = 0;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) return -1;
  return minor;
}

// The wgmma kernel exists only in builds for sm_90a (FUSED_DWSEP_SM90A, set by
// fused_dwsep.py for a compute-capability 9.0 GPU) and runs only on 9.0.
bool wgmma_built_for(int device) {
#if defined(FUSED_DWSEP_SM90A)
  return device_major(device) == 9 && device_minor(device) == 0;
#else
  (void)device;
  return false;
#endif
}

// Tile length for C <= 256: 128, or 64 / 32 for small problems. Each CTA
// (one per SM) takes one batch row and one tile, so B * L / 128 below the
// SM count leaves SMs idle while every CTA still walks all of E. A CTA's
// time grows like its h1 columns (T + halo) plus a part that does not shrink
// with T (the weights stream through every CTA): the T with the fewest
// waves x cost wins; ties go to the longer tile.
constexpr int kTileFixedCostColumns = 16;  // the T-independent part, in h1 columns

int choose_c256_tile(const Params& p, int device) {
  const int64_t sms = device_sm_count(device);
  int best_t = tc::C256::kTileT;
  int64_t best_cost = INT64_MAX;
  for (const int t : {tc::C256::kTileT, tc::C256T64::kTileT, tc::C256T32::kTileT}) {
    const int64_t waves = ceil_div(p.B * ceil_div(p.L, t), sms);
    const int64_t cost = waves * (t + 2 * tc::kMaxHalf + kTileFixedCostColumns);
    if (cost < best_cost) {
      best_cost = cost;
      best_t = t;
    }
  }
  return best_t;
}

// f(Type<In>{}) for p's element type.
template <class T>
struct Type {
  using type = T;
};
template <class F>
auto with_dtype(const Params& p, F f) {
  switch (p.dtype) {
    case DType::kBFloat16: return f(Type<__nv_bfloat16>{});
    case DType::kFloat16: return f(Type<__half>{});
    default: return f(Type<float>{});
  }
}

#if defined(FUSED_DWSEP_SM90A)
// f(tile) for the wgmma kernel's tile that serves C: WgHead up to C = 256,
// WgWide beyond (select_path checks that C fits it).
template <class F>
auto with_wg_tile(int64_t C, F f) {
  return C <= wg::WgHead::kCMax ? f(wg::WgHead{}) : f(wg::WgWide{});
}
// f(tile, exact, Type<In>) for the wgmma kernel that serves p: the exact mode
// (exact a std::true_type, fp32 only) on WgHead, which select_path keeps it
// to; else with_wg_tile's tile in the TF32 mode, for p's element type.
template <class F>
auto with_wg_kernel(const Params& p, F f) {
  if (!p.tf32) return f(wg::WgHead{}, std::true_type{}, Type<float>{});
  return with_dtype(p, [&](auto in) {
    return with_wg_tile(p.C, [&](auto tile) { return f(tile, std::false_type{}, in); });
  });
}
#endif

}  // namespace

// ---------------------------------------------------------------------------
// Launcher
// ---------------------------------------------------------------------------

namespace {

#if defined(FUSED_DWSEP_SM90A)
// f(tile) for the 16-bit kernel's tile that serves C: Tile128 up to C = 256,
// Tile64C320 up to 320, Tile64 beyond (h16_serves checks that C fits it).
template <class F>
auto with_h16_tile(int64_t C, F f) {
  if (C <= wg::h16::Tile128::kCMax) return f(wg::h16::Tile128{});
  return C <= wg::h16::Tile64C320::kCMax ? f(wg::h16::Tile64C320{}) : f(wg::h16::Tile64{});
}
// f(tile, Type<In>) for the 16-bit kernel that serves p (bf16 or fp16).
template <class F>
auto with_h16_kernel(const Params& p, F f) {
  return with_h16_tile(p.C, [&](auto tile) {
    return p.dtype == DType::kFloat16 ? f(tile, Type<__half>{}) : f(tile, Type<__nv_bfloat16>{});
  });
}
#endif

// Every row of x and y 16-byte aligned: the 16-bit kernel for aligned rows
// (and its packing, with the channels in order), else the one for any rows.
bool h16_aligned_rows(const Params& p) {
  return p.L % 8 == 0 && reinterpret_cast<uintptr_t>(p.x) % 16 == 0 && reinterpret_cast<uintptr_t>(p.y) % 16 == 0;
}

// The 16-bit kernel serves p's dtype, C and K on `device` (sizes aside).
bool h16_serves(const Params& p, int device) {
#if defined(FUSED_DWSEP_SM90A)
  return p.dtype != DType::kFloat32 && p.K <= tc::kMaxK && p.C <= wg::h16::Tile64::kCMax &&
         wgmma_built_for(device) &&
         static_cast<size_t>(device_smem_optin(device)) >=
             with_h16_tile(p.C, [](auto tile) { return static_cast<size_t>(decltype(tile)::kSmemBytes); });
#else
  (void)p;
  (void)device;
  return false;
#endif
}

// The 16-bit kernel counts positions, tiles and ring fills in 32 bits.
bool h16_sizes_fit(const Params& p) {
#if defined(FUSED_DWSEP_SM90A)
  const int64_t t = with_h16_tile(p.C, [](auto tile) { return int64_t{decltype(tile)::kTileT}; });
  return p.L <= INT32_MAX - t && p.B * ceil_div(p.L, t) * 2 * wg::h16::chunks(p.E) <= INT32_MAX;
#else
  (void)p;
  return false;
#endif
}

// select_path without the 16-bit kernel.
Path select_other_path(const Params& p, int device) {
  if (p.K <= tc::kMaxK && device_major(device) >= 8) {
    const size_t smem = static_cast<size_t>(device_smem_optin(device));
    static_assert(tc::C256T32::kSmemBytes <= tc::C256::kSmemBytes &&
                      tc::C256T64::kSmemBytes <= tc::C256::kSmemBytes,
                  "one check covers the C <= 256 tilings");
    if (p.C <= tc::C256::kCMax && smem >= tc::C256::kSmemBytes) {
      const bool long_tile = choose_c256_tile(p, device) == tc::C256::kTileT;
      return long_tile && wgmma_built_for(device) ? Path::kWgmma : Path::kTensorCore;
    }
#if defined(FUSED_DWSEP_SM90A)
    if (p.C <= wg::WgWide::kCMax && p.tf32 && wgmma_built_for(device) && smem >= wg::WgWide::kSmemBytes)
      return Path::kWgmma;
#endif
    static_assert(tc::C384::kSmemBytes <= tc::C512::kSmemBytes, "one check covers both wide tilings");
    if (p.C <= tc::C512::kCMax && smem >= tc::C512::kSmemBytes) return Path::kTensorCoreWide;
  }
  return Path::kNone;
}

}  // namespace

Path select_path(const Params& p, int device) {
  if (h16_serves(p, device) && h16_sizes_fit(p)) return Path::kWgmma16;
  return select_other_path(p, device);
}

namespace {

// What launch() needs to start one of the tensor-core kernels.
struct TcLaunch {
  void (*kernel)(Params);
  size_t smem;
  int tile_t, c_max;
};

template <class S>
TcLaunch tc_launch(const Params& p) {
  return with_dtype(p, [&](auto in) {
    using In = typename decltype(in)::type;
    void (*kernel)(Params) = tc::fused_dwsep_tc_kernel<S, false, In>;
    if constexpr (std::is_same_v<In, float>)
      if (!p.tf32) kernel = tc::fused_dwsep_tc_kernel<S, true, float>;
    return TcLaunch{kernel, S::kSmemBytes, S::kTileT, S::kCMax};
  });
}

// The kernel and tiling for a tensor-core path: kTensorCore takes the tile
// length choose_c256_tile picks, kTensorCoreWide the smallest wide tiling
// that holds C.
TcLaunch tc_launch(Path path, const Params& p, int device) {
#if defined(FUSED_DWSEP_SM90A)
  if (path == Path::kWgmma16)
    return with_h16_kernel(p, [&](auto tile, auto in) {
      using G = decltype(tile);
      using In = typename decltype(in)::type;
      return TcLaunch{h16_aligned_rows(p) ? wg::h16::fused_dwsep_h16_kernel<G, In, true>
                                       : wg::h16::fused_dwsep_h16_kernel<G, In, false>,
                      G::kSmemBytes, G::kTileT, G::kCMax};
    });
#endif
#if defined(FUSED_DWSEP_SM90A)
  if (path == Path::kWgmma)
    return with_wg_kernel(p, [](auto tile, auto exact, auto in) {
      using W = decltype(tile);
      return TcLaunch{wg::fused_dwsep_wgmma_kernel<W, decltype(exact)::value, typename decltype(in)::type>,
                      W::kSmemBytes, W::kTileT, W::kCMax};
    });
#endif
  if (path == Path::kTensorCoreWide)
    return p.C <= tc::C384::kCMax ? tc_launch<tc::C384>(p) : tc_launch<tc::C512>(p);
  switch (choose_c256_tile(p, device)) {
    case tc::C256T32::kTileT: return tc_launch<tc::C256T32>(p);
    case tc::C256T64::kTileT: return tc_launch<tc::C256T64>(p);
    default: return tc_launch<tc::C256>(p);
  }
}

}  // namespace

// The scratch must not depend on B and L (callers size it without them), so
// for C <= 256 it holds either kernel's packing: the wgmma kernel's (its own
// stage layout) or the mma.sync kernel's.
size_t workspace_floats(const Params& p, int device) {
  // (the 16-bit kernel's scratch, or, where B and L too large for it send
  // the call elsewhere, the other path's: whichever is larger)
  const Path path = select_other_path(p, device);
  size_t h16_floats = 0;
#if defined(FUSED_DWSEP_SM90A)
  if (h16_serves(p, device))
    h16_floats = with_h16_tile(p.C, [&](auto tile) { return static_cast<size_t>(decltype(tile)::workspace_floats(p.E)); });
#endif
  if (path == Path::kNone) return h16_floats;
  const TcLaunch tl = tc_launch(path, p, device);
  int64_t floats = tc::PackedLayout(p.C, p.E, p.tf32, tl.c_max).total_floats();
#if defined(FUSED_DWSEP_SM90A)
  if (wgmma_built_for(device) && (p.tf32 ? path != Path::kTensorCoreWide : p.C <= wg::WgHead::kCMax)) {
    const int64_t wg_floats = with_wg_tile(
        p.C, [&](auto tile) { return wg::WgLayout<decltype(tile)>(p.C, p.E).total_floats(); });
    floats = wg_floats > floats ? wg_floats : floats;
  }
#endif
  return static_cast<size_t>(floats) > h16_floats ? static_cast<size_t>(floats) : h16_floats;
}

cudaError_t launch(const Params& p, cudaStream_t stream) {
  if (p.B < 1 || p.C < 1 || p.E < 1 || p.L < 1 || p.K < 1 || p.K % 2 == 0 ||
      p.C > INT32_MAX || p.E > INT32_MAX || (p.dtype != DType::kFloat32 && !p.tf32)) {
    return cudaErrorInvalidValue;
  }
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const Path path = select_path(p, device);
  if (path == Path::kNone || p.workspace == nullptr) return cudaErrorInvalidValue;

  const TcLaunch tl = tc_launch(path, p, device);
  // Packing: ~1 MB of weights, a few hundred CTAs is plenty.
  constexpr int kPackBlocks = 512;
#if defined(FUSED_DWSEP_SM90A)
  if (path == Path::kWgmma16) {
    with_h16_kernel(p, [&](auto tile, auto in) {
      using G = decltype(tile);
      using In = typename decltype(in)::type;
      if (h16_aligned_rows(p))
        wg::h16::pack_kernel<G, In, false><<<kPackBlocks, kPackThreads, 0, stream>>>(p);
      else
        wg::h16::pack_kernel<G, In, true><<<kPackBlocks, kPackThreads, 0, stream>>>(p);
      return 0;
    });
  } else
#endif
#if defined(FUSED_DWSEP_SM90A)
  if (path == Path::kWgmma) {  // one CTA per ring fill or weight stage; the exact mode's maxima first
    const bool packed = with_wg_kernel(p, [&](auto tile, auto exact, auto in) {
      using W = decltype(tile);
      constexpr bool kExact = decltype(exact)::value;
      using In = typename decltype(in)::type;
      const wg::WgLayout<W> lay(p.C, p.E);
      const int64_t blocks = lay.pack_blocks();
      if (blocks > INT32_MAX) return false;
      if constexpr (kExact)
        wg::amax_kernel<<<wg::exact::kAmaxBlocks, wg::exact::kAmaxThreads, 0, stream>>>(p, p.workspace + lay.partials());
      wg::pack_weights_kernel<W, kExact, In><<<static_cast<unsigned>(blocks), kPackThreads, 0, stream>>>(p);
      return true;
    });
    if (!packed) return cudaErrorInvalidValue;
  } else
#endif
    with_dtype(p, [&](auto in) {
      tc::pack_weights_kernel<typename decltype(in)::type><<<kPackBlocks, kPackThreads, 0, stream>>>(p, tl.c_max);
    });
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  // One CTA per (batch row, position tile); ~226 KB of shared memory means
  // one CTA per SM, so the grid runs in waves. The wgmma kernel is
  // persistent instead: one CTA per SM, each walking its share of the tiles.
  const int64_t tiles = p.B * ceil_div(p.L, tl.tile_t);
  if (tiles > INT32_MAX) return cudaErrorInvalidValue;
  int64_t blocks = tiles;
  if (path == Path::kWgmma || path == Path::kWgmma16) {
    const int64_t sms = device_sm_count(device);
    if (blocks > sms) blocks = sms;
  }
  err = cudaFuncSetAttribute(tl.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(tl.smem));
  if (err != cudaSuccess) return err;
  tl.kernel<<<static_cast<unsigned>(blocks), tc::kThreads, tl.smem, stream>>>(p);  // both kernels: 8 warps
  return cudaGetLastError();
}

}  // namespace fused_dwsep
