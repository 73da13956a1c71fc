// autosync/exec/compress.hpp — fp16 / bf16 gradient compression on the CPU, with error feedback.
//
// The compression slot (policy/compression.hpp) names what goes on the wire; this header does
// the conversions. Both formats are IEEE-style binary formats with round to nearest, ties to
// even, computed with integer arithmetic only (constexpr, no FPU rounding mode, no F16C):
//
//              sign  exponent  mantissa   max finite        min normal   min subnormal
//   binary16     1      5         10      65504             2^-14        2^-24
//   bfloat16     1      8          7      (2-2^-7) 2^127    2^-126       2^-133
//
//   to_f16(x) / to_bf16(x)    one rounding from float or double (double is NOT first rounded to
//                             float: that would round twice). Subnormal results are rounded like
//                             normal ones (fixed quantum 2^-24 / 2^-133). NaN stays a quiet NaN
//                             of the same sign, +-inf stays +-inf. Overflow (|x| at or beyond the
//                             midpoint between the max finite value and 2^(emax+1)) gives +-inf,
//                             the IEEE result; overflow_mode::saturate gives +-max finite instead.
//   from_f16 / from_bf16      exact (every value of both formats is a float).
//
// Compressing a gradient bucket (what the executor does, per rank, per iteration):
//
//   v = x + r                                   x: the gradient, r: this bucket's residual (double)
//   w = to_wire(v * s, saturate)                s: the scale (a power of two, so exact)
//   r = v - from_wire(w) / s                    exact in double (Sterbenz), so nothing is lost:
//   ... sum over ranks of w, in the wire dtype ...
//   x' = from_wire(sum) / s
//
// Error feedback makes compression unbiased over iterations: the residual telescopes, so after
// K iterations  sum_k decoded_k + r_K = sum_k x_k  (up to the double rounding of x + r), and
// a gradient too small for the wire format (below half the smallest subnormal) is not dropped
// but accumulates in r until it is sent.
//
// fp16 saturates with a scale: s = 2^-ceil(log2 p) for p ranks (fp16_scale), and a scaled value
// saturates at 65504 s (each rank's share of fp16's range). Each rank's value is then at most
// 65504 s, so the sum over p ranks is at most 65504 and no partial sum of any reduction order
// overflows to inf; what saturation cut off stays in the residual. bf16 has float's range: s = 1.
//
// Error bound of one compressed all-reduce (no feedback), u = 2^-11 (fp16) or 2^-8 (bf16), the
// unit roundoff, tiny = the smallest subnormal / 2 (2^-25 / 2^-134) divided by s, over p ranks
// and any summation order of p - 1 additions, each rounded to the wire format:
//   |x' - sum_r x_r| <= 2 p u sum_r |x_r| + 2 p tiny           (compressed_sum_bound)
// (p encodings and at most p - 1 roundings of partial sums, each at most u times a partial sum
// of magnitudes, plus one absolute subnormal half-quantum each; the factor 2 covers the
// second-order terms (1 + u)^p - 1 <= 2 p u for p u <= 1).
#pragma once

#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/compression.hpp>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace autosync::exec {

enum class overflow_mode : std::uint8_t { to_infinity, saturate };

namespace detail {

// IEEE-style narrow format with E exponent bits and M mantissa bits (stored in 1 + E + M bits).
template <int E, int M>
struct narrow_format {
  static constexpr int exp_bits = E, man_bits = M;
  static constexpr int bias = (1 << (E - 1)) - 1;
  static constexpr int emin = 1 - bias;                       // exponent of the min normal
  static constexpr std::uint32_t exp_mask = (1u << E) - 1u;   // all ones: inf / NaN
  static constexpr std::uint32_t sign_bit = 1u << (E + M);
  static constexpr std::uint32_t inf_bits = exp_mask << M;
  static constexpr std::uint32_t max_bits = inf_bits - 1u;    // max finite
  static constexpr std::uint32_t qnan_bits = inf_bits | (1u << (M - 1));
};

// Rounds a float or double to the narrow format F (round to nearest, ties to even).
template <class F, class T>
[[nodiscard]] constexpr std::uint16_t narrow(T x, overflow_mode mode) noexcept {
  constexpr int E = std::is_same_v<T, double> ? 11 : 8;
  constexpr int Msrc = std::is_same_v<T, double> ? 52 : 23;
  constexpr int M = F::man_bits;
  using U = std::conditional_t<std::is_same_v<T, double>, std::uint64_t, std::uint32_t>;
  const U bits = std::bit_cast<U>(x);
  const std::uint32_t sign = (bits >> (E + Msrc)) != 0 ? F::sign_bit : 0u;
  const auto ebits = static_cast<int>((bits >> Msrc) & ((U{1} << E) - 1));
  const std::uint64_t man = static_cast<std::uint64_t>(bits & ((U{1} << Msrc) - 1));
  if (ebits == (1 << E) - 1) return static_cast<std::uint16_t>(sign | (man != 0 ? F::qnan_bits : F::inf_bits));
  if (ebits == 0 && man == 0) return static_cast<std::uint16_t>(sign);
  constexpr int src_bias = (1 << (E - 1)) - 1;
  // x = m * 2^e with m an integer
  const std::uint64_t m = ebits == 0 ? man : (man | (std::uint64_t{1} << Msrc));
  const int e = (ebits == 0 ? 1 : ebits) - src_bias - Msrc;
  const int top = e + static_cast<int>(std::bit_width(m)) - 1;  // floor(log2 |x|)
  const int q = (top > F::emin ? top : F::emin) - M;            // exponent of the target quantum
  const int shift = q - e;
  std::uint64_t r = 0;
  if (shift <= 0) {
    r = m << (-shift);  // exact (only for formats wider than the source; kept for generality)
  } else if (shift < 64) {
    r = m >> shift;
    const std::uint64_t rem = m & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
  }  // else: far below half the smallest subnormal: r = 0
  int qq = q;
  if (r >> (M + 1)) {  // the rounding carried into a new binade
    r >>= 1;
    ++qq;
  }
  if (r < (std::uint64_t{1} << M)) return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(r));  // subnormal or zero
  const int biased = qq + M + F::bias;
  if (biased >= static_cast<int>(F::exp_mask))
    return static_cast<std::uint16_t>(sign | (mode == overflow_mode::saturate ? F::max_bits : F::inf_bits));
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(biased) << M) | static_cast<std::uint32_t>(r - (std::uint64_t{1} << M)));
}

