// autosync/registry/values.hpp — the value types the slot registry is built from.
//
// The registry has two halves (autosync/registry/ is its home):
//   - core slots: a compile-time list (`slot_list` in policy/slots.hpp). Each slot is defined in
//     its own header policy/<slot>.hpp: its tag (AUTOSYNC_SLOT_TAG), policies, runtime value,
//     default and slot_traits (descriptor field, JSON, hash, emit, validation, search order),
//     iterated through registry/core.hpp; its cross-slot rules are in registry/rules.hpp, checked
//     by `strategy<...>` at compile time and by validate_group at run time from the same predicates.
//   - extensions: compression values and whole slots a user registers in their own files at
//     static-initialization time (registry/extensions.hpp), keyed by name.
//
// Extension values are identified by `stable_id(name)`: a 32-bit FNV-1a hash of the name with
// the top bit set, so ids in hashes and plans never depend on registration order (every rank
// and every run agrees) and never collide with the built-in compressors' indices (0, 1, 2, ...).
// A value carries up to `max_params` numeric parameters in the order its kind declares them
// (defaults filled in), e.g. {"kind": "powersgd", "rank": 4} -> params {4, 0, 0}.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace autosync {

inline constexpr std::size_t max_params = 3;       // numeric parameters of one value
inline constexpr std::size_t max_extension_slots = 4;  // extension slots one group can hold

using param_list = std::array<double, max_params>;

// The id of an extension name (slot, kind or compressor): FNV-1a 32-bit, top bit set.
[[nodiscard]] constexpr std::uint32_t stable_id(std::string_view name) noexcept {
  std::uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h | 0x80000000u;
}
[[nodiscard]] constexpr bool is_extension_id(std::uint32_t id) noexcept { return (id & 0x80000000u) != 0; }

// The value of one extension slot in a group: which slot, which kind, its parameters.
struct ext_value {
  std::uint32_t slot = 0;  // stable_id(slot name); 0: an empty entry
  std::uint32_t kind = 0;  // stable_id(kind name)
  param_list params{};
  [[nodiscard]] static constexpr ext_value of(std::string_view slot_name, std::string_view kind_name, param_list p = {}) noexcept {
    return ext_value{stable_id(slot_name), stable_id(kind_name), p};
  }
  friend constexpr bool operator==(const ext_value&, const ext_value&) = default;
};

// The extension slots' values of a group, sorted by slot id, empty entries last. A slot at its
// default value is absent, so equal strategies compare equal and JSON writes nothing for it.
struct ext_values {
  std::array<ext_value, max_extension_slots> v{};
  friend constexpr bool operator==(const ext_values&, const ext_values&) = default;

  [[nodiscard]] constexpr std::size_t size() const noexcept {
    std::size_t n = 0;
    while (n < v.size() && v[n].slot != 0) ++n;
    return n;
  }
  [[nodiscard]] constexpr bool empty() const noexcept { return v[0].slot == 0; }
  [[nodiscard]] constexpr const ext_value* find(std::uint32_t slot) const noexcept {
    for (const auto& e : v)
      if (e.slot == slot) return &e;
    return nullptr;
  }
  // Removes the slot's value (back to its default).
  constexpr void erase(std::uint32_t slot) noexcept {
    std::size_t o = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i].slot != slot) v[o++] = v[i];
    for (; o < v.size(); ++o) v[o] = ext_value{};
  }
  // Sets the slot's value, keeping the order. False when the group already holds
  // max_extension_slots other slots.
  constexpr bool set(const ext_value& e) noexcept {
    erase(e.slot);
    const auto n = size();
    if (n == v.size()) return false;
    std::size_t i = n;
    while (i > 0 && v[i - 1].slot > e.slot) {
      v[i] = v[i - 1];
      --i;
    }
    v[i] = e;
    return true;
  }
};

}  // namespace autosync
