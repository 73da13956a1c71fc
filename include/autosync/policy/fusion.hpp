// autosync/policy/fusion.hpp — slot `fusion`: how a group's items are packed into buckets.
//
// A group's items are taken in ready order and packed into buckets; a bucket closes when the
// next item would push it past its cap. The first bucket (the gradients ready first) has its
// own cap, as PyTorch DDP's 1 MiB first bucket. An item is never split across buckets (the
// partitioner splits tensors); an item larger than the cap travels in a bucket of its own.
//
//   bucket_cap<Cap, First = Cap>   Cap = 0: one item per bucket (no fusion)
//   unbounded                      the whole group in one bucket
#pragma once

#include <autosync/policy/slots.hpp>

#include <cstdint>
#include <limits>

namespace autosync {

struct fusion_value {
  std::uint64_t cap_bytes = 0;
  std::uint64_t first_cap_bytes = 0;
  friend constexpr bool operator==(const fusion_value&, const fusion_value&) = default;
};

inline constexpr std::uint64_t unbounded_bytes = std::numeric_limits<std::uint64_t>::max();

namespace fuse {
template <std::uint64_t Cap, std::uint64_t First = Cap>
struct bucket_cap {
  using slot = slot::fusion;
  static constexpr std::string_view name = "bucket_cap";
  static constexpr std::uint64_t cap_bytes = Cap;
  static constexpr std::uint64_t first_cap_bytes = First;
  static constexpr fusion_value value{Cap, First};
};
using none = bucket_cap<0>;
using unbounded = bucket_cap<unbounded_bytes>;
}  // namespace fuse

template <>
struct default_policy<slot::fusion> { using type = fuse::none; };

}  // namespace autosync