template <class F>
[[nodiscard]] constexpr float widen(std::uint16_t h) noexcept {
  constexpr int M = F::man_bits;
  constexpr int E = F::exp_bits;
  const std::uint32_t sign = (h & F::sign_bit) ? 0x80000000u : 0u;
  const auto ebits = static_cast<int>((h >> M) & F::exp_mask);
  std::uint32_t man = h & ((1u << M) - 1u);
  if (ebits == static_cast<int>(F::exp_mask))
    return std::bit_cast<float>(sign | 0x7f800000u | (man << (23 - M)) | (man != 0 ? 0x00400000u : 0u));
  if (ebits == 0) {
    if (man == 0) return std::bit_cast<float>(sign);
    // subnormal: with float's exponent width (bf16) it is a float subnormal of the same
    // layout; with a narrower one (f16) it is a normal float: normalize it
    if constexpr (E == 8) {
      return std::bit_cast<float>(sign | (man << (23 - M)));
    } else {
      int ex = F::emin;
      while ((man & (1u << M)) == 0) {
        man <<= 1;
        --ex;
      }
      man &= (1u << M) - 1u;
      return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(ex + 127) << 23) | (man << (23 - M)));
    }
  }
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(ebits - F::bias + 127) << 23) | (man << (23 - M)));
}

}  // namespace detail

using f16_format = detail::narrow_format<5, 10>;
using bf16_format = detail::narrow_format<8, 7>;

[[nodiscard]] constexpr std::uint16_t to_f16(float x, overflow_mode m = overflow_mode::to_infinity) noexcept {
  return detail::narrow<f16_format>(x, m);
}
[[nodiscard]] constexpr std::uint16_t to_f16(double x, overflow_mode m = overflow_mode::to_infinity) noexcept {
  return detail::narrow<f16_format>(x, m);
}
[[nodiscard]] constexpr std::uint16_t to_bf16(float x, overflow_mode m = overflow_mode::to_infinity) noexcept {
  return detail::narrow<bf16_format>(x, m);
}
[[nodiscard]] constexpr std::uint16_t to_bf16(double x, overflow_mode m = overflow_mode::to_infinity) noexcept {
  return detail::narrow<bf16_format>(x, m);
}
[[nodiscard]] constexpr float from_f16(std::uint16_t h) noexcept { return detail::widen<f16_format>(h); }
[[nodiscard]] constexpr float from_bf16(std::uint16_t h) noexcept { return detail::widen<bf16_format>(h); }

// The wire dtype of compressor `c` for a gradient of dtype `t`, or nullopt when the gradient
// travels as it is (compressor none, a non-floating dtype, or a dtype no larger than the wire
// format — model.hpp's shrinks, the rule strategy/items.hpp prices too).
[[nodiscard]] constexpr std::optional<dtype> wire_dtype(compression_id c, dtype t) noexcept {
  const auto info = find_compression(c);
  if (!info || !shrinks(t, info->wire_bytes_per_element)) return std::nullopt;
  if (c == comp::fp16::value) return dtype::f16;
  if (c == comp::bf16::value) return dtype::bf16;
  return std::nullopt;  // a compressor this executor does not implement yet: sent uncompressed
}

// The pre-scale of a wire format summed over `ranks` ranks (see the header comment).
[[nodiscard]] constexpr double wire_scale(dtype wire, int ranks) noexcept {
  if (wire != dtype::f16 || ranks <= 1) return 1.0;
  double s = 1.0;
  for (int k = 1; k < ranks; k *= 2) s *= 0.5;
  return s;
}

