// autosync/policy/compression.hpp — slot `compression`: what goes on the wire.
//
// The slot is open: a compressor is any struct that satisfies CompressionPolicy
//   using slot = slot::compression;
//   static constexpr std::string_view name;
//   static constexpr bool lossless;
//   static constexpr double wire_bytes_per_element;  // 0: the tensor's own dtype size
//   static constexpr double flops_per_element;       // encode + decode work per element, in
//                                                    // units where fp16 is 2 (cost/fabric.hpp
//                                                    // codec_rate: units per second)
// and its place in `comp::all` (the built-in registry is generated from that list; its index
// is the runtime id). Code outside include/ adds compressors without editing this list:
// autosync::registry::add_compression (registry/extensions.hpp) registers one by name, with
// parameters, its wire bytes, its codec time and its executor codec; its id is
// stable_id(name) and its policy type's `value` is a compression_value. Compression applies to floating-point gradients only; a tensor that
// is already as small as the wire format travels as it is.
#pragma once

#include <autosync/policy/slots.hpp>
#include <autosync/registry/values.hpp>

#include <array>
#include <cstdint>
#include <optional>

namespace autosync {

// A built-in compressor's index in comp::all, or an extension compressor's stable_id(name).
using compression_id = std::uint32_t;

// A group's compression: which compressor and its parameters (in the order its entry declares
// them; built-ins have none). Converts to its id, so `g.compression == comp::fp16::value` and
// `g.compression = comp::fp16::value` read as before.
struct compression_value {
  compression_id id = 0;
  param_list params{};
  constexpr compression_value() noexcept = default;
  constexpr explicit compression_value(compression_id i, param_list p = {}) noexcept : id(i), params(p) {}
  constexpr compression_value& operator=(compression_id i) noexcept {
    id = i;
    params = {};
    return *this;
  }
  constexpr operator compression_id() const noexcept { return id; }
  constexpr bool operator==(const compression_value&) const = default;
};

namespace comp {
struct none {
  using slot = slot::compression;
  static constexpr std::string_view name = "none";
  static constexpr bool lossless = true;
  static constexpr double wire_bytes_per_element = 0.0;
  static constexpr double flops_per_element = 0.0;
  static constexpr compression_id value = 0;
};
// IEEE binary16, round to nearest even; overflow saturates to +-65504 (scaled by the executor).
struct fp16 {
  using slot = slot::compression;
  static constexpr std::string_view name = "fp16";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 2.0;
  static constexpr double flops_per_element = 2.0;  // one conversion each way
  static constexpr compression_id value = 1;
};
// bfloat16, round to nearest even: fp32's range, 8 bits of mantissa.
struct bf16 {
  using slot = slot::compression;
  static constexpr std::string_view name = "bf16";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 2.0;
  static constexpr double flops_per_element = 2.0;
  static constexpr compression_id value = 2;
};
// The registry: a compressor's `value` is its index here.
using all = type_list<none, fp16, bf16>;
}  // namespace comp

template <>
struct default_policy<slot::compression> { using type = comp::none; };

struct compression_info {
  std::string_view name;
  bool lossless;
  double wire_bytes_per_element;
  double flops_per_element;
};

namespace detail {
template <class... Cs>
constexpr auto make_compression_registry(type_list<Cs...>) {
  static_assert((CompressionPolicy<Cs> && ...), "autosync: comp::all holds a type that is not a CompressionPolicy");
  std::array<compression_info, sizeof...(Cs)> r{compression_info{Cs::name, Cs::lossless, Cs::wire_bytes_per_element, Cs::flops_per_element}...};
  compression_id i = 0;
  bool ok = ((Cs::value == i++) && ...);
  if (!ok) throw "autosync: comp::all: each compressor's value must equal its index in the list";
  return r;
}
}  // namespace detail

inline constexpr auto compression_registry = detail::make_compression_registry(comp::all{});

// By value: a pointer into the registry would not be a constant expression under sanitizers.
[[nodiscard]] constexpr std::optional<compression_info> find_compression(compression_id id) noexcept {
  if (id < compression_registry.size()) return compression_registry[id];
  return std::nullopt;
}
[[nodiscard]] constexpr std::optional<compression_id> parse_compression(std::string_view s) noexcept {
  for (std::size_t i = 0; i < compression_registry.size(); ++i)
    if (compression_registry[i].name == s) return static_cast<compression_id>(i);
  return std::nullopt;
}
[[nodiscard]] inline std::string compression_names_list() {
  std::string r;
  for (const auto& c : compression_registry) {
    if (!r.empty()) r += ", ";
    r += c.name;
  }
  return r;
}

}  // namespace autosync
