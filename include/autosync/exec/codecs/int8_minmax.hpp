// autosync/exec/codecs/int8_minmax.hpp — 8-bit min-max quantization per chunk (BAGUA's ByteGrad).
//
// A bucket of n floats is cut into chunks of `chunk` elements (the last one shorter). Each chunk
// travels as a header {min, max} (two floats, 8 bytes) and one byte per element:
//
//   scale = 255 / (max - min)                      (0 when max == min: every byte is 0)
//   q_i   = round_to_nearest_even((x_i - min) * scale)         in [0, 255]
//   x'_i  = min + q_i * ((max - min) / 255)
//
//   |x'_i - x_i| <= (max - min) / 510 + rounding    (int8_error_bound: the half step, plus the
//                                                    float rounding of the two products, each
//                                                    at most 2^-24 of |max| + |min| + range)
//
// BAGUA's kernel quantizes x * scale against rint(max * scale) - 255; quantizing x - min instead
// keeps the product in [0, 255] for any offset (BAGUA's form loses precision once |x| * scale
// passes 2^24), and the rounding is the float "magic number" trick (add and subtract 1.5 * 2^23),
// exact round-to-nearest-even on [0, 2^22) that vectorizes with plain SSE2. The per-element
// arithmetic is exec/codecs/element.hpp's, shared with the CUDA kernels (same bytes).
//
// The sum of p ranks' buckets (ByteGrad's scatter-gather, exec/ drives the collectives):
//   reduce-scatter of quantized chunks: rank r receives every rank's chunk r, decodes and sums
//   them in float (sum_decoded), re-quantizes its sum (encode), and an all-gather of the
//   quantized sums gives every rank every chunk. Two quantizations: the result is within
//   p * (per-rank bound) + (bound of the sum's chunk) of the exact sum. Wire bytes per rank:
//   2 (p - 1) / p * (n + 8 * chunks) against 2 (p - 1) / p * 4 n for fp32: 3.9x less at chunk 1024.
//
// Non-finite input: a chunk holding inf or NaN has a non-finite header and decodes to NaN, so
// the fault is visible in the result (as an uncompressed sum of inf and -inf would be).
#pragma once

#include <autosync/exec/codecs/element.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

