// autosync/exec/collectives/sum.hpp — element-wise sums in every dtype (sum_into) and the f16/bf16 conversions.
//
// Each element is summed in the dtype of the buffer (f16/bf16 in f32, rounded to nearest even
// once per addition); integers wrap. The add loops run on fixed-length local arrays, which the
// compiler vectorizes.
//
// Part of exec/collectives.hpp (the overview: block layout, segmented buffers, exactness).
#pragma once

#include <autosync/exec/compress.hpp>
#include <autosync/model.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace autosync::exec {

// --- f16 / bf16 <-> f32 (round to nearest even): the conversions of exec/compress.hpp --------
// IEEE binary16 with subnormals, overflow -> inf, NaN stays NaN; bfloat16 = the upper half of
// an f32, rounded to nearest even. Sums of f16/bf16 buffers are computed in f32.
[[nodiscard]] constexpr float f16_to_f32(std::uint16_t h) noexcept { return from_f16(h); }
[[nodiscard]] constexpr std::uint16_t f32_to_f16(float f) noexcept { return to_f16(f); }
[[nodiscard]] constexpr float bf16_to_f32(std::uint16_t b) noexcept { return from_bf16(b); }
[[nodiscard]] constexpr std::uint16_t f32_to_bf16(float f) noexcept { return to_bf16(f); }

namespace detail {

// Elements per chunk of sum_into: two 4 KiB..8 KiB staging arrays stay in L1.
inline constexpr std::size_t sum_chunk_bytes = 4096;

// dst[i] += src[i] for n elements of T, through whole-chunk memcpy into local arrays: defined
// for any alignment and any aliasing of the buffers' declared types, and the add loop runs on
// local arrays of a fixed length, which the compiler vectorizes (even at -O2).
// Fixed-length inner loops: vectorized at -O2 too (GCC's cheap cost model wants a known count).
template <class T>
inline void add_aligned(T* __restrict d, const T* __restrict s, std::size_t n) noexcept {
  constexpr std::size_t C = 1024 / sizeof(T);
  std::size_t i = 0;
  for (; i + C <= n; i += C)
    for (std::size_t k = 0; k < C; ++k) d[i + k] += s[i + k];
  for (; i < n; ++i) d[i] += s[i];
}

template <class T>
inline void add_chunks(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  // Aligned buffers (every tensor and scratch buffer in practice): one vectorized pass, no staging.
  if (reinterpret_cast<std::uintptr_t>(d) % alignof(T) == 0 && reinterpret_cast<std::uintptr_t>(s) % alignof(T) == 0)
    return add_aligned(reinterpret_cast<T*>(d), reinterpret_cast<const T*>(s), n);
  constexpr std::size_t C = sum_chunk_bytes / sizeof(T);
  T a[C], b[C];
  std::size_t i = 0;
  for (; i + C <= n; i += C) {
    std::memcpy(a, d + i * sizeof(T), sizeof a);
    std::memcpy(b, s + i * sizeof(T), sizeof b);
    for (std::size_t k = 0; k < C; ++k) a[k] += b[k];
    std::memcpy(d + i * sizeof(T), a, sizeof a);
  }
  const std::size_t rest = n - i;
  if (rest == 0) return;
  std::memcpy(a, d + i * sizeof(T), rest * sizeof(T));
  std::memcpy(b, s + i * sizeof(T), rest * sizeof(T));
  for (std::size_t k = 0; k < rest; ++k) a[k] += b[k];
  std::memcpy(d + i * sizeof(T), a, rest * sizeof(T));
}

// The same for 16-bit floats: convert a chunk to f32, add, round back (nearest even).
template <float (*From)(std::uint16_t), std::uint16_t (*To)(float)>
inline void add_half_chunks(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  constexpr std::size_t C = sum_chunk_bytes / sizeof(float);
  std::uint16_t a[C], b[C];
  float f[C];
  for (std::size_t i = 0; i < n; i += C) {
    const std::size_t len = std::min(C, n - i);
    std::memcpy(a, d + i * 2, len * 2);
    std::memcpy(b, s + i * 2, len * 2);
    for (std::size_t k = 0; k < len; ++k) f[k] = From(a[k]);
    for (std::size_t k = 0; k < len; ++k) f[k] += From(b[k]);
    for (std::size_t k = 0; k < len; ++k) a[k] = To(f[k]);
    std::memcpy(d + i * 2, a, len * 2);
  }
}

inline float f16_in(std::uint16_t h) noexcept { return from_f16(h); }
inline std::uint16_t f16_out(float f) noexcept { return to_f16(f); }
inline float bf16_in(std::uint16_t h) noexcept { return from_bf16(h); }
inline std::uint16_t bf16_out(float f) noexcept { return to_bf16(f); }

}  // namespace detail

// dst[i] += src[i] for n elements of t (f16/bf16 summed in f32, rounded to nearest even;
// integers wrap). dst and src do not overlap. Unaligned buffers are fine (loads go through memcpy).
inline void sum_into(void* dst, const void* src, std::size_t n, dtype t) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  switch (t) {
    case dtype::f32: detail::add_chunks<float>(d, s, n); break;
    case dtype::f64: detail::add_chunks<double>(d, s, n); break;
    case dtype::i32: detail::add_chunks<std::uint32_t>(d, s, n); break;  // unsigned: wraps, no UB
    case dtype::i64: detail::add_chunks<std::uint64_t>(d, s, n); break;
    case dtype::f16: detail::add_half_chunks<&detail::f16_in, &detail::f16_out>(d, s, n); break;
    case dtype::bf16: detail::add_half_chunks<&detail::bf16_in, &detail::bf16_out>(d, s, n); break;
  }
}

}  // namespace autosync::exec
