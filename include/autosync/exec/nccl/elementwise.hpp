// autosync/exec/nccl/elementwise.hpp — the per-element logic of the CUDA bucket kernels,
// written once for the host and the device.
//
// Every function here is `__host__ __device__` under nvcc and plain `inline` under a host
// compiler, so the same code runs in the kernels of exec/nccl/kernels.cuh and in the host test
// (tests/cuda/kernel_logic.cpp) that checks it bit for bit against the CPU reference of
// exec/compress.hpp (round to nearest even, saturation, subnormals, NaN/inf) and against the
// executor's host pack/unpack. No standard library beyond <cstdint>/<cstring>, no Boost, no
// nlohmann (DESIGN §5): nvcc compiles it.
//
//   fused element i of a bucket ──locate(segments, i)──> (segment s, k = i - s.fused)
//   tensor element = s.offset + (k / s.block) * s.stride + k % s.block
//
//   encode (one element, error feedback):  v = x + r;  w = narrow(clamp(v * scale, +-max x scale));
//                                          r = finite(v) ? v - widen(w) / scale : 0
//   decode:                                 x' = (T)((double)widen(w) * (factor / scale))
//   average (uncompressed):                 f32: (float)(x * factor); f64: x * factor;
//                                           f16/bf16: narrow((double)widen(h) * factor), to inf
// These are exactly the operations of exec/compress.hpp encode/decode and of the executor's
// host `scale`, in the same order, so the device path gives the same bits as the MPI path (the
// division by a power-of-two scale is the multiplication by its exact inverse). The walk of a
// bucket (vectors, alignment, rows) is exec/nccl/bucket_walk.hpp.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define AUTOSYNC_HD __host__ __device__ __forceinline__
#else
#define AUTOSYNC_HD inline
#endif

namespace autosync::exec::nccl::ew {

// ---- bit casts (memcpy on the host; the intrinsics on the device) ------------------------------
AUTOSYNC_HD std::uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
AUTOSYNC_HD std::uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__float_as_uint(x));
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
AUTOSYNC_HD float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// floor(log2 m) + 1 for m > 0 (std::bit_width, which device code lacks).
AUTOSYNC_HD int bit_width(std::uint64_t m) {
#if defined(__CUDA_ARCH__)
  return 64 - __clzll(static_cast<long long>(m));
#else
  int w = 0;
  while (m != 0) {
    m >>= 1;
    ++w;
  }
  return w;
#endif
}

// ---- the 16-bit wire formats (exec/compress.hpp f16_format / bf16_format) ----------------------
enum class wire16 : std::uint8_t { f16, bf16 };

struct format16 {
  int exp_bits, man_bits, bias, emin;
  std::uint32_t exp_mask, sign_bit, inf_bits, max_bits, qnan_bits;
};
AUTOSYNC_HD format16 format_of(wire16 w) {
  const int E = w == wire16::f16 ? 5 : 8, M = w == wire16::f16 ? 10 : 7;
  format16 f{};
  f.exp_bits = E;
  f.man_bits = M;
  f.bias = (1 << (E - 1)) - 1;
  f.emin = 1 - f.bias;
  f.exp_mask = (1u << E) - 1u;
  f.sign_bit = 1u << (E + M);
  f.inf_bits = f.exp_mask << M;
  f.max_bits = f.inf_bits - 1u;
  f.qnan_bits = f.inf_bits | (1u << (M - 1));
  return f;
}

