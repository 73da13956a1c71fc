// autosync/exec/codec.hpp — the wire codec of a compression policy, selected by specialization.
//
// codec<C> is what compressor C does to a bucket on its way to the wire and back. The primary
// template fails with a message naming the compressor; one specialization per built-in policy:
//
//   codec<comp::none>   compresses = false: the bucket travels in its own dtype
//   codec<comp::fp16>   IEEE binary16, saturating, pre-scaled by 2^-ceil(log2 p) (no partial sum
//                       of p ranks can overflow), error feedback
//   codec<comp::bf16>   bfloat16 (float's range: scale 1), error feedback
//
// The interface (a compressor registered elsewhere provides the same members, or forwards to
// one of these):
//
//   static constexpr bool defined = true;
//   static constexpr bool compresses;                 false: nothing below but wire_dtype / wire_bytes
//   static constexpr std::optional<dtype> wire_dtype(dtype t);
//                                                     the dtype a bucket of dtype t travels in, or
//                                                     nullopt when it travels as it is (not floating,
//                                                     or no larger than the wire format)
//   static constexpr std::size_t wire_bytes(std::size_t n, dtype t);   bytes on the wire for n elements
//   static constexpr dtype wire;                      (compresses) the wire format
//   static constexpr double scale(int ranks);         (compresses) the pre-scale for a sum over ranks
//   template <class T> static void encode(std::span<const T> in, std::span<std::uint16_t> out,
//                                         std::span<double> residual, double scale);
//                                                     T float or double; residual empty: no error
//                                                     feedback, else one double per element, updated
//   template <class T> static void decode(std::span<const std::uint16_t> in, std::span<T> out,
//                                         double scale, double factor);   out = in / scale * factor
//
// The executor's runtime path (exec/host_buckets.hpp) dispatches a bucket's compression id to
// codec<C> once per group; the typed path (exec/typed_executor.hpp) names codec<C> directly. Both
// run exec/compress.hpp's encode_as / decode_as: the rounding is the one documented there.
//
// No Hana here: nvcc may compile this header.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/compression.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

namespace autosync::exec {

// No codec: a compressor the executor does not implement travels uncompressed (exec::wire_dtype
// gives it no wire dtype); codec_of<C> then names codec<comp::none>.
template <class C>
struct codec {
  static_assert(CompressionPolicy<C>, "autosync::exec::codec<C>: C is not a compression policy (slot 'compression')");
  static constexpr bool defined = false;
};

template <>
struct codec<comp::none> {
  using policy = comp::none;
  static constexpr bool defined = true;
  static constexpr bool compresses = false;
  [[nodiscard]] static constexpr std::optional<dtype> wire_dtype(dtype) noexcept { return std::nullopt; }
  [[nodiscard]] static constexpr std::size_t wire_bytes(std::size_t n, dtype t) noexcept { return n * size_of(t); }
};

namespace detail {
// The codec of a 16-bit floating wire format W with scale rule `scaled` (fp16: yes, bf16: no).
template <class C, dtype W>
struct narrow_codec {
  using policy = C;
  static constexpr bool defined = true;
  static constexpr bool compresses = true;
  static constexpr dtype wire = W;
  [[nodiscard]] static constexpr std::optional<dtype> wire_dtype(dtype t) noexcept {
    if (!shrinks(t, C::wire_bytes_per_element)) return std::nullopt;
    return W;
  }
  [[nodiscard]] static constexpr std::size_t wire_bytes(std::size_t n, dtype t) noexcept {
    return n * (wire_dtype(t) ? std::size_t{2} : size_of(t));
  }
  [[nodiscard]] static constexpr double scale(int ranks) noexcept { return wire_scale(W, ranks); }
  template <class T>
  static void encode(std::span<const T> in, std::span<std::uint16_t> out, std::span<double> residual, double s) {
    if (out.size() < in.size() || (!residual.empty() && residual.size() < in.size()))
      throw error("wire", std::string(C::name) + " encode: " + std::to_string(in.size()) + " elements need as many wire (" +
                              std::to_string(out.size()) + ") and residual (" + std::to_string(residual.size()) + ") elements");
    encode_as<W>(in.data(), residual.empty() ? nullptr : residual.data(), out.data(), in.size(), s);
  }
  template <class T>
  static void decode(std::span<const std::uint16_t> in, std::span<T> out, double s, double factor) {
    if (out.size() < in.size())
      throw error("wire", std::string(C::name) + " decode: " + std::to_string(in.size()) + " wire elements, room for " +
                              std::to_string(out.size()));
    decode_as<W>(in.data(), out.data(), in.size(), s, factor);
  }
};
}  // namespace detail

template <>
struct codec<comp::fp16> : detail::narrow_codec<comp::fp16, dtype::f16> {};
template <>
struct codec<comp::bf16> : detail::narrow_codec<comp::bf16, dtype::bf16> {};

// The codec a bucket of compressor C runs: codec<C>, or codec<comp::none> when C has none.
template <class C>
using codec_of = std::conditional_t<codec<C>::defined, codec<C>, codec<comp::none>>;

}  // namespace autosync::exec