// Unit roundoff and half the smallest subnormal of a wire format.
[[nodiscard]] constexpr double unit_roundoff(dtype wire) noexcept { return wire == dtype::f16 ? 0x1p-11 : 0x1p-8; }
[[nodiscard]] constexpr double half_min_subnormal(dtype wire) noexcept { return wire == dtype::f16 ? 0x1p-25 : 0x1p-134; }

// The documented bound on |x' - sum_r x_r| for one element of a compressed sum over p ranks,
// given sum_abs = sum_r |x_r|, when nothing saturates (fp16: every |x_r| <= 65504).
[[nodiscard]] constexpr double compressed_sum_bound(dtype wire, int ranks, double sum_abs) noexcept {
  const double p = ranks;
  return 2.0 * p * unit_roundoff(wire) * sum_abs + 2.0 * p * half_min_subnormal(wire) / wire_scale(wire, ranks);
}

namespace detail {
// encode / decode for one wire format W (dtype::f16 or dtype::bf16), fixed at compile time: the
// codec of that compressor (exec/codec.hpp) calls these directly; encode / decode below pick
// them from a runtime wire dtype.
template <dtype W>
[[nodiscard]] constexpr std::uint16_t to_wire(double v) noexcept {
  static_assert(W == dtype::f16 || W == dtype::bf16, "autosync: a wire format is dtype::f16 or dtype::bf16");
  if constexpr (W == dtype::f16) return to_f16(v, overflow_mode::saturate);
  else return to_bf16(v, overflow_mode::saturate);
}
template <dtype W>
[[nodiscard]] constexpr float from_wire(std::uint16_t h) noexcept {
  if constexpr (W == dtype::f16) return from_f16(h);
  else return from_bf16(h);
}
// The largest finite value of a wire format: 65504 (f16), (2 - 2^-7) 2^127 (bf16).
template <dtype W>
inline constexpr double wire_max = W == dtype::f16 ? 65504.0 : 0x1.fep127;
template <dtype W, class T>
void encode_as(const T* x, double* residual, std::uint16_t* wire, std::size_t n, double scale) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "autosync: encode: T must be float or double");
  // each rank's share of the wire's range: a scaled value saturates at wire_max x scale (exact:
  // scale is a power of two), so the sum of 1 / scale ranks' values stays finite (saturating at
  // wire_max itself let two ranks' 7e4 each, 35008 scaled, sum to inf in fp16)
  const double lim = wire_max<W> * scale;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = residual ? static_cast<double>(x[i]) + residual[i] : static_cast<double>(x[i]);
    double vs = v * scale;
    if (vs > lim && vs <= std::numeric_limits<double>::max()) vs = lim;  // (inf and NaN are sent as they are)
    else if (vs < -lim && vs >= -std::numeric_limits<double>::max()) vs = -lim;
    const std::uint16_t w = to_wire<W>(vs);
    wire[i] = w;
    if (residual) {
      const double back = static_cast<double>(from_wire<W>(w)) / scale;
      residual[i] = std::isfinite(v) ? v - back : 0.0;  // a NaN/inf gradient is sent as it is, not carried
    }
  }
}
template <dtype W, class T>
void decode_as(const std::uint16_t* wire, T* out, std::size_t n, double scale, double factor) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "autosync: decode: T must be float or double");
  const double k = factor / scale;
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<double>(from_wire<W>(wire[i])) * k);
}
}  // namespace detail

// Encodes n values of `x` (float or double) into `wire` (f16 or bf16 bit patterns), saturating,
// after multiplying by `scale`. With `residual` (n doubles, or nullptr for no error feedback):
// v = x + residual is encoded and residual becomes v - decoded / scale.
template <class T>
void encode(const T* x, double* residual, std::uint16_t* wire, std::size_t n, dtype wire_t, double scale) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "autosync: encode: T must be float or double");
  if (wire_t == dtype::f16) return detail::encode_as<dtype::f16>(x, residual, wire, n, scale);
  if (wire_t == dtype::bf16) return detail::encode_as<dtype::bf16>(x, residual, wire, n, scale);
  throw error("wire", "encode: the wire dtype must be f16 or bf16, got " + std::string(name_of(wire_t)));
}

// out[i] = decoded wire[i] / scale * factor (factor: 1, or 1/p when averaging).
template <class T>
void decode(const std::uint16_t* wire, T* out, std::size_t n, dtype wire_t, double scale, double factor = 1.0) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "autosync: decode: T must be float or double");
  if (wire_t == dtype::f16) return detail::decode_as<dtype::f16>(wire, out, n, scale, factor);
  if (wire_t == dtype::bf16) return detail::decode_as<dtype::bf16>(wire, out, n, scale, factor);
  throw error("wire", "decode: the wire dtype must be f16 or bf16, got " + std::string(name_of(wire_t)));
}

}  // namespace autosync::exec