// Rounds a double (saturate: overflow gives +-max finite, else +-inf) — detail::narrow<F, double>.
//
// Fast path (a normal result, the common case): rebias the exponent and round the top mantissa
// bits to nearest even in 32-bit integer arithmetic on the double's two words,
//   r = (e_fmt << M) | mantissa[51 .. 52-M];  r += rest > half || (rest == half && r odd)
// (a carry out of the mantissa correctly bumps the exponent). A result that would be subnormal,
// overflow, or an input that is zero / subnormal / inf / NaN takes the general path below.
AUTOSYNC_HD std::uint16_t narrow(double x, wire16 w, bool saturate) {
  const format16 F = format_of(w);
  constexpr int E = 11, Msrc = 52;
  const int M = F.man_bits;
  const std::uint64_t bits = bits_of(x);
  const std::uint32_t sign = (bits >> (E + Msrc)) != 0 ? F.sign_bit : 0u;
  const auto ebits = static_cast<int>((bits >> Msrc) & ((std::uint64_t{1} << E) - 1));
  {
    const int e = ebits - 1023 + F.bias;  // the format's biased exponent, before rounding
    if (e >= 1 && e < static_cast<int>(F.exp_mask)) {
      const int dh = Msrc - M - 32;  // mantissa bits dropped from the high word (10 f16, 13 bf16)
      const auto hi = static_cast<std::uint32_t>(bits >> 32), lo = static_cast<std::uint32_t>(bits);
      const std::uint32_t mant_hi = hi & 0xfffffu;
      std::uint32_t r = (static_cast<std::uint32_t>(e) << M) | (mant_hi >> dh);
      const std::uint32_t rest = mant_hi & ((1u << dh) - 1u), half = 1u << (dh - 1);
      r += (rest > half || (rest == half && (lo != 0u || (r & 1u)))) ? 1u : 0u;
      if (r < F.inf_bits) return static_cast<std::uint16_t>(sign | r);
      // rounded up to infinity: the general path decides (saturate or inf)
    }
  }
  const std::uint64_t man = bits & ((std::uint64_t{1} << Msrc) - 1);
  if (ebits == (1 << E) - 1) return static_cast<std::uint16_t>(sign | (man != 0 ? F.qnan_bits : F.inf_bits));
  if (ebits == 0 && man == 0) return static_cast<std::uint16_t>(sign);
  constexpr int src_bias = (1 << (E - 1)) - 1;
  const std::uint64_t m = ebits == 0 ? man : (man | (std::uint64_t{1} << Msrc));
  const int e = (ebits == 0 ? 1 : ebits) - src_bias - Msrc;
  const int top = e + bit_width(m) - 1;
  const int q = (top > F.emin ? top : F.emin) - M;
  const int shift = q - e;
  std::uint64_t r = 0;
  if (shift <= 0) {
    r = m << (-shift);
  } else if (shift < 64) {
    r = m >> shift;
    const std::uint64_t rem = m & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
  }
  int qq = q;
  if (r >> (M + 1)) {
    r >>= 1;
    ++qq;
  }
  if (r < (std::uint64_t{1} << M)) return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(r));
  const int biased = qq + M + F.bias;
  if (biased >= static_cast<int>(F.exp_mask)) return static_cast<std::uint16_t>(sign | (saturate ? F.max_bits : F.inf_bits));
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(biased) << M) |
                                    static_cast<std::uint32_t>(r - (std::uint64_t{1} << M)));
}

// Exact widening to float — detail::widen<F>. bf16 is the top half of a float: the bits shifted,
// a NaN made quiet (as detail::widen does).
AUTOSYNC_HD float widen(std::uint16_t h, wire16 w) {
  if (w == wire16::bf16) {
    const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
    const bool nan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0u;
    return float_of(u | (nan ? 0x00400000u : 0u));
  }
  const format16 F = format_of(w);
  const int M = F.man_bits;
  const std::uint32_t sign = (h & F.sign_bit) ? 0x80000000u : 0u;
  const auto ebits = static_cast<int>((h >> M) & F.exp_mask);
  std::uint32_t man = h & ((1u << M) - 1u);
  if (ebits == static_cast<int>(F.exp_mask))
    return float_of(sign | 0x7f800000u | (man << (23 - M)) | (man != 0 ? 0x00400000u : 0u));
  if (ebits == 0) {
    if (man == 0) return float_of(sign);
    if (F.exp_bits == 8) return float_of(sign | (man << (23 - M)));
    int ex = F.emin;
    while ((man & (1u << M)) == 0) {
      man <<= 1;
      --ex;
    }
    man &= (1u << M) - 1u;
    return float_of(sign | (static_cast<std::uint32_t>(ex + 127) << 23) | (man << (23 - M)));
  }
  return float_of(sign | (static_cast<std::uint32_t>(ebits - F.bias + 127) << 23) | (man << (23 - M)));
}