namespace autosync::exec::codecs::int8_minmax {

inline constexpr std::size_t header_bytes = 2 * sizeof(float);
inline constexpr std::size_t default_chunk = 1024;

[[nodiscard]] constexpr std::size_t chunks(std::size_t n, std::size_t chunk) noexcept {
  return chunk == 0 ? 0 : (n + chunk - 1) / chunk;
}
// Encoded bytes of n elements.
[[nodiscard]] constexpr std::size_t wire_bytes(std::size_t n, std::size_t chunk = default_chunk) noexcept {
  return n + header_bytes * chunks(n, chunk);
}

// The bound of one encode/decode on a chunk with that min and max (see the header comment).
[[nodiscard]] inline double error_bound(float mn, float mx) noexcept {
  const double range = static_cast<double>(mx) - static_cast<double>(mn);
  return range / 510.0 + 0x1p-22 * (std::abs(static_cast<double>(mn)) + std::abs(static_cast<double>(mx)) + range);
}

namespace detail {

inline void encode_chunk(const float* x, std::size_t n, unsigned char* out) noexcept {
  // min, max and finiteness in 8 lanes (x * 0 is NaN exactly for inf and NaN), so the scan
  // vectorizes; the lanes are folded at the end.
  constexpr std::size_t V = 8;
  float lmn[V], lmx[V], lz[V];
  for (std::size_t k = 0; k < V; ++k) lmn[k] = lmx[k] = x[0], lz[k] = 0.0f;
  std::size_t e = 0;
  for (; e + V <= n; e += V)
    for (std::size_t k = 0; k < V; ++k) {
      const float v = x[e + k];
      lmn[k] = v < lmn[k] ? v : lmn[k];
      lmx[k] = v > lmx[k] ? v : lmx[k];
      lz[k] += v * 0.0f;
    }
  for (; e < n; ++e) {
    lmn[0] = x[e] < lmn[0] ? x[e] : lmn[0];
    lmx[0] = x[e] > lmx[0] ? x[e] : lmx[0];
    lz[0] += x[e] * 0.0f;
  }
  float mn = lmn[0], mx = lmx[0], z = 0.0f;
  for (std::size_t k = 0; k < V; ++k) {
    mn = std::min(mn, lmn[k]);
    mx = std::max(mx, lmx[k]);
    z += lz[k];
  }
  const bool finite = z == 0.0f;
  if (!finite) mn = mx = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(out, &mn, sizeof mn);
  std::memcpy(out + sizeof mn, &mx, sizeof mx);
  unsigned char* q = out + header_bytes;
  const float range = mx - mn;
  if (!finite || !(range > 0.0f) || !std::isfinite(range)) {
    // Constant chunk (or one whose range overflows float: then min + 255 steps cannot be exact
    // either; such gradients are already beyond any training) -> all bytes 0, decode gives min.
    std::memset(q, 0, n);
    if (finite && !std::isfinite(range)) {
      // Overflowing range: quantize in double.
      const double dmn = mn, s = 255.0 / (static_cast<double>(mx) - dmn);
      for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<unsigned char>(std::nearbyint((x[i] - dmn) * s));
    }
    return;
  }
  const float scale = 255.0f / range;
  for (std::size_t i = 0; i < n; ++i) q[i] = element::int8_quantize(x[i], mn, scale);
}

inline void decode_chunk(const unsigned char* in, std::size_t n, float* x, bool add) noexcept {
  float mn, mx;
  std::memcpy(&mn, in, sizeof mn);
  std::memcpy(&mx, in + sizeof mn, sizeof mx);
  const unsigned char* q = in + header_bytes;
  const double drange = static_cast<double>(mx) - static_cast<double>(mn);
  if (std::isfinite(mn) && std::isfinite(mx) && !std::isfinite(mx - mn)) {  // range beyond float: in double
    for (std::size_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(mn + q[i] * (drange / 255.0));
      x[i] = add ? x[i] + v : v;
    }
    return;
  }
  const float step = static_cast<float>(drange / 255.0);
  if (add)
    for (std::size_t i = 0; i < n; ++i) x[i] += element::int8_dequantize(q[i], mn, step);
  else
    for (std::size_t i = 0; i < n; ++i) x[i] = element::int8_dequantize(q[i], mn, step);
}

}  // namespace detail

// Encodes x into out (wire_bytes(x.size(), chunk) bytes).
inline void encode(std::span<const float> x, std::span<unsigned char> out, std::size_t chunk = default_chunk) noexcept {
  if (chunk == 0 || out.size() < wire_bytes(x.size(), chunk)) return;  // callers size `out` with wire_bytes
  unsigned char* o = out.data();
  for (std::size_t i = 0; i < x.size(); i += chunk) {
    const std::size_t k = std::min(chunk, x.size() - i);
    detail::encode_chunk(x.data() + i, k, o);
    o += header_bytes + k;
  }
}

// Decodes `in` into x (x.size() elements): x = decode(in), or x += decode(in) with add.
inline void decode(std::span<const unsigned char> in, std::span<float> x, std::size_t chunk = default_chunk, bool add = false) noexcept {
  if (chunk == 0 || in.size() < wire_bytes(x.size(), chunk)) return;
  const unsigned char* p = in.data();
  for (std::size_t i = 0; i < x.size(); i += chunk) {
    const std::size_t k = std::min(chunk, x.size() - i);
    detail::decode_chunk(p, k, x.data() + i, add);
    p += header_bytes + k;
  }
}

// The largest per-element bound of one encode/decode of `in` (for guarantees and tests).
[[nodiscard]] inline double max_error_bound(std::span<const unsigned char> in, std::size_t n, std::size_t chunk = default_chunk) noexcept {
  double b = 0.0;
  const unsigned char* p = in.data();
  for (std::size_t i = 0; i < n && chunk > 0; i += chunk) {
    float mn, mx;
    std::memcpy(&mn, p, sizeof mn);
    std::memcpy(&mx, p + sizeof mn, sizeof mx);
    b = std::max(b, error_bound(mn, mx));
    p += header_bytes + std::min(chunk, n - i);
  }
  return b;
}

}  // namespace autosync::exec::codecs::int8_minmax
