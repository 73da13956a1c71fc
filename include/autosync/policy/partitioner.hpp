// autosync/policy/partitioner.hpp — slot `partitioner`: how a tensor is split into shards.
//
//   none             the tensor travels whole
//   even<K, Axis>    K shards along Axis: each gets floor(d/K) slices, the first d mod K one more
//                    (AutoDist's partitioner string "K,1" for axis 0)
//   by_bytes<B>      along axis 0, as many even shards as needed so none exceeds B bytes
//                    (BytePS's BYTEPS_PARTITION_BYTES; a shard is at least one slice)
//
//   d = 10, K = 4:   [0 1 2][3 4 5][6 7][8 9]
#pragma once

#include <autosync/policy/slots.hpp>

#include <array>
#include <cstdint>

namespace autosync {

enum class partitioner_kind : std::uint8_t { none, even, by_bytes };
template <>
struct enum_names<partitioner_kind> {
  static constexpr std::array<std::string_view, 3> names{"none", "even", "by_bytes"};
};

struct partitioner_value {
  partitioner_kind kind = partitioner_kind::none;
  std::int32_t shards = 1;       // even: K
  std::int32_t axis = 0;         // even: the split axis (by_bytes: always 0)
  std::uint64_t max_bytes = 0;   // by_bytes: B
  friend constexpr bool operator==(const partitioner_value&, const partitioner_value&) = default;
};

namespace part {
struct none {
  using slot = slot::partitioner;
  static constexpr std::string_view name = "none";
  static constexpr partitioner_value value{};
};
template <int K, int Axis = 0>
struct even {
  static_assert(K >= 1, "autosync: partitioner even<K, Axis>: K (shard count) must be >= 1");
  static_assert(Axis >= 0, "autosync: partitioner even<K, Axis>: Axis must be >= 0");
  using slot = slot::partitioner;
  static constexpr std::string_view name = "even";
  static constexpr int shards = K;
  static constexpr int axis = Axis;
  static constexpr partitioner_value value{partitioner_kind::even, K, Axis, 0};
};
template <std::uint64_t B>
struct by_bytes {
  static_assert(B >= 1, "autosync: partitioner by_bytes<B>: B (max shard bytes) must be >= 1");
  using slot = slot::partitioner;
  static constexpr std::string_view name = "by_bytes";
  static constexpr std::uint64_t max_bytes = B;
  static constexpr partitioner_value value{partitioner_kind::by_bytes, 1, 0, B};
};
}  // namespace part

template <>
struct default_policy<slot::partitioner> { using type = part::none; };

// Shard s of K along a dimension of size d: [begin, end). Requires 1 <= K <= d.
struct slice_range {
  std::int64_t begin = 0, end = 0;
};
[[nodiscard]] constexpr slice_range even_shard(std::int64_t d, std::int64_t k, std::int64_t s) noexcept {
  const std::int64_t base = d / k, extra = d % k;
  const std::int64_t b = s * base + (s < extra ? s : extra);
  return {b, b + base + (s < extra ? 1 : 0)};
}

}  // namespace autosync