AUTOSYNC_HD bool finite(double v) { return ((bits_of(v) >> 52) & 0x7ffu) != 0x7ffu; }

// One element of exec::encode: returns the wire bits, updates *residual (may be null).
// inv_scale = 1 / scale, exactly: exec::wire_scale is a power of two, so x * inv_scale is x /
// scale bit for bit (one correctly rounded product of the same real number) without a division.
AUTOSYNC_HD std::uint16_t encode_one(double x, double* residual, wire16 w, double scale, double inv_scale) {
  const double v = residual ? x + *residual : x;
  // saturate at the wire's largest finite value x scale (exec::encode: each rank's share of the range)
  const double lim = (w == wire16::f16 ? 65504.0 : 0x1.fep127) * scale;
  double vs = v * scale;
  if (finite(vs)) vs = vs > lim ? lim : (vs < -lim ? -lim : vs);
  const std::uint16_t h = narrow(vs, w, true);
  if (residual) {
    const double back = static_cast<double>(widen(h, w)) * inv_scale;
    *residual = finite(v) ? v - back : 0.0;
  }
  return h;
}

// Whether `scale` is a power of two (2^k, normal): then 1 / scale is exact and encode_one's
// product equals exec::encode's quotient. The launchers refuse other scales.
AUTOSYNC_HD bool power_of_two(double scale) {
  const std::uint64_t b = bits_of(scale);
  const auto e = static_cast<int>((b >> 52) & 0x7ffu);
  return (b >> 63) == 0 && (b & ((std::uint64_t{1} << 52) - 1)) == 0 && e > 0 && e < 0x7fe;
}

// One element of exec::decode with k = factor / scale (computed once, as exec::decode does).
AUTOSYNC_HD double decode_one(std::uint16_t h, wire16 w, double k) { return static_cast<double>(widen(h, w)) * k; }

// The executor's averaging of one uncompressed element (its host `scale`).
AUTOSYNC_HD float average_f32(float v, double factor) { return static_cast<float>(v * factor); }
AUTOSYNC_HD double average_f64(double v, double factor) { return v * factor; }
AUTOSYNC_HD std::uint16_t average_16(std::uint16_t h, wire16 w, double factor) {
  return narrow(static_cast<double>(widen(h, w)) * factor, w, false);
}

// ---- the device segment table ------------------------------------------------------------------
// One row per plan segment (exec/plan.hpp `segment`), in fused order: `fused` ascending, the
// rows tile [0, bucket elements) without gaps.
struct segment_row {
  std::int64_t fused = 0;   // first fused element
  std::int64_t offset = 0;  // first tensor element
  std::int64_t block = 0;   // elements per block
  std::int64_t stride = 0;  // tensor elements between block starts
  std::int64_t blocks = 1;
  std::uint32_t tensor = 0;
  std::uint32_t pad = 0;
};

// The row holding fused element i: the last row with fused <= i (binary search; rows > 0).
AUTOSYNC_HD int locate(const segment_row* rows, int n, std::int64_t i) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (rows[mid].fused <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The row of fused element i >= rows[r].fused, starting from row r (elements only grow along a
// thread's walk): r itself when the next row starts after i, else a binary search after r.
AUTOSYNC_HD int locate_after(const segment_row* rows, int n, int r, std::int64_t i) {
  if (r + 1 >= n || rows[r + 1].fused > i) return r;
  int lo = r + 1, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (rows[mid].fused <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The tensor element of fused element i inside row s.
AUTOSYNC_HD std::int64_t tensor_element(const segment_row& s, std::int64_t i) {
  const std::int64_t k = i - s.fused;
  if (s.blocks == 1) return s.offset + k;
  const std::int64_t b = k / s.block;
  return s.offset + b * s.stride + (k - b * s.block);
}

}  // namespace autosync::exec::nccl::ew
